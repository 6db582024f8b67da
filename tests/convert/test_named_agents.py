"""Agents and calls read from the spans' structure with the producer's row taken out of
the table, what the converter makes of a framework nobody added: agents named by the span
that groups their calls (convert/_agent_names.py, _infer_named_agents.py,
_settle_named_agents.py, _infer_pipeline.py), model calls recognised by their shape
(_infer_calls.py), streamed responses recorded apart (_infer_responses.py).

Each recording is a live run of a program whose agents the program names
(tests/fixtures/frameworks/programs*.py); the facts checked are the program's
(`expectations`), never the converter's output.
"""

from __future__ import annotations

import pytest

from tests.convert._helpers import agent_tree
from tests.fixtures.frameworks import expectations
from tracejudge.convert import conventions
from tracejudge.convert._agent_names import agent_name, run_name
from tracejudge.convert._records import SpanRecord
from tracejudge.models import MultiAgentTrace

#: The AI SDK's agent programs (a lead agent whose tool runs a weather agent), one per
#: version and exporter: each names its agents only in `ai.telemetry.functionId`.
AI_SDK_AGENTS = [
    "vercel_v3_agent",
    "vercel_v4_agent",
    "vercel_v5_agent",
    "vercel_v6_agent",
    "vercel_v7_legacy_agent",
]
AI_SDK_SINGLE = ["vercel_v5_generate", "vercel_v6_generate", "vercel_v6_stream"]


def without(row: conventions.Convention, name: str) -> MultiAgentTrace:
    with conventions.rows_removed(row):
        traces = expectations.convert(name)
    return max(traces, key=lambda t: sum(len(a.llm_interactions) for a in t.iter_agents()))


def lost(row: conventions.Convention, name: str) -> list[str]:
    trace = without(row, name)
    return [text for text, holds in expectations.facts(name, [trace]) if not holds]


# --------------------------------------------------------------------------- recordings


@pytest.mark.parametrize("name", AI_SDK_AGENTS)
def test_the_ai_sdk_agents_are_named_by_their_function_id_without_its_row(name: str) -> None:
    trace = without(conventions.VERCEL_AI, name)
    assert agent_tree(trace) == [("lead", None, 2), ("weather_agent", "lead", 2)]
    assert not [f for f in lost(conventions.VERCEL_AI, name) if f.startswith("agent ")]


@pytest.mark.parametrize("name", AI_SDK_SINGLE)
def test_a_lone_ai_sdk_agent_is_the_root_named_by_its_function_id(name: str) -> None:
    trace = without(conventions.VERCEL_AI, name)
    assert agent_tree(trace) == [("weather_agent", None, 2)]


@pytest.mark.parametrize("name", ["logfire_openai_agents", "logfire_openai_agents_stream"])
def test_an_agent_recorded_turn_by_turn_is_one_agent_without_its_row(name: str) -> None:
    """The Agents SDK under logfire, without logfire's row: each turn's span names its
    agent (`agent_name`) and holds that turn's model call; the weather specialist's two
    turns, side by side, are one agent with both calls."""
    trace = without(conventions.LOGFIRE, name)
    assert agent_tree(trace) == [
        ("root", None, 0),
        ("triage", "root", 1),
        ("weather_specialist", "root", 2),
    ]


def test_graph_nodes_are_agents_and_a_subgraphs_nodes_their_steps() -> None:
    """LangGraph under OpenLLMetry without LangGraph's row: each node's spans carry its
    name (`...langgraph_node`) and the graph's (`traceloop.workflow.name`, on every span:
    not a run of its own); the researcher's subgraph nodes (`agent`, `tools`) are steps of
    the researcher node, and the supervisor's three visits three agents."""
    trace = without(conventions.LANGGRAPH, "langgraph_openllmetry")
    names = [row[0] for row in agent_tree(trace)]
    assert names.count("supervisor") == 3
    assert "agent" not in names and "tools" not in names
    assert ("researcher", "supervisor_graph", 2) in agent_tree(trace)


# --------------------------------------------------------------------------- the key rule


