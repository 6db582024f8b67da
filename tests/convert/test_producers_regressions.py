"""Two regressions on frameworks already supported, read from live recordings
(tests/fixtures/frameworks/programs_regressions.py).

* openai-agents + OpenLLMetry, Responses API, three parallel function calls: OpenLLMetry's
  openai_agents instrumentation writes each output item as its own message in
  `gen_ai.output.messages`. One Responses answer is one answer: all three calls are kept,
  in order, and none is an "alternative" (an `n` > 1 Chat Completions answer still gives
  alternatives: the replayed `*-multiple-choices` cassettes in tests/replay check that).
* pydantic-ai, an unnamed agent (`agent`) whose tool runs another unnamed agent: the inner
  agent is a child of the outer one (same-name folding is for a direct child only, never
  across a tool run or a model call), and each keeps its own calls.
* openai-agents + OpenLLMetry, a manager that calls a translator agent as a tool
  (`Agent.as_tool`), Responses API and streamed: OpenLLMetry records the translator's agent
  span beside the manager's, under the workflow. Run within the manager's tool run, it is
  the manager's child, and the user's answer is the manager's last one, not "Bonjour".
"""

from __future__ import annotations

import json

import pytest

from tests.convert.test_frameworks import FIXTURES, converted, framework_root
from tests.fixtures.frameworks.programs import QUESTION, get_weather_result
from tests.fixtures.frameworks.programs_regressions import (
    CITIES,
    PARALLEL_ANSWER,
    UNNAMED,
    UNNAMED_ANSWER,
    UNNAMED_NOTE,
)
from tracejudge.convert import inspect_otlp
from tracejudge.models import LLMInteraction, LLMToolResponse


def responses(interaction: LLMInteraction) -> list[LLMToolResponse]:
    """The tool results in the call's input."""
    return [m.content for m in interaction.input_messages if isinstance(m.content, LLMToolResponse)]


PARALLEL = ["openai_agents_openllmetry_parallel", "openai_agents_openllmetry_parallel_composed"]
UNNAMED_RECORDINGS = ["pydantic_ai_unnamed", "pydantic_ai_unnamed_composed"]


@pytest.mark.parametrize("name", PARALLEL)
def test_parallel_function_calls_of_one_responses_answer_are_all_kept(name: str) -> None:
    trace = converted(name)
    agent = framework_root(trace, name.endswith("_composed"))
    if agent.name != "weather_agent":  # the Agents SDK's workflow wraps the agent
        (child,) = agent.child_ids
        agent = trace.agent_instance_by_id[child]
    first, last = agent.llm_interactions
    calls = [(c.id, c.name, json.loads(c.parameters)) for c in first.tool_calls]
    assert calls == [
        (f"call_w{n}", "get_weather", {"city": city}) for n, city in enumerate(CITIES, 1)
    ]
    assert not first.alternatives
    assert first.finish_reason == "tool_calls"
    # Each result is in the next call's input, joined to its call by id.
    results = {r.id: r.response for r in responses(last)}
    assert results == {f"call_w{n}": get_weather_result(city) for n, city in enumerate(CITIES, 1)}
    assert agent.final_output == trace.final_output == PARALLEL_ANSWER


@pytest.mark.parametrize("name", UNNAMED_RECORDINGS)
def test_an_unnamed_agent_run_by_a_tool_of_an_unnamed_agent_is_its_child(name: str) -> None:
    trace = converted(name)
    outer = framework_root(trace, name.endswith("_composed"))
    assert outer.name == UNNAMED
    (inner_id,) = outer.child_ids
    inner = trace.agent_instance_by_id[inner_id]
    assert inner.name == UNNAMED and not inner.child_ids

    # The outer agent's calls are its own two: the tool call and the answer.
    asked, answered = outer.llm_interactions
    assert [(c.id, c.name) for c in asked.tool_calls] == [("call_ask", "ask_helper")]
    assert [r.response for r in responses(answered)] == [UNNAMED_NOTE]
    assert outer.final_output == trace.final_output == UNNAMED_ANSWER
    # The inner agent's are the other two: it was asked the question by the tool.
    looked_up, noted = inner.llm_interactions
    assert any(m.content == QUESTION for m in looked_up.input_messages)
    assert [c.name for c in looked_up.tool_calls] == ["get_weather"]
    assert inner.final_output == UNNAMED_NOTE


AS_TOOL = [
    f"openai_agents_openllmetry_as_tool{variant}{twin}"
    for variant in ("", "_stream")
    for twin in ("", "_composed")
]


@pytest.mark.parametrize("name", AS_TOOL)
def test_an_agent_run_as_a_tool_is_the_callers_child_and_not_the_answer(name: str) -> None:
    trace = converted(name)
    (manager,) = [a for a in trace.iter_agents() if a.name == "manager"]
    (translator,) = [a for a in trace.iter_agents() if a.name == "translator"]
    assert manager.child_ids == [translator.id]
    # Placed after the manager's tool call, before its answer.
    kinds = ["child" if isinstance(i, str) else "call" for i in manager.interactions]
    assert kinds == ["call", "child", "call"]
    assert translator.final_output == "Bonjour"
    assert trace.final_output == manager.final_output == "In French, hello is: Bonjour."


def test_a_tool_span_of_another_producer_is_not_read_as_google_adk() -> None:
    """OpenLLMetry's (and the AI SDK 7's) `execute_tool` spans carry the GenAI
    `gen_ai.tool.type`: the GenAI row reads them, not Google ADK's."""
    for name in ("openai_agents_openllmetry_as_tool", "vercel_v7_otel_generate"):
        (report,) = inspect_otlp(FIXTURES / f"{name}.pb").traces
        conventions = {c for p in report.producers for c in p.conventions}
        assert "google-adk" not in conventions, (name, conventions)
        assert "genai" in conventions
