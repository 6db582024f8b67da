"""A stored trace read back for the trace page (`server.stored.read_trace`): the same trace
`from_json` gives, with the work done linear in what each call adds to the conversation,
not in the conversation it resends (issue #32: the page was quadratic in an agent's
calls). The work is counted, not timed: the characters left to parse and validate, and
the page's bytes, as an agent's calls double."""

from __future__ import annotations

import json

from tests.checks import faults
from tracejudge.models import AgentInstance, MultiAgentTrace
from tracejudge.report import render_trace_page
from tracejudge.server.store.stored import read_trace, repeated_input_text


def _long(rounds: int) -> str:
    """The stored JSON of one chat agent of `rounds` tool calls, each call resending the
    whole conversation."""
    return MultiAgentTrace.from_agent(faults.long_agent(rounds)).to_json()


def test_the_work_grows_with_the_calls_not_with_the_conversation_they_resend() -> None:
    stored, parsed, pages = [], [], []
    for rounds in (50, 100, 200):
        text = _long(rounds)
        trimmed = repeated_input_text(text)
        assert trimmed is not None
        trace = read_trace(text)
        assert trace.to_json() == text
        stored.append(len(text))
        parsed.append(len(trimmed[0]))
        pages.append(len(render_trace_page(trace, []).encode()))
    for before, after in zip(range(2), range(1, 3), strict=True):
        # what is stored grows with the square of the calls (the shape under test) ...
        assert stored[after] / stored[before] > 3.5
        # ... what is parsed and validated, and the page, with the calls
        assert parsed[after] / parsed[before] < 2.2
        assert pages[after] / pages[before] < 2.2


def test_each_call_keeps_its_whole_input_and_shares_the_previous_calls_messages() -> None:
    text = _long(6)
    calls = read_trace(text).root.llm_interactions
    full = MultiAgentTrace.from_json(text).root.llm_interactions
    assert [c.input_messages for c in calls] == [c.input_messages for c in full]
    assert len(calls[5].input_messages) == len(calls[4].input_messages) + 2
    assert calls[5].input_messages[0] is calls[4].input_messages[0]  # shared, not copied
    _, marks = repeated_input_text(text) or ("", [])
    assert marks == [False] + [True] * (len(calls) - 1)


def test_only_a_repeat_character_for_character_is_left_out() -> None:
    """A call whose input differs (a rewritten history, text that looks like the key inside
    a message, another agent's call that starts the same) still reads back exactly."""
    data = json.loads(_long(5))
    (agent,) = data["agent_instance_by_id"].values()
    calls = agent["interactions"]
    calls[2]["input_messages"][0]["content"] = 'look: {"input_messages":[0,1]}'
    calls[3]["input_messages"][0]["content"] = 'look: {"input_messages":[0,1]}'
    twin = dict(agent, id="twin", name="twin", interactions=calls[-1:])
    agent["interactions"] = [*calls, "twin"]
    data["agent_instance_by_id"]["twin"] = twin
    trace = MultiAgentTrace.model_validate(data)
    text = trace.to_json()
    _, marks = repeated_input_text(text) or ("", [])
    # calls 2 and 3 were rewritten (3 repeats 2, 4 repeats neither); the twin's call is
    # the last one
    assert marks == [False, True, False, True, False, True, True]
    read = read_trace(text)
    assert read == trace and read.to_json() == text
    looks = read.root.llm_interactions[3].input_messages[0].content
    assert looks == 'look: {"input_messages":[0,1]}'
    twin_call = read.agent_instance_by_id["twin"].llm_interactions[0]
    assert twin_call.input_messages[-1] is read.root.llm_interactions[-1].input_messages[-1]


def test_a_trace_not_written_compactly_is_read_whole() -> None:
    trace = MultiAgentTrace.from_agent(faults.long_agent(4))
    text = trace.to_json(indent=2)
    assert repeated_input_text(text) is None
    assert read_trace(text) == trace
    single = MultiAgentTrace.from_agent(AgentInstance(id="a", name="a"))
    assert repeated_input_text(single.to_json()) is None
    assert read_trace(single.to_json()) == single
