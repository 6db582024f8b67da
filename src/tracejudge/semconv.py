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
# A run of several agents recorded as one span (Google ADK, the GenAI agent conventions).
OPERATION_INVOKE_WORKFLOW = "invoke_workflow"
GEN_AI_WORKFLOW_NAME = "gen_ai.workflow.name"
OPERATION_EXECUTE_TOOL = "execute_tool"
OPERATION_CHAT = "chat"
INVOKE_AGENT_SPAN_PREFIX = "invoke_agent"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"

# OTel general: the class of the error that ended an operation (agent spans set it too)
ERROR_TYPE = "error.type"

# --- read by the converter (tracejudge.convert) -------------------------------------------

# OTel GenAI: model calls (also OpenLLMetry 0.55+)
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_REQUEST_CHOICE_COUNT = "gen_ai.request.choice.count"  # written when `n` != 1
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
ANTHROPIC_STOP_REASON = "anthropic.message.stop_reason"  # the anthropic SDK's own spans
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_TOTAL_TOKENS = "gen_ai.usage.total_tokens"
GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"  # semconv before 1.27
GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"  # semconv before 1.27
OPERATION_TEXT_COMPLETION = "text_completion"
OPERATION_GENERATE_CONTENT = "generate_content"
OPERATION_RESPONSES = "responses"
# OpenLLMetry's span of a Responses API call (its openai and openai_agents instrumentations)
OPENLLMETRY_RESPONSES_SPAN = "openai.response"
# OTel GenAI events (span events, or log records tied to a span)
EVENT_INFERENCE_DETAILS = "gen_ai.client.inference.operation.details"
EVENT_SYSTEM_MESSAGE = "gen_ai.system.message"
EVENT_USER_MESSAGE = "gen_ai.user.message"
EVENT_ASSISTANT_MESSAGE = "gen_ai.assistant.message"
EVENT_TOOL_MESSAGE = "gen_ai.tool.message"
EVENT_CHOICE = "gen_ai.choice"
EVENT_CONTENT_PROMPT = "gen_ai.content.prompt"  # semconv 1.26 span events
EVENT_CONTENT_COMPLETION = "gen_ai.content.completion"
GEN_AI_PROMPT = "gen_ai.prompt"  # attribute of EVENT_CONTENT_PROMPT; prefix of legacy keys
GEN_AI_COMPLETION = "gen_ai.completion"  # attribute of EVENT_CONTENT_COMPLETION; legacy prefix
EVENT_NAME = "event.name"  # log records before the LogRecord.event_name field
GEN_AI_EVENT_CONTENT = "gen_ai.event.content"  # a span event's body as JSON text (SK .NET)
# OTel general: exceptions
EXCEPTION_EVENT = "exception"
EXCEPTION_TYPE = "exception.type"
EXCEPTION_MESSAGE = "exception.message"

# OpenLLMetry before 0.55: indexed attributes under GEN_AI_PROMPT / GEN_AI_COMPLETION
LLM_REQUEST_TYPE = "llm.request.type"
LLM_REQUEST_FUNCTIONS = "llm.request.functions"
LLM_USAGE_TOTAL_TOKENS = "llm.usage.total_tokens"

# OpenInference
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
OPENINFERENCE_KIND_LLM = "LLM"
OPENINFERENCE_KIND_AGENT = "AGENT"
LLM_INPUT_MESSAGES = "llm.input_messages"
LLM_OUTPUT_MESSAGES = "llm.output_messages"
LLM_TOOLS = "llm.tools"
LLM_MODEL_NAME = "llm.model_name"
LLM_INVOCATION_PARAMETERS = "llm.invocation_parameters"
LLM_TOKEN_COUNT_PROMPT = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL = "llm.token_count.total"
INPUT_VALUE = "input.value"
INPUT_MIME_TYPE = "input.mime_type"
OUTPUT_MIME_TYPE = "output.mime_type"
MIME_JSON = "application/json"
OUTPUT_VALUE = "output.value"
OUTPUT_MIME_TYPE = "output.mime_type"
OPENINFERENCE_MIME_TEXT = "text/plain"
OPENINFERENCE_REDACTED = "__REDACTED__"  # OPENINFERENCE_HIDE_OUTPUTS' stand-in
AGENT_NAME = "agent.name"
# path segments inside the flattened OpenInference keys
OI_MESSAGE = "message"
OI_TOOL = "tool"
OI_JSON_SCHEMA = "json_schema"
OI_TOOL_CALL = "tool_call"
OI_MESSAGE_CONTENT = "message_content"
LLM_FINISH_REASON = "llm.finish_reason"

