"""What the converter remembers between spans (a key's verdict, a finish reason's text, the
table's rows for a scope) gives what reading afresh gives, whatever was read before."""

from __future__ import annotations

from tracejudge.convert._agent_names import named_keys, names_an_agent
from tracejudge.convert._common import finish_reason
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import TABLE, _Rows


def test_a_key_first_seen_without_text_still_names_an_agent_later() -> None:
    # (the key is remembered as naming a run although its first value named nothing)
    key = "remembered_test.agent_name"
    assert named_keys({key: 7, "remembered_test.other": "x"}) == []
    assert named_keys({key: "planner", "remembered_test.other": "x"}) == [(0, key, "planner")]
    assert names_an_agent(key) and names_an_agent(key)


def test_keys_that_name_nothing_stay_silent_and_metadata_is_still_read() -> None:
    assert named_keys({"remembered_test.colour": "blue"}) == []
    assert named_keys({"remembered_test.colour": "green"}) == []
    attributes = {"remembered_test.metadata": '{"node": "researcher", "agent_id": "r1"}'}
    found = named_keys(attributes)
    assert found == named_keys(dict(attributes))
    assert [name for _, _, name in found] == ["researcher", "r1"]  # (by rank: a node before an id)


def test_a_finish_reason_reads_the_same_the_second_time() -> None:
    for text, expected in [
        ("FinishReason.TOOL_CALLS", "tool_calls"),
        ("end_turn", "stop"),
        ("refusal", "refusal"),
        ("", None),
    ]:
        assert finish_reason(text) == expected
        assert finish_reason(text) == expected
    assert finish_reason(None) is None


def _span(scope: str | None, attributes: dict[str, object], name: str = "step") -> SpanView:
    return SpanView(SpanRecord("1" * 32, "2" * 16, None, name, scope=scope, attributes=attributes))


def test_the_rows_kept_for_a_scope_are_those_a_fresh_table_gives() -> None:
    kept = _Rows(TABLE)
    spans = [
        _span("semantic_kernel.functions.kernel_function", {}),
        _span("semantic_kernel.functions.kernel_function", {"a": 1}),
        _span("semantic_kernel.functions.kernel_function", {"gen_ai.tool.type": "function"}),
        _span(None, {}),
        _span("an.unknown.scope", {}),
    ]
    for span in spans * 2:  # (the second time from what the first remembered)
        assert kept.rows(span) == _Rows(TABLE).rows(span)
