"""Where an agent's answer is recorded is said by the producers' rows
(`Convention.answer_keys`): `_answers` reads those keys and knows none of its own."""

from __future__ import annotations

import pytest

from tracejudge.convert import _answers, conventions, traces_from_otlp
from tracejudge.convert._records import SpanRecord

from ._helpers import FIXTURES


def _span(attributes: dict[str, object]) -> SpanRecord:
    return SpanRecord("a" * 32, "b" * 16, None, "agent", 1, 2, "UNSET", None, None, attributes)


def test_the_answer_keys_are_the_rows_keys_each_once() -> None:
    declared = {key for row in conventions.TABLE for key in row.answer_keys}
    assert set(conventions.ANSWER_KEYS) == declared
    assert len(conventions.ANSWER_KEYS) == len(declared)
    forms = [form for _, form in conventions.ANSWER_KEYS]
    assert forms == sorted(forms, key=("text", "messages", "json").index)


@pytest.mark.parametrize("key", [key for key, _ in conventions.ANSWER_KEYS])
def test_an_answer_is_read_at_a_key_while_a_row_declares_it(monkeypatch, key: str) -> None:
    value = '[{"role": "assistant", "parts": [{"type": "text", "content": "Paris"}]}]'
    if dict(conventions.ANSWER_KEYS)[key] != "messages":
        value = "Paris"
    span = _span({key: value})
    assert _answers.recorded_output(span) == "Paris"
    kept = tuple(k for k in conventions.ANSWER_KEYS if k[0] != key)
    monkeypatch.setattr(_answers, "ANSWER_KEYS", kept)
    assert _answers.recorded_output(span) is None


def test_a_recorded_framework_answers_from_its_rows_key(monkeypatch) -> None:
    # pydantic-ai records its agent's answer as `final_result` (the logfire row's key)
    path = FIXTURES / "frameworks" / "pydantic_ai_v6_chat.jsonl"
    if not path.exists():
        pytest.skip("fixture not recorded")
    agents = [
        (t.trace_id, a)
        for t in traces_from_otlp(path)
        for a in t.agent_instance_by_id.values()
        if a.output
    ]
    assert agents
    kept = tuple(k for k in conventions.ANSWER_KEYS if k[0] != "final_result")
    monkeypatch.setattr(_answers, "ANSWER_KEYS", kept)
    without = {
        (t.trace_id, a.id): a.output
        for t in traces_from_otlp(path)
        for a in t.agent_instance_by_id.values()
    }
    assert any(without[(trace_id, a.id)] != a.output for trace_id, a in agents)
