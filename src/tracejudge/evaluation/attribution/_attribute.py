"""One attribution: what failed, then its causes by every method picked, ranked.

`EvaluationService.attribute` calls `run`, handing it the service's two ways to reach a
judge: `score` (criteria over a trace, the evaluation path) and `judge_call` (one
structured ask). Nothing here calls a judge any other way. `from_answers` is the
deterministic attribution of answers a trace already has, with no judge and no awaiting
(the trace viewer's and the pytest plugin's).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from tracejudge.errors import BadRequestError, ConfigurationError
from tracejudge.evaluation._validate import Criterion, validate_criteria
from tracejudge.evaluation.attribution._findings import PRECEDENCE, Findings, findings
from tracejudge.evaluation.attribution._judging import Asker, JudgeCall
from tracejudge.evaluation.attribution._methods import JUDGE_METHODS, MethodContext
from tracejudge.evaluation.attribution._rank import Candidate, rank
from tracejudge.evaluation.attribution._steps import TraceSteps, trace_steps
from tracejudge.evaluation.attribution._transcript import DEFAULT_MAX_CHARS
from tracejudge.models import (
    ATTRIBUTION_METHODS,
    Attribution,
    AttributionMethod,
    MultiAgentTrace,
    MultiAgentTraceResponse,
)

__all__ = ["AttributionRequest", "from_answers", "run"]

ScoreTrace = Callable[
    [MultiAgentTrace, Sequence[Criterion]], Awaitable[list[MultiAgentTraceResponse]]
]


@dataclass(frozen=True)
class AttributionRequest:
    """A trace whose failure to attribute, and how.

    - `methods`: "checks" (the deterministic findings and failing criteria) and any of
      the judge methods "all_at_once", "step_by_step", "binary_search", "counterfactual".
    - `criteria`: what decides that the trace failed and gives the deterministic findings
      (default: the built-in checks); text criteria are judged.
    - `responses`: answers the trace already has (from `evaluate_trace`), used instead of
      evaluating `criteria` again.
    - `outcome`: what went wrong, in words ("the answer was 12, the right one is 21"): the
      trace failed, and the judge methods are told so.
    - `failed`: the caller's word: True, it failed (find a cause even if no check fails);
      False, it did not (nothing to attribute); None, decide from the criteria and outcome.
    - `max_step_chars`: characters of one message the judge methods show.
    - `counterfactual_rounds`: how many steps the counterfactual method may try.
    """

    trace: MultiAgentTrace
    methods: Sequence[str] = ("checks",)
    criteria: Sequence[Criterion] | None = None
    responses: Sequence[MultiAgentTraceResponse] | None = None
    outcome: str | None = None
    failed: bool | None = None
    fail_under: float | None = None
    max_step_chars: int = DEFAULT_MAX_CHARS
    counterfactual_rounds: int = 2

    def checked_methods(self) -> list[AttributionMethod]:
        """The methods, each once in the order given; `BadRequestError` names an unknown one."""
        if isinstance(self.methods, str):
            raise BadRequestError(
                f"methods must be a list of method names, got the string {self.methods!r}; "
                f"write methods=[{self.methods!r}]"
            )
        picked: list[AttributionMethod] = []
        for method in self.methods:
            if method not in ATTRIBUTION_METHODS:
                raise BadRequestError(
                    f"unknown attribution method {method!r}; use one of "
                    f"{', '.join(ATTRIBUTION_METHODS)}"
                )
            if method not in picked:
                picked.append(method)
        if not picked:
            raise BadRequestError(
                f"no attribution method given; use {', '.join(ATTRIBUTION_METHODS)}"
            )
        if self.max_step_chars < 100:
            raise BadRequestError(f"max_step_chars must be at least 100, got {self.max_step_chars}")
        return picked


def _default_criteria() -> list[Criterion]:
    from tracejudge.evaluation._checks.defaults import ALL

    return list(ALL)


def _failure_text(found: Findings, request: AttributionRequest) -> list[str]:
    lines = list(found.lines())
    if request.outcome:
        lines.append(f"outcome: {request.outcome.strip()}")
    if not lines and request.failed:
        lines.append("the user reports that this run failed (no check or criterion says how)")
    return lines


def _check_names(
    criteria: Sequence[Criterion], responses: Sequence[MultiAgentTraceResponse]
) -> set[str]:
    """The criteria that are deterministic checks: the check objects among `criteria`,
    and the answers given of a built-in check (by its base name: `budgets(max_tokens=60)`
    is a check even when `criteria` holds only the default ones)."""
    names = {str(c.name) for c in criteria if not isinstance(c, str)}
    names.update(r.criterion for r in responses if r.criterion.split("(", 1)[0] in PRECEDENCE)
    return names


@dataclass
class _Examined:
    """What the answers say: the attribution so far, its findings and failure lines."""

    attribution: Attribution
    found: Findings
    failures: list[str]
    steps: TraceSteps


def _examine(
    request: AttributionRequest,
    methods: list[AttributionMethod],
    criteria: Sequence[Criterion],
    responses: Sequence[MultiAgentTraceResponse],
) -> _Examined:
    trace = request.trace
    steps = trace_steps(trace)
    found = findings(
        responses, steps, _check_names(criteria, responses), fail_under=request.fail_under
    )
    failures = _failure_text(found, request)
    failed = request.failed if request.failed is not None else bool(failures)
    attribution = Attribution(
        trace_id=trace.trace_id,
        failed=failed,
        failures=failures,
        outcome=request.outcome,
        methods=methods,
        steps=len(steps),
    )
    if not failed:
        attribution.notes.append(
            "nothing failed: no check or criterion failed and no outcome was given; pass "
            "outcome=... or failed=True to look for a cause anyway"
            if request.failed is None
            else "the caller says this run did not fail: nothing to attribute"
        )
    return _Examined(attribution, found, failures, steps)


def _ranked(
    examined: _Examined,
    methods: list[AttributionMethod],
    judged_groups: list[list[Candidate]],
    judged: bool,
) -> Attribution:
    """The causes of every group, in order: the checks' findings with steps, without,
    the judge methods', then agents that failed a judged criterion."""
    attribution, found = examined.attribution, examined.found
    groups: list[list[Candidate]] = []
    if "checks" in methods:
        groups += [found.with_steps, found.agents]
    groups += judged_groups
    if "checks" in methods:
        groups.append(found.judged)
    attribution.causes = rank(examined.steps.trace, groups)
    if not attribution.causes:
        attribution.notes.append(
            "no cause found"
            + ("" if judged else ": no check points to a step; try a judge method (--method)")
        )
    return attribution


