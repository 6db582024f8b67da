"""The evaluator: criteria applied to a conversation or to every agent of a trace.

For each criterion and each agent instance the evaluator makes one judge call
(all of them concurrently; the judge's own concurrency limit bounds how many
are in flight), then aggregates per agent name and over the whole trace.
Deterministic checks (`TraceCheck`) go through the same aggregation without a
judge. It scores one criterion at a time; `tracejudge.evaluation.service` is the one
place that orchestrates a whole request (the client, the server and the CLI call it).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import statistics
import uuid
import weakref
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from tracejudge._advice import Surface, how_to_configure_a_judge, reworded
from tracejudge.errors import (
    BadRequestError,
    ComposoError,
    ConfigurationError,
    MalformedError,
)
from tracejudge.evaluation._checks.base import TraceCheck
from tracejudge.evaluation._checks.run import BuiltinCheck
from tracejudge.evaluation._explore import TraceMaterial
from tracejudge.evaluation._fanout import PrefixWarmup
from tracejudge.evaluation._single_call import SingleCall
from tracejudge.evaluation._validate import Criterion
from tracejudge.evaluation.render import (
    RenderedContent,
    render_agent,
    render_conversation,
)
from tracejudge.evaluation.spend import JudgeSpend
from tracejudge.judges import ExplorationLimits, Judge, JudgeRequest, Verdict
from tracejudge.models import (
    AgentInstance,
    AgentTraceResult,
    EvaluationResponse,
    ExplorationRecord,
    JudgeUsage,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    ScoredAgent,
    ScoreResponse,
    SummaryStatistics,
    default_bar,
)

__all__ = [
    "DEFAULT_EXPLORATION",
    "SINGLE_CALL_NEEDS_BATCH",
    "Evaluator",
    "trace_response",
    "summarize_trace_response",
    "criterion_name",
    "needs_judge",
    "require_llm_interactions",
]

T = TypeVar("T")

#: Why the single-call mode cannot run with a judge that has no `judge_batch`.
SINGLE_CALL_NEEDS_BATCH = (
    "single_call needs a judge that judges several criteria in one call (judge_batch): "
    "the HTTP judges (OpenAICompatibleJudge, AnthropicJudge, any 'provider:model' spec) "
    "have it; turn single_call off for this judge"
)

#: The caps of an exploring judgement when none are given (see `ExplorationLimits`).
DEFAULT_EXPLORATION = ExplorationLimits()


async def run_check(check: TraceCheck, trace: MultiAgentTrace) -> Mapping[str, Any]:
    """`check.evaluate(trace)`; a check that is not built in runs in a worker thread, so a
    slow one (a user's check calling a service, parsing, sleeping) does not stall the
    judge calls that share this event loop."""
    if isinstance(check, BuiltinCheck):
        return check.evaluate(trace)  # pure and fast: a thread hop would cost more
    return await asyncio.to_thread(check.evaluate, trace)


def criterion_name(criterion: Criterion) -> str:
    """The text of a criterion, or a check's `name`."""
    return criterion if isinstance(criterion, str) else str(criterion.name)


def needs_judge(criteria: Iterable[Criterion]) -> bool:
    """True when any criterion is text (checks need no judge)."""
    return any(isinstance(c, str) for c in criteria)


def require_llm_interactions(trace: MultiAgentTrace) -> None:
    """Raise `NoLLMInteractionsError` when no agent of the trace called a model
    (`MultiAgentTrace.require_llm_interactions`)."""
    trace.require_llm_interactions()


async def gather_all(aws: Iterable[Awaitable[T]]) -> list[T]:
    """Like `asyncio.gather`, but the first failure cancels the rest (no orphaned calls)."""
    listed = list(aws)
    if len(listed) == 1:
        # The common case (one criterion): awaited in place, without a task of its own.
        return [await listed[0]]
    tasks = [asyncio.ensure_future(aw) for aw in listed]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


R = TypeVar("R", bound=ScoreResponse)


def _explored(verdict: Verdict) -> ExplorationRecord | None:
    """What an exploring judge read, from its verdict (None: it did not explore)."""
    record = verdict.raw.get("exploration") if isinstance(verdict.raw, dict) else None
    if not isinstance(record, dict):
        return None
    try:
        return ExplorationRecord.model_validate(record)
    except ValidationError:  # a judge of the user's own may record something else
        return None


def _score_response(verdict: Verdict, judge: Judge, model: type[R], **fields: Any) -> R:
    """The verdict as a `model` (ScoreResponse or a subclass, with its other `fields`)."""
    try:
        return model(
            score=None if verdict.not_evaluated is not None else verdict.score,
            explanation=verdict.explanation,
            cleaned_explanation=verdict.cleaned_explanation,
            usage=verdict.usage,
            not_evaluated=verdict.not_evaluated,
            exploration=_explored(verdict),
            **fields,
        )
    except ValidationError as exc:
        raise MalformedError(
            f"judge {getattr(judge, 'name', judge)!r} returned an unusable verdict "
            f"(score {verdict.score!r}): scores must lie in 0..1 or be None"
        ) from exc


def _format_score(result: ScoreResponse | None) -> str:
    if result is None:
        return "not applicable (nothing to judge)"
    if result.not_evaluated is not None:
        return f"not evaluated ({result.not_evaluated})"
    if result.score is None:
        return "not applicable"
    return f"{result.score:.2f}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def summarize_trace_response(
    response: MultiAgentTraceResponse, *, fail_under: float | None = None
) -> MultiAgentTraceResponse:
    """Fill the flat fields (`agent_scores`, `overall_score`, `explanation`) and the
    verdict per agent (`fail_under`, `worst_agent`, `failing_agents`) from
    `results_by_agent_name`, for answers (a remote server's) that carry only the wire
    fields. `fail_under`: the bar when the answer names none (`tracejudge.models.
    default_bar`); an answer that names its bar keeps it.

    `overall_score` is the mean of the agent instances' non-null scores, None when
    no instance has a score; `worst_agent` the lowest-scoring instance.
    """
    bar = response.bar(fail_under if response.fail_under is None else None)
    agent_scores: dict[str, float | None] = {}
    lines: list[str] = []
    for name, result in response.results_by_agent_name.items():
        for instance_id, score in result.results_by_agent_instance_id.items():
            agent_scores[instance_id] = score.score if score is not None else None
            detail = f" - {_one_line(score.explanation)}" if score and score.explanation else ""
            lines.append(f"- {name} ({instance_id}): {_format_score(score)}{detail}")
    values = [s for s in agent_scores.values() if s is not None]
    overall = statistics.fmean(values) if values else None
    failing = response.failing(bar)
    if overall is None:
        summary = "No agent received a score, so there is no overall score."
    else:
        plural = "s" if len(values) != 1 else ""
        summary = f"Overall score {overall:.2f}: the mean of {len(values)} agent score{plural}."
        if failing:
            named = ", ".join(f"{a.agent_name} {a.score:.2f}" for a in failing[:5])
            more = f" and {len(failing) - 5} more" if len(failing) > 5 else ""
            summary += f"\n{len(failing)} of {len(values)} below {bar:g}: {named}{more}."
    update: dict[str, Any] = {}
    if not response.agent_scores:
        update["agent_scores"] = agent_scores
    if response.overall_score is None:
        update["overall_score"] = overall
    if not response.explanation:
        update["explanation"] = "\n".join([summary, *lines])
    if response.fail_under is None:
        update["fail_under"] = bar
    if response.worst_agent is None and values:
        update["worst_agent"] = min(
            (
                ScoredAgent(agent_name=result.agent_name, agent_instance_id=i, score=a.score)
                for result in response.results_by_agent_name.values()
                for i, a in result.results_by_agent_instance_id.items()
                if a is not None and a.score is not None
            ),
            key=lambda agent: agent.score,
        )
    if response.failing_agents is None:
        update["failing_agents"] = len(failing)
    return response.model_copy(update=update) if update else response


