"""THE evaluation path: a request goes in, a response comes out.

The client's in-process mode, the server and the batch CLI all call this service; nothing
else orchestrates an evaluation (checks the criteria and the judge, fans out over
criteria and agents, aggregates). Two kinds of request come in:

- the wire models `RewardRequest` / `TraceRewardRequest` (what the Composo-compatible
  endpoints receive: one criterion each, text or a named evaluator), through
  `evaluate()` / `evaluate_trace()`;
- their in-process twins `ConversationRequest` / `TraceRequest`, which may carry several
  criteria and check objects, through `evaluate_conversation()` / `score_trace()`, or
  `conversation_work()` / `trace_work()` for one awaitable per criterion (the client's
  background mode runs each as its own task);
- an `AttributionRequest` (which agent and step caused a trace's failure), through
  `attribute()`, and one (agent, criterion) pair through `score_agent()` (calibration's
  unit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge._advice import Surface, how_to_configure_a_judge
from tracejudge.errors import BadRequestError, ComposoError, ConfigurationError
from tracejudge.evaluation._explore import TraceMaterial
from tracejudge.evaluation._fanout import PrefixWarmup
from tracejudge.evaluation._single_call import SingleCall
from tracejudge.evaluation._validate import CheckedCriteria, Criterion, validate_criteria
from tracejudge.evaluation.attribution import AttributionRequest
from tracejudge.evaluation.evaluator import (
    DEFAULT_EXPLORATION,
    SINGLE_CALL_NEEDS_BATCH,
    Evaluator,
    gather_all,
    needs_judge,
    run_check,
)
from tracejudge.evaluation.render import RenderedContent, conversation_agent
from tracejudge.evaluation.spend import (
    JudgeSpend,
    PricesOption,
    SpendLimit,
    judge_model,
    resolve_prices,
)
from tracejudge.judges import ExplorationLimits, Judge, JudgeRequest, Verdict
from tracejudge.models import (
    Attribution,
    EvaluationResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    RewardRequest,
    ScoreResponse,
    TraceRewardRequest,
)

__all__ = [
    "ConversationRequest",
    "EvaluationService",
    "TraceRequest",
    "named_evaluator",
]


@dataclass(frozen=True)
class ConversationRequest:
    """A conversation to judge against one or more criteria (`RewardRequest`'s in-process
    twin: criteria may be check objects, and several)."""

    messages: Sequence[Mapping[str, Any]]
    criteria: Sequence[Criterion]
    system: str | None = None
    tools: Sequence[Mapping[str, Any]] | None = None
    evaluate_latest: bool = True
    clean_explanation: bool = False

    def __post_init__(self) -> None:
        # Checked once, here (criteria a caller checked already are taken as they are).
        object.__setattr__(self, "criteria", _checked(self.criteria))

    @classmethod
    def from_wire(cls, request: RewardRequest) -> ConversationRequest:
        return cls(
            messages=request.messages,
            criteria=[_wire_criterion(request.evaluation_criteria, request.evaluator_name)],
            system=request.system,
            tools=request.tools,
            evaluate_latest=request.evaluate_latest,
            clean_explanation=request.explanation_cleaning == "end_user",
        )


@dataclass(frozen=True)
class TraceRequest:
    """A trace to judge against one or more criteria (`TraceRewardRequest`'s twin)."""

    trace: MultiAgentTrace
    criteria: Sequence[Criterion]
    # Each agent rendered once for all criteria of the request.
    renders: dict[str, RenderedContent] = field(default_factory=dict, compare=False)
    # The first judgement of each agent warms the prompt cache before its others start.
    warmup: PrefixWarmup = field(default_factory=PrefixWarmup, compare=False)
    # What an exploring judge reads of the trace, built once for all criteria, if needed.
    material: TraceMaterial = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Checked once, here: the criteria (those a caller checked already are taken as
        # they are), then that the trace has a model call to judge.
        object.__setattr__(self, "criteria", _checked(self.criteria))
        self.trace.require_llm_interactions()
        object.__setattr__(self, "material", TraceMaterial(self.trace))

    @classmethod
    def from_wire(cls, request: TraceRewardRequest) -> TraceRequest:
        criterion = _wire_criterion(request.evaluation_criteria, request.evaluator_name)
        return cls(trace=request.trace, criteria=[criterion])


def _checked(criteria: Sequence[Criterion]) -> CheckedCriteria:
    if isinstance(criteria, CheckedCriteria):
        return criteria
    return validate_criteria(list(criteria))[0]


def named_evaluator(name: str) -> Criterion:
    """The criterion an `evaluator_name` names: a built-in check (`tool_arguments`, ...) or
    a ready-made criterion of `tracejudge.criteria` (`agent_tool_use`, ...)."""
    from tracejudge.evaluation import criteria
    from tracejudge.evaluation._checks.defaults import ALL

    key = name.strip()
    by_name: dict[str, Criterion] = {str(c.name): c for c in ALL}
    if key in by_name:
        return by_name[key]
    if key in criteria.__all__:
        text = getattr(criteria, key)
        if isinstance(text, str):
            return text
    known = sorted([*by_name, *(n for n in criteria.__all__ if n not in ("rag", "agent"))])
    raise BadRequestError(
        f"evaluator_name {name!r} names no evaluator; use one of {', '.join(known)}, or send "
        "evaluation_criteria with the criterion's text"
    )


def _wire_criterion(text: str | None, evaluator_name: str | None) -> Criterion:
    if text is not None:
        return text
    assert evaluator_name is not None  # the wire models require one of the two
    return named_evaluator(evaluator_name)


class EvaluationService:
    """Evaluates conversations and traces with one judge (or none: checks only).

    `judge_problem` is the error to raise when a text criterion needs a judge and there
    is none because the configured one could not be built (say, a missing key): it tells
    the user more than "no judge configured". At most `max_concurrency` judge calls of
    this service are in flight at once. `fail_under`: the bar every agent's score is held
    to (None: each criterion's own, `tracejudge.models.default_bar`).

    Every verdict's usage carries its cost, from `prices` (see
    `tracejudge.evaluation.spend.PricesOption`; the judge's model unknown to the table:
    tokens only). `max_judge_cost` (dollars) and `max_judge_tokens` cap what this service
    may spend on the judge over its life (a `score` run): past a cap no new judgement
    starts and the rest are not evaluated, with the reason; judgements already started
    finish and are kept. A cost cap needs the judge's model to have a price: without one,
    `ConfigurationError`, unless `max_judge_tokens` is given too (then tokens are capped,
    and one warning says the cost cap is not). `spend_limits` are budgets kept elsewhere
    (the server's daily ones). `spend` holds the run's total (`spend.total`).

    A judgement over the judge's input budget (`max_input_tokens`) is explored: the judge
    reads a digest of the trace and the steps it asks for, under `exploration`'s caps
    (rounds, tokens per read, tokens in all; the run's caps above between rounds). None
    turns exploration off; such a judgement is then not evaluated, with the reason.

    `single_call` (opt-in) judges all the text criteria of one request for one agent in
    ONE judge call, one reply object per criterion (`judge_batch`): the agent's material
    is read once instead of once per criterion, at the price of some independence between
    the criteria. Needs a judge with `judge_batch` (the HTTP judges): else
    `ConfigurationError`.

    `surface`: where the service's advice is read (`tracejudge._advice.Surface`): a
    missing judge is told as `judge=...` in Python, `--judge` from the CLI, "start the
    server with --judge" in a server's answer.

    `keep_judge_failures` (what `tracejudge score` runs with): a judgement whose judge call
    fails (timeout, HTTP error, unreadable reply) is not evaluated, with the reason, and
    the checks and other criteria keep their results; `judge_failures` counts them.
    Without it the failure raises.
    """

    def __init__(
        self,
        judge: Judge | None = None,
        *,
        max_concurrency: int = 16,
        judge_problem: ComposoError | None = None,
        fail_under: float | None = None,
        prices: PricesOption = None,
        max_judge_cost: float | None = None,
        max_judge_tokens: int | None = None,
        spend_limits: Sequence[SpendLimit] = (),
        exploration: ExplorationLimits | None = DEFAULT_EXPLORATION,
        single_call: bool = False,
        keep_judge_failures: bool = False,
        surface: Surface = Surface.PYTHON,
    ) -> None:
        if single_call and judge is not None and getattr(judge, "judge_batch", None) is None:
            raise ConfigurationError(SINGLE_CALL_NEEDS_BATCH)
        self.single_call = single_call
        self.judge = judge
        self.surface = surface
        self.judge_problem = judge_problem
        self.fail_under = fail_under
        self.spend = JudgeSpend(
            judge_model(judge) if judge is not None else None,
            resolve_prices(prices),
            max_cost_usd=max_judge_cost if judge is not None else None,
            max_tokens=max_judge_tokens,
            limits=spend_limits,
        )
        self._evaluator = Evaluator(
            judge,
            max_concurrency=max_concurrency,
            fail_under=fail_under,
            spend=self.spend,
            exploration=exploration,
            keep_judge_failures=keep_judge_failures,
            surface=surface,
        )

    @property
    def judge_failures(self) -> int:
        """How many judgements failed and were kept as not evaluated (`keep_judge_failures`)."""
        return self._evaluator.judge_failures

    @property
    def first_judge_failure(self) -> str | None:
        """Why the first failed judgement failed (None: none did)."""
        return self._evaluator.first_judge_failure

    # ------------------------------------------------------------------ checks on requests

    def require_judge(self, criteria: Sequence[Criterion]) -> None:
        """Raise when a text criterion needs the judge this service does not have."""
        if self.judge is None and needs_judge(criteria):
            if self.judge_problem is not None:
                raise self.judge_problem
            self._evaluator.require_judge(criteria)

    # ------------------------------------------------------------------ conversations

    def conversation_work(
        self, request: ConversationRequest
    ) -> list[Coroutine[Any, Any, EvaluationResponse]]:
        """One awaitable per criterion, in order, each scoring the conversation.

        Everything about the request is checked before anything is awaited: the criteria
        (when the request was made), that a judge exists for text criteria, that there is
        an answer to judge.
        """
        criteria = request.criteria
        self.require_judge(criteria)
        agent = conversation_agent(request.messages, system=request.system, tools=request.tools)
        self._evaluator.require_conversation(agent)
        warmup = PrefixWarmup()
        together = self._single_call(criteria)
        return [
            self._evaluator.score_conversation(
                agent,
                c,
                evaluate_latest=request.evaluate_latest,
                clean_explanation=request.clean_explanation,
                warmup=warmup,
                single_call=together,
            )
            for c in criteria
        ]

    def _single_call(self, criteria: Sequence[Criterion]) -> SingleCall[Any] | None:
        """What judges a request's text criteria together (None: one call each), in the
        single-call mode and when there are several."""
        texts = [c for c in criteria if isinstance(c, str)]
        if not self.single_call or len(set(texts)) < 2:
            return None
        return SingleCall(texts)

    async def evaluate_conversation(self, request: ConversationRequest) -> list[EvaluationResponse]:
        """Every criterion of the request, judged concurrently; answers in criteria order."""
        return await gather_all(self.conversation_work(request))

    async def evaluate(self, request: RewardRequest) -> EvaluationResponse:
        """Answer one wire `RewardRequest` (POST /api/v1/evals/reward)."""
        (response,) = await self.evaluate_conversation(ConversationRequest.from_wire(request))
        return response

    # ------------------------------------------------------------------ traces

    def trace_work(
        self, request: TraceRequest
    ) -> list[Coroutine[Any, Any, MultiAgentTraceResponse]]:
        """One awaitable per criterion, in order, each scoring every agent of the trace.

        The request checked its criteria and that its trace holds a model call when it
        was made; here, before anything is awaited, that a judge exists for text criteria.
        """
        criteria = request.criteria
        self.require_judge(criteria)
        together = self._single_call(criteria)
        return [
            self._evaluator.score_trace(
                request.trace,
                c,
                renders=request.renders,
                warmup=request.warmup,
                material=request.material,
                single_call=together,
            )
            for c in criteria
        ]

    async def score_trace(
        self, trace: MultiAgentTrace, criteria: Sequence[Criterion]
    ) -> list[MultiAgentTraceResponse]:
        """Every criterion applied to every agent of `trace` (post-hoc scoring: checks and
        text criteria alike); answers in criteria order."""
        return await gather_all(self.trace_work(TraceRequest(trace=trace, criteria=criteria)))

    async def evaluate_trace(self, request: TraceRewardRequest) -> MultiAgentTraceResponse:
        """Answer one wire `TraceRewardRequest` (POST /api/v1/evals/trace)."""
        (response,) = await gather_all(self.trace_work(TraceRequest.from_wire(request)))
        return response

    # ------------------------------------------------------------------ attribution

    async def judge_call(self, request: JudgeRequest) -> Verdict:
        """One request to this service's judge, within its concurrency limit and its spend
        (the verdict priced, counted in `spend.total`; past a cap, not evaluated with the
        reason): the way attribution reaches the judge. Budgets kept per criterion see
        it as "attribution <question>"."""
        if self.judge is None:
            self.require_judge(["Reward"])  # raises the configured problem
        assert self.judge is not None
        label = f"attribution {getattr(request, 'schema_name', 'question')}"
        async with self._evaluator._limit():
            refused = await self.spend.before(label)
            if refused is not None:
                return Verdict(score=None, explanation="", not_evaluated=refused)
            verdict = await self.judge.judge(request)
            usage = await self.spend.after(label, verdict.usage)
            return dataclasses.replace(verdict, usage=usage)

    async def attribute(self, request: AttributionRequest) -> Attribution:
        """Which agent and step caused `request.trace`'s failure: ranked causes, the
        deterministic findings first, then the judge methods picked (see
        `tracejudge.evaluation.attribution`). Raises `ConfigurationError` when a judge
        method is picked and the service has no judge, `BadRequestError` for an unknown
        method, before anything is judged."""
        from tracejudge.evaluation.attribution import run

        judged = [m for m in request.checked_methods() if m != "checks"]
        if judged and self.judge is None:
            raise self.judge_problem or ConfigurationError(
                f"attribution methods {', '.join(judged)} need a judge. "
                + how_to_configure_a_judge(self.surface)
            )
        return await run(
            request,
            score=self.score_trace,
            judge_call=self.judge_call if self.judge is not None else None,
            judge_name=str(getattr(self.judge, "name", self.judge)),
        )

    async def score_agent(
        self, trace: MultiAgentTrace, agent_id: str, criterion: Criterion
    ) -> ScoreResponse | None:
        """One criterion for one agent instance of `trace`, judged (or checked) exactly as
        `score_trace` judges that agent; None where it does not apply."""
        (checked,), _ = validate_criteria([criterion])
        agent = trace.agent_instance_by_id.get(agent_id)
        if agent is None:
            raise BadRequestError(f"the trace has no agent instance {agent_id!r}")
        if not isinstance(checked, str):
            return (await run_check(checked, trace)).get(agent_id)
        self.require_judge([checked])
        return await self._evaluator._score_agent(trace, agent, checked, {})

    # ------------------------------------------------------------------ closing

    async def aclose(self) -> None:
        """Close the judge. Only for a service that owns its judge (the server's)."""
        if self.judge is not None:
            await self.judge.aclose()