# Agent frameworks and their instrumentations (convert/_agents.py, convert/conventions/,
# convert/_answers.py, convert/_tools.py)
OPENINFERENCE_KIND_TOOL = "TOOL"
OPENINFERENCE_METADATA = "metadata"  # JSON: LangChain run metadata (langgraph_node ...)
TOOL_NAME = "tool.name"
TOOL_PARAMETERS = "tool.parameters"  # JSON: the tool's parameters by name, in order
OPERATION_EXECUTE_TASK = "execute_task"
OPERATION_HANDOFF = "handoff"
GEN_AI_TASK_NAME = "gen_ai.task.name"
GEN_AI_TASK_OUTPUT = "gen_ai.task.output"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_HANDOFF_FROM_AGENT = "gen_ai.handoff.from_agent"
GEN_AI_HANDOFF_TO_AGENT = "gen_ai.handoff.to_agent"
OPENINFERENCE_HANDOFF_PREFIX = "handoff to "  # OpenInference's Agents SDK handoff (TOOL) span
TRACELOOP_SPAN_KIND = "traceloop.span.kind"
TRACELOOP_KIND_WORKFLOW = "workflow"
TRACELOOP_KIND_TASK = "task"
TRACELOOP_WORKFLOW_NAME = "traceloop.workflow.name"
TRACELOOP_ENTITY_OUTPUT = "traceloop.entity.output"
TRACELOOP_LANGGRAPH_NODE = "traceloop.association.properties.langgraph_node"
LANGGRAPH_NODE = "langgraph_node"  # key in OpenInference's metadata JSON
PYDANTIC_AI_FINAL_RESULT = "final_result"
CREWAI_CREW_NAME = "crewai.crew.name"
CREWAI_CREW_RESULT = "crewai.crew.result"
CREWAI_CREW_AGENTS = "crew_agents"  # OpenInference's CrewAI crew span
# Genkit (JavaScript): every span Genkit writes carries `genkit:*` attributes
# (@genkit-ai/core lib/tracing/instrumentation `metadataToAttributes`; the labels of
# lib/action, ai lib/prompt and ai lib/generate/action). An action's input and output are
# JSON text: a model's are Genkit's GenerateRequest / GenerateResponse.
GENKIT_TYPE = "genkit:type"  # action, util (generate), dotprompt, promptTemplate, flowStep
GENKIT_SUBTYPE = "genkit:metadata:subtype"  # an action's kind: flow, model, tool ...
GENKIT_NAME = "genkit:name"
GENKIT_INPUT = "genkit:input"
GENKIT_OUTPUT = "genkit:output"
GENKIT_TYPE_ACTION = "action"
GENKIT_TYPE_PROMPT = "dotprompt"  # a prompt run (`definePrompt`'s executable prompt)
GENKIT_SUBTYPE_FLOW = "flow"
GENKIT_SUBTYPE_MODEL = "model"
GENKIT_SUBTYPE_TOOL = "tool"
# OpenLIT: its instrumentations' scopes start with OPENLIT_SCOPE + "."; `@openlit.trace`
# writes a span of scope OPENLIT_SCOPE named after the function, with its arguments.
OPENLIT_SCOPE = "openlit"
OPENLIT_FUNCTION_ARGS = "function.args"
OPENLIT_FUNCTION_KWARGS = "function.kwargs"
OPENLIT_TOOL_ARGS = "gen_ai.tool.args"  # the first tool call's arguments, on its model call
OPENLIT_USAGE_COST = "gen_ai.usage.cost"  # on every model call of its provider instrumentations
# Semantic Kernel (Python: its scopes are its module names; .NET: Microsoft.SemanticKernel)
SEMANTIC_KERNEL_SCOPES = ("semantic_kernel.", "Microsoft.SemanticKernel")
#: the instrumentation scopes its spans come from (Python: the modules that write them;
#: .NET: ModelDiagnostics' ActivitySource)
SEMANTIC_KERNEL_SPAN_SCOPES = (
    "semantic_kernel.utils.telemetry.agent_diagnostics.decorators",
    "semantic_kernel.utils.telemetry.model_diagnostics.decorators",
    "semantic_kernel.functions.kernel_function",
    "semantic_kernel.connectors.ai.chat_completion_client_base",
    "Microsoft.SemanticKernel.Diagnostics",
)
SEMANTIC_KERNEL_AVAILABLE_FUNCTIONS = "sk.available_functions"  # its function-calling loop
#: Python: one reason per choice, comma-joined, as the enum (`FinishReason.STOP`); .NET: a
#: JSON-like list of the client's names (`["ToolCalls"]`)
SEMANTIC_KERNEL_FINISH_REASON = "gen_ai.response.finish_reason"
# OpenInference AutoGen AgentChat (convert/conventions/autogen.py): its agent spans are
# `<agent>.on_messages_stream` with the agent in `graph.node.id`; an AutoGen tool result
# message is role `function` with each result as JSON `{name, content, call_id, is_error}`
# under `llm.input_messages.<i>.function.<j>` (beside, not under, `message`).
OPENINFERENCE_AUTOGEN_SCOPE = "openinference.instrumentation.autogen_agentchat"
GRAPH_NODE_ID = "graph.node.id"
AUTOGEN_AGENT_SPAN_SUFFIX = ".on_messages_stream"
OI_FUNCTION = "function"
AUTOGEN_RESULT_CALL_ID = "call_id"
AUTOGEN_RESULT_NAME = "name"
AUTOGEN_RESULT_CONTENT = "content"
# LlamaIndex agents (convert/conventions/llamaindex_*.py). Neither instrumentation records
# an agent's name on a span: the workflow's events do (`AgentInput`, `AgentSetup`: the
# current agent), as a Python repr in OpenInference's `output.value`
# (`AgentSetup(input=[...], current_agent_name='x')`) and as JSON in OpenLLMetry's
# `traceloop.entity.output` (`{"input": [...], "current_agent_name": "x"}`).
OPENINFERENCE_LLAMAINDEX_SCOPE = "openinference.instrumentation.llama_index"
OPENLLMETRY_LLAMAINDEX_SCOPE = "opentelemetry.instrumentation.llamaindex"
LLAMAINDEX_AGENT_EVENTS = ("AgentInput(", "AgentSetup(")  # reprs of the events naming it
LLAMAINDEX_CURRENT_AGENT = "current_agent_name"
LLAMAINDEX_EVENT_INPUT = "input"  # the key an AgentInput / AgentSetup event has
LLAMAINDEX_PREPARE_CHAT = "._prepare_chat_with_tools"  # builds a request, sends nothing
LLAMAINDEX_HANDOFF_TOOL = "handoff"  # AgentWorkflow's hand-off tool: handoff(to_agent, reason)
LLAMAINDEX_HANDOFF_TO = "to_agent"
TRACELOOP_ENTITY_INPUT = "traceloop.entity.input"
TOOL_ARGUMENTS = "tool.arguments"  # OpenLLMetry LlamaIndex's tool step
LLM_TOKEN_COUNT_PREFIX = "llm.token_count."
# logfire (pydantic/logfire): every span names its message template; a span's kind is its
# template (logfire/_internal/integrations/openai_agents.py, llm_providers/*.py)
LOGFIRE_MSG_TEMPLATE = "logfire.msg_template"
LOGFIRE_SPAN_TYPE = "logfire.span_type"
LOGFIRE_PENDING_SPAN = "pending_span"  # a copy logfire sends while the span runs
LOGFIRE_REQUEST_DATA = "request_data"  # the request JSON (format version 1: all of it)
LOGFIRE_RESPONSE_DATA = "response_data"  # the response, format version 1
LOGFIRE_EVENTS = "events"  # Responses API messages, as one JSON list of event dicts
LOGFIRE_AGENT_NAME = "name"  # `Agent run`, `Function`, `OpenAI Agents trace` spans
LOGFIRE_FROM_AGENT = "from_agent"
LOGFIRE_TO_AGENT = "to_agent"
LOGFIRE_AGENT_TOOLS = "tools"  # `Agent run` spans: the names of the agent's tools (JSON)
LOGFIRE_AGENT_HANDOFFS = "handoffs"  # `Agent run` spans: the agents it may hand off to
LOGFIRE_INPUT = "input"  # the Agents SDK's generation and function spans
LOGFIRE_OUTPUT = "output"
LOGFIRE_RESPONSE = "response"  # the Agents SDK's Responses API span: the Response JSON
LOGFIRE_ANTHROPIC = "anthropic"  # the GEN_AI_SYSTEM of instrument_anthropic's spans
# Strands Agents' own spans (strands/telemetry/tracer.py). By default (GenAI semconv 1.36)
# each message is a span event whose attribute holds JSON Bedrock content blocks
# (`[{"text"}]`, `[{"toolUse"}]`, `[{"toolResult"}]`); `gen_ai.agent.tools` lists the tool
# names, `gen_ai.tool.definitions` (opt-in) holds Bedrock tool specs (`inputSchema.json`).
STRANDS_SCOPE = "strands.telemetry.tracer"
STRANDS_PROVIDER = "strands-agents"  # gen_ai.system (default) / gen_ai.provider.name (latest)
STRANDS_EVENT_CONTENT = "content"  # gen_ai.<role>.message events: the message's blocks
STRANDS_EVENT_MESSAGE = "message"  # gen_ai.choice events: the answer (blocks, or text)
STRANDS_EVENT_FINISH_REASON = "finish_reason"
GEN_AI_AGENT_TOOLS = "gen_ai.agent.tools"
OPERATION_EVENT_LOOP_CYCLE = "execute_event_loop_cycle"
STRANDS_WORKFLOW_OPERATIONS = ("invoke_swarm", "invoke_graph")
STRANDS_REDACTED = "[REDACTED]"  # a message Strands' opt-in redaction left out
STRANDS_HANDOFF_TOOL = "handoff_to_agent"  # a Swarm's transfer tool (strands/multiagent/swarm.py)
STRANDS_HANDOFF_TARGET = "agent_name"  # its argument naming the agent handed to
# Microsoft Agent Framework's own spans (agent_framework/observability.py): GenAI semconv,
# with `gen_ai.response.finish_reasons` written as JSON text.
AGENT_FRAMEWORK_SCOPE = "agent_framework"
AGENT_FRAMEWORK_PROVIDER = "microsoft.agent_framework"
AGENT_FRAMEWORK_WORKFLOW_RUN = "workflow.run"  # span name of a workflow's run: the root agent
AGENT_FRAMEWORK_WORKFLOW_NAME = "workflow.name"
AGENT_FRAMEWORK_WORKFLOW_ID = "workflow.id"
# HandoffBuilder's `handoff_to_<agent>` tool result, in the agent span's output messages
AGENT_FRAMEWORK_HANDOFF_TO = "handoff_to"

