"""The span tree's shortcuts give what the long way gives.

`_tree` classifies each span once through the conventions table (whose answers are
checked against the reading rules as they were written before it); `_merge.group_calls`
skips its matching rules when no two records can be one call (`_apart`); spans are
sorted by start time without a check for unknown starts; a converted `MultiAgentTrace`
is built without validation. Each is checked here against the long way, on every recorded fixture.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.convert._helpers import FIXTURES
from tracejudge import semconv
from tracejudge.convert import (
    SpanRecord,
    _interactions,
    _merge,
    _tree,
    traces_from_otlp,
)
from tracejudge.convert._common import as_str
from tracejudge.convert._otlp import decode
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import (
    ADK,
    AGENT_FRAMEWORK,
    GENAI,
    LEGACY_OPENLLMETRY,
    LOGFIRE,
    OPENINFERENCE,
    STRANDS,
    UNRECOGNISED,
    VERCEL_AI,
    Kind,
)
from tracejudge.convert.conventions import classify as classify_span
from tracejudge.convert.conventions.autogen import OPENINFERENCE_AUTOGEN
from tracejudge.convert.conventions.formats import genai_semconv, openinference, openllmetry
from tracejudge.convert.conventions.genai import LEGACY_REQUEST_TYPES, LLM_OPERATIONS
from tracejudge.convert.conventions.genkit import GENKIT
from tracejudge.convert.conventions.llamaindex_openinference import OPENINFERENCE_LLAMAINDEX
from tracejudge.convert.conventions.llamaindex_openllmetry import OPENLLMETRY_LLAMAINDEX
from tracejudge.convert.conventions.openlit import OPENLIT
from tracejudge.convert.conventions.semantic_kernel import SEMANTIC_KERNEL
from tracejudge.models import AgentInstance, MultiAgentTrace

_OPENINFERENCE, _LEGACY, _SEMCONV, _VERCEL = "openinference", "legacy", "semconv", "vercel"
# Strands' and Agent Framework's model calls are GenAI `chat` spans, which the long way
# read as GenAI semconv; their own rows read what is theirs in them (Bedrock blocks ...).
_READERS = {
    OPENINFERENCE: _OPENINFERENCE,
    LEGACY_OPENLLMETRY: _LEGACY,
    GENAI: _SEMCONV,
    STRANDS: _SEMCONV,
    AGENT_FRAMEWORK: _SEMCONV,
    VERCEL_AI: _VERCEL,
}


#: Conventions added after the table: the spans they claim had no reading before it.
_ADDED_LATER = (
    ADK,
    LOGFIRE,
    OPENINFERENCE_AUTOGEN,
    OPENINFERENCE_LLAMAINDEX,
    OPENLLMETRY_LLAMAINDEX,
    GENKIT,
    OPENLIT,
    SEMANTIC_KERNEL,
    UNRECOGNISED,  # (the catch-all: model and tokens, no format the walk read before)
)


def _reader(span: SpanRecord) -> str | None:
    """Which convention reads the span as a model call, by the table."""
    found = classify_span(SpanView(span))
    if found is None or found[1] is not Kind.MODEL_CALL:
        return None
    return _READERS.get(found[0], found[0].name)


def _added_later(span: SpanRecord) -> bool:
    found = classify_span(SpanView(span))
    return found is not None and found[0] in _ADDED_LATER


_RECORDINGS = sorted(
    [*FIXTURES.glob("*.jsonl"), *(FIXTURES / "frameworks").glob("*.jsonl")]
    + [*(FIXTURES / "replayed").glob("*.jsonl")]
)


def _records(path: Path) -> list[SpanRecord]:
    records, _, _ = decode(path.read_bytes(), max_inflated_bytes=1 << 30)
    return records


def _is_llm_span_the_long_way(span: SpanRecord) -> bool:
    """`is_llm_span` as it was written before the table: the specification."""
    attrs = span.attributes
    if _vercel_operation(span) is not None:  # the Vercel AI SDK: doGenerate/doStream
        return _is_vercel_call(span)
    if openinference.is_llm(span):
        return True
    if attrs.get(semconv.OPENINFERENCE_SPAN_KIND) is not None:
        return False
    operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
    if operation is not None:
        return as_str(operation) in LLM_OPERATIONS
    request_type = attrs.get(semconv.LLM_REQUEST_TYPE)
    if request_type is not None:
        return as_str(request_type) in LEGACY_REQUEST_TYPES
    return genai_semconv.has_content(span) or openllmetry.is_legacy(span)


def _vercel_operation(span: SpanRecord) -> str | None:
    """The AI SDK's operation: its `ai.operationId`, or (AI SDK 3.2, which writes none)
    the span's name when it is one."""
    operation = span.attributes.get(semconv.AI_OPERATION_ID)
    if operation is not None:
        return str(operation)
    run, _, step = span.name.rpartition(".")
    named = span.name in semconv.AI_RUN_OPERATIONS or span.name == semconv.AI_OPERATION_TOOL_CALL
    if named or (run in semconv.AI_RUN_OPERATIONS and "." + step in semconv.AI_CALL_SUFFIXES):
        return span.name
    return None


