"""Span attribute names, in one file: no attribute key is spelled anywhere else.

Sources: the OTel GenAI semantic conventions, OpenLLMetry
(opentelemetry-instrumentation-openai) and OpenInference. See
CONVENTIONS.md in the design notes for what each instrumentation writes.
"""

from __future__ import annotations

# OTel GenAI: agents (the spans tracejudge itself emits)
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
OPERATION_INVOKE_AGENT = "invoke_agent"
OPERATION_EXECUTE_TOOL = "execute_tool"
OPERATION_CHAT = "chat"
INVOKE_AGENT_SPAN_PREFIX = "invoke_agent"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
