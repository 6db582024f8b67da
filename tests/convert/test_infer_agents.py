"""Agents read from the spans' structure (convert/_infer_agents.py), on live recordings:

1. agents with no agent span (Haystack's `Agent`, alone and as a `Pipeline` component,
   with another `Agent` as its `AgentTool`: OpenInference's Haystack instrumentation
   writes CHAIN and LLM spans only) are told apart by their system prompts and the spans
   that hold their calls;
2. an agent run as a tool is a child agent of its caller, placed between the caller's
   calls, and its final answer is the tool call's result;
3. spans marked "agent" that hold nothing are steps of the agent around them (LangChain's
   classic `AgentExecutor` under OpenInference's LangChain instrumentation);
6. the OpenAI Agents SDK's own workflow span (under logfire) is the trace, not an agent
   above the program's root agent.

No row of the conventions table is Haystack's (OpenInference's is the format's); the
phases read only what the table says a span is (a model call, a tool run, an agent).
"""

from __future__ import annotations

import json

import pytest

from tests.convert.test_frameworks import FIXTURES, converted
from tests.fixtures.frameworks.programs import QUESTION
from tests.fixtures.frameworks.programs_haystack import (
    HAYSTACK_ANSWER,
    PLANNER_PROMPT,
    RESEARCH_NOTE,
    RESEARCHER_PROMPT,
    RESEARCHER_TOOL,
)
from tests.fixtures.frameworks.programs_langchain import PLANNER, RESEARCHER
from tests.fixtures.frameworks.programs_logfire import (
    AS_TOOL,
    AS_TOOL_ANSWER,
    MANAGER_PROMPT,
    STEP_PROMPT,
    STEP_SUMMARY,
)
from tests.fixtures.frameworks.programs_logfire import (
    RESEARCH_NOTE as AS_TOOL_NOTE,
)
from tests.fixtures.frameworks.programs_logfire import (
    RESEARCHER_PROMPT as AS_TOOL_RESEARCHER_PROMPT,
)
from tests.fixtures.frameworks.programs_logfire import SYSTEM as WEATHER_PROMPT
from tracejudge import checks
from tracejudge.convert import conventions, traces_from_otlp
from tracejudge.convert._otlp import decode
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Kind
from tracejudge.models import AgentInstance, LLMInteraction, LLMToolResponse, MultiAgentTrace

HAYSTACK = ["haystack_agent_tool", "haystack_pipeline_agent_tool"]
HAYSTACK_ALL = [n + twin for n in HAYSTACK for twin in ("", "_composed")]
AS_TOOL_RECORDINGS = [
    f"logfire_openai_agents_researcher_tool{api}{twin}"
    for api in ("", "_chat")
    for twin in ("", "_composed")
]


def system_prompt(interaction: LLMInteraction) -> str | None:
    return next((m.content for m in interaction.input_messages if m.role == "system"), None)  # type: ignore[return-value]


def first_user(interaction: LLMInteraction) -> str | None:
    return next((m.content for m in interaction.input_messages if m.role == "user"), None)  # type: ignore[return-value]


def top(trace: MultiAgentTrace, composed: bool) -> AgentInstance:
    """The program's top agent: the root, or (composed) the root `app` that holds the
    calls made outside every agent span (Haystack) or the agent it ran (the Agents SDK)."""
    root = trace.root
    if composed and not root.llm_interactions:
        (child,) = root.child_ids
        return trace.agent_instance_by_id[child]
    return root


def result_of(caller: AgentInstance, call_id: str) -> str:
    """The result the caller's trace shows for its tool call `call_id`."""
    found = [
        r.response
        for i in caller.llm_interactions
        for r in [
            *(m.content for m in i.input_messages if isinstance(m.content, LLMToolResponse)),
            *(i.tool_results or []),
        ]
        if r.id == call_id and r.response
    ]
    assert found, (caller.name, call_id)
    return found[0]


# --------------------------------------------------------------------------- 1. no agent span


@pytest.mark.parametrize("name", HAYSTACK)
def test_no_row_and_no_agent_span_names_the_haystack_agents(name: str) -> None:
    """What the inference starts from: the table claims Haystack's spans only as
    OpenInference's (its LLM spans, and CHAIN steps), and none of them as an agent."""
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    claimed = {}
    for record in records:
        found = conventions.classify(SpanView(record))
        assert found is not None, record.name
        claimed[record.name] = (found[0].name, found[1])
    assert claimed == {
        **({"Pipeline.run": ("openinference", Kind.STEP)} if "pipeline" in name else {}),
        "Agent.run": ("openinference", Kind.STEP),
        "ChatPromptBuilder.run": ("openinference", Kind.STEP),
        "OpenAIChatGenerator.run": ("openinference", Kind.MODEL_CALL),
    }
    assert not any("haystack" in row.name for row in conventions.TABLE)