def _is_vercel_call(span: SpanRecord) -> bool:
    run, _, step = (_vercel_operation(span) or "").rpartition(".")
    return run in semconv.AI_RUN_OPERATIONS and "." + step in semconv.AI_CALL_SUFFIXES


def _reader_the_long_way(span: SpanRecord) -> str:
    """The module `extract` read a span with before the table (and the Vercel AI SDK's
    calls, read by their own convention since)."""
    if _is_vercel_call(span):
        return _VERCEL
    if openinference.is_llm(span) and (
        openinference.has_messages(span) or not genai_semconv.has_content(span)
    ):
        return _OPENINFERENCE
    if not genai_semconv.has_content(span) and openllmetry.is_legacy(span):
        return _LEGACY
    return _SEMCONV


def _made_up_spans() -> list[SpanRecord]:
    """One span for each way a span can (not) be a model call."""
    oi_message = {f"{semconv.LLM_INPUT_MESSAGES}.0.message.role": "user"}
    legacy_prompt = {f"{semconv.GEN_AI_PROMPT}.0.role": "user"}
    semconv_content = {semconv.GEN_AI_INPUT_MESSAGES: "[]"}
    llm_kind = {semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_LLM}
    attribute_sets = [
        {},
        {**llm_kind},
        {**llm_kind, **oi_message},
        {**llm_kind, **semconv_content},
        {**llm_kind, **oi_message, **semconv_content},
        {semconv.OPENINFERENCE_SPAN_KIND: "CHAIN", **legacy_prompt},
        {semconv.GEN_AI_OPERATION_NAME: "chat"},
        {semconv.GEN_AI_OPERATION_NAME: "chat", **legacy_prompt},
        {semconv.GEN_AI_OPERATION_NAME: "chat", **legacy_prompt, **semconv_content},
        {semconv.GEN_AI_OPERATION_NAME: "embeddings", **legacy_prompt},
        {semconv.LLM_REQUEST_TYPE: "chat"},
        {semconv.LLM_REQUEST_TYPE: "completion", **legacy_prompt},
        {semconv.LLM_REQUEST_TYPE: "embedding", **legacy_prompt},
        {**legacy_prompt},
        {**semconv_content},
        {**legacy_prompt, **semconv_content},
        {f"{semconv.LLM_REQUEST_FUNCTIONS}.0.name": "f"},
    ]
    return [
        SpanRecord(trace_id="t", span_id=f"s{i}", parent_id=None, name="x", attributes=attrs)
        for i, attrs in enumerate(attribute_sets)
    ]


def test_each_span_is_classified_and_read_as_the_long_way_does() -> None:
    spans = _made_up_spans() + [s for path in _RECORDINGS for s in _records(path)]
    readers = set()
    for span in spans:
        if _added_later(span):
            continue
        reader = _reader(span)
        assert (reader is not None) == _is_llm_span_the_long_way(span), span.name
        assert _tree.is_llm_span(span) == (reader is not None)
        if reader is not None:
            assert reader == _reader_the_long_way(span), span.name
            readers.add(reader)
    assert readers == {_OPENINFERENCE, _LEGACY, _SEMCONV, _VERCEL}


def test_extract_reads_a_span_that_is_no_model_call_as_before() -> None:
    legacy = SpanRecord(
        trace_id="t",
        span_id="s",
        parent_id=None,
        name="openai.embeddings",
        attributes={
            semconv.LLM_REQUEST_TYPE: "embedding",
            f"{semconv.GEN_AI_PROMPT}.0.content": "q",
        },
    )
    assert _reader(legacy) is None
    assert _interactions.extract(legacy) == openllmetry.extract_legacy(legacy)


