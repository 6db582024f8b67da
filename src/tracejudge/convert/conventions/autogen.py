"""OpenInference's AutoGen AgentChat instrumentor (`openinference-instrumentation-autogen-
agentchat`): OpenInference spans, with two habits of their own.

- Each agent turn is an AGENT span named `<agent>.on_messages_stream`, the agent in
  `graph.node.id` (`_wrappers.py`, `_AssistantAgentOnMessagesStreamWrapper`); without
  this row its span name became an agent of its own inside AutoGen's `invoke_agent
  <agent>` span. Read as the agent it names, it is that span's agent (same-name folding).
- The model client's calls (`OpenAIChatCompletionClient.create`, LLM spans) write each
  AutoGen tool result message as role `function` with each result as JSON under
  `llm.input_messages.<i>.function.<j>` (`_llm_messages_attributes`): read here as the
  tool results they are (OpenInference's own keys have no text for them).

AutoGen's own spans (its runtime's messaging spans, autogen-core's GenAI `invoke_agent` /
`execute_tool` spans) are read by `genai`; they hold no model call.
"""

from __future__ import annotations

from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._common import Extraction, as_str, load_json, tool_response
from tracejudge.convert._construct import build
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Identity
from tracejudge.convert.conventions.formats import openinference
from tracejudge.convert.conventions.openinference import OpenInference
from tracejudge.models import LLMInput, LLMToolResponse

__all__ = ["OPENINFERENCE_AUTOGEN"]


class OpenInferenceAutoGen(OpenInference):
    name = "openinference-autogen"
    # Only this instrumentation's spans (its scope): no attribute key marks them.
    marker_keys = frozenset[str]()
    marker_scopes = frozenset({semconv.OPENINFERENCE_AUTOGEN_SCOPE})

    def kind(self, span: SpanView) -> str | None:
        if span.scope != semconv.OPENINFERENCE_AUTOGEN_SCOPE:
            return None
        return super().kind(span)

    def agent(self, span: SpanView) -> Identity:
        node = as_str(span.attributes.get(semconv.GRAPH_NODE_ID))
        return None, node or span.name.removesuffix(semconv.AUTOGEN_AGENT_SPAN_SUFFIX)

    def model_call(self, span: SpanView) -> Extraction:
        extraction = openinference.extract(span)
        results = _function_results(span, extraction.warnings)
        if results:
            extraction.inputs = _with_results(extraction.inputs, results)
        return extraction


def _indexed(tree: dict[str, Any]) -> list[Any]:
    """The values of a flattened-key tree's numbered children, in index order."""
    return [tree[key] for key in sorted((k for k in tree if k.isdigit()), key=int)]


def _function_results(span: SpanView, warnings: list[str]) -> list[list[LLMInput]]:
    """The tool results of each `function` message, in message order."""
    messages = span.tree(semconv.LLM_INPUT_MESSAGES) or {}
    found = []
    what = f"span {span.name!r} ({span.span_id}): a function result"
    for message in _indexed(messages):
        functions = message.get(semconv.OI_FUNCTION) if isinstance(message, dict) else None
        if not isinstance(functions, dict):
            continue
        results = []
        for raw in _indexed(functions):
            value = load_json(raw, what, warnings)
            if not _json.is_mapping(value):
                continue
            response = tool_response(
                value.get(semconv.AUTOGEN_RESULT_CALL_ID),
                value.get(semconv.AUTOGEN_RESULT_CONTENT),
                value.get(semconv.AUTOGEN_RESULT_NAME),
            )
            results.append(
                build(LLMInput, {"role": "tool", "type": "tool_response", "content": response})
            )
        found.append(results)
    return found


def _with_results(inputs: list[LLMInput], results: list[list[LLMInput]]) -> list[LLMInput]:
    """`inputs` with each `function` message's result (OpenInference reads it as one tool
    result without text or id) replaced by the results it holds."""
    pending = iter(results)
    out: list[LLMInput] = []
    for item in inputs:
        content = item.content
        if isinstance(content, LLMToolResponse) and not content.response and not content.id:
            out.extend(next(pending, [item]))
        else:
            out.append(item)
    return out


OPENINFERENCE_AUTOGEN = OpenInferenceAutoGen()