@pytest.mark.parametrize(
    ("attributes", "name"),
    [
        ({"ai.telemetry.functionId": "lead"}, "lead"),
        ({"gen_ai.agent.name": "triage"}, "triage"),
        ({"agent_name": "writer"}, "writer"),
        ({"metadata.langgraph_node": "supervisor"}, "supervisor"),
        ({"workflow.name": "report"}, "report"),
        ({"agentName": "planner"}, "planner"),
        # a name is preferred to an id, whatever the order
        ({"gen_ai.agent.id": "planner-1", "gen_ai.agent.name": "planner"}, "planner"),
        # not names of a run
        ({"ai.request.headers.user-agent": "ai/6.0.326"}, None),
        ({"code.function": "_openai_loop"}, None),
        ({"llm.tool_calls.0.tool_call.function.name": "get_weather"}, None),
        ({"gen_ai.agent.id": "01a231f6-addc-7212-bbe2-d194990ca7d7"}, None),
        ({"gen_ai.agent.name": '{"role": "x"}'}, None),
        ({"gen_ai.agent.name": "a\nb"}, None),
        ({"gen_ai.agent.name": "x" * 65}, None),
        ({"function.args": "('What is the weather?',)"}, None),
        ({"gen_ai.tool.name": "get_weather"}, None),
        ({"node.count": 3}, None),
    ],
)
def test_the_agent_name_a_span_gives(attributes: dict[str, object], name: str | None) -> None:
    assert agent_name(attributes) == name


def span(span_id: str, parent: str | None, **attributes: object) -> SpanRecord:
    return SpanRecord("t", span_id, parent, span_id, attributes=dict(attributes))


def test_the_run_name_is_the_outermost_below_the_host_and_one_for_all_calls() -> None:
    spans = {
        s.span_id: s
        for s in (
            span("tool", None, **{"agent.name": "outer"}),
            span("run", "tool", **{"agent.name": "inner"}),
            span("step", "run", **{"node": "step"}),
            span("call1", "step"),
            span("call2", "run"),
            span("other", "tool", **{"agent.name": "else"}),
            span("call3", "other"),
        )
    }
    host, call1, call2, call3 = (spans[k] for k in ("tool", "call1", "call2", "call3"))
    assert run_name(host, [call1, call2], spans) == "outer"
    assert run_name(spans["run"], [call1, call2], spans) == "inner"
    assert run_name(spans["run"], [call1], spans) == "inner"
    assert run_name(spans["step"], [call1], spans) == "step"
    assert run_name(spans["run"], [call1, call3], spans) == "inner"  # call3 is not under it
    two = {**spans, "tool": span("tool", None)}
    assert run_name(two["tool"], [call1, call3], two) is None  # two names: none


def test_a_name_the_caller_gives_too_is_not_the_run_name() -> None:
    spans = {
        s.span_id: s
        for s in (
            span("caller", None, **{"ai.telemetry.functionId": "lead"}),
            span("tool", "caller", **{"ai.telemetry.functionId": "lead"}),
            span("run", "tool", **{"ai.telemetry.functionId": "weather_agent"}),
            span("call", "run"),
        )
    }
    assert run_name(spans["tool"], [spans["call"]], spans) == "weather_agent"


# --------------------------------------------------------------------------- responses apart

LOGFIRE_STREAMS = [
    "logfire_openai_stream",
    "logfire_openai_stream_v1",
    "logfire_openai_responses_stream",
    "logfire_anthropic_stream",
    "logfire_openai_parallel_streams",
]


@pytest.mark.parametrize("name", LOGFIRE_STREAMS)
def test_a_streamed_response_recorded_apart_is_one_call_without_its_row(name: str) -> None:
    """logfire records a streamed call as its request's span (no output) and, once the
    stream is read, a log of the response (the input again, and the output). Without
    logfire's row (which says which records are responses), the shape says it: each call
    is one interaction with its answer, and no call is said to lack its output."""
    whole = max(expectations.convert(name), key=expectations._calls)
    trace = without(conventions.LOGFIRE, name)
    calls = [i for a in trace.iter_agents() for i in a.llm_interactions]
    assert len(calls) == expectations.meta(name)["model_calls"]
    assert all(i.output_messages for i in calls)
    assert not [w for w in trace.warnings if "not its output" in w]
    assert [i.output_text for i in calls] == [
        i.output_text for a in whole.iter_agents() for i in a.llm_interactions
    ]


