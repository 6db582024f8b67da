"""Rule 5 of `_merge`: a call recorded live by a client instrumentation and again, after
the fact, by a framework that builds its spans when the run ends.

OpenInference's BeeAI instrumentation collects BeeAI's events and writes the whole run's
spans when the top run ends, with the times the events carried. A client instrumentation
beside it (the openai client's `openai.chat`, under LiteLLM) records each call as it is
made, below the span current at that moment, which is none of the framework's (they do
not exist yet): the two records of one call sit in different places of the tree, neither
nested in the other nor siblings, so rules 1 to 4 leave them apart and the call counts
twice, once in the agent that made it and once in whatever span was current around the
run (tracejudge's own `app`).

They are the same call when the client's record lies within the framework's in time, they
come from different instrumentation scopes (both known), name compatible models, and count
the same input and output tokens (both recorded, not zero): the tokens of one call seen
twice (two records that name different response ids stay apart: `_merge` checks that),
and, when both recorded inputs, end them with the same message (two agents' calls of equal
token counts, one within the other's time, stay apart).
The framework's record is the outer one: the call sits where it sits (in its agent), as a
framework's span around the client's does when they nest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tracejudge.convert._common import Extraction
from tracejudge.convert._records import SpanRecord
from tracejudge.models import LLMInput, LLMToolCall, LLMToolResponse

__all__ = ["usage_key", "within_pairs"]

#: How many records on each side, in start order, a record is compared with.
_NEAREST = 16


def usage_key(extraction: Extraction) -> tuple[int, int] | None:
    """(input tokens, output tokens) of a record that counts both, else None."""
    usage = extraction.usage
    if usage is None or usage.input_tokens <= 0 or usage.output_tokens <= 0:
        return None
    return (usage.input_tokens, usage.output_tokens)


def _contains(outer: SpanRecord, inner: SpanRecord) -> bool:
    times = (outer.start_ns, outer.end_ns, inner.start_ns, inner.end_ns)
    if any(t is None for t in times):
        return False
    o_start, o_end, i_start, i_end = (t or 0 for t in times)
    return o_start <= i_start and i_end <= o_end and (o_start, o_end) != (i_start, i_end)


def within_pairs(
    records: Sequence[tuple[SpanRecord, Extraction]],
    compatible_models: Callable[[str | None, str | None], bool],
) -> list[tuple[int, int]]:
    """(inner, outer) indexes of `records` that rule 5 takes for one call: of the records
    with the same token counts, each from another scope whose span lies within the
    other's and, when both recorded inputs, ends them with the same message. A record is
    the inner one of at most one pair (the tightest outer)."""
    by_usage: dict[tuple[int, int], list[int]] = {}
    for index, (span, extraction) in enumerate(records):
        key = usage_key(extraction)
        if key is not None and span.scope:
            by_usage.setdefault(key, []).append(index)
    pairs: list[tuple[int, int]] = []
    for group in by_usage.values():
        if len(group) < 2:
            continue
        # An outer record starts no later than the one within it: only the records near
        # each in start order are compared (a trace of thousands of calls of equal token
        # counts was quadratic).
        group.sort(key=lambda index: records[index][0].start_ns or 0)
        for position, inner in enumerate(group):
            inner_span, inner_ex = records[inner]
            around = [
                outer
                for outer in group[max(0, position - _NEAREST) : position + _NEAREST + 1]
                if outer != inner
                and records[outer][0].scope != inner_span.scope
                and _contains(records[outer][0], inner_span)
                and compatible_models(records[outer][1].model, inner_ex.model)
                and _same_last_text(records[outer][1], inner_ex)
            ]
            if around:
                pairs.append((inner, min(around, key=lambda o: _length(records[o][0]))))
    return pairs


def _same_last_text(first: Extraction, second: Extraction) -> bool:
    """Whether two records end their inputs with the same message, by its text (a tool
    result by its text, a tool call by its name and arguments: ids are what one record of
    a call may lack, as OpenInference's BeeAI spans lack a result's id), or one records
    none."""
    if not first.inputs or not second.inputs:
        return True
    return _text_of(first.inputs[-1]) == _text_of(second.inputs[-1])


def _text_of(message: LLMInput) -> tuple[str, ...]:
    content = message.content
    if isinstance(content, LLMToolCall):
        return ("call", content.name, content.parameters)
    if isinstance(content, LLMToolResponse):
        return ("result", " ".join(content.response.split()))
    return (message.role, " ".join(content.split()))


def _length(span: SpanRecord) -> int:
    return (span.end_ns or 0) - (span.start_ns or 0)
