"""Tool calls written as text (issue #30, pattern 5), read with no row for the producer.

Two recordings show it (tests/fixtures/frameworks, recorded live against a
ScriptedLLMServer; what each agent did is the program's, in programs_dspy.py and
programs_smolagents.py):

* DSPy's ReAct writes `next_tool_name` / `next_tool_args` into the model's text and runs
  the tool itself (`openinference-instrumentation-dspy` records a TOOL span per run,
  `<tool>.__call__`, with no `tool.name`);
* a smolagents `CodeAgent` writes Python that calls a tool (`final_answer`) and a managed
  agent (`web_agent`), which ran with a TOOL span and an AGENT span of their own.

No row of the conventions table is DSPy's or smolagents': the runs are read by the
OpenInference row that reads every OpenInference TOOL span, and joined to the model call
that wrote them by the walk's own phase (`convert/_infer_tool_calls.py`).
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.convert.test_frameworks import FIXTURES, converted, meta, sdk_spans
from tests.fixtures.frameworks import programs_dspy, programs_smolagents
from tests.fixtures.frameworks.programs import PROGRAMS, SEARCH_RESULT
from tracejudge.convert import conventions, traces_from_spans
from tracejudge.convert._otlp import decode
from tracejudge.models import LLMInteraction, LLMToolResponse, MultiAgentTrace

DSPY_SCOPE = "openinference.instrumentation.dspy"
SMOLAGENTS_SCOPE = "openinference.instrumentation.smolagents"


def _text(interaction: LLMInteraction) -> str:
    return "\n".join(m.content for m in interaction.output_messages if isinstance(m.content, str))


def _calls_in_order(trace: MultiAgentTrace) -> list[tuple[str, dict[str, object], str | None]]:
    """(tool, arguments, result) of every call of every model call, in time order."""
    interactions = sorted(
        (i for agent in trace.iter_agents() for i in agent.llm_interactions),
        key=lambda i: i.start_time or 0.0,
    )
    results = {r.id: r.response for i in interactions for r in i.tool_results or []}
    return [
        (call.name, json.loads(call.parameters), results.get(call.id))
        for interaction in interactions
        for call in interaction.tool_calls
    ]


def test_no_row_of_the_table_is_dspy_s_or_smolagents() -> None:
    """The calls below are found by a phase of the walk, not by a producer's row."""
    for row in conventions.TABLE:
        assert not {DSPY_SCOPE, SMOLAGENTS_SCOPE} & row.marker_scopes, row
        assert "dspy" not in row.name and "smolagents" not in row.name, row


@pytest.mark.parametrize("name", ["dspy_openinference", "dspy_openinference_composed"])
def test_a_react_loop_s_text_tool_calls_are_its_calls_with_their_tool_runs(name: str) -> None:
    trace = converted(name)
    expected = PROGRAMS[meta(name)["program"]].expected
    calls = _calls_in_order(trace)
    # The program's calls, in the order its two ReAct loops made them, each with the
    # arguments the model wrote and the result its tool returned.
    assert [(tool, args) for tool, args, _ in calls] == [
        (tool, args) for _, tool, args in expected.tool_calls
    ]
    assert [result for _, _, result in calls] == [
        programs_dspy.NOTE,
        SEARCH_RESULT,
        "Completed.",
        "Completed.",
    ]
    # Each call sits on the model call whose text wrote it.
    for agent in trace.iter_agents():
        for interaction in agent.llm_interactions:
            for call in interaction.tool_calls:
                assert f"[[ ## next_tool_name ## ]]\n{call.name}\n" in _text(interaction)
    # The extractions after `finish` wrote no tool: they call none.
    extracts = [
        i
        for agent in trace.iter_agents()
        for i in agent.llm_interactions
        if "[[ ## answer ## ]]" in _text(i)
    ]
    assert len(extracts) == 2 and all(not i.tool_calls for i in extracts)
    assert trace.warnings == []