# Google ADK (`google-adk`), its own spans (convert/conventions/adk.py). Schema v1 (ADK 1.x,
# and 2.x with ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1): an `invocation` root, the call on a
# `call_llm` span as Gemini request / response JSON; schema v2 (2.x's default): GenAI
# semconv spans. Tool spans carry the tool's class; a transfer is `TransferToAgentTool`.
ADK_SCOPE = "gcp.vertex.agent"
ADK_INVOCATION_SPAN = "invocation"
ADK_LLM_REQUEST = "gcp.vertex.agent.llm_request"
ADK_LLM_RESPONSE = "gcp.vertex.agent.llm_response"
ADK_TOOL_CALL_ARGS = "gcp.vertex.agent.tool_call_args"
ADK_TOOL_RESPONSE = "gcp.vertex.agent.tool_response"
ADK_EVENT_ID = "gcp.vertex.agent.event_id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
ADK_TRANSFER_TOOL = "TransferToAgentTool"
ADK_TRANSFER_TARGET = "agent_name"  # transfer_to_agent's argument
ADK_MERGED_TOOLS = "(merged tools)"  # the summary span of parallel tool calls
ADK_CALL_ID_PREFIX = "adk-"  # ADK's client-side function call ids, never sent to the model

# The Vercel AI SDK's own spans (`ai` 3-6 `experimental_telemetry`, AI SDK 7's
# `LegacyOpenTelemetry`; convert/conventions/vercel_ai.py). Every span names its operation:
# `ai.generateText` (the run) holds `ai.generateText.doGenerate` spans (the model calls)
# and `ai.toolCall` spans. Values are JSON strings; see packages/ai/core/telemetry and
# generate-text/generate-text.ts in vercel/ai.
AI_OPERATION_ID = "ai.operationId"
AI_FUNCTION_ID = "ai.telemetry.functionId"  # the user's `functionId`: names the run
AI_RESOURCE_NAME = "resource.name"  # the same functionId, as a span attribute
AI_RUN_OPERATIONS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
AI_CALL_SUFFIXES = (".doGenerate", ".doStream")  # appended to a run's operation
AI_OPERATION_TOOL_CALL = "ai.toolCall"
AI_MODEL_ID = "ai.model.id"
AI_PROMPT_MESSAGES = "ai.prompt.messages"
AI_PROMPT_TOOLS = "ai.prompt.tools"  # a list of JSON strings, one per tool
AI_RESPONSE_TEXT = "ai.response.text"
AI_RESPONSE_TOOL_CALLS = "ai.response.toolCalls"
AI_RESPONSE_OBJECT = "ai.response.object"  # generateObject / streamObject
AI_RESPONSE_REASONING = "ai.response.reasoning"  # AI SDK 6+
AI_RESPONSE_FINISH_REASON = "ai.response.finishReason"
# AI SDK 3.2 and earlier (3.3 and 3.4 write both spellings)
AI_RESULT_TEXT = "ai.result.text"
AI_RESULT_TOOL_CALLS = "ai.result.toolCalls"
AI_RESULT_OBJECT = "ai.result.object"
AI_FINISH_REASON = "ai.finishReason"
AI_RESPONSE_MODEL = "ai.response.model"
AI_USAGE_INPUT_TOKENS = "ai.usage.inputTokens"  # AI SDK 5+ (v5's doGenerate: promptTokens)
AI_USAGE_OUTPUT_TOKENS = "ai.usage.outputTokens"
AI_USAGE_TOTAL_TOKENS = "ai.usage.totalTokens"
AI_USAGE_PROMPT_TOKENS = "ai.usage.promptTokens"  # AI SDK 4 (and 5's doGenerate spans)
AI_USAGE_COMPLETION_TOKENS = "ai.usage.completionTokens"
AI_TOOL_CALL_NAME = "ai.toolCall.name"
AI_TOOL_CALL_ID = "ai.toolCall.id"
AI_TOOL_CALL_ARGS = "ai.toolCall.args"
AI_TOOL_CALL_RESULT = "ai.toolCall.result"