def _record(span_id: str, start: int, end: int, text: str | None, scope: str = "s") -> tuple:
    from tracejudge.convert._common import Extraction, message_inputs

    extraction = Extraction(inputs=message_inputs("user", ["hi"], [], []))
    if text is not None:
        extraction.add_choice([text], [])
    record = SpanRecord("t", span_id, "p", span_id, start_ns=start, end_ns=end)
    record.scope = scope
    return record, extraction


def test_only_an_instant_answer_after_its_request_is_a_response_apart() -> None:
    from tracejudge.convert._infer_responses import mark_responses_apart

    request, response = _record("a", 0, 10, None), _record("b", 20, 20, "hello")
    took_time = _record("c", 30, 40, "again")  # a call of its own (a retry)
    other_scope = _record("d", 50, 50, "x", scope="other")
    readable = [request, response, took_time, other_scope]
    mark_responses_apart(readable)
    assert [e.response_apart for _, e in readable] == [False, True, False, False]
    # No request left to answer: a second instant answer is a call of its own.
    late = _record("e", 60, 60, "late")
    mark_responses_apart([request, response, late])
    assert late[1].response_apart is False


# --------------------------------------------------------------------------- calls by shape


@pytest.mark.parametrize("name", ["genkit", "genkit_stream", "genkit_structured"])
def test_genkit_without_its_row_holds_every_fact(name: str) -> None:
    """Genkit (Go) writes no model or token key a row outside its own knows: its model
    calls are found by their shape (messages in `genkit:input`, the answer and usage in
    `genkit:output`; the `generate` steps around them, shaped alike, hold a call below
    and are none); the flow `lead` is the root agent, named as the program named it, and
    the prompt `weather_agent` run by its `ask_weather_agent` tool its child."""
    assert lost(conventions.GENKIT, name) == []
    trace = without(conventions.GENKIT, name)
    assert agent_tree(trace) == [("lead", None, 2), ("weather_agent", "lead", 2)]
    calls = [i for a in trace.iter_agents() for i in a.llm_interactions]
    assert all(i.usage is not None and i.usage.output_tokens > 0 for i in calls)


def test_openlit_traced_functions_name_their_agents_without_its_row() -> None:
    """OpenLIT's `@openlit.trace` functions (`lead`, and `weather_agent` run by its
    `ask_weather_agent` tool) record no agent kind: the root span's name, and the span
    that holds the other system prompt's calls, name them."""
    assert agent_tree(without(conventions.OPENLIT, "openlit")) == [
        ("lead", None, 2),
        ("weather_agent", "lead", 2),
    ]


def test_an_invoke_operation_of_agents_is_their_workflow_without_the_producers_row() -> None:
    """Strands' swarm span (`gen_ai.operation.name` `invoke_swarm`, in the image of the
    conventions' `invoke_workflow`). Before: without its row, a step: the agents hung
    under an implicit root and the swarm was lost. After: the swarm, above its agents."""
    name = "strands_swarm"
    assert lost(conventions.STRANDS, name) == []
    assert agent_tree(without(conventions.STRANDS, name)) == [
        ("swarm", None, 0),
        ("researcher", "swarm", 3),
        ("writer", "swarm", 1),
    ]


def test_an_unnamed_agent_span_around_one_agent_is_a_step_without_the_producers_row() -> None:
    """OpenLLMetry's CrewAI task spans are `invoke_agent` spans with no agent name, each
    around the agent that does the task. Before: without the row, each was an agent
    ('agent') between the crew and its agent. After: a step; the agents are the crew's."""
    name = "crewai_openllmetry"
    row = next(c for c in conventions.TABLE if c.name == "openllmetry-frameworks")
    assert lost(row, name) == []
    assert agent_tree(without(row, name)) == [
        ("crew", None, 0),
        ("researcher", "crew", 2),
        ("writer", "crew", 1),
    ]


