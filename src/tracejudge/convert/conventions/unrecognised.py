"""The last row: a model call in no convention the table reads.

A span that no row claims but that names a model and counts tokens is a call to a model,
whatever wrote it: it is kept as an interaction with its model and usage, so the trace
shows how many calls each agent made, and the tree walk says once per instrumentation
what was not read (`tracejudge inspect` lists the span's attributes). Counting every
unknown span with a model name as a call would mistake run summaries for calls; usage
alone is a framework's total; both together are one call.
"""

from __future__ import annotations

from tracejudge import semconv
from tracejudge.convert._common import Extraction, as_str, usage
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Kind
from tracejudge.convert.conventions.formats.genai_semconv import model_and_usage

__all__ = ["UNRECOGNISED", "Unrecognised"]

_MODEL_KEYS = (semconv.GEN_AI_REQUEST_MODEL, semconv.GEN_AI_RESPONSE_MODEL, semconv.LLM_MODEL_NAME)
_USAGE_KEYS = (
    semconv.GEN_AI_USAGE_INPUT_TOKENS,
    semconv.GEN_AI_USAGE_OUTPUT_TOKENS,
    semconv.GEN_AI_USAGE_PROMPT_TOKENS,
    semconv.GEN_AI_USAGE_COMPLETION_TOKENS,
    semconv.LLM_TOKEN_COUNT_PROMPT,
    semconv.LLM_TOKEN_COUNT_COMPLETION,
)
#: Words in an attribute key that may hold message content (named in the warning).
CONTENT_WORDS = ("message", "prompt", "completion", "content", "input", "output", "response")


class Unrecognised(Convention):
    # Unmarked: its model keys are on most model-call spans, which the rows above claim,
    # and it is asked last, of the few spans they all left.
    name = "unrecognised"

    def kind(self, span: SpanView) -> str | None:
        attrs = span.attributes
        for key in _MODEL_KEYS:
            if attrs.get(key) is not None:
                break
        else:
            return None
        for key in _USAGE_KEYS:
            if attrs.get(key) is not None:
                return Kind.MODEL_CALL
        return None

    def model_call(self, span: SpanView) -> Extraction:
        attrs = span.attributes
        extraction = Extraction()
        model_and_usage(attrs, extraction)
        extraction.model = extraction.model or as_str(attrs.get(semconv.LLM_MODEL_NAME))
        if extraction.usage is None:
            extraction.usage = usage(
                attrs,
                (semconv.LLM_TOKEN_COUNT_PROMPT,),
                (semconv.LLM_TOKEN_COUNT_COMPLETION,),
                (semconv.LLM_TOKEN_COUNT_TOTAL,),
            )
        return extraction

    def possible_content(self, span: SpanView) -> list[str]:
        """The span's attribute keys that may hold the messages no row read."""
        return sorted(
            key for key in span.attributes if any(word in key.lower() for word in CONTENT_WORDS)
        )


UNRECOGNISED = Unrecognised()