@pytest.mark.parametrize("name", HAYSTACK_ALL)
def test_agents_without_agent_spans_are_told_apart_by_their_own_prompts(name: str) -> None:
    trace = converted(name)
    planner = top(trace, name.endswith("_composed"))
    (researcher_id,) = planner.child_ids
    researcher = trace.agent_instance_by_id[researcher_id]
    assert researcher.name == RESEARCHER_TOOL  # the tool that ran it names it
    assert [system_prompt(i) for i in planner.llm_interactions] == [PLANNER_PROMPT] * 2
    assert [system_prompt(i) for i in researcher.llm_interactions] == [RESEARCHER_PROMPT] * 2
    assert researcher.child_ids == []
    # Its own conversation: its first user message is the planner's tool argument.
    (delegation,) = planner.llm_interactions[0].tool_calls
    task = json.loads(delegation.parameters)["messages"][0]["content"]
    assert first_user(researcher.llm_interactions[0]) == task == QUESTION
    assert [c.name for c in researcher.llm_interactions[0].tool_calls] == ["get_weather"]
    assert researcher.final_output == RESEARCH_NOTE
    assert planner.final_output == trace.final_output == HAYSTACK_ANSWER


@pytest.mark.parametrize(
    "name", ["logfire_openai_summarised", "logfire_openai_summarised_composed"]
)
def test_a_step_with_a_prompt_of_its_own_is_no_agent(name: str) -> None:
    """A summary call with its own prompt, in a span of its own, after the tool loop: no
    tool call ran it and it calls no tool, so it is a step of the program, not an agent
    (the span around it would otherwise be taken for one)."""
    trace = converted(name)
    holder = trace.root
    assert [a.name for a in trace.iter_agents()] == [holder.name]
    prompts = [system_prompt(i) for i in holder.llm_interactions]
    assert prompts == [WEATHER_PROMPT, WEATHER_PROMPT, STEP_PROMPT]
    assert trace.final_output == STEP_SUMMARY


# --------------------------------------------------------------------------- 2. agent as a tool


@pytest.mark.parametrize("name", HAYSTACK_ALL + AS_TOOL_RECORDINGS)
def test_an_agent_run_as_a_tool_is_a_child_between_its_callers_calls(name: str) -> None:
    trace = converted(name)
    caller = top(trace, name.endswith("_composed"))
    first, child_id, last = caller.interactions
    assert isinstance(first, LLMInteraction) and isinstance(last, LLMInteraction)
    assert isinstance(child_id, str)
    child = trace.agent_instance_by_id[child_id]
    (tool_call,) = first.tool_calls
    assert tool_call.name in (RESEARCHER_TOOL, AS_TOOL)
    # The tool call's result is the child's final answer (where no span recorded it, the
    # answer supplies it: OpenInference's Haystack spans record no tool message text).
    assert child.final_output in (RESEARCH_NOTE, AS_TOOL_NOTE)
    assert result_of(caller, tool_call.id) == child.final_output
    assert last.output_messages[0].content in (HAYSTACK_ANSWER, AS_TOOL_ANSWER)


def test_the_answer_supplies_a_tool_result_no_span_recorded() -> None:
    """OpenInference's Haystack spans show the planner's later input with a tool message
    of no text and no id: it is the researcher's call's, and holds the researcher's answer
    (the composed twin's OpenLLMetry spans record the same text from the wire)."""
    plain, composed = converted("haystack_agent_tool"), converted("haystack_agent_tool_composed")
    answers = []
    for planner in (plain.root, top(composed, True)):
        (call,) = planner.llm_interactions[0].tool_calls
        (result,) = [
            m.content
            for m in planner.llm_interactions[1].input_messages
            if isinstance(m.content, LLMToolResponse)
        ]
        assert (result.id, result.name) == (call.id, RESEARCHER_TOOL)
        answers.append(result.response)
    assert answers == [RESEARCH_NOTE, RESEARCH_NOTE]


def test_tools_offered_per_call_are_each_agents_own() -> None:
    """Chat Completions mode: each call records the tools it offered (logfire's span)."""
    trace = converted("logfire_openai_agents_researcher_tool_chat")
    offered = {
        agent.name: [[t.name for t in i.tools_available or []] for i in agent.llm_interactions]
        for agent in trace.iter_agents()
    }
    assert offered == {"manager": [[AS_TOOL]] * 2, "researcher": [["get_weather"]] * 2}
    prompts = {a.name: {system_prompt(i) for i in a.llm_interactions} for a in trace.iter_agents()}
    assert prompts == {"manager": {MANAGER_PROMPT}, "researcher": {AS_TOOL_RESEARCHER_PROMPT}}


# --------------------------------------------------------------------------- 3. phantom agents

LANGCHAIN = [
    "langchain_agent_executor_openinference",
    "langchain_agent_executor_openinference_composed",
]


