"""Each instrumentation's recording of the shared scenario converts to the same trace.

Per-instrumentation differences (all the instrumentations' own; see _helpers):

| recording            | tools offered | content from                    | Responses API          |
|----------------------|---------------|---------------------------------|------------------------|
| openllmetry          | yes           | span attributes (JSON strings)  | yes, `fc_` ids joined  |
| openllmetry_legacy   | yes           | indexed span attributes (0.54)  | inputs lose tool items |
| openllmetry_events   | no            | log records; results lack ids   | not recorded here      |
| openinference        | yes           | flattened span attributes       | yes                    |
| genai_semconv        | no            | span attributes (span_only)     | not instrumented       |
| genai_semconv_events | no            | log records, structured values  | not instrumented       |
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import scenario
from tests.convert._helpers import (
    INSTRUMENTATIONS,
    Instrumentation,
    attr,
    canonical,
    fixture,
    json_requests,
    json_spans,
)
from tracejudge import semconv
from tracejudge.convert import traces_from_otlp
from tracejudge.models import MultiAgentTrace

QUESTION = "What is the weather in San Francisco?"
ORCHESTRATOR_SYSTEM = "You coordinate a researcher and a writer."
RESEARCHER_SYSTEM = "You research with tools."


def _call(call_id: str, name: str, args: dict[str, Any]) -> tuple[str, ...]:
    return ("call", call_id, name, args)  # type: ignore[return-value]


def _result(call_id: str, name: str, args: dict[str, Any]) -> tuple[str, ...]:
    return ("result", call_id, name, scenario.TOOL_RESULTS[name](args))


SEARCH_1 = {"query": "sf weather"}
SEARCH_2 = {"query": "san francisco forecast"}
FETCH = {"url": "https://example.org/sf"}
TOOLS = [
    (t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
    for t in scenario.RESEARCH_TOOLS
]


def expected_scenario(*, tools: bool) -> list[Any]:
    """The trace tests/scenario.py makes, in the form of `canonical`."""
    research_tools = TOOLS if tools else None
    system_r = [("system", ("text", RESEARCHER_SYSTEM)), ("user", ("text", QUESTION))]
    round_1 = [
        ("assistant", _call("call_s1", "search", SEARCH_1)),
        ("assistant", _call("call_s2", "search", SEARCH_2)),
        ("tool", _result("call_s1", "search", SEARCH_1)),
        ("tool", _result("call_s2", "search", SEARCH_2)),
    ]
    round_2 = [
        ("assistant", _call("call_f1", "fetch_page", FETCH)),
        ("tool", _result("call_f1", "fetch_page", FETCH)),
    ]
    orchestrator_in = [("system", ("text", ORCHESTRATOR_SYSTEM)), ("user", ("text", QUESTION))]
    return [
        (
            "orchestrator",
            [
                {"in": orchestrator_in, "out": [("text", scenario.PLAN)], "tools": None},
                ("agent", "researcher"),
                ("agent", "writer"),
                {
                    "in": orchestrator_in
                    + [
                        ("assistant", ("text", scenario.PLAN)),
                        ("user", ("text", f"Writer said: {scenario.REPORT}")),
                    ],
                    "out": [("text", scenario.FINAL)],
                    "tools": None,
                },
            ],
        ),
        (
            "researcher",
            [
                {
                    "in": system_r,
                    "out": [
                        _call("call_s1", "search", SEARCH_1),
                        _call("call_s2", "search", SEARCH_2),
                    ],
                    "tools": research_tools,
                },
                {
                    "in": system_r + round_1,
                    "out": [_call("call_f1", "fetch_page", FETCH)],
                    "tools": research_tools,
                },
                {
                    "in": system_r + round_1 + round_2,
                    "out": [("text", scenario.FINDINGS)],
                    "tools": research_tools,
                },
            ],
        ),
        (
            "writer",
            [
                {
                    "in": [("user", ("text", f"Summarise: {scenario.FINDINGS}"))],
                    "out": [("text", scenario.REPORT)],
                    "tools": None,
                }
            ],
        ),
    ]


def _pb(inst: Instrumentation) -> list[MultiAgentTrace]:
    logs = fixture(inst.name, ".logs.pb") if inst.logs else None
    return traces_from_otlp(fixture(inst.name, ".pb"), logs=logs)


def _jsonl(inst: Instrumentation) -> list[MultiAgentTrace]:
    return traces_from_otlp(fixture(inst.name, ".jsonl"))


PARAMS = pytest.mark.parametrize("inst", INSTRUMENTATIONS, ids=lambda i: i.name)


@PARAMS
def test_protobuf_and_json_fixtures_convert_to_the_same_trace(inst: Instrumentation) -> None:
    from_pb, from_json = _pb(inst), _jsonl(inst)
    assert len(from_pb) == len(from_json) == 1
    assert from_pb[0].to_wire() == from_json[0].to_wire()
    assert from_pb[0].warnings == from_json[0].warnings == []


@PARAMS
def test_recording_converts_to_the_scenario(inst: Instrumentation) -> None:
    (trace,) = _jsonl(inst)
    assert canonical(trace) == expected_scenario(tools=inst.tools)


@PARAMS
def test_agent_ids_come_from_the_agent_spans(inst: Instrumentation) -> None:
    (trace,) = _jsonl(inst)
    agent_ids = {
        attr(span, semconv.GEN_AI_AGENT_NAME): attr(span, semconv.GEN_AI_AGENT_ID)
        for span in json_spans(json_requests(inst.name))
        if attr(span, semconv.GEN_AI_OPERATION_NAME) == semconv.OPERATION_INVOKE_AGENT
    }
    assert set(agent_ids) == {"orchestrator", "researcher", "writer"}
    # All model calls are under the orchestrator: it is the root, no implicit root agent.
    assert trace.root_agent_instance_id == agent_ids["orchestrator"]
    assert {a.name: a.id for a in trace.iter_agents()} == agent_ids
    assert list(trace.agent_instance_by_id) == [
        agent_ids[n] for n in ("orchestrator", "researcher", "writer")
    ]


@PARAMS
def test_interactions_carry_model_usage_and_times_in_order(inst: Instrumentation) -> None:
    (trace,) = _jsonl(inst)
    for agent in trace.iter_agents():
        starts = [i.start_time for i in agent.llm_interactions]
        assert all(s is not None for s in starts)
        assert starts == sorted(starts)
        for interaction in agent.llm_interactions:
            assert interaction.model == "scripted-model"
            assert (
                interaction.end_time is not None and interaction.end_time >= interaction.start_time
            )
            assert interaction.error is None
            usage = interaction.usage
            assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0
            assert usage.total_tokens == usage.input_tokens + usage.output_tokens


@PARAMS
def test_parallel_tool_calls_survive_conversion(inst: Instrumentation) -> None:
    (trace,) = _jsonl(inst)
    researcher = next(a for a in trace.iter_agents() if a.name == "researcher")
    first, second, _ = researcher.llm_interactions
    assert [c.id for c in first.tool_calls] == ["call_s1", "call_s2"]
    calls = [m.content for m in second.input_messages if m.type == "tool_call"]
    results = [m.content for m in second.input_messages if m.type == "tool_response"]
    assert [c.id for c in calls] == [r.id for r in results] == ["call_s1", "call_s2"]
    assert [json.loads(c.parameters) for c in calls] == [SEARCH_1, SEARCH_2]
    assert [r.name for r in results] == ["search", "search"]


def test_conventions_agree_with_each_other() -> None:
    forms = {inst.name: canonical(_jsonl(inst)[0], tools=False) for inst in INSTRUMENTATIONS}
    reference = forms.pop("openllmetry")
    for name, form in forms.items():
        assert form == reference, name


def test_usage_is_the_same_whichever_instrumentation_recorded_it() -> None:
    usages = {}
    for inst in INSTRUMENTATIONS:
        (trace,) = _jsonl(inst)
        usages[inst.name] = [
            (i.usage.input_tokens, i.usage.output_tokens)
            for agent in trace.iter_agents()
            for i in agent.llm_interactions
            if i.usage is not None
        ]
    assert len({tuple(u) for u in usages.values()}) == 1, usages
