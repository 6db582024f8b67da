"""Agno, a framework no row of the conventions table names, read by the phases that apply to
every producer (tests/fixtures/frameworks/programs_agno.py: a `Team` whose leader delegates
to a member agent that calls `get_weather`, and a single agent with that tool).

Under OpenLLMetry's Agno instrumentation each agent's run is a span that names the agent,
its model and the tokens of all its calls (`weather_agent.agent`), and the calls are the
openai client's spans below it: the catch-all row's "model and tokens: one call" does not
hold for it (`convert/_infer_summaries.py`). Its team's span is named `weather_team.team`,
the team's name in `agno.team.name` (`convert/_agent_names.py`: a key naming a team gives
an agent name).
"""

from __future__ import annotations

import pytest

from tests.convert._helpers import agent_tree, only_recording
from tests.fixtures.frameworks import expectations
from tracejudge.convert import conventions
from tracejudge.convert._agent_names import agent_name, names_an_agent

AGNO = [
    "agno_agent_openinference",
    "agno_agent_openllmetry",
    "agno_team_openinference",
    "agno_team_openllmetry",
]


@pytest.mark.parametrize("name", AGNO)
def test_every_fact_of_the_agno_programs_holds_with_no_row_of_its_own(name: str) -> None:
    facts = expectations.facts(name, expectations.convert(name))
    assert [text for text, holds in facts if not holds] == []


def test_an_agent_run_that_totals_its_calls_is_the_agent_not_a_call() -> None:
    # `weather_assistant.agent` names the model and counts 79 tokens, the sum of the two
    # openai.chat spans below it: read as a call, the run made three calls, in `root`.
    trace = only_recording("agno_agent_openllmetry")
    assert agent_tree(trace) == [("weather_assistant", None, 2)]
    (agent,) = trace.iter_agents()
    assert [len(i.tool_calls) for i in agent.llm_interactions] == [1, 0]
    assert agent.final_output == "It is sunny and 22 C in Paris."


def test_a_team_span_is_named_by_its_team_name_key() -> None:
    # The span is `weather_team.team`; `agno.team.name` names the team.
    assert agent_tree(only_recording("agno_team_openllmetry")) == [
        ("weather_team", None, 2),
        ("weather_agent", "weather_team", 2),
    ]


def test_the_agno_team_holds_every_fact_without_openllmetrys_framework_row() -> None:
    # Without the row that reads OpenLLMetry's `traceloop.span.kind`, the team is the span
    # that names a team around the calls, and each agent the span naming it.
    name = "agno_team_openllmetry"
    with conventions.rows_removed(conventions.TRACELOOP):
        facts = expectations.facts(name, expectations.convert(name))
    assert [text for text, holds in facts if not holds] == []


@pytest.mark.parametrize("name", ["adk1_stream", "adk1_agent_tool", "adk_stream_v1"])
def test_a_span_the_catch_all_reads_around_one_call_stays_that_call(name: str) -> None:
    # Without Google ADK's row, its `call_llm` spans are the catch-all's calls, each around
    # the one `generate_content` span that records the same call: one call, not a run.
    with conventions.rows_removed(conventions.ADK):
        facts = expectations.facts(name, expectations.convert(name))
    assert [text for text, holds in facts if not holds] == []


@pytest.mark.parametrize(
    ("attributes", "name"),
    [
        ({"agno.team.name": "weather_team"}, "weather_team"),
        ({"team_id": "research"}, "research"),
        ({"steam.name": "kettle"}, None),  # a word, not `team`
    ],
)
def test_a_key_naming_a_team_gives_an_agent_name(
    attributes: dict[str, object], name: str | None
) -> None:
    assert agent_name(attributes) == name


def test_a_team_key_names_a_run_of_agents_not_an_agent() -> None:
    # (an agent inside an agent's span is its child; a team holds its members)
    assert not names_an_agent("agno.team.name")
    assert names_an_agent("gen_ai.agent.name")


def test_inspect_reads_the_agent_run_as_the_agent_not_a_call() -> None:
    from tracejudge.convert import inspect_otlp
    from tracejudge.convert.conventions import Kind

    (trace,) = inspect_otlp(expectations.FIXTURES / "agno_team_openllmetry.pb").traces
    by_name = {span.name: span for span in trace.read}
    run = by_name["weather_agent.agent"]
    assert run.kind == Kind.AGENT
    agents = {agent.id: agent.name for agent in trace.agents}
    assert agents[run.agent or ""] == "weather_agent"
    assert sum(span.kind == Kind.MODEL_CALL for span in trace.read) == 4  # as many as made
