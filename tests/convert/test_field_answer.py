"""An answer held as one field among others in a model call's text (DSPy's
`[[ ## reasoning ## ]] ... [[ ## answer ## ]] ...`), read from the output the enclosing
module recorded: `_answers.field_answer`, on the spans of the DSPy recording
(tests/fixtures/frameworks/dspy_openinference, recorded live)."""

from __future__ import annotations

import json

from tests.convert.test_frameworks import FIXTURES
from tests.fixtures.frameworks.programs_dspy import ANSWER
from tracejudge import semconv
from tracejudge.convert._answers import field_answer
from tracejudge.convert._otlp import decode
from tracejudge.convert._records import SpanRecord


def _last_extraction() -> tuple[str, list[SpanRecord]]:
    """The planner's extraction call's text, and the spans enclosing it (nearest first)."""
    records, _, _ = decode((FIXTURES / "dspy_openinference.pb").read_bytes())
    by_id = {r.span_id: r for r in records}
    calls = sorted((r for r in records if r.name == "LM.__call__"), key=lambda r: r.start_ns or 0)
    last = calls[-1]
    (text,) = json.loads(last.attributes[semconv.OUTPUT_VALUE])
    enclosing = []
    parent = by_id.get(last.parent_id or "")
    while parent is not None:
        enclosing.append(parent)
        parent = by_id.get(parent.parent_id or "")
    return text, enclosing


def test_the_field_is_read_from_the_nearest_module_that_recorded_one() -> None:
    text, enclosing = _last_extraction()
    assert "[[ ## reasoning ## ]]" in text and ANSWER in text
    # The nearest, ChatAdapter's, records a list of field sets: skipped for the module's.
    assert isinstance(json.loads(enclosing[0].attributes[semconv.OUTPUT_VALUE]), list)
    assert field_answer(text, enclosing) == ANSWER


def test_a_text_that_is_the_answer_itself_is_kept() -> None:
    _, enclosing = _last_extraction()
    assert field_answer(ANSWER, enclosing) is None
    assert field_answer(f"  {ANSWER}\n", enclosing) is None


def test_a_field_the_text_does_not_hold_is_not_taken() -> None:
    _, enclosing = _last_extraction()
    assert field_answer("[[ ## answer ## ]]\nSomething else.", enclosing) is None


def test_an_output_with_several_answer_like_fields_says_nothing() -> None:
    text, enclosing = _last_extraction()
    ambiguous = [
        SpanRecord(
            trace_id=record.trace_id,
            span_id=record.span_id,
            parent_id=record.parent_id,
            name=record.name,
            attributes={
                **record.attributes,
                semconv.OUTPUT_VALUE: json.dumps({"answer": ANSWER, "output": ANSWER}),
            },
        )
        for record in enclosing
    ]
    assert field_answer(text, ambiguous) is None