def from_answers(
    trace: MultiAgentTrace,
    responses: Sequence[MultiAgentTraceResponse],
    *,
    criteria: Sequence[Criterion] | None = None,
    fail_under: float | None = None,
) -> Attribution:
    """The deterministic attribution of `trace` from the answers it already has (method
    "checks": the checks' findings with their steps, then agents that failed a
    criterion): no judge, nothing evaluated again. What the trace viewer and the pytest
    plugin show; a trace without a model call or a failure gets no causes.

    `criteria`: what the answers were given for, when it holds checks of your own (their
    findings then point to their steps; the built-in checks are known by name);
    `fail_under`: the bar, instead of each answer's own."""
    started = time.perf_counter()
    request = AttributionRequest(trace=trace, responses=responses, fail_under=fail_under)
    methods: list[AttributionMethod] = ["checks"]
    given = _default_criteria() if criteria is None else list(criteria)
    examined = _examine(request, methods, given, responses)
    if examined.attribution.failed:
        _ranked(examined, methods, [], judged=False)
    examined.attribution.seconds = time.perf_counter() - started
    return examined.attribution


async def run(
    request: AttributionRequest,
    *,
    score: ScoreTrace,
    judge_call: JudgeCall | None,
    judge_name: str = "judge",
) -> Attribution:
    """The attribution of `request.trace` (see `AttributionRequest`)."""
    started = time.perf_counter()
    methods = request.checked_methods()
    judged = [m for m in methods if m in JUDGE_METHODS]
    if judged and judge_call is None:
        from tracejudge.judges import HOW_TO_CONFIGURE_A_JUDGE

        raise ConfigurationError(
            f"attribution methods {', '.join(judged)} need a judge. {HOW_TO_CONFIGURE_A_JUDGE}"
        )
    trace = request.trace
    trace.require_llm_interactions()
    criteria = list(request.criteria) if request.criteria is not None else _default_criteria()
    checked, _ = validate_criteria(criteria)
    responses = list(request.responses or [])
    evaluate = request.responses is None and (
        "checks" in methods or (request.failed is None and not request.outcome)
    )
    if evaluate and request.failed is not False:
        responses = await score(trace, checked)
    examined = _examine(request, methods, checked, responses)
    attribution = examined.attribution
    if not attribution.failed:
        attribution.seconds = time.perf_counter() - started
        return attribution
    judged_groups: list[list[Candidate]] = []
    asker = Asker(judge_call, name=judge_name) if judge_call is not None else None
    if judged and asker is not None:
        failure = "What went wrong:\n" + "\n".join(f"- {line}" for line in examined.failures)
        context = MethodContext(
            examined.steps, asker, failure, request.max_step_chars, request.counterfactual_rounds
        )
        for method in judged:
            judged_groups.append(await JUDGE_METHODS[method](context))
        attribution.notes.extend(asker.notes)
        attribution.usage = asker.usage
    _ranked(examined, methods, judged_groups, judged=bool(judged))
    attribution.seconds = time.perf_counter() - started
    return attribution
