"""pytest plugin: trace the code under test and assert on its scores.

Installed with tracejudge (the `pytest11` entry point), it offers:

- the `tracejudge_trace` fixture: an `AgentTracer` named after the test, entered for the
  test's duration, so every model call the test makes (and every `AgentTracer` nested in
  it) is captured; `tracejudge_trace.trace` is the `MultiAgentTrace`. Tracing is
  initialised once (`ComposoTracer.init`) with the instrumentations of the
  `tracejudge_instruments` ini option (default: openai) unless the process already did it.
- `assert_trace(trace, criteria=[...], min_score=0.8)`: scores every agent against every
  criterion (texts need a judge: the `judge` argument, else the environment's, as for
  `Composo`; checks need none) and fails when any agent scores below `min_score` on any
  criterion (never a mean: one failed agent among ten fails the test), listing the
  failing (agent, criterion) pairs worst first with their explanations and the steps
  their findings point to, then the criteria that errored and those left unscored (no
  judge configured). A criterion that does not apply to an agent (score None) is never a
  failure. When agents failed, the report names the most likely cause (the agent and
  its step) from the deterministic attribution of the answers (no judge asked:
  `tracejudge.evaluation.attribution.from_answers`; `verdict.attribution` holds every
  ranked cause). The verdict's `usage` is what the judge used; the report ends with it
  in one line (judge calls, tokens in, cached, out, dollars for a priced model), and
  after the tests one line gives the session's total.

Baseline mode (`tracejudge.pytest_baseline`): `--tracejudge-save-run DIR|URL` saves the
session's `assert_trace` scores as a run (each test a row); `--tracejudge-baseline
DIR|URL` compares them with a saved run and fails the session only on a significant drop
of at least `--tracejudge-min-effect` (too few tests, or a drop that is not significant,
is inconclusive: said, never a failure).

A failure reads as pytest's own do: the test's line, then the findings; the plugin's
frames are hidden (`__tracebackhide__`), and the short summary line names the worst
agent, its criterion and score, then the cause (`TraceAssertionError: writer scored 0.00
on final_answer (below 0.8); 1 failed; cause: researcher at call 1`).

    from tracejudge import checks
    from tracejudge.pytest_plugin import assert_trace

    def test_weather_agent(tracejudge_trace, openai_client):
        run_my_agent(openai_client, "Weather in Paris?")
        assert_trace(tracejudge_trace, criteria=[checks.tool_results, checks.final_answer])
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pytest

from tracejudge import pytest_baseline

# What scores and traces is imported when a test first asks for it: the plugin loads in
# every pytest session of an environment where tracejudge is installed, most of which
# never call `assert_trace`.
if TYPE_CHECKING:
    import pluggy

    from tracejudge.evaluation import Criterion
    from tracejudge.evaluation.service import EvaluationService
    from tracejudge.judges import Judge
    from tracejudge.models import (
        Attribution,
        Cause,
        JudgeUsage,
        MultiAgentTrace,
        MultiAgentTraceResponse,
        Step,
    )
    from tracejudge.models import TraceVerdict as AgentVerdict
    from tracejudge.tracing import AgentTracer

__all__ = ["Finding", "TraceAssertionError", "TraceVerdict", "assert_trace", "tracejudge_trace"]

Kind = Literal["passed", "failed", "errored", "unscored", "not applicable"]
_INSTRUMENTS_OPTION = "tracejudge_instruments"
_SHORT = 80
_NO_JUDGE = (
    "no judge configured: pass judge='openai:gpt-4.1-mini' (or a Judge), or set "
    "TRACEJUDGE_JUDGE, OPENAI_API_KEY or OPENAI_BASE_URL"
)


class TraceAssertionError(AssertionError):
    """`assert_trace` found an agent scoring below the bar, a criterion that errored, or
    one left unscored; `verdict` holds every finding. Its first line (pytest's short
    summary) names the worst failing agent."""

    # Shown as `TraceAssertionError: ...`, not with its module's path, in pytest's short
    # summary (pytest's own `Failed` does the same).
    __module__ = "builtins"

    def __init__(self, verdict: TraceVerdict) -> None:
        super().__init__(verdict.report())
        self.verdict = verdict


def where_of(step: Step) -> str:
    """A step as a person reads it: ``call 3, tool call call_1 (search)`` (`Step.label`)."""
    return step.label()


@dataclass(frozen=True)
class Finding:
    """One criterion on one agent instance (or, when it errored or had no judge, on the
    whole trace: `agent` is None). `steps`: where in the agent a check's finding points."""

    kind: Kind
    criterion: str
    agent: str | None = None
    agent_id: str | None = None
    score: float | None = None
    explanation: str = ""
    steps: tuple[Step, ...] = ()

    def line(self) -> str:
        where = f"{self.agent} ({self.agent_id})" if self.agent else "every agent"
        score = "" if self.score is None else f" = {self.score:.2f}"
        text = " ".join(self.explanation.split())
        line = f"  {where}: {_short(self.criterion)}{score}" + (f" — {text}" if text else "")
        if self.steps:
            line += "\n    at " + "; ".join(where_of(step) for step in self.steps)
        return line


