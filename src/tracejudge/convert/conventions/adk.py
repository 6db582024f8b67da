"""Google ADK (`google-adk`): the spans ADK records itself (instrumentation scope
`gcp.vertex.agent`), in both of its telemetry schemas, and those OpenInference's ADK
instrumentor leaves in place.

ADK's schema is chosen by `ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN`
(google/adk/telemetry/_schema_version.py):

* **v1** (all of ADK 1.x; 2.x with the variable set to `1`): an `invocation` root span, an
  `invoke_agent <name>` span per agent run, and per model call a `call_llm` span holding
  the Gemini request and response as JSON (`gcp.vertex.agent.llm_request` /
  `llm_response`, `"{}"` when `ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false`), around a
  native `generate_content` span that holds only the usage (google/adk/telemetry/
  tracing.py, `trace_call_llm`): two records of one call, which the walk merges. Tool
  spans hold `gcp.vertex.agent.tool_call_args` and `tool_response`.
* **v2** (2.x's default): `invoke_workflow` > `invoke_agent` > `generate_content`, the
  messages as GenAI semconv attributes, only with
  `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY` (or `SPAN_AND_EVENT`).
  A streamed call (`StreamingMode.SSE`) writes each chunk as its own output message
  (google/adk/telemetry/_experimental_semconv.py): they are one answer, the chunks'
  texts concatenated.

The `invoke_agent` / `invoke_workflow` spans are read by the GenAI convention. This one
reads the rest:

* `invocation` is a workflow without a name of its own: the walk names it after the agent
  it ran first (the runner's root agent) and folds that agent into it.
* `execute_tool transfer_to_agent` (`gen_ai.tool.type=TransferToAgentTool`) is a hand-off
  to the agent its `agent_name` argument names, not a tool run: its `{"result": null}` is
  no one's answer. `execute_tool (merged)`, the summary of parallel calls, is a step.
* Call ids: ADK gives each function call a client-side id (`adk-<uuid>`) and strips it
  before every request (`remove_client_function_call_id`, google/adk/flows/llm_flows/
  functions.py), so the model's messages never carry it; where a message has no id (or an
  `adk-` one) the call is named as ADK's own semconv writer names it, `<tool>_<part index>`
  (`_to_part` in _experimental_semconv.py), which the next request's messages repeat. A
  tool span's `adk-` id then names no call: its run is matched by tool name and order,
  except where the model call recorded no content (the id lets the call join it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _handoffs, _json, _tools
from tracejudge.convert._common import (
    Extraction,
    as_str,
    finish_reason,
    message_inputs,
    text_value,
    tool_call,
    tool_response,
    tools,
)
from tracejudge.convert._construct import build
from tracejudge.convert._json import is_mapping
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind
from tracejudge.convert.conventions.formats import genai_semconv, openinference
from tracejudge.convert.conventions.formats.genai_semconv import model_and_usage
from tracejudge.models import LLMInput, LLMToolCall, LLMToolResponse

__all__ = ["ADK", "GoogleADK"]

_V1_CONTENT = (
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS unset or true (ADK's schema v1, where it defaults on)"
)
_V2_CONTENT = (
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (or SPAN_AND_EVENT; ADK "
    "2.x's default schema v2 records no content without it)"
)
_MESSAGE_KEYS = (
    semconv.GEN_AI_INPUT_MESSAGES,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    semconv.GEN_AI_SYSTEM_INSTRUCTIONS,
)
#: Where a tool span holds the call's arguments: schema v2, v1, OpenInference's.
_ARGUMENT_KEYS = (
    semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
    semconv.ADK_TOOL_CALL_ARGS,
    semconv.INPUT_VALUE,
)
_MERGED_CALLS = (
    "OpenInference's ADK instrumentor wrote this agent run's model calls onto ADK's "
    "`invoke_agent` span (ADK 2.x's telemetry schema v2 has no `call_llm` span for it), "
    "each over the one before: a run of several calls shows one, whose output may mix in "
    "an earlier call's tool calls; record with ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1"
)
#: What ADK writes for content it was told not to record (and for a tool's llm_* keys).
_ELIDED = "{}"


class GoogleADK(Convention):
    name = "google-adk"
    content_setting = f"{_V2_CONTENT}; {_V1_CONTENT}"

    def content_hint(self, span: SpanView) -> str | None:
        return _V1_CONTENT if semconv.ADK_LLM_REQUEST in span.attributes else _V2_CONTENT

    marker_keys = frozenset(
        {semconv.GEN_AI_TOOL_TYPE, semconv.ADK_EVENT_ID, semconv.ADK_LLM_REQUEST}
    )
    marker_scopes = frozenset({semconv.ADK_SCOPE})

    def kind(self, span: SpanView) -> str | None:
        attrs = span.attributes
        operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
        if operation == semconv.OPERATION_EXECUTE_TOOL:
            if span.scope != semconv.ADK_SCOPE and semconv.ADK_EVENT_ID not in attrs:
                # Another producer's tool span, though it may carry the GenAI
                # `gen_ai.tool.type` too (the AI SDK's, OpenLLMetry's Agents SDK's): the
                # GenAI row reads it, with its call id.
                return None
            if attrs.get(semconv.GEN_AI_TOOL_TYPE) == semconv.ADK_TRANSFER_TOOL:
                return Kind.HANDOFF
            if attrs.get(semconv.GEN_AI_TOOL_NAME) == semconv.ADK_MERGED_TOOLS:
                return Kind.STEP
            return Kind.TOOL_RUN
        if semconv.ADK_LLM_REQUEST in attrs:
            return Kind.MODEL_CALL  # schema v1's `call_llm` (also under OpenInference)
        if span.scope != semconv.ADK_SCOPE:
            return None
        if span.name == semconv.ADK_INVOCATION_SPAN and operation is None:
            return Kind.WORKFLOW
        if operation == semconv.OPERATION_GENERATE_CONTENT:
            # (In schema v1 it is nested in `call_llm`: two records of one call, merged.)
            return Kind.MODEL_CALL
        return None

    def agent(self, span: SpanView) -> Identity:
        return None, ""  # `invocation`: named after the agent it ran first (see above)

    def model_call(self, span: SpanView) -> Extraction:
        attrs = span.attributes
        if semconv.ADK_LLM_REQUEST in attrs:
            return _call_llm(span)
        if attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OPENINFERENCE_KIND_LLM:
            return _openinference_on_agent_span(span)
        extraction = genai_semconv.extract(span)
        # Its tool definitions are always recorded: content is the messages (on the span,
        # or in the events joined to it).
        if not span.events and not any(key in attrs for key in _MESSAGE_KEYS):
            extraction.has_content = False
        _one_streamed_answer(span, extraction)
        return extraction

    def tool_run(self, span: SpanView) -> _tools.ToolRun | None:
        attrs = span.attributes
        if semconv.ADK_TOOL_RESPONSE in attrs:  # schema v1
            result = attrs.get(semconv.ADK_TOOL_RESPONSE)
            arguments = attrs.get(semconv.ADK_TOOL_CALL_ARGS)
            recorded = result != _ELIDED
        elif semconv.GEN_AI_TOOL_CALL_ARGUMENTS in attrs:  # schema v2 with content
            result = attrs.get(semconv.GEN_AI_TOOL_CALL_RESULT)
            arguments = attrs.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS)
            recorded = True
        else:  # schema v2 without content; OpenInference's tool span records it anyway
            arguments = attrs.get(semconv.INPUT_VALUE)
            result = _object(attrs.get(semconv.OUTPUT_VALUE)).get("response")
            recorded = arguments is not None
        call_id = None if recorded else attrs.get(semconv.GEN_AI_TOOL_CALL_ID)
        return _tools.run(
            attrs.get(semconv.GEN_AI_TOOL_NAME),
            call_id,
            result if recorded else None,
            arguments if recorded else None,
            span.record.start_ns,
        )

    def handoff(self, span: SpanView) -> _handoffs.Handoff | None:
        attrs = span.attributes
        arguments: Mapping[str, Any] = {}
        for key in _ARGUMENT_KEYS:
            arguments = arguments or _object(attrs.get(key))
        return _handoffs.Handoff(
            from_agent=as_str(attrs.get(semconv.GEN_AI_AGENT_NAME)),
            to_agent=as_str(arguments.get(semconv.ADK_TRANSFER_TARGET)),
            start_ns=span.record.start_ns,
        )


# --------------------------------------------------------------------------- schema v1


def _call_llm(span: SpanView) -> Extraction:
    """A `call_llm` span: the Gemini request and response ADK serialised (snake_case
    google-genai models; camelCase accepted too)."""
    attrs = span.attributes
    extraction = Extraction()
    model_and_usage(attrs, extraction)
    request = _object(attrs.get(semconv.ADK_LLM_REQUEST))
    response = _object(attrs.get(semconv.ADK_LLM_RESPONSE))
    if not request and not response:
        return extraction  # content capture off
    extraction.has_content = True
    config = _get(request, "config")
    config = config if is_mapping(config) else {}
    system = _system_text(_get(config, "system_instruction"))
    if system:
        item = {"role": "system", "type": "text", "content": system}
        extraction.inputs.append(build(LLMInput, item))  # (text: no validation needed)
    for content in _list(_get(request, "contents")):
        extraction.inputs.extend(message_inputs(*_content(content)))
    declarations = [
        {
            "name": declaration.get("name"),
            "description": declaration.get("description") or "",
            "parameters": _get(declaration, "parameters_json_schema")
            or declaration.get("parameters")
            or {},
        }
        for tool in _list(_get(config, "tools"))
        for declaration in _list(_get(tool, "function_declarations"))
        if is_mapping(declaration)
    ]
    if declarations:
        extraction.tools = tools(declarations, extraction.warnings, f"span {span.span_id}")
    if response:
        extraction.model = as_str(_get(response, "model_version")) or extraction.model
        _, texts, calls, _ = _content(_get(response, "content"))
        reason = finish_reason(_get(response, "finish_reason"))
        extraction.add_choice(["".join(texts)] if texts else [], calls, finish=reason)
    return extraction


def _content(content: Any) -> tuple[str, list[str], list[LLMToolCall], list[LLMToolResponse]]:
    """A google-genai `Content` -> (role, texts, calls, results); thoughts left out."""
    if not is_mapping(content):
        return "user", [], [], []
    role = (as_str(content.get("role")) or "user").lower()
    texts: list[str] = []
    calls: list[LLMToolCall] = []
    responses: list[LLMToolResponse] = []
    for index, part in enumerate(_list(content.get("parts"))):
        if not is_mapping(part) or part.get("thought"):
            continue
        call = _get(part, "function_call")
        result = _get(part, "function_response")
        if is_mapping(call):
            name = call.get("name")
            call_id = _call_id(call.get("id"), name, index)
            calls.append(tool_call(call_id, name, call.get("args")))
        elif is_mapping(result):
            name = result.get("name")
            call_id = _call_id(result.get("id"), name, index)
            responses.append(tool_response(call_id, result.get("response"), name))
        elif part.get("text") is not None:
            texts.append(text_value(part.get("text")))
    return role, texts, calls, responses


def _system_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if is_mapping(value):  # a Content
        return "\n".join(t for t in _content(value)[1] if t)
    return "\n".join(_system_text(item) for item in _list(value))


# --------------------------------------------------------------------------- schema v2


def _openinference_on_agent_span(span: SpanView) -> Extraction:
    """ADK's `invoke_agent` span on which OpenInference's ADK instrumentor (1.0.5 with ADK
    2.13, schema v2) wrote its LLM attributes, once per model call of the run: each call
    overwrote the last one's (see the warning)."""
    extraction = openinference.extract(span)
    extraction.warnings.append(f"span {span.name!r} ({span.span_id}): {_MERGED_CALLS}")
    return extraction


