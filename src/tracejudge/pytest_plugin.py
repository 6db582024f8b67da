"""pytest plugin: trace the code under test and assert on its scores.

Installed with tracejudge (the `pytest11` entry point), it offers:

- the `tracejudge_trace` fixture: an `AgentTracer` named after the test, entered for the
  test's duration, so every model call the test makes (and every `AgentTracer` nested in
  it) is captured; `tracejudge_trace.trace` is the `MultiAgentTrace`. Tracing is
  initialised once (`ComposoTracer.init`) with the instrumentations of the
  `tracejudge_instruments` ini option (default: openai) unless the process already did it.
- `assert_trace(trace, criteria=[...], min_score=0.8)`: scores every agent against every
  criterion (texts need a judge: the `judge` argument, else the environment's, as for
  `Composo`; checks need none) and fails listing each agent, criterion, score and
  explanation that fell short, apart from criteria that errored and those left unscored
  (no judge configured). A criterion that does not apply to an agent (score None) is
  never a failure. The verdict's `usage` is what the judge used; the report ends with it
  in one line (judge calls, tokens in, cached, out, dollars for a priced model), and
  after the tests one line gives the session's total.

    from tracejudge import checks
    from tracejudge.pytest_plugin import assert_trace

    def test_weather_agent(tracejudge_trace, openai_client):
        run_my_agent(openai_client, "Weather in Paris?")
        assert_trace(tracejudge_trace, criteria=[checks.tool_results, checks.final_answer])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from tracejudge import _sync
from tracejudge.evaluation import Criterion, TraceCheck, validate_criteria
from tracejudge.evaluation.evaluator import criterion_name
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import Judge, default_judge, judge_from_spec
from tracejudge.models import JudgeUsage, MultiAgentTrace
from tracejudge.report import usage_sentence
from tracejudge.tracing import AgentTracer, ComposoTracer

__all__ = ["Finding", "TraceAssertionError", "TraceVerdict", "assert_trace", "tracejudge_trace"]

Kind = Literal["passed", "failed", "errored", "unscored", "not applicable"]
_INSTRUMENTS_OPTION = "tracejudge_instruments"
_SHORT = 80
_NO_JUDGE = (
    "no judge configured: pass judge='openai:gpt-4.1-mini' (or a Judge), or set "
    "TRACEJUDGE_JUDGE, OPENAI_API_KEY or OPENAI_BASE_URL"
)


class TraceAssertionError(AssertionError):
    """`assert_trace` found a score below the bar, a criterion that errored, or one left
    unscored; `verdict` holds every finding."""

    def __init__(self, verdict: TraceVerdict) -> None:
        super().__init__(verdict.report())
        self.verdict = verdict


@dataclass(frozen=True)
class Finding:
    """One criterion on one agent instance (or, when it errored or had no judge, on the
    whole trace: `agent` is None)."""

    kind: Kind
    criterion: str
    agent: str | None = None
    agent_id: str | None = None
    score: float | None = None
    explanation: str = ""

    def line(self) -> str:
        where = f"{self.agent} ({self.agent_id})" if self.agent else "every agent"
        score = "" if self.score is None else f" = {self.score:.2f}"
        text = " ".join(self.explanation.split())
        return f"  {where}: {_short(self.criterion)}{score}" + (f" — {text}" if text else "")


@dataclass
class TraceVerdict:
    """Every (agent, criterion) outcome of one `assert_trace`."""

    min_score: float
    findings: list[Finding] = field(default_factory=list)
    #: What the judge used for this assertion (calls, tokens, dollars for a priced model).
    usage: JudgeUsage = field(default_factory=JudgeUsage)

    def of(self, kind: Kind) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    @property
    def ok(self) -> bool:
        """No failure, no error, nothing left unscored for want of a judge."""
        return not (self.of("failed") or self.of("errored") or self.of("unscored"))

    def scores(self) -> dict[tuple[str, str], float | None]:
        """(agent instance id, criterion) -> score, for every scored agent."""
        return {
            (f.agent_id, f.criterion): f.score
            for f in self.findings
            if f.agent_id is not None and f.kind in ("passed", "failed", "not applicable")
        }

    def report(self) -> str:
        counts = ", ".join(
            f"{len(self.of(kind))} {kind}"
            for kind in ("failed", "errored", "unscored")
            if self.of(kind)
        )
        lines = [f"tracejudge: {counts or 'all passed'} (min_score {self.min_score})"]
        headings = {
            "failed": "failed (score below min_score):",
            "errored": "errored (the evaluation itself failed):",
            "unscored": "unscored (no judge for these criteria):",
        }
        for kind, heading in headings.items():
            found = self.of(kind)  # type: ignore[arg-type]
            if found:
                lines.append(heading)
                lines.extend(f.line() for f in found)
        if self.usage.calls or self.usage.cached_calls:
            lines.append(usage_sentence(self.usage))
        return "\n".join(lines)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHORT else text[: _SHORT - 1] + "…"


def _trace_of(trace: Any) -> MultiAgentTrace:
    found = getattr(trace, "trace", trace)
    if not isinstance(found, MultiAgentTrace):
        raise TypeError(
            "assert_trace needs a MultiAgentTrace or an AgentTracer (the tracejudge_trace "
            f"fixture), got {type(trace).__name__}"
        )
    return found


def _judge(judge: str | Judge | None) -> tuple[Judge | None, bool]:
    """(the judge, whether it was built here and must be closed here)."""
    if judge is None:
        built = default_judge()
        return built, built is not None
    if isinstance(judge, str):
        return judge_from_spec(judge), True
    return judge, False


def assert_trace(
    trace: MultiAgentTrace | Any,
    criteria: Criterion | Sequence[Criterion] | None = None,
    *,
    min_score: float = 0.8,
    judge: str | Judge | None = None,
) -> TraceVerdict:
    """Score every agent of `trace` against `criteria` and fail unless each score is at
    least `min_score`.

    `trace` is a `MultiAgentTrace` or anything with a `.trace` (an `AgentTracer`, the
    `tracejudge_trace` fixture). `criteria` are criterion texts and checks (default: the
    built-in checks, `tracejudge.checks.ALL`). Texts are judged by `judge` (a spec such
    as "openai:gpt-4.1-mini", or a `Judge`), else by the environment's judge
    (TRACEJUDGE_JUDGE, OPENAI_API_KEY / OPENAI_BASE_URL); with none, they are reported
    unscored, which fails the assertion. Each criterion is evaluated on its own, so one
    that errors (the judge unreachable, a check that raised) is reported and the others
    still are. Raises `TraceAssertionError` (an AssertionError) listing what failed,
    errored and went unscored; returns the `TraceVerdict` when all is well.
    """
    from tracejudge import checks

    multi = _trace_of(trace)
    multi.require_llm_interactions()
    chosen = list(checks.ALL) if criteria is None else criteria
    checked, _ = validate_criteria(chosen)
    verdict = TraceVerdict(min_score=min_score)
    needs = any(not isinstance(c, TraceCheck) for c in checked)
    built, owned = _judge(judge) if needs else (None, False)
    service = EvaluationService(built)
    try:
        for criterion in checked:
            _assess(service, multi, criterion, verdict)
    finally:
        if owned and built is not None:
            _sync.run(built.aclose())
    _SESSION.append(verdict.usage)
    if not verdict.ok:
        raise TraceAssertionError(verdict)
    return verdict


def _assess(
    service: EvaluationService,
    trace: MultiAgentTrace,
    criterion: Criterion,
    verdict: TraceVerdict,
) -> None:
    name = criterion_name(criterion)
    if service.judge is None and not isinstance(criterion, TraceCheck):
        verdict.findings.append(Finding("unscored", name, explanation=_NO_JUDGE))
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
    names = {agent.id: agent.name for agent in trace.iter_agents()}
    for by_name in response.results_by_agent_name.values():
        for agent_id, result in by_name.results_by_agent_instance_id.items():
            if result is None:
                continue  # nothing of this agent's to judge
            if result.score is None:
                kind: Kind = "not applicable"
            else:
                kind = "passed" if result.score >= verdict.min_score else "failed"
            verdict.findings.append(
                Finding(
                    kind,
                    name,
                    agent=names.get(agent_id, by_name.agent_name),
                    agent_id=agent_id,
                    score=result.score,
                    explanation=result.explanation,
                )
            )


# --------------------------------------------------------------------------- the plugin

#: The judge usage of every `assert_trace` of this session, for the terminal summary.
_SESSION: list[JudgeUsage] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    _SESSION.clear()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line after the tests: what the judge used for every `assert_trace`."""
    total = JudgeUsage()
    for usage in _SESSION:
        total = total + usage
    _SESSION.clear()  # said once (a pytester run inside a test session has its own)
    if total.calls or total.cached_calls:
        terminalreporter.write_line(f"tracejudge: {usage_sentence(total)}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        _INSTRUMENTS_OPTION,
        "model clients the tracejudge_trace fixture instruments when tracing is not set up "
        "yet (openai, anthropic, google_genai, ...)",
        type="linelist",
        default=["openai"],
    )


@pytest.fixture
def tracejudge_trace(request: pytest.FixtureRequest) -> Iterator[AgentTracer]:
    """An `AgentTracer` named after the test, around the test: `.trace` is what the
    test's model calls and nested agents recorded."""
    if ComposoTracer.capture_processor() is None:
        instruments = request.config.getini(_INSTRUMENTS_OPTION)
        ComposoTracer.init(instruments=[i.strip() for i in instruments if i.strip()])
    with AgentTracer(name=request.node.name) as tracer:
        yield tracer