@pytest.mark.parametrize("path", _RECORDINGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_calls_recorded_once_are_grouped_as_the_matching_rules_group_them(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grouped: list[list[list[str]]] = []
    group_calls = _merge.group_calls

    def recording(records, llm_ancestor):  # type: ignore[no-untyped-def]
        calls = group_calls(records, llm_ancestor)
        grouped.append([[r.span_id for r, _ in call.records] for call in calls])
        return calls

    monkeypatch.setattr(_merge, "group_calls", recording)
    fast = traces_from_otlp(path)
    fast_groups = list(grouped)
    grouped.clear()
    monkeypatch.setattr(_merge, "_apart", lambda *args: False)
    slow = traces_from_otlp(path)
    assert grouped == fast_groups
    assert [t.to_json() for t in slow] == [t.to_json() for t in fast]
    assert [t.warnings for t in slow] == [t.warnings for t in fast]


def test_apart_says_no_for_each_rule() -> None:
    def span(span_id: str, parent: str | None, start: int, end: int) -> SpanRecord:
        return SpanRecord(
            trace_id="t", span_id=span_id, parent_id=parent, name="c", start_ns=start, end_ns=end
        )

    def apart(spans: list[SpanRecord], ids: list[str | None], above=lambda s: None) -> bool:  # type: ignore[no-untyped-def]
        return _merge._apart([(s, _tree.Extraction()) for s in spans], ids, above)

    one, two = span("a", "p", 1, 5), span("b", "p", 6, 9)
    assert apart([one, two], [None, None])
    assert apart([two, one], ["r1", "r2"])
    assert not apart([one, two], ["r", "r"])  # rule 2 could match them
    assert not apart([one, span("b", "p", 5, 9)], [None, None])  # rule 3: they touch
    assert not apart([one, span("b", "p", 3, 4)], [None, None])  # rule 3: nested in time
    assert apart([one, span("b", "q", 3, 4)], [None, None])  # not siblings
    assert not apart([one, span("b", "a", 2, 3)], [None, None], lambda s: s.parent_id)  # rule 1


def test_spans_without_a_start_sort_last_in_input_order() -> None:
    def span(span_id: str, start: int | None) -> SpanRecord:
        return SpanRecord(trace_id="t", span_id=span_id, parent_id=None, name="x", start_ns=start)

    spans = [span("a", None), span("b", 5), span("c", None), span("d", 2), span("e", 5)]
    assert [s.span_id for s in _tree._in_start_order(spans)] == ["d", "b", "e", "a", "c"]
    assert [s.span_id for s in _tree._in_start_order([span("a", None)])] == ["a"]
    both_unknown = [span("a", None), span("b", None)]
    assert [s.span_id for s in _tree._in_start_order(both_unknown)] == ["a", "b"]
    known = [span("a", 3), span("b", 1), span("c", 3)]
    assert [s.span_id for s in _tree._in_start_order(known)] == ["b", "a", "c"]


@pytest.mark.parametrize("path", _RECORDINGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_converted_traces_are_what_validation_builds(path: Path) -> None:
    for trace in traces_from_otlp(path):
        validated = MultiAgentTrace(
            root_agent_instance_id=trace.root_agent_instance_id,
            agent_instance_by_id=trace.agent_instance_by_id,
            warnings=trace.warnings,
            trace_id=trace.trace_id,
        )
        assert list(trace.__dict__) == list(validated.__dict__)
        assert trace.__dict__ == validated.__dict__
        assert trace.model_fields_set == validated.model_fields_set
        assert trace.__pydantic_extra__ == validated.__pydantic_extra__
        assert trace.__pydantic_private__ == validated.__pydantic_private__
        assert trace.to_json() == validated.to_json()


def test_a_trace_built_by_hand_is_still_checked() -> None:
    agent = AgentInstance(id="a", name="a", interactions=["b"])
    with pytest.raises(ValueError, match="names the child 'b'"):
        MultiAgentTrace(root_agent_instance_id="a", agent_instance_by_id={"a": agent})
    with pytest.raises(ValueError, match="root_agent_instance_id 'x'"):
        MultiAgentTrace(root_agent_instance_id="x", agent_instance_by_id={"a": agent})