def calls_of(trace: MultiAgentTrace) -> list[tuple[str, str, str]]:
    return [
        (agent.name, call.name, call.parameters)
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for call in interaction.tool_calls
    ]


def test_a_tool_call_repeated_in_streamed_chunks_is_one_call_without_the_producers_row() -> None:
    """Google ADK over LiteLLM, streamed: its GenAI output messages are the chunks, each
    repeating the call (`call_ask`) with null arguments until the last. Before: without
    the ADK row, five calls of `weather_agent`, four without arguments (`tool_arguments`
    and `loops` flagged a clean run). After: one call, with its arguments."""
    trace = without(conventions.ADK, "adk_litellm_stream")
    assert calls_of(trace) == [
        ("lead", "weather_agent", '{"request": "What is the weather in Paris?"}'),
        ("weather_agent", "get_weather", '{"city": "Paris"}'),
    ]


def test_a_tool_run_of_a_tool_never_offered_is_no_call_without_the_producers_row() -> None:
    """Google ADK runs parallel calls inside an `execute_tool (merged tools)` span with a
    call id of its own. Before: without the ADK row it became a third call of the model,
    to a tool `(merged tools)` it was never offered. After: the model's two calls."""
    trace = without(conventions.ADK, "adk_stream_v2")
    assert [(name, args) for _, name, args in calls_of(trace)] == [
        ("get_weather", '{"city": "Paris"}'),
        ("get_weather", '{"city": "Rome"}'),
    ]


def test_a_tool_run_recorded_twice_gives_its_result_without_the_producers_row() -> None:
    """AutoGen records each tool run twice: its own `execute_tool` span (the call id, no
    result) and OpenInference's TOOL span (the result, no call id). Before: without the
    AutoGen row the first claimed the call and its result stayed empty. After: the run
    found by id takes its twin's result."""
    from tracejudge.convert.conventions.autogen import OPENINFERENCE_AUTOGEN

    name = "autogen_oi_agentchat"
    assert lost(OPENINFERENCE_AUTOGEN, name) == []
    trace = without(OPENINFERENCE_AUTOGEN, name)
    results = [
        (message.content.id, message.content.response)
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for message in interaction.input_messages
        if message.role == "tool"
    ]
    assert results == [("call_weather", "Sunny, 22 C in Paris")]


def test_messages_written_as_text_are_read_without_the_producers_row() -> None:
    """OpenLIT's Together instrumentation writes `gen_ai.input.messages` as `role: text`
    lines and `gen_ai.output.messages` as the answer's text. Before: without its row the
    GenAI reading skipped both ("not JSON"), so no agent had an answer. After: the lines
    are the conversation and the text the answer, as the row reads them."""
    name = "openlit_together"
    assert lost(conventions.OPENLIT, name) == []
    trace = without(conventions.OPENLIT, name)
    researcher = next(a for a in trace.iter_agents() if a.name == "researcher")
    call = researcher.llm_interactions[0]
    assert [(m.role, m.content) for m in call.input_messages] == [
        ("system", "You research facts."),
        ("user", "What is the weather in Paris?"),
    ]
    assert call.output_text == "Paris is sunny today."


@pytest.mark.parametrize(
    ("name", "given"),
    [
        ("weather_agent", True),
        ("lead", True),
        ("ask-weather", True),
        ("ai.generateText", False),
        ("Agent.run", False),
        ("chat gpt-4o", False),
        ("POST", False),
        ("answering {question}", False),
        ("scripted/scripted-model", False),
    ],
)
def test_a_span_name_given_by_the_program(name: str, given: bool) -> None:
    from tracejudge.convert._agent_names import is_given_name

    assert is_given_name(name) is given


# --------------------------------------------------------------------------- pipelines, twins


