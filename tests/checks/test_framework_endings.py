"""The checks on traces of real agent-framework programs (tests/fixtures/frameworks): a
hand-off and a `final_answer` tool call are proper endings, a routing decision is not an
answer, and a program that did nothing wrong fails no check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracejudge import checks
from tracejudge.convert import traces_from_otlp
from tracejudge.models import MultiAgentTrace, is_routing_decision

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
RECORDINGS = sorted(path.name[: -len(".meta.json")] for path in FIXTURES.glob("*.meta.json"))
#: The instrumentation recorded no outputs (the converter warns; see test_frameworks), or
#: (OpenInference's Haystack spans) no tool result's text: the researcher's "22 C" comes
#: from a `get_weather` result no span holds, which `grounded_numbers` cannot find (their
#: composed twins, whose client spans record it, are checked here).
INCOMPLETE = {
    "openai_agents_openllmetry_chat",
    "haystack_agent_tool",
    "haystack_pipeline_agent_tool",
}
#: Recordings whose agents, with no agent span, would be read as one (issue #30's pattern 1
#: tells DSPy's two ReAct agents apart by their prompts: none left).
NEEDS_AGENT_INFERENCE: set[str] = set()


def trace_of(name: str) -> MultiAgentTrace:
    (trace,) = [t for t in traces_from_otlp(FIXTURES / f"{name}.pb") if t.has_llm_interactions]
    return trace


def final_answer_scores(trace: MultiAgentTrace) -> dict[str, list[float | None]]:
    scores: dict[str, list[float | None]] = {}
    for agent_id, score in checks.final_answer.evaluate(trace).items():
        name = trace.agent_instance_by_id[agent_id].name
        scores.setdefault(name, []).append(None if score is None else score.score)
    return scores


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason="needs pattern 1 from h-infer"))
        if n in NEEDS_AGENT_INFERENCE
        else n
        for n in RECORDINGS
        if n not in INCOMPLETE
    ],
)
def test_no_check_fails_a_program_that_did_nothing_wrong(name: str) -> None:
    trace = trace_of(name)
    for check in checks.ALL:
        for agent_id, score in check.evaluate(trace).items():
            agent = trace.agent_instance_by_id[agent_id].name
            if score is None or score.score is None:
                continue
            assert score.score == 1.0, (name, check.name, agent, score.explanation)


def _hands_off(name: str) -> bool:
    """Whether the recording's program is the Agents SDK's triage hand-off."""
    from tests.fixtures.frameworks.programs import PROGRAMS

    meta = json.loads((FIXTURES / f"{name}.meta.json").read_text(encoding="utf-8"))
    agents = PROGRAMS[meta["program"]].expected.agents
    return meta["program"].startswith("openai_agents") and any(a[0] == "triage" for a in agents)


@pytest.mark.parametrize("name", [n for n in RECORDINGS if _hands_off(n)])
def test_a_handoff_is_a_proper_ending(name: str) -> None:
    trace = trace_of(name)
    (triage,) = [a for a in trace.iter_agents() if a.name == "triage"]
    score = checks.final_answer.evaluate(trace)[triage.id]
    if name in INCOMPLETE:
        # No output was recorded: the empty answer fails, and the converter said why.
        assert score is not None and score.score == 0.0
        assert trace.warnings
        return
    assert score is not None and score.score is None
    assert "handed off to weather_specialist" in score.explanation
    assert final_answer_scores(trace)["weather_specialist"] == [1.0]


@pytest.mark.parametrize("name", [n for n in RECORDINGS if "escalate" in n])
def test_a_handoff_span_is_a_proper_ending_whatever_the_tool_is_called(name: str) -> None:
    """Triage hands off through `escalate_to_weather` (not `transfer_to_<agent>`): only the
    hand-off span says it handed off. The specialist's tool result ended the run
    (`stop_on_first_tool`): recorded by its tool span, it is the specialist's answer."""
    trace = trace_of(name)
    by_name = {a.name: a for a in trace.iter_agents()}
    results = checks.final_answer.evaluate(trace)
    triage = results[by_name["triage"].id]
    assert triage is not None and triage.score is None
    assert "handed off to weather_specialist (a hand-off span recorded it)" in triage.explanation
    specialist = results[by_name["weather_specialist"].id]
    assert specialist is not None and specialist.score == 1.0, specialist
    assert "Sunny, 22 C in Paris" in specialist.explanation
    counted = checks.tool_results.evaluate(trace)[by_name["weather_specialist"].id]
    assert counted is not None and counted.score == 1.0
    assert "1 of 1 tool call got a result" in counted.explanation
    # Without the hand-off span, the renamed hand-off is a dangling call.
    by_name["triage"].handoff = None
    dangling = checks.final_answer.evaluate(trace)[by_name["triage"].id]
    assert dangling is not None and dangling.score == 0.0


