"""Attribution: for a trace that failed, which agent and which step caused it, ranked.

- `AttributionRequest`: the trace, the methods ("checks", then any of the judge methods
  "all_at_once", "step_by_step", "binary_search", "counterfactual"), what failed (the
  criteria's answers, an outcome, the caller's word).
- `trace_steps(trace)`: the trace's steps in the order they ran (what `Cause.index`
  numbers), `render_steps` the transcript the judge methods read (`StepTexts`: one step
  at a time, as an exploring judge reads it).

`EvaluationService.attribute(request)` is the way in (the clients' `attribute` and
`tracejudge attribute` call it); it answers a `tracejudge.models.Attribution`.
`from_answers(trace, responses)`: the deterministic attribution of the answers a trace
already has, no judge (the trace viewer, the batch report, the pytest plugin).

Modules, one idea each: `_steps` (the step order), `_transcript` (the steps written for a
judge), `_findings` (what failed, and the checks' candidates), `_judging` (the one way
a judge is asked), `_methods` (the judge methods: prompts, reply schemas, walks),
`_rank` (candidates merged and ranked into causes), `_attribute` (one attribution).
"""

from __future__ import annotations

from tracejudge.evaluation.attribution._attribute import AttributionRequest, from_answers, run
from tracejudge.evaluation.attribution._judging import JudgeCall
from tracejudge.evaluation.attribution._methods import JUDGE_METHODS
from tracejudge.evaluation.attribution._steps import StepRef, TraceSteps, trace_steps
from tracejudge.evaluation.attribution._transcript import (
    DEFAULT_MAX_CHARS,
    StepTexts,
    agent_label,
    agent_lines,
    cut,
    render_steps,
)

__all__ = [
    "DEFAULT_MAX_CHARS",
    "JUDGE_METHODS",
    "AttributionRequest",
    "JudgeCall",
    "StepRef",
    "StepTexts",
    "TraceSteps",
    "agent_label",
    "agent_lines",
    "cut",
    "from_answers",
    "render_steps",
    "run",
    "trace_steps",
]