def _one_streamed_answer(span: SpanView, extraction: Extraction) -> None:
    """The output messages of a `generate_content` span as one answer: ADK writes each
    streamed chunk as a message of its own (and one message for an answer not streamed).
    Texts are concatenated, calls kept in order and named by their place in the
    aggregated answer (see the module's docstring)."""
    messages = _list(_object_or_list(span.attributes.get(semconv.GEN_AI_OUTPUT_MESSAGES)))
    if not messages:
        return
    messages = _without_repeated_chunks(messages)
    parts: list[Any] = []  # the aggregated answer's parts: texts merged, calls in order
    reason = None
    for message in messages:
        if not is_mapping(message):
            continue
        reason = finish_reason(message.get("finish_reason")) or reason
        for part in _list(message.get("parts")):
            if not is_mapping(part):
                continue
            if part.get("type") == "tool_call":
                parts.append(part)
            elif part.get("type") == "text" and part.get("content") is not None:
                if parts and isinstance(parts[-1], str):
                    parts[-1] += text_value(part.get("content"))
                else:
                    parts.append(text_value(part.get("content")))
    texts = [p for p in parts if isinstance(p, str)]
    calls = [
        tool_call(_call_id(p.get("id"), p.get("name"), index), p.get("name"), p.get("arguments"))
        for index, p in enumerate(parts)
        if not isinstance(p, str)
    ]
    extraction.outputs = []
    extraction.alternatives = []
    extraction.add_choice(texts, calls, finish=reason, same_choice=True)