def _no_usage() -> JudgeUsage:
    from tracejudge.models import JudgeUsage

    return JudgeUsage()


@dataclass
class TraceVerdict:
    """Every (agent, criterion) outcome of one `assert_trace`, in the order evaluated,
    and the per-agent verdict (`tracejudge.models.TraceVerdict`) of the scored answers."""

    min_score: float
    findings: list[Finding] = field(default_factory=list)
    #: What the judge used for this assertion (calls, tokens, dollars for a priced model).
    usage: JudgeUsage = field(default_factory=_no_usage)
    responses: list[MultiAgentTraceResponse] = field(default_factory=list)
    #: The failures' ranked causes, deterministic (None: nothing failed).
    attribution: Attribution | None = None

    @property
    def cause(self) -> Cause | None:
        """The most likely cause of the failures: an agent and, where known, its step."""
        return self.attribution.top if self.attribution is not None else None

    def of(self, kind: Kind) -> list[Finding]:
        """The findings of `kind`; failures worst first (evaluation order among equals)."""
        found = [f for f in self.findings if f.kind == kind]
        if kind == "failed":
            found.sort(key=lambda f: f.score if f.score is not None else 0.0)
        return found

    @property
    def ok(self) -> bool:
        """No failure, no error, nothing left unscored for want of a judge."""
        return not (self.of("failed") or self.of("errored") or self.of("unscored"))

    @property
    def agents(self) -> AgentVerdict:
        """The verdict over the scored criteria, held to `min_score`: its status, worst
        agent and failing (agent, criterion) pairs worst first, with their steps."""
        from tracejudge.models import TraceVerdict as AgentVerdict

        return AgentVerdict.of(self.responses, fail_under=self.min_score)

    def scores(self) -> dict[tuple[str, str], float | None]:
        """(agent instance id, criterion) -> score, for every scored agent."""
        return {
            (f.agent_id, f.criterion): f.score
            for f in self.findings
            if f.agent_id is not None and f.kind in ("passed", "failed", "not applicable")
        }

    def headline(self) -> str:
        """One line: the worst failing agent (or the first problem), then the counts."""
        failed, errored, unscored = self.of("failed"), self.of("errored"), self.of("unscored")
        counts = [
            f"{len(found)} {kind}"
            for kind, found in (("failed", failed), ("errored", errored), ("unscored", unscored))
            if found
        ]
        if failed:
            worst = failed[0]
            first = (
                f"{worst.agent} scored {worst.score:.2f} on {_short(worst.criterion, 40)} "
                f"(below {self.min_score:g})"
            )
        elif errored:
            first = f"{_short(errored[0].criterion, 40)} errored"
        elif unscored:
            first = f"{_short(unscored[0].criterion, 40)} unscored (no judge)"
        else:
            return f"tracejudge: all passed (min_score {self.min_score:g})"
        cause = self.cause
        where = ""
        if cause is not None:
            at = cause.step.call if cause.step else "as a whole"
            where = f"; cause: {cause.agent_name} {'at ' if cause.step else ''}{at}"
        return f"{first}; {', '.join(counts)}{where}"

    def report(self) -> str:
        lines = [self.headline()]
        cause = self.cause
        if cause is not None and self.attribution is not None:
            at = f" at {where_of(cause.step)}" if cause.step else " (the agent as a whole)"
            criteria = f" — {', '.join(cause.criteria)}" if cause.criteria else ""
            lines.append(
                f"most likely cause: {cause.agent_name} ({cause.agent_instance_id}){at}"
                f"{criteria}, confidence {cause.confidence:.2f} (deterministic, no judge)"
            )
            more = len(self.attribution.causes) - 1
            if more:
                lines.append(
                    f"  and {more} more cause{'s' if more > 1 else ''}: verdict.attribution, "
                    "or Composo().attribute(trace), ranks them all"
                )
        headings: dict[Kind, str] = {
            "failed": f"failed (below min_score {self.min_score:g}), worst first:",
            "errored": "errored (the evaluation itself failed):",
            "unscored": "unscored (no judge for these criteria):",
        }
        for kind, heading in headings.items():
            found = self.of(kind)
            if found:
                lines.append(heading)
                lines.extend(f.line() for f in found)
        if self.usage.calls or self.usage.cached_calls:
            from tracejudge.report import usage_sentence

            lines.append(usage_sentence(self.usage))
        return "\n".join(lines)