def trace_response(
    trace: MultiAgentTrace,
    criterion: str,
    results: Mapping[str, ScoreResponse | None],
    *,
    usage: JudgeUsage | None = None,
    request_id: str | None = None,
    fail_under: float | None = None,
) -> MultiAgentTraceResponse:
    """Aggregate per-instance results into the answer for one criterion.

    Instances are grouped by agent name, each group with `SummaryStatistics` of its
    non-null scores; `agent_scores` maps every instance id to its score;
    `overall_score` is the mean of the non-null instance scores (None if there is
    none); `worst_agent` and `failing_agents` hold the instances to `fail_under` (the
    bar); `explanation` has one line per instance.
    """
    by_name: dict[str, dict[str, ScoreResponse | None]] = {}
    for agent in trace.iter_agents():
        by_name.setdefault(agent.name, {})[agent.id] = results.get(agent.id)
    results_by_agent_name = {
        name: AgentTraceResult(
            agent_name=name,
            results_by_agent_instance_id=instances,
            summary_statistics=SummaryStatistics.of(
                [r.score if r is not None else None for r in instances.values()]
            ),
        )
        for name, instances in by_name.items()
    }
    response = MultiAgentTraceResponse(
        request_id=request_id or str(uuid.uuid4()),
        results_by_agent_name=results_by_agent_name,
        criterion=criterion,
        usage=usage,
        fail_under=fail_under,
    )
    return summarize_trace_response(response)