# --- evaluation results written back onto traces (tracejudge.evaluation.events), read back
# by the converter. OTel GenAI `gen_ai.evaluation.result` event: parented to the span of
# the operation it judges, or carrying `gen_ai.response.id` when there is no span id.
EVENT_EVALUATION_RESULT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
# tracejudge's own: the agent instance judged, and the scope of the short span that
# carries the events as span events when no LoggerProvider is set (the server's intake
# ignores spans of this scope, so a pipeline that loops them back rescores nothing).
TRACEJUDGE_AGENT_INSTANCE_ID = "tracejudge.agent_instance.id"
# --- read by the server's OTLP intake: a trace's tags are the attributes (of any span, or
# of the resource) under this prefix, without it (`tracejudge.tags.team` -> `team`); the
# other resource attributes are kept apart, the service name shown as such.
TRACEJUDGE_TAG_PREFIX = "tracejudge.tags."
SERVICE_NAME = "service.name"
SERVICE_VERSION = "service.version"
# the session and the user a trace belongs to (on any span, or on the resource): OTel's
# general attributes first, then the GenAI conversation id; the user by `user.id`, else
# the older `enduser.id`
SESSION_ID = "session.id"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
USER_ID = "user.id"
ENDUSER_ID = "enduser.id"
EVALUATION_SCOPE = "tracejudge.evaluation"
EVALUATION_SPAN_PREFIX = "evaluate"

# --- written by the judge's own spans (tracejudge.judges, `spans=`) ------------------------
# OTel GenAI model-call attributes the converter does not read, and the resource's name.
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
TRACEJUDGE_JUDGE_CRITERION = "tracejudge.judge.criterion"  # the criterion a judgement judged
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
SERVICE_NAME = "service.name"

# --- read by the server's trends (a resource attribute): the version a trace's service ran
SERVICE_VERSION = "service.version"