@pytest.mark.parametrize(
    "name", ["smolagents_code_openinference", "smolagents_code_openinference_composed"]
)
def test_a_code_agent_s_code_calls_a_tool_and_a_managed_agent(name: str) -> None:
    trace = converted(name)
    (manager,) = [a for a in trace.iter_agents() if a.name == "manager"]
    (web_agent,) = [a for a in trace.iter_agents() if a.name == "web_agent"]
    first, second = manager.llm_interactions
    # The managed agent run from the first code block: a call with the code's arguments.
    (delegate,) = first.tool_calls
    assert (delegate.name, json.loads(delegate.parameters)) == (
        "web_agent",
        {"task": programs_smolagents.TASK},
    )
    # The framework's history shows that step as one executed-code call: the call takes its
    # id, so the result the model saw (the code's output, with the agent's report) joins it.
    (shown,) = [m.content for m in second.input_messages if isinstance(m.content, LLMToolResponse)]
    assert shown.id == delegate.id and programs_smolagents.NOTE in shown.response
    assert first.tool_results is None  # (the later input carries it, once)
    assert web_agent.final_output == programs_smolagents.NOTE
    # `final_answer("...")` in the second block: its positional argument named by the tool
    # span's parameters, its result the tool's.
    (answer,) = second.tool_calls
    assert (answer.name, json.loads(answer.parameters)) == (
        "final_answer",
        {"answer": programs_smolagents.ANSWER},
    )
    assert [(r.id, r.response) for r in second.tool_results or []] == [
        (answer.id, programs_smolagents.ANSWER)
    ]
    assert trace.final_output == programs_smolagents.ANSWER
    assert trace.warnings == []


#: Where OpenInference LLM spans hold an output message's text (chat content, or contents).
_OUTPUT_TEXT_KEYS = ("message.content", "message_content.text")


def _with_texts(name: str, change: dict[str, str]) -> MultiAgentTrace:
    """The recording converted from in-process spans, with the output text of the model
    calls named in `change` (by span id) replaced."""
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    changed = []
    for record in records:
        if record.span_id in change:
            attributes = {
                key: (change[record.span_id] if key.endswith(_OUTPUT_TEXT_KEYS) else value)
                for key, value in record.attributes.items()
            }
            attributes = {k: v for k, v in attributes.items() if k != "output.value"}
            record = dataclasses.replace(record, attributes=attributes)
        changed.append(record)
    (trace,) = [t for t in traces_from_spans(sdk_spans(changed)) if t.has_llm_interactions]
    return trace


def test_a_run_whose_model_call_did_not_name_it_is_no_call_of_that_call() -> None:
    """A tool run joins the last model call before it only when that call's text names the
    tool: a text that names another tool (or none) makes no call."""
    trace = converted("dspy_openinference")
    first = trace.root.llm_interactions[0]  # the planner's (the researcher is its child)
    assert [c.name for c in first.tool_calls] == ["research"]
    assert first.span_id is not None
    unnamed = _with_texts("dspy_openinference", {first.span_id: "I will look into it."})
    assert unnamed.root.llm_interactions[0].tool_calls == []
    # The other calls still join their runs.
    calls = [
        c.name for a in unnamed.iter_agents() for i in a.llm_interactions for c in i.tool_calls
    ]
    assert sorted(calls) == ["finish", "finish", "web_search"]


def test_a_child_agent_not_called_in_the_code_is_no_call() -> None:
    """A managed agent joins a model call as a call only where its code calls it by name."""
    trace = converted("smolagents_code_openinference")
    (manager,) = [a for a in trace.iter_agents() if a.name == "manager"]
    first = manager.llm_interactions[0]
    assert first.span_id is not None
    changed = _with_texts(
        "smolagents_code_openinference",
        {first.span_id: "Thought: the web agent knows.\n<code>\nprint('web_agent')\n</code>"},
    )
    (manager,) = [a for a in changed.iter_agents() if a.name == "manager"]
    assert manager.llm_interactions[0].tool_calls == []


@pytest.mark.parametrize(
    "name",
    ["smolagents_code_one_step_openinference", "smolagents_code_one_step_openinference_composed"],
)
def test_one_code_block_that_runs_a_managed_agent_and_a_tool_makes_both_calls_in_order(
    name: str,
) -> None:
    """`report = web_agent(task=...)` then `final_answer(report)` in one block: the tool run
    is joined first (with the tool spans), the managed agent after (with the answers), and
    the calls read in the order the code makes them."""
    trace = converted(name)
    (manager,) = [a for a in trace.iter_agents() if a.name == "manager"]
    (only,) = manager.llm_interactions
    assert [(c.name, json.loads(c.parameters)) for c in only.tool_calls] == [
        ("web_agent", {"task": programs_smolagents.TASK}),
        ("final_answer", {"answer": programs_smolagents.REPORT}),
    ]
    results = {r.id: r.response for r in only.tool_results or []}
    assert [results[c.id] for c in only.tool_calls] == [
        programs_smolagents.NOTE,
        programs_smolagents.REPORT,
    ]
    assert trace.final_output == programs_smolagents.REPORT