def _sum_usage(results: Iterable[ScoreResponse | None]) -> JudgeUsage:
    total = JudgeUsage()
    for result in results:
        if result is not None and result.usage is not None:
            total = total + result.usage
    return total


class Evaluator:
    """Scores conversations and traces against criteria with one judge.

    `judge` may be None when only checks are used; a text criterion then raises
    `ConfigurationError` saying how to configure a judge. Criteria are strings
    whose first words give their kind ("Reward", "Penalize", "Passes if",
    "Fails if"; text without one of these is judged as Reward), or `TraceCheck`
    objects. At most `max_concurrency` judge calls of this evaluator are in flight
    at once, whatever the judge (the HTTP judges also bound their own requests).
    `fail_under`: the bar every agent's score is held to (None: each criterion's
    default, `tracejudge.models.default_bar`). `spend` prices each verdict and may refuse
    a judgement before it starts (a cap was reached: the result is not evaluated).

    `exploration`: the caps of a judgement too long for the judge's input budget, which
    the judge explores (a digest of the trace and tools to read it, `_explore`); `spend`'s
    run caps apply between its rounds too. None turns exploration off: such a judgement
    is then not evaluated, with the reason.

    `keep_judge_failures`: a judgement whose judge call failed (a timeout, an HTTP error,
    a reply that could not be read) is not evaluated, with the reason, instead of raising
    and taking the other criteria's results with it; `judge_failures` counts them.
    A `ConfigurationError` (the judge cannot be used at all) still raises.
    """

    def __init__(
        self,
        judge: Judge | None = None,
        *,
        max_concurrency: int = 16,
        fail_under: float | None = None,
        spend: JudgeSpend | None = None,
        exploration: ExplorationLimits | None = DEFAULT_EXPLORATION,
        keep_judge_failures: bool = False,
        surface: Surface = Surface.PYTHON,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if fail_under is not None and not 0.0 <= fail_under <= 1.0:
            raise ValueError(f"fail_under must be between 0 and 1, got {fail_under}")
        self.judge = judge
        self.max_concurrency = max_concurrency
        self.fail_under = fail_under
        self.spend = spend
        self.exploration = _with_spend(exploration, spend)
        self.keep_judge_failures = keep_judge_failures
        #: Where this evaluator's advice is read (`judge=` in Python, `--judge` on the CLI).
        self.surface = surface
        #: How many judgements failed and were kept as not evaluated (keep_judge_failures).
        self.judge_failures = 0
        #: The first failure's reason (None: none failed).
        self.first_judge_failure: str | None = None
        # An asyncio.Semaphore belongs to one event loop: one per loop that uses this.
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def _limit(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        limit = self._limits.get(loop)
        if limit is None:
            limit = self._limits[loop] = asyncio.Semaphore(self.max_concurrency)
        return limit

    # ------------------------------------------------------------------ helpers

    def require_judge(self, criteria: Iterable[Criterion]) -> None:
        """Raise `ConfigurationError` when a text criterion needs the judge there is not."""
        if self.judge is None and needs_judge(criteria):
            raise ConfigurationError(how_to_configure_a_judge(self.surface))

    async def _ask(
        self,
        request: JudgeRequest,
        model: type[R],
        *,
        warmup: PrefixWarmup | None = None,
        prefix: str = "",
        **fields: Any,
    ) -> R:
        """The judge's verdict on `request` as a `model` (with its other `fields`). With a
        `warmup`, the first call of `prefix` runs before the others of it (cache warming);
        the wait happens before a slot of the limit is taken."""
        assert self.judge is not None  # require_judge ran before any call
        spend = self.spend
        judge = self.judge
        turn = (
            warmup.turn(prefix, in_sequence=lambda: getattr(judge, "prompt_cache_per_slot", False))
            if warmup is not None
            else contextlib.nullcontext()
        )
        async with turn, self._limit():
            # The spend is asked as the judgement starts (not while it waits for a slot),
            # and told what it used as soon as it returns.
            refused = await spend.before(request.criterion) if spend is not None else None
            if refused is not None:
                return model(
                    explanation=f"Not evaluated: {refused}.", not_evaluated=refused, **fields
                )
            try:
                verdict = await self.judge.judge(request)
            except ComposoError as error:
                failed = self._failed(error)
                return model(
                    explanation=f"Not evaluated: {failed}.", not_evaluated=failed, **fields
                )
            if spend is not None:
                usage = await spend.after(request.criterion, verdict.usage)
                verdict = dataclasses.replace(verdict, usage=usage)
        return _score_response(verdict, self.judge, model, **fields)

    def _failed(self, error: ComposoError, judgements: int = 1) -> str:
        """The reason a judgement whose judge call raised `error` is not evaluated; raises
        it again unless failures are kept (and for a judge that cannot be used at all)."""
        if not self.keep_judge_failures or isinstance(error, ConfigurationError):
            raise error
        self.judge_failures += judgements
        judge = getattr(self.judge, "name", None) or type(self.judge).__name__
        said = reworded(_one_line(str(error)), self.surface) or type(error).__name__
        reason = f"the judge {judge} failed: {said}"
        if self.first_judge_failure is None:
            self.first_judge_failure = reason
        return reason

    async def _ask_all(
        self, requests: list[JudgeRequest], model: type[R], **fields: Any
    ) -> list[R]:
        """The judge's verdicts on several criteria of one material in ONE call
        (`judge_batch`), as `model`s: the single-call mode. Each criterion is asked of the
        spend; one refused refuses the call, and all its criteria are not evaluated."""
        assert self.judge is not None
        batch = getattr(self.judge, "judge_batch", None)
        if batch is None:  # the service refuses such a judge; a direct caller may not
            raise ConfigurationError(SINGLE_CALL_NEEDS_BATCH)
        spend = self.spend
        async with self._limit():
            refused = None
            if spend is not None:
                for request in requests:
                    refused = refused or await spend.before(request.criterion)
            if refused is not None:
                return [
                    model(explanation=f"Not evaluated: {refused}.", not_evaluated=refused, **fields)
                    for _ in requests
                ]
            try:
                verdicts = list(await batch(requests))
            except ComposoError as error:
                failed = self._failed(error, len(requests))
                return [
                    model(explanation=f"Not evaluated: {failed}.", not_evaluated=failed, **fields)
                    for _ in requests
                ]
            if spend is not None:
                verdicts = [
                    dataclasses.replace(v, usage=await spend.after(r.criterion, v.usage))
                    for r, v in zip(requests, verdicts, strict=True)
                ]
        return [_score_response(v, self.judge, model, **fields) for v in verdicts]

    # ------------------------------------------------------------------ conversations

    @staticmethod
    def require_conversation(agent: AgentInstance) -> None:
        """Raise `BadRequestError` when the conversation has no assistant response."""
        if not agent.llm_interactions:
            raise BadRequestError(
                "the conversation has no assistant response to evaluate: end `messages` with "
                "the assistant's answer, or pass it as `result=`"
            )

    async def score_conversation(
        self,
        agent: AgentInstance,
        criterion: Criterion,
        *,
        evaluate_latest: bool = True,
        clean_explanation: bool = False,
        warmup: PrefixWarmup | None = None,
        single_call: SingleCall[EvaluationResponse] | None = None,
    ) -> EvaluationResponse:
        """One criterion applied to a conversation (`warmup`: shared by the criteria of
        one conversation, so that the first warms the prompt cache for the others;
        `single_call`: shared by them too, judging them all in one call)."""
        if not isinstance(criterion, str):
            results = await run_check(criterion, MultiAgentTrace.from_agent(agent))
            result = results.get(agent.id)
            if result is None:
                return EvaluationResponse(
                    score=None,
                    explanation=f"The check {criterion.name!r} does not apply here.",
                    criterion=criterion_name(criterion),
                )
            return EvaluationResponse.model_validate(
                {**result.model_dump(), "criterion": criterion_name(criterion)}
            )
        self.require_judge([criterion])
        rendered = render_conversation(agent, evaluate_latest=evaluate_latest)
        material = TraceMaterial(MultiAgentTrace.from_agent(agent))

        def request_of(text: str) -> JudgeRequest:
            return JudgeRequest.of(
                text,
                rendered.content,
                target=rendered.target,
                clean_explanation=clean_explanation,
                exploration=self._exploration(material, agent.id),
                subject="the conversation",
            )

        async def judge_all(criteria: list[str]) -> list[EvaluationResponse]:
            answers = await self._ask_all([request_of(c) for c in criteria], EvaluationResponse)
            return [
                a.model_copy(update={"criterion": c})
                for a, c in zip(answers, criteria, strict=True)
            ]

        if single_call is not None:
            return await single_call.verdict(agent.id, criterion, judge_all)
        request = request_of(criterion)
        return await self._ask(
            request, EvaluationResponse, warmup=warmup, prefix=agent.id, criterion=criterion
        )

    # ------------------------------------------------------------------ traces

    async def score_trace(
        self,
        trace: MultiAgentTrace,
        criterion: Criterion,
        *,
        renders: dict[str, RenderedContent] | None = None,
        warmup: PrefixWarmup | None = None,
        material: TraceMaterial | None = None,
        single_call: SingleCall[ScoreResponse | None] | None = None,
    ) -> MultiAgentTraceResponse:
        """One criterion applied to every agent instance of a trace.

        An instance with neither an LLM interaction nor a child agent gets None.
        `renders` may be shared by calls for several criteria on the same trace, so
        each agent is rendered once rather than once per criterion; `warmup` too, so that
        the first judgement of each agent warms the prompt cache for the others;
        `material`, what an exploring judge reads of the trace (built once, when needed);
        and `single_call`, which judges all the criteria of one agent in one call.
        """
        is_check = not isinstance(criterion, str)
        bar = self.fail_under if self.fail_under is not None else default_bar(is_check)
        if not isinstance(criterion, str):
            results = dict(await run_check(criterion, trace))
            return trace_response(trace, criterion_name(criterion), results, fail_under=bar)
        self.require_judge([criterion])
        agents = list(trace.iter_agents())
        cache = renders if renders is not None else {}
        material = material if material is not None else TraceMaterial(trace)
        scores = await gather_all(
            self._score_agent(trace, a, criterion, cache, warmup, material, single_call)
            for a in agents
        )
        results = {agent.id: score for agent, score in zip(agents, scores, strict=True)}
        return trace_response(trace, criterion, results, usage=_sum_usage(scores), fail_under=bar)

    async def _score_agent(
        self,
        trace: MultiAgentTrace,
        agent: AgentInstance,
        criterion: str,
        renders: dict[str, RenderedContent],
        warmup: PrefixWarmup | None = None,
        material: TraceMaterial | None = None,
        single_call: SingleCall[ScoreResponse | None] | None = None,
    ) -> ScoreResponse | None:
        if not agent.llm_interactions and not agent.child_ids:
            return None
        rendered = renders.get(agent.id)
        if rendered is None:
            rendered = renders[agent.id] = render_agent(trace, agent.id)
        material = material if material is not None else TraceMaterial(trace)

        def request_of(text: str) -> JudgeRequest:
            return JudgeRequest.of(
                text,
                rendered.content,
                target=rendered.target,
                exploration=self._exploration(material, agent.id),
                subject=agent.name,
            )

        async def judge_all(criteria: list[str]) -> list[ScoreResponse | None]:
            answers = await self._ask_all([request_of(c) for c in criteria], ScoreResponse)
            return [_calls_named(a, material) for a in answers]

        if single_call is not None:
            return await single_call.verdict(agent.id, criterion, judge_all)
        answer = await self._ask(
            request_of(criterion), ScoreResponse, warmup=warmup, prefix=agent.id
        )
        return _calls_named(answer, material)

    def _exploration(self, material: TraceMaterial, agent_id: str) -> Any:
        """How a judgement of `agent_id` explores when it is over budget (None: it does
        not)."""
        if self.exploration is None:
            return None
        return material.exploration(agent_id, self.exploration)


def _calls_named(answer: R, material: TraceMaterial) -> R:
    """An explored verdict's explanation with each step the judge cites by number (the
    digest's "step 12") also named as the page names it ("step 12 (researcher call 3)")."""
    if answer.exploration is None or not answer.explanation:
        return answer
    named = material.steps.named_calls(answer.explanation)
    return (
        answer if named == answer.explanation else answer.model_copy(update={"explanation": named})
    )


def _with_spend(
    limits: ExplorationLimits | None, spend: JudgeSpend | None
) -> ExplorationLimits | None:
    """`limits` whose spend check also asks `spend` (the run's caps) between rounds."""
    if limits is None or spend is None:
        return limits
    own = limits.spend

    def check(usage: JudgeUsage) -> str | None:
        reason = spend.exploring(usage)
        if reason is None and own is not None:
            reason = own(usage)
        return reason

    return dataclasses.replace(limits, spend=check)
