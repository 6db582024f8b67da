"""Bad input gets a typed error naming the field: messages, criteria, tags and traces,
with fixed cases and property-based ones (hypothesis) that also show nothing else escapes
(no RecursionError, KeyError or IsADirectoryError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tracejudge.convert import traces_from_otlp
from tracejudge.errors import BadRequestError
from tracejudge.evaluation import validate_criteria, validate_tags
from tracejudge.models import (
    AgentInstance,
    LLMToolDefinition,
    MultiAgentTrace,
    interactions_from_messages,
)

# The example count comes from the Hypothesis profile (tests/speed.py).
PROPERTIES = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
ANSWER = {"role": "assistant", "content": "Paris."}


# --------------------------------------------------------------------------- messages


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"content": "hi"}, r"messages\[0\]\.role is missing"),
        ({"role": "wizard", "content": "hi"}, r"messages\[0\]\.role is 'wizard'"),
        ({"role": "user", "content": 42}, r"messages\[0\]\.content is int"),
        ({"role": "user", "content": 4.2}, r"messages\[0\]\.content is float"),
        ({"role": "user"}, r"messages\[0\]\.content is missing"),
        ({"role": "tool", "name": 1, "content": "x"}, r"messages\[0\]\.name is int"),
    ],
)
def test_a_malformed_message_is_a_bad_request_naming_its_index_and_field(
    message: dict[str, Any], problem: str
) -> None:
    with pytest.raises(BadRequestError, match=problem):
        interactions_from_messages([message, ANSWER])


def test_an_assistant_message_that_only_calls_tools_may_have_no_content() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ANSWER,
    ]
    assert len(interactions_from_messages(messages)) == 2


_ROLES = st.sampled_from(["system", "user", "assistant", "tool", "developer", "wizard", "", 3])
_CONTENT = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.integers(),
    st.floats(allow_nan=True),
    st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)})),
    st.booleans(),
)
_MESSAGE = st.dictionaries(
    st.sampled_from(["role", "content", "name", "tool_call_id"]), st.one_of(_ROLES, _CONTENT)
)


@PROPERTIES
@given(st.lists(_MESSAGE, max_size=6))
def test_any_message_list_gives_interactions_or_a_bad_request(
    messages: list[dict[str, Any]],
) -> None:
    try:
        interactions = interactions_from_messages(messages)
    except BadRequestError as error:
        assert "messages[" in str(error)
        return
    assert len(interactions) == sum(1 for m in messages if m.get("role") == "assistant")


# --------------------------------------------------------------------------- criteria, tags


@PROPERTIES
@given(
    st.one_of(
        st.none(),
        st.text(max_size=50),
        st.lists(st.one_of(st.text(max_size=30), st.integers(), st.none()), max_size=4),
        st.integers(),
        st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    )
)
def test_any_criteria_give_a_list_or_a_bad_request(criteria: Any) -> None:
    try:
        checked, _ = validate_criteria(criteria)
    except BadRequestError as error:
        assert str(error)
        return
    assert checked and all(isinstance(c, str) and c.strip() for c in checked)


_TAG_VALUES = st.one_of(
    st.text(max_size=80),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@PROPERTIES
@given(
    st.one_of(
        st.none(),
        st.dictionaries(st.one_of(st.text(max_size=80), st.integers()), _TAG_VALUES, max_size=4),
        st.lists(st.integers(), max_size=2),
    )
)
def test_any_tags_give_strings_or_a_bad_request(tags: Any) -> None:
    try:
        checked = validate_tags(tags)
    except BadRequestError as error:
        assert str(error)
        return
    assert checked is None or all(
        isinstance(k, str) and isinstance(v, str) for k, v in checked.items()
    )


# --------------------------------------------------------------------------- traces


def _trace(children: dict[str, list[str]], keys: dict[str, str] | None = None) -> dict[str, Any]:
    keys = keys or {}
    return {
        "root_agent_instance_id": next(iter(children)),
        "agent_instance_by_id": {
            keys.get(agent_id, agent_id): {"id": agent_id, "name": agent_id, "interactions": kids}
            for agent_id, kids in children.items()
        },
    }


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (_trace({"a": ["a"]}), r"cycle \('a' -> 'a'\)"),
        (_trace({"a": ["b"], "b": ["c"], "c": ["a"]}), r"cycle \('a' -> 'b' -> 'c' -> 'a'\)"),
        (_trace({"a": ["ghost"]}), r"interactions\[0\] names the child 'ghost'"),
        (_trace({"a": ["b"], "b": []}, keys={"b": "B"}), r"agent_instance_by_id\['B'\]\.id is 'b'"),
    ],
)
def test_a_malformed_trace_is_a_validation_error_naming_the_ids(
    document: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        MultiAgentTrace.model_validate(document)


def test_deeply_nested_tool_parameters_are_a_validation_error_naming_the_field() -> None:
    schema: dict[str, Any] = {}
    inner = schema
    for _ in range(5000):
        inner["a"] = {}
        inner = inner["a"]
    with pytest.raises(ValidationError, match="parameters"):
        LLMToolDefinition.model_validate({"name": "f", "parameters": schema})


def test_a_directory_given_to_the_converter_is_read_not_raised(tmp_path: Path) -> None:
    result = traces_from_otlp(tmp_path)
    assert result == [] and any("holds no files" in w for w in result.warnings)


@PROPERTIES
@given(
    st.dictionaries(
        st.sampled_from("abcde"),
        st.lists(st.sampled_from("abcdex"), max_size=3),
        min_size=1,
        max_size=5,
    )
)
def test_any_agent_graph_is_a_tree_or_a_validation_error(children: dict[str, list[str]]) -> None:
    try:
        trace = MultiAgentTrace.model_validate(_trace(children))
    except ValidationError as error:
        assert "agent_instance_by_id" in str(error) or "cycle" in str(error)
        return
    seen = [agent.id for agent in trace.iter_agents()]
    assert sorted(seen) == sorted(children)
    assert all(isinstance(trace.agent_instance_by_id[a], AgentInstance) for a in seen)
    json.loads(trace.to_json())
