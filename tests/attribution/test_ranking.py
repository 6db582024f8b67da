"""How the deterministic causes are ranked: the earliest root cause before what follows
from it (a bad argument, the tool error after it, the invented number, the cut-off
answer), a child agent's fault before the parent's that relayed it, and the step order
that ranking reads (tree order, or start times when every call has one)."""

from __future__ import annotations

import json
from typing import Any

from tracejudge.evaluation.attribution import AttributionRequest, trace_steps
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import AgentInstance, Attribution, MultiAgentTrace

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _call(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(arguments)},
            }
        ],
    }


def _result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _agent(
    agent_id: str, name: str, messages: list[dict[str, Any]], **options: Any
) -> AgentInstance:
    return AgentInstance.from_chat_session(messages, id=agent_id, name=name, **options)


def _tree(root: AgentInstance, children: list[AgentInstance], *, at: int = 1) -> MultiAgentTrace:
    """`root` with its children run after its model call `at - 1`."""
    root.interactions[at:at] = [child.id for child in children]
    agents = {a.id: a for a in [root, *children]}
    return MultiAgentTrace(root_agent_instance_id=root.id, agent_instance_by_id=agents)


async def _attribute(trace: MultiAgentTrace) -> Attribution:
    return await EvaluationService().attribute(AttributionRequest(trace=trace))


def _ranked(attribution: Attribution) -> list[tuple[str, int | None, str, int | None]]:
    return [
        (c.agent_name, c.step.interaction if c.step else None, c.criteria[0], c.consequence_of)
        for c in attribution.causes
    ]


def _orchestrator(answer: str, *, cut: bool) -> AgentInstance:
    orchestrator = _agent(
        "o1",
        "orchestrator",
        [
            {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": "I will ask the researcher."},
            {"role": "user", "content": f"Researcher said: {answer}"},
            {"role": "assistant", "content": answer[: len(answer) // 2] if cut else answer},
        ],
    )
    if cut:
        orchestrator.llm_interactions[-1].finish_reason = "length"
    return orchestrator


async def test_a_root_cause_ranks_before_the_faults_that_follow_it() -> None:
    researcher = _agent(
        "r1",
        "researcher",
        [
            {"role": "system", "content": "You research with tools."},
            {"role": "user", "content": "Weather in Paris?"},
            _call("call_1", {"unit": "C"}),  # no city: the root cause
            _result("call_1", "ValueError: invalid arguments for get_weather"),
            _call("call_2", {"city": "Paris"}),
            _result("call_2", json.dumps({"error": "upstream timeout"})),
            {"role": "assistant", "content": "It is 31 °C in Paris."},  # nothing said 31
        ],
        tools=[WEATHER],
    )
    orchestrator = _orchestrator("It is 31 °C in Paris, sunny all day.", cut=True)
    attribution = await _attribute(_tree(orchestrator, [researcher]))
    assert _ranked(attribution) == [
        ("researcher", 0, "tool_arguments", None),
        ("researcher", 1, "tool_results", 1),
        ("researcher", 2, "grounded_numbers", 1),
        ("orchestrator", 1, "final_answer", 1),
    ]
    first, *rest = attribution.causes
    assert first.step is not None and first.step.tool_call_id == "call_1"
    assert "missing required property 'city'" in first.evidence
    assert [c.index for c in attribution.causes] == [1, 2, 3, 4]
    assert all(c.confidence < first.confidence for c in rest)
    assert len(attribution.failures) == 4 and attribution.steps == 5


async def test_a_child_fault_ranks_before_the_parent_that_relayed_it() -> None:
    researcher = _agent(
        "r1",
        "researcher",
        [
            {"role": "user", "content": "Weather in Paris?"},
            _call("call_1", {"city": "Paris"}),
            _result("call_1", json.dumps({"temperature": 18, "conditions": "sunny"})),
            {"role": "assistant", "content": "Paris is sunny at 18"},
        ],
        tools=[WEATHER],
    )
    researcher.llm_interactions[-1].finish_reason = "length"  # its findings were cut off
    orchestrator = _orchestrator("Paris is sunny at 18", cut=True)
    attribution = await _attribute(_tree(orchestrator, [researcher]))
    assert _ranked(attribution) == [
        ("researcher", 1, "final_answer", None),
        ("orchestrator", 1, "final_answer", 1),
    ]


def _timed(agent: AgentInstance, starts: list[float]) -> AgentInstance:
    for interaction, start in zip(agent.llm_interactions, starts, strict=True):
        interaction.start_time, interaction.end_time = start, start + 0.5
    return agent


def _cut_answer(agent_id: str, name: str) -> AgentInstance:
    agent = _agent(
        agent_id,
        name,
        [
            {"role": "user", "content": "Summarise."},
            {"role": "assistant", "content": "Working on it."},
            {"role": "user", "content": "Go on."},
            {"role": "assistant", "content": "The summary is"},
        ],
    )
    agent.llm_interactions[-1].finish_reason = "length"
    return agent


async def test_agents_that_ran_side_by_side_are_ordered_by_start_time() -> None:
    first = _timed(_cut_answer("a1", "alpha"), [10.0, 14.0])  # cut off last
    second = _timed(_cut_answer("b1", "beta"), [11.0, 12.0])  # cut off first
    root = _timed(
        _agent(
            "o1",
            "lead",
            [{"role": "user", "content": "Go"}, {"role": "assistant", "content": "ok"}],
        ),
        [9.0],
    )
    trace = _tree(root, [first, second])
    steps = trace_steps(trace)
    assert [(s.agent.name, s.interaction) for s in steps] == [
        ("lead", 0),
        ("alpha", 0),
        ("beta", 0),
        ("beta", 1),
        ("alpha", 1),
    ]
    attribution = await _attribute(trace)
    assert [(c.agent_name, c.index) for c in attribution.causes] == [("beta", 3), ("alpha", 4)]
    # Siblings are not each other's lineage: the later one is not called a consequence.
    assert attribution.causes[1].consequence_of is None


def test_without_times_steps_follow_the_tree() -> None:
    first = _cut_answer("a1", "alpha")
    second = _cut_answer("b1", "beta")
    root = _agent(
        "o1",
        "lead",
        [
            {"role": "user", "content": "Go"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "Done?"},
            {"role": "assistant", "content": "Done."},
        ],
    )
    trace = _tree(root, [first, second])
    assert [(s.index, s.agent.name, s.interaction) for s in trace_steps(trace)] == [
        (0, "lead", 0),
        (1, "alpha", 0),
        (2, "alpha", 1),
        (3, "beta", 0),
        (4, "beta", 1),
        (5, "lead", 1),
    ]