def test_a_call_to_a_managed_agent_is_a_call_to_a_known_tool() -> None:
    """OpenInference leaves smolagents' managed agents out of the manager's recorded tools;
    a call named after a child agent that ran is a call to it, not to an unknown tool."""
    trace = trace_of("smolagents_openinference")
    (manager,) = [a for a in trace.iter_agents() if a.name == "manager"]
    assert "web_agent" not in {t.name for t in manager.llm_interactions[0].tools_available or []}
    score = checks.tool_arguments.evaluate(trace)[manager.id]
    assert score is not None and score.score == 1.0, score.explanation
    # A call to a tool that is neither offered nor a child agent is still invalid.
    manager.llm_interactions[0].tool_calls[0].name = "mail_agent"
    score = checks.tool_arguments.evaluate(trace)[manager.id]
    assert score is not None and score.score == 0.5
    assert "names tool 'mail_agent', which was not available" in score.explanation


@pytest.mark.parametrize("name", [n for n in RECORDINGS if n.startswith("smolagents")])
def test_a_final_answer_tool_call_is_the_answer(name: str) -> None:
    trace = trace_of(name)
    result = checks.final_answer.evaluate(trace)
    for agent in trace.iter_agents():
        if agent.name in ("manager", "web_agent"):
            score = result[agent.id]
            assert score is not None and score.score == 1.0, score
            # (a code agent's last code may run a managed agent before `final_answer`)
            call = agent.llm_interactions[-1].tool_calls[-1]
            assert call.name == "final_answer"
            answer = json.loads(call.parameters)["answer"]
            assert " ".join(answer.split()) in score.explanation  # (quoted on one line)
    # The final_answer calls' results come from their tool spans: counted, not unanswered.
    for agent_id, score in checks.tool_results.evaluate(trace).items():
        if trace.agent_instance_by_id[agent_id].llm_interactions:
            assert score is not None and score.score == 1.0, score
            assert "no result recorded" not in score.explanation


@pytest.mark.parametrize("name", [n for n in RECORDINGS if n.startswith("langgraph")])
def test_a_routing_decision_is_not_an_answer(name: str) -> None:
    trace = trace_of(name)
    scores = final_answer_scores(trace)
    assert scores["supervisor"] == [None, None, None]
    assert scores["writer"] == [1.0] and scores["researcher"] == [1.0]
    assert not is_routing_decision(trace.final_output)
    assert trace.final_output is not None and trace.final_output.startswith("Report:")


def test_routing_decisions() -> None:
    for text in ('{"next": "FINISH"}', '{"next": "writer"}', '{"goto": "a", "reason": "b"}'):
        assert is_routing_decision(text), text
    for text in (
        None,
        "",
        "FINISH",
        '{"answer": "Paris"}',
        '{"next": 3}',
        '["next"]',
        '{"next": "a", "b": 1, "c": 2, "d": 3}',
    ):
        assert not is_routing_decision(text), text


def test_the_judge_sees_results_recorded_by_tool_spans() -> None:
    from tracejudge.evaluation.render import render_agent

    trace = trace_of("openai_agents_openllmetry_escalate")
    (specialist,) = [a for a in trace.iter_agents() if a.name == "weather_specialist"]
    content = render_agent(trace, specialist.id).content
    call = content.index("calls tool get_weather (id call_weather)")
    result = content.index("tool result (get_weather, id call_weather):\nSunny, 22 C in Paris")
    assert call < result
    assert "[judged]" not in content[result:]  # a tool's result is context, not the agent's