@pytest.mark.parametrize("name", LANGCHAIN)
def test_spans_marked_agent_that_hold_nothing_are_steps_of_their_agent(name: str) -> None:
    """OpenInference's LangChain instrumentation marks every run whose name contains
    "agent" as an AGENT span: besides the two executors, each step of their agent
    runnables (12 of them here), none of which makes a model call or runs a tool."""
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    marked = [
        r.name
        for r in records
        if (found := conventions.classify(SpanView(r))) and found[1] is Kind.AGENT
    ]
    steps = {"RunnableAssign<agent_scratchpad>", "RunnableParallel<agent_scratchpad>"}
    steps |= {"ToolsAgentOutputParser"}
    ours = {"invoke_agent app"} if name.endswith("_composed") else set()
    assert sorted(set(marked)) == sorted({PLANNER, RESEARCHER} | steps | ours)
    assert len([n for n in marked if n in steps]) == 12
    trace = converted(name)
    planner = top(trace, name.endswith("_composed"))
    assert [a.name for a in trace.iter_agents() if a.name not in ("app",)] == [PLANNER, RESEARCHER]
    # The planner's call order is its own again: call, the researcher (its tool), call.
    first, child, last = planner.interactions
    assert isinstance(first, LLMInteraction) and isinstance(last, LLMInteraction)
    assert trace.agent_instance_by_id[child].name == RESEARCHER  # type: ignore[index]
    assert len(trace.agent_instance_by_id[child].llm_interactions) == 2  # type: ignore[index]


@pytest.mark.parametrize(
    "name", ["langchain_agent_executor_openinference", "dspy_openinference", *HAYSTACK]
)
def test_the_structural_phases_need_no_row_for_the_framework(name: str) -> None:
    """The phases read only a span's kind: with every row but the format's own left out
    (LangGraph's, which reads LangChain's metadata; none is Haystack's or DSPy's), the
    same agents."""
    with conventions.rows_removed(conventions.LANGGRAPH):
        (trace,) = [t for t in traces_from_otlp(FIXTURES / f"{name}.pb") if t.has_llm_interactions]
    assert trace.to_wire() == converted(name).to_wire()
    assert len(list(trace.iter_agents())) == 2


# --------------------------------------------------------------------------- 6. wrapper roots


@pytest.mark.parametrize("name", AS_TOOL_RECORDINGS)
def test_the_sdk_workflow_span_is_the_trace_not_an_agent_above_the_root(name: str) -> None:
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    workflows = [
        r
        for r in records
        if (found := conventions.classify(SpanView(r))) and found[1] is Kind.WORKFLOW
    ]
    assert [w.name for w in workflows] == ["OpenAI Agents trace: {name}"]  # recorded, yet:
    trace = converted(name)
    names = [a.name for a in trace.iter_agents()]
    assert "Agent workflow" not in names
    if name.endswith("_composed"):
        assert names == ["app", "manager", "researcher"]
        assert trace.root.child_ids == [top(trace, True).id]
    else:
        assert names == ["manager", "researcher"]
        assert trace.root.span_id == trace.agent_instance_by_id[trace.root.id].span_id
    assert trace.final_output == AS_TOOL_ANSWER


def test_a_workflow_that_ran_several_agents_stays_their_run() -> None:
    """A hand-off runs two agents one after the other in the SDK's workflow: it is the run
    that holds them both (the rule takes a workflow that ran exactly one agent)."""
    trace = converted("logfire_openai_agents_chat")
    assert trace.root.name == "Agent workflow"
    assert [trace.agent_instance_by_id[c].name for c in trace.root.child_ids] == [
        "triage",
        "weather_specialist",
    ]


# --------------------------------------------------------------------------- clean traces

CLEAN = [
    *HAYSTACK_ALL,
    *AS_TOOL_RECORDINGS,
    *LANGCHAIN,
    "logfire_openai_summarised",
    "logfire_openai_summarised_composed",
]


@pytest.mark.parametrize("name", CLEAN)
def test_the_checks_raise_no_false_alarm_on_these_clean_runs(name: str) -> None:
    """No program here plants a fault. The one flag: without the composed twin's client
    spans, Haystack's researcher states "22 C" from a `get_weather` result that no span
    records (the instrumentation writes a tool message's role alone), which
    `grounded_numbers` cannot find: an instrumentation gap, not a misreading."""
    trace = converted(name)
    flags = []
    for check in (
        checks.tool_arguments,
        checks.tool_results,
        checks.loops,
        checks.grounded_numbers,
        checks.final_answer,
    ):
        for agent_id, score in check.evaluate(trace).items():
            if score is not None and score.score not in (None, 1):
                flags.append((check.name, trace.agent_instance_by_id[agent_id].name))
    unrecorded = name in HAYSTACK  # (not composed)
    assert flags == ([("grounded_numbers", RESEARCHER_TOOL)] if unrecorded else []), flags