def _without_repeated_chunks(messages: list[Any]) -> list[Any]:
    """The messages of a stream whose end repeats it whole: only that end.

    ADK's `LiteLlm` model yields each streamed chunk (partial: no finish reason) and then
    the aggregated answer again, its text and its complete tool calls
    (`generate_content_async` in google/adk/models/lite_llm.py: `_finalize_text_response`,
    `_finalize_tool_call_response`), where Gemini's last chunk holds only its own piece. When
    the messages that end with a finish reason hold the partial chunks' text and calls (the
    chunks' calls by id, their arguments still empty), they alone are the answer."""
    ends = [
        is_mapping(message) and bool(finish_reason(message.get("finish_reason")))
        for message in messages
    ]
    first_end = ends.index(True) if True in ends else len(messages)
    if first_end == 0 or first_end == len(messages) or not all(ends[first_end:]):
        return messages
    chunks, final = messages[:first_end], messages[first_end:]
    chunk_text, chunk_ids = _text_and_call_ids(chunks)
    final_text, final_ids = _text_and_call_ids(final)
    if chunk_text == final_text and chunk_ids <= final_ids:
        return final
    return messages


def _text_and_call_ids(messages: list[Any]) -> tuple[str, set[str]]:
    text, ids = "", set()
    for message in messages:
        if not is_mapping(message):
            continue
        for part in _list(message.get("parts")):
            if not is_mapping(part):
                continue
            if part.get("type") == "text" and part.get("content") is not None:
                text += text_value(part.get("content"))
            elif part.get("type") == "tool_call":
                ids.add(as_str(part.get("id")) or "")
    return text, ids


# --------------------------------------------------------------------------- values


def _call_id(raw: Any, name: Any, index: int) -> str:
    call_id = as_str(raw)
    if call_id and not call_id.startswith(semconv.ADK_CALL_ID_PREFIX):
        return call_id
    return f"{as_str(name)}_{index}" if as_str(name) else str(index)


def _get(mapping: Any, key: str) -> Any:
    """`mapping[key]`, or its camelCase spelling (`function_call` -> `functionCall`)."""
    if not is_mapping(mapping):
        return None
    if key in mapping:
        return mapping[key]
    camel = _CAMEL.get(key)
    if camel is None:  # (the keys asked are this module's few: each spelt once)
        head, *rest = key.split("_")
        camel = _CAMEL[key] = head + "".join(word.title() for word in rest)
    return mapping.get(camel)


#: The camelCase spelling of each key `_get` was asked for.
_CAMEL: dict[str, str] = {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _object_or_list(value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        try:
            return _json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


def _object(value: Any) -> Mapping[str, Any]:
    parsed = _object_or_list(value)
    return parsed if is_mapping(parsed) else {}


ADK = GoogleADK()
