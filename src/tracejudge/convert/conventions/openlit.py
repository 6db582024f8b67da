"""OpenLIT (`openlit` on PyPI): its model-call spans, and the functions `@openlit.trace`
records.

- A function decorated with `@openlit.trace` is one span of scope `openlit` named after
  the function, with `function.args` / `function.kwargs` and its return value in
  `gen_ai.output.messages` as plain text (openlit/__init__.py `trace`);
  `with openlit.start_trace(name) as t` is one span of that scope named `name`, its
  `t.set_result(...)` in the same attribute. They are the only grouping OpenLIT records
  for agents written on a model client, so such a span is read as an agent named after
  it (one that makes no model call is an agent with no calls).
- Its instrumentations (scopes `openlit.instrumentation.<provider>`) write GenAI model-call
  spans (`gen_ai.operation.name` chat ...). Most write `gen_ai.input.messages` /
  `gen_ai.output.messages` as GenAI JSON (read as the GenAI conventions read them); some
  (Together, Cohere, AI21, Mistral, PremAI, Julep, MultiOn in OpenLIT 1.45) write the
  prompt as plain `role: text` lines (`format_content`: one `f"{role}: {content}"` per
  message) and the completion as plain text, in those attributes and in span events
  `gen_ai.content.prompt` / `gen_ai.content.completion` (whose attributes were
  `gen_ai.prompt` / `gen_ai.completion` in older OpenLIT). Such spans name the first tool
  call the model made in `gen_ai.tool.name` / `gen_ai.tool.call.id` / `gen_ai.tool.args`.
- Its other spans (agent frameworks it instruments) follow the GenAI conventions and are
  left to `genai`.

Content is recorded unless `openlit.init(capture_message_content=False)` (or
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false`).
"""

from __future__ import annotations

from typing import Any

from tracejudge import semconv
from tracejudge.convert._common import (
    Extraction,
    as_str,
    finish_reasons,
    message_inputs,
    tool_call,
)
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind
from tracejudge.convert.conventions.formats import genai_semconv
from tracejudge.convert.conventions.formats.genai_semconv import model_and_usage
from tracejudge.convert.conventions.genai import LLM_OPERATIONS

__all__ = ["OPENLIT", "OpenLIT"]

_INSTRUMENTATION_SCOPE = semconv.OPENLIT_SCOPE + "."
_PROMPT_KEYS = (semconv.GEN_AI_INPUT_MESSAGES, semconv.GEN_AI_PROMPT)
_COMPLETION_KEYS = (semconv.GEN_AI_OUTPUT_MESSAGES, semconv.GEN_AI_COMPLETION)


class OpenLIT(Convention):
    name = "openlit"
    # (a traced function's arguments; the cost its provider instrumentations put on calls)
    marker_keys = frozenset(
        {
            semconv.OPENLIT_FUNCTION_ARGS,
            semconv.OPENLIT_FUNCTION_KWARGS,
            semconv.OPENLIT_USAGE_COST,
        }
    )
    marker_scopes = frozenset({semconv.OPENLIT_SCOPE})
    content_setting = (
        "openlit.init(capture_message_content=True) (the default; "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false turns it off)"
    )

    def kind(self, span: SpanView) -> str | None:
        scope = span.scope
        if scope is None or not scope.startswith(semconv.OPENLIT_SCOPE):
            return None
        attrs = span.attributes
        operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
        if scope == semconv.OPENLIT_SCOPE:
            # `@openlit.trace` and `openlit.start_trace(name)` spans: the user's grouping.
            return Kind.AGENT if operation is None else None
        if scope.startswith(_INSTRUMENTATION_SCOPE) and as_str(operation) in LLM_OPERATIONS:
            return Kind.MODEL_CALL
        return None

    def agent(self, span: SpanView) -> Identity:
        return None, span.name

    def model_call(self, span: SpanView) -> Extraction:
        prompt = _first_text(span, semconv.EVENT_CONTENT_PROMPT, _PROMPT_KEYS)
        completion = _first_text(span, semconv.EVENT_CONTENT_COMPLETION, _COMPLETION_KEYS)
        if not _is_lines(prompt) and not _is_lines(completion):
            return genai_semconv.extract(span)
        return _from_lines(span, prompt, completion)


def _first_text(span: SpanView, event_name: str, keys: tuple[str, ...]) -> Any:
    """The span's value of the first of `keys`, else the event `event_name`'s."""
    for key in keys:
        value = span.attributes.get(key)
        if value is not None:
            return value
    for event in span.events:
        if event.name == event_name:
            for key in keys:
                value = event.attributes.get(key)
                if value is not None:
                    return value
    return None


def _is_lines(value: Any) -> bool:
    """Whether a recorded prompt or completion is plain text (not GenAI JSON)."""
    return isinstance(value, str) and genai_semconv.is_text(value)


def _from_lines(span: SpanView, prompt: Any, completion: Any) -> Extraction:
    extraction = Extraction()
    model_and_usage(span.attributes, extraction)
    extraction.has_content = prompt is not None or completion is not None
    if isinstance(prompt, str):
        for role, text in genai_semconv.role_lines(prompt):
            extraction.inputs.extend(message_inputs(role, [text], [], []))
    attrs = span.attributes
    calls = []
    name = attrs.get(semconv.GEN_AI_TOOL_NAME)
    if as_str(name):
        arguments = attrs.get(semconv.OPENLIT_TOOL_ARGS)
        calls.append(tool_call(attrs.get(semconv.GEN_AI_TOOL_CALL_ID), name, arguments))
    texts = [completion] if isinstance(completion, str) and completion else []
    if texts or calls:
        reasons = finish_reasons(attrs.get(semconv.GEN_AI_RESPONSE_FINISH_REASONS))
        extraction.add_choice(texts, calls, finish=reasons[0] if reasons else None)
    return extraction


OPENLIT = OpenLIT()
