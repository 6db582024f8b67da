"""The BeeAI Framework, which no row of the conventions table names, read by the phases that
apply to every producer (tests/fixtures/frameworks/programs_beeai.py: a `RequirementAgent`
that hands a task to another through BeeAI's `HandoffTool`, the other calling
`get_weather`, and a single agent with that tool), under OpenInference's BeeAI
instrumentation.

OpenInference's BeeAI spans are read through the OpenInference format alone. What needed
a rule is the composed twin: the instrumentation writes the whole run's spans when the top
run ends, so the openai client's `openai.chat` spans, recorded live while no BeeAI span
existed, sit under tracejudge's `app` span, not in the agents. They are the same calls
(`convert/_merge_within.py`: a record within another's time, of another scope, with the
same token counts, is the same call, and sits where the outer one sits).
"""

from __future__ import annotations

import pytest

from tests.convert._helpers import agent_tree, only_recording
from tests.fixtures.frameworks import expectations
from tracejudge.convert import SpanRecord, _merge, inspect_otlp
from tracejudge.convert._common import Extraction
from tracejudge.convert.conventions import Kind
from tracejudge.models import LLMToolResponse, TokenUsage

RECORDINGS = ["beeai_agent_openinference", "beeai_handoff_openinference"]
COMPOSED = [f"{name}_composed" for name in RECORDINGS]


@pytest.mark.parametrize("name", RECORDINGS + COMPOSED)
def test_every_fact_of_the_beeai_programs_holds_with_no_row_of_its_own(name: str) -> None:
    facts = expectations.facts(name, expectations.convert(name))
    assert [text for text, holds in facts if not holds] == []


def test_the_handoff_runs_the_other_agent_as_the_callers_child() -> None:
    trace = only_recording("beeai_handoff_openinference")
    assert agent_tree(trace) == [("weather_desk", None, 2), ("weather_agent", "weather_desk", 2)]
    desk = trace.root
    (handoff,) = desk.llm_interactions[0].tool_calls
    # BeeAI turned the desk's JSON pick into a call with an id of its own; the tool's
    # result (the weather agent's answer) is joined to it by that id.
    assert (handoff.name, handoff.id.startswith("call_")) == ("weather_agent", True)
    results = [
        m.content
        for m in desk.llm_interactions[1].input_messages
        if isinstance(m.content, LLMToolResponse) and m.content.id == handoff.id
    ]
    assert [r.response for r in results] == ["Paris: sunny, 22 C."]


@pytest.mark.parametrize("name", COMPOSED)
def test_client_calls_recorded_outside_the_late_agent_spans_are_the_agents_calls(
    name: str,
) -> None:
    # Without rule 5 each call counted twice: `app` made the calls again (2 -> 4 calls in
    # the single agent's twin, 4 -> 7 in the hand-off's, one matched by rule 4).
    trace = only_recording(name)
    expected = agent_tree(only_recording(name.removesuffix("_composed")))
    assert agent_tree(trace) == [("app", None, 0)] + [
        (agent, parent or "app", calls) for agent, parent, calls in expected
    ]
    assert trace.final_output == only_recording(name.removesuffix("_composed")).final_output


@pytest.mark.parametrize("name", COMPOSED)
def test_inspect_lists_each_client_span_as_another_record_of_a_call(name: str) -> None:
    (trace,) = inspect_otlp(expectations.FIXTURES / f"{name}.pb").traces
    client = [span for span in trace.read if span.name == "openai.chat"]
    assert client and all(span.kind == Kind.MODEL_CALL for span in client)
    assert len(client) == expectations.meta(name)["model_calls"]
    assert all("another record of a call" in (span.detail or "") for span in client)


def _record(span_id: str, scope: str, start: int, end: int, tokens: tuple[int, int]) -> tuple:
    span = SpanRecord(
        trace_id="t",
        span_id=span_id,
        parent_id=f"above_{span_id}",  # not siblings: rule 3 leaves them apart
        name=span_id,
        start_ns=start,
        end_ns=end,
        scope=scope,
    )
    usage = TokenUsage(input_tokens=tokens[0], output_tokens=tokens[1], total_tokens=sum(tokens))
    return (span, Extraction(model="m", usage=usage))


@pytest.mark.parametrize(
    ("inner", "joined"),
    [
        (_record("client", "openai", 3, 4, (375, 25)), True),
        (_record("client", "openai", 3, 4, (375, 26)), False),  # other tokens
        (_record("client", "openai", 3, 12, (375, 25)), False),  # not within
        (_record("client", "framework", 3, 4, (375, 25)), False),  # one scope
        (_record("client", "openai", 3, 4, (0, 0)), False),  # no tokens counted
    ],
)
def test_rule_5_joins_a_record_within_another_that_counts_the_same_tokens(
    inner: tuple[SpanRecord, Extraction], joined: bool
) -> None:
    outer = _record("framework_call", "framework", 1, 10, (375, 25))
    records = [inner, outer]  # the client's record came first (recorded live)
    calls = _merge.group_calls(records, lambda span: None)
    assert len(calls) == (1 if joined else 2)
    if joined:
        assert not _merge._apart(records, [None, None], lambda span: None)
        (call,) = calls
        assert call.span.span_id == "framework_call"  # where the call sits