def test_agents_run_one_after_the_other_are_a_pipeline_without_its_row() -> None:
    """OpenLIT's `@openlit.trace` functions `report` -> `researcher`, `writer`, each with
    its own system prompt and no call of `report`'s own: two agents, named after their
    functions, children of `report`."""
    trace = without(conventions.OPENLIT, "openlit_together")
    assert agent_tree(trace) == [
        ("report", None, 0),
        ("researcher", "report", 1),
        ("writer", "report", 1),
    ]


def test_an_agent_span_named_after_the_agent_around_it_is_that_agents() -> None:
    """AutoGen AgentChat under OpenInference without its row: the OpenInference AGENT span
    `weather_agent.on_messages_stream` (its `graph.node.id` is `weather_agent`) inside
    autogen-core's `invoke_agent weather_agent` is the same agent run, not a child."""
    trace = without(conventions.OPENINFERENCE_AUTOGEN, "autogen_oi_agentchat")
    assert agent_tree(trace) == [
        ("root", None, 0),
        ("weather_agent", "root", 2),
        ("writer", "root", 1),
    ]


def test_langgraph_under_openinference_without_its_row_holds_every_fact() -> None:
    """OpenInference keeps each LangGraph node in its `metadata` JSON (`langgraph_node`)
    and marks the researcher subgraph's `agent` node an AGENT span: read without the
    LangGraph row, the nodes are the agents, the subgraph's nodes steps of the node
    around them, and the graph's root span (`supervisor_graph`) the run above them."""
    assert lost(conventions.LANGGRAPH, "langgraph_openinference") == []


def test_a_conversation_span_naming_an_agent_keeps_the_agents_in_it() -> None:
    """AG2's `conversation user_proxy` names the agent that started it (`gen_ai.agent.name`):
    the `invoke_agent assistant` spans inside it are agents, not nested steps."""
    assert lost(conventions.STRANDS, "ag2_classic") == []  # (a row it has no span of)


@pytest.mark.parametrize(
    "name",
    [
        "vercel_v6_openinference_agent",
        "vercel_v6_openinference_generate",
        "vercel_v6_openinference_stream",
    ],
)
def test_an_agent_span_known_by_its_span_name_takes_its_attributes_name(name: str) -> None:
    """OpenInference's AI SDK processor marks `ai.generateText lead` an AGENT span; its
    reading names the agent after the span, the span's `ai.telemetry.functionId` says
    `lead`: without the AI SDK's row the agents are still `lead` and `weather_agent`."""
    assert lost(conventions.VERCEL_AI, name) == []


@pytest.mark.parametrize("name", ["agent_framework_sequential", "agent_framework_handoff"])
def test_a_named_span_around_agents_is_the_workflow_above_them(name: str) -> None:
    """Agent Framework's `workflow.run` (its `workflow.name`), without its row: it holds
    two agents (`invoke_agent`, read through the GenAI row), so it is the run above them."""
    assert lost(conventions.AGENT_FRAMEWORK, name) == []


@pytest.mark.parametrize(
    "name",
    ["logfire_openai_agents_researcher_tool", "logfire_openai_agents_researcher_tool_chat"],
)
def test_an_agent_run_by_a_tool_no_row_knows_is_the_callers_child(name: str) -> None:
    """The Agents SDK's `as_tool` under logfire, without logfire's row: the researcher's
    turns (`agent_name = researcher`) sit inside the manager's first turn, through a tool
    span no row reads. The nearest span naming an agent holds its calls: the researcher
    is the manager's child, each with its two calls, and every fact holds (the answers
    and tool calls from the `events` conversation; `response_id` is no answer)."""
    trace = without(conventions.LOGFIRE, name)
    assert agent_tree(trace) == [("manager", None, 2), ("researcher", "manager", 2)]
    assert lost(conventions.LOGFIRE, name) == []


def test_an_id_is_no_prompt_or_answer() -> None:
    from tracejudge.convert._infer_content import read_shape

    inputs, answer = read_shape(
        {
            "response_id": "resp_1",
            "raw_input": '[{"role": "user", "content": "hi"}]',
            "events": '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]',
        }
    )
    assert answer == (["yo"], [])
    assert inputs is not None and [i.content for i in inputs] == ["hi"]
