"""One name for a model call in every text a person reads (#35): "call N", counted from 1
as the trace page counts them; JSON keeps `llm_interactions` indexes (`steps`). The same
trace is named the same way by `score` and `attribute`: its file, and its id."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checks import faults
from tracejudge import checks
from tracejudge.cli import main
from tracejudge.evaluation.attribution import trace_steps
from tracejudge.evaluation.render import render_agent
from tracejudge.judges._prompt import SYSTEM_PROMPT
from tracejudge.models import MultiAgentTrace, Step
from tracejudge.report import trace_name

Record = Callable[[faults.Scenario], MultiAgentTrace]


def _by_name(trace: MultiAgentTrace, name: str) -> str:
    return next(a.id for a in trace.iter_agents() if a.name == name)


def test_a_checks_explanation_names_the_call_its_steps_point_to(record: Record) -> None:
    trace = record(faults.empty_answer(1))  # the empty answer is the orchestrator's second
    result = checks.final_answer.evaluate(trace)[_by_name(trace, faults.ORCHESTRATOR)]
    assert result is not None and result.steps
    step = result.steps[0]
    assert step.interaction == 1  # the JSON keeps the index from 0
    assert "orchestrator call 2: " in result.explanation  # people read "call 2"
    every = [
        r.explanation
        for check in checks.ALL
        for r in check.evaluate(trace).values()
        if r is not None
    ]
    assert not any("llm_interactions[" in text for text in every)


def test_the_judge_reads_each_model_call_headed_as_the_page_names_it(record: Record) -> None:
    trace = record(faults.clean("Lima", 22, "cloudy"))
    researcher = next(a for a in trace.iter_agents() if a.name == faults.RESEARCHER)
    content = render_agent(trace, researcher.id).content
    headings = re.findall(r"^--- (call \d+)\b", content, flags=re.MULTILINE)
    expected = [Step.call_name(i) for i in range(len(researcher.llm_interactions))]
    assert headings == expected and len(expected) > 1
    assert '"call 2"' in SYSTEM_PROMPT  # what the judge is told to cite


def test_a_step_the_attribution_judge_cites_is_named_as_a_call(record: Record) -> None:
    trace = record(faults.clean("Lima", 22, "cloudy"))
    steps = trace_steps(trace)
    last = steps[len(steps) - 1]
    said = steps.named_calls(f"STEP {last.index} was decisive; step 999 is not a step")
    call = Step.call_name(last.interaction)
    assert f"STEP {last.index} ({last.agent.name} {call}) was decisive" in said
    assert "step 999 is not a step" in said  # no such step: left as it was
    assert steps.named_calls(said) == said  # named once


def test_score_and_attribute_name_a_trace_alike(
    record: Record, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = record(faults.bad_arguments(0))
    path = tmp_path / "bad.json"
    path.write_text(trace.to_json())
    assert main(["score", str(path), "--check", "tool_arguments"]) == 0
    scored = capsys.readouterr().out
    assert main(["attribute", str(path)]) == 0
    attributed = capsys.readouterr().out
    named = [line for line in scored.splitlines() if "[tool_arguments] researcher in" in line]
    assert len(named) == 1, scored
    name = named[0].split(" in ", 1)[1].split(": ", 1)[0]
    assert name == trace_name(f"{path}:line1", str(path)) == f"trace {path}:line1"
    assert attributed.startswith(f"{name}: failed"), attributed