def _short(text: str, limit: int = _SHORT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _trace_of(trace: Any) -> MultiAgentTrace:
    __tracebackhide__ = True
    from tracejudge.models import MultiAgentTrace

    found = getattr(trace, "trace", trace)
    if not isinstance(found, MultiAgentTrace):
        raise TypeError(
            "assert_trace needs a MultiAgentTrace or an AgentTracer (the tracejudge_trace "
            f"fixture), got {type(trace).__name__}"
        )
    return found


def assert_trace(
    trace: MultiAgentTrace | Any,
    criteria: Criterion | Sequence[Criterion] | None = None,
    *,
    min_score: float = 0.8,
    judge: str | Judge | None = None,
) -> TraceVerdict:
    """Score every agent of `trace` against `criteria` and fail unless each agent's
    score on each criterion is at least `min_score`.

    `trace` is a `MultiAgentTrace` or anything with a `.trace` (an `AgentTracer`, the
    `tracejudge_trace` fixture). `criteria` are criterion texts and checks (default: the
    built-in checks, `tracejudge.checks.ALL`). Texts are judged by `judge` (a spec such
    as "openai:gpt-4.1-mini", or a `Judge`), else by the environment's judge
    (TRACEJUDGE_JUDGE, OPENAI_API_KEY / OPENAI_BASE_URL); with none, they are reported
    unscored, which fails the assertion. Each criterion is evaluated on its own, so one
    that errors (the judge unreachable, a check that raised) is reported and the others
    still are; a pair the judge could not evaluate (a budget ran out) is an error too.
    Raises `TraceAssertionError` (an AssertionError) whose first line names the worst
    failing agent and the most likely cause, then the cause's step, the failing pairs
    worst first (with the steps their findings point to), what errored and what went
    unscored; returns the `TraceVerdict` when all is well.
    """
    __tracebackhide__ = True
    from tracejudge import _sync, checks
    from tracejudge.evaluation import TraceCheck, validate_criteria
    from tracejudge.evaluation.attribution import from_answers
    from tracejudge.evaluation.settings import EvaluationSettings, build_service

    multi = _trace_of(trace)
    multi.require_llm_interactions()
    chosen = list(checks.ALL) if criteria is None else criteria
    checked, _ = validate_criteria(chosen)
    verdict = TraceVerdict(min_score=min_score)
    needs = any(not isinstance(c, TraceCheck) for c in checked)
    settings = EvaluationSettings(judge=judge, fail_under=min_score)
    service = build_service(settings) if needs else build_service(settings, judge=None)
    try:
        for criterion in checked:
            _assess(service, multi, criterion, verdict)
    finally:
        if service.judge is not None and service.judge is not judge:  # built here
            _sync.run(service.aclose())
    _SESSION.append(verdict.usage)
    _RUN.record(multi, verdict.findings, min_score)
    if verdict.of("failed"):
        verdict.attribution = from_answers(
            multi, verdict.responses, criteria=checked, fail_under=min_score
        )
    if not verdict.ok:
        raise TraceAssertionError(verdict)
    return verdict


def _assess(
    service: EvaluationService,
    trace: MultiAgentTrace,
    criterion: Criterion,
    verdict: TraceVerdict,
) -> None:
    from tracejudge import _sync
    from tracejudge.evaluation import TraceCheck
    from tracejudge.evaluation.evaluator import criterion_name

    name = criterion_name(criterion)
    if service.judge is None and not isinstance(criterion, TraceCheck):
        # The environment names a judge that could not be built: say why, not "none".
        problem = service.judge_problem
        explanation = _NO_JUDGE if problem is None else f"{type(problem).__name__}: {problem}"
        verdict.findings.append(Finding("unscored", name, explanation=explanation))
        return
    try:
        (response,) = _sync.run(service.score_trace(trace, [criterion]))
    except Exception as error:  # reported, with the others still evaluated
        verdict.findings.append(
            Finding("errored", name, explanation=f"{type(error).__name__}: {error}")
        )
        return
    if response.usage is not None:
        verdict.usage = verdict.usage + response.usage
    verdict.responses.append(response)
    bar = response.bar(verdict.min_score)
    names = {agent.id: agent.name for agent in trace.iter_agents()}
    for by_name in response.results_by_agent_name.values():
        for agent_id, result in by_name.results_by_agent_instance_id.items():
            if result is None:
                continue  # nothing of this agent's to judge
            kind: Kind
            explanation = result.explanation
            if result.not_evaluated is not None:
                kind = "errored"
                explanation = f"not evaluated: {result.not_evaluated}"
            elif result.score is None:
                kind = "not applicable"
            else:
                kind = "failed" if result.score < bar else "passed"
            verdict.findings.append(
                Finding(
                    kind,
                    name,
                    agent=names.get(agent_id, by_name.agent_name),
                    agent_id=agent_id,
                    score=result.score,
                    explanation=explanation,
                    steps=tuple(result.steps or ()),
                )
            )


# --------------------------------------------------------------------------- the plugin

#: The judge usage of every `assert_trace` of this session, for the terminal summary.
_SESSION: list[JudgeUsage] = []
#: The session's scores as a run (baseline mode: `tracejudge.pytest_baseline`).
_RUN = pytest_baseline.SessionRun()


def pytest_sessionstart(session: pytest.Session) -> None:
    global _RUN
    _SESSION.clear()
    _RUN = pytest_baseline.session_run(session.config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """The test running now: the row its `assert_trace` calls are recorded under."""
    _RUN.test = item.nodeid
    try:
        yield
    finally:
        _RUN.test = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Baseline mode: save the session's run, compare it with the baseline, and fail the
    session on a significant regression (`tracejudge.pytest_baseline`)."""
    pytest_baseline.finish(session, _RUN)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line after the tests: what the judge used for every `assert_trace`; then what
    baseline mode found."""
    if _SESSION:
        from tracejudge.report import usage_sentence

        total = sum(_SESSION[1:], _SESSION[0])
        _SESSION.clear()  # said once (a pytester run inside a test session has its own)
        if total.calls or total.cached_calls:
            terminalreporter.write_line(f"tracejudge: {usage_sentence(total)}")
    for line in pytest_baseline.summary_lines(_RUN):
        terminalreporter.write_line(f"tracejudge: {line}" if line else "")


def pytest_addoption(parser: pytest.Parser) -> None:
    pytest_baseline.add_options(parser)
    parser.addini(
        _INSTRUMENTS_OPTION,
        "model clients the tracejudge_trace fixture instruments when tracing is not set up "
        "yet (openai, anthropic, google_genai, ...)",
        type="linelist",
        default=["openai"],
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """The short summary line of a test that `assert_trace` failed: the verdict's headline
    (the worst agent, its criterion and score), which the class name would push off a
    terminal's line."""
    outcome = yield
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, TraceAssertionError):
        crash = getattr(outcome.get_result().longrepr, "reprcrash", None)
        if crash is not None:
            crash.message = error.verdict.headline()


@pytest.fixture
def tracejudge_trace(request: pytest.FixtureRequest) -> Iterator[AgentTracer]:
    """An `AgentTracer` named after the test, around the test: `.trace` is what the
    test's model calls and nested agents recorded."""
    from tracejudge.tracing import AgentTracer, ComposoTracer

    if ComposoTracer.capture_processor() is None:
        instruments = request.config.getini(_INSTRUMENTS_OPTION)
        ComposoTracer.init(instruments=[i.strip() for i in instruments if i.strip()])
    with AgentTracer(name=request.node.name) as tracer:
        yield tracer
