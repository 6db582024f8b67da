"""`Composo` and `AsyncComposo`: the public clients, thin over the engine.

The API is the Composo SDK's (see the seed reference): the same constructor,
`evaluate()`, `evaluate_trace()` and context managers, so code written for `composo`
ports by changing the import. Where evaluation happens (`tracejudge._env.choose_backend`):

1. `judge=` given (a spec such as "openai:gpt-4.1-mini", or a `Judge`): in process.
2. `base_url=` or `api_key=` given: a remote Composo-compatible server.
3. `TRACEJUDGE_JUDGE` set: in process, with that judge.
4. `COMPOSO_API_KEY` set: the remote server at `base_url`.
5. `OPENAI_API_KEY` / `OPENAI_BASE_URL` set: in process, with an OpenAI-compatible judge.
6. Otherwise nothing: a text criterion raises `ConfigurationError` saying how to
   configure a judge (constructing the client never fails for this, and
   deterministic checks need no judge).

Blank environment variables count as unset. `Composo` runs the asynchronous core on the
process's one tracejudge event loop (`tracejudge._sync`), which is fork-safe.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

from tracejudge import _sync
from tracejudge._http import HTTPOptions
from tracejudge.client._engine import (
    DEFAULT_BASE_URL,
    Engine,
    EvaluateResult,
    TraceResult,
)
from tracejudge.evaluation import DEFAULT_EXPLORATION, PricesOption, TraceCheck
from tracejudge.judges import CacheOption, ExplorationLimits, Judge
from tracejudge.models import Attribution, MultiAgentTraceResponse, TaskResponse

__all__ = ["AsyncComposo", "Composo"]

logger = logging.getLogger("tracejudge")

T = TypeVar("T")

TraceLike = Any  # MultiAgentTrace | AgentTracer-like | dict | JSON text
Criteria = str | TraceCheck | list[str | TraceCheck]


def _release(calls: _sync.CallGroup, engine: Engine) -> None:
    """Close a `Composo`'s engine (what `close()` and the finalizer do)."""
    engine.refuse_work()
    calls.close()
    _sync.run(engine.aclose())


def _release_unused(calls: _sync.CallGroup, engine: Engine) -> None:
    """The finalizer of a `Composo` that was never closed: release, quietly."""
    try:
        _release(calls, engine)
    except Exception:  # noqa: BLE001 - nobody is left to tell
        logger.debug("closing an unreferenced Composo client failed", exc_info=True)


class _Client:
    """What `Composo` and `AsyncComposo` share: the constructor and the chosen backend."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        num_retries: int = 1,
        model_core: str | None = None,
        timeout: float = 60.0,
        *,
        judge: str | Judge | None = None,
        cache: CacheOption = None,
        max_concurrency: int = 16,
        max_concurrent_requests: int | None = None,
        emit_evaluation_events: bool = False,
        prices: PricesOption = None,
        single_call: bool = False,
        exploration: ExplorationLimits | None = DEFAULT_EXPLORATION,
    ) -> None:
        if max_concurrent_requests is not None:  # the Composo SDK's name (AsyncComposo)
            max_concurrency = max_concurrent_requests
        options = HTTPOptions(
            timeout=timeout, num_retries=num_retries, max_concurrency=max_concurrency
        )
        self._engine = Engine(
            api_key=api_key,
            base_url=base_url,
            model_core=model_core,
            options=options,
            judge=judge,
            cache=cache,
            emit_events=emit_evaluation_events,
            prices=prices,
            single_call=single_call,
            exploration=exploration,
        )
        self.api_key = api_key
        self.base_url = str(base_url).rstrip("/")
        self.num_retries = options.num_retries
        self.model_core = model_core
        self.timeout = options.timeout
        self.max_concurrency = options.max_concurrency
        self._setup()

    def _setup(self) -> None:
        """Run at the end of construction, for what one kind of client needs."""

    @property
    def judge(self) -> Judge | None:
        """The in-process judge, or None (remote server, or nothing configured)."""
        return self._engine.judge

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._engine.describe()})"


class AsyncComposo(_Client):
    """Asynchronous client: `await client.evaluate(...)`, `await client.evaluate_trace(...)`.

    Same constructor and methods as `Composo`, as coroutines (`max_concurrent_requests`,
    the Composo SDK's name for `max_concurrency`, is accepted too). Use `async with
    AsyncComposo(...) as client:` or call `await client.aclose()` when done.
    """

    async def evaluate(
        self,
        messages: list[dict[str, Any]] | None = None,
        criteria: str | TraceCheck | list[str | TraceCheck] | None = None,
        system: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        result: Any = None,
        block: bool = True,
        tags: dict[str, Any] | None = None,
        evaluate_latest: bool | None = None,
        explanation_cleaning: Literal["end_user"] | None = None,
        *,
        input: str | list[Any] | None = None,
    ) -> EvaluateResult:
        """Evaluate a conversation against one criterion or several. See `Composo.evaluate`."""
        return await self._engine.evaluate(
            messages=messages,
            criteria=criteria,
            system=system,
            tools=tools,
            result=result,
            block=block,
            tags=tags,
            evaluate_latest=evaluate_latest,
            explanation_cleaning=explanation_cleaning,
            input=input,
        )

    async def evaluate_trace(
        self,
        trace: TraceLike,
        criteria: str | TraceCheck | list[str | TraceCheck],
        model_core: str | None = None,
        block: bool = True,
        tags: dict[str, Any] | None = None,
        evaluate_latest: bool | None = None,
        *,
        emit_events: bool | None = None,
    ) -> TraceResult:
        """Evaluate every agent of a multi-agent trace. See `Composo.evaluate_trace`."""
        return await self._engine.evaluate_trace(
            trace=trace,
            criteria=criteria,
            model_core=model_core,
            block=block,
            tags=tags,
            evaluate_latest=evaluate_latest,
            emit_events=emit_events,
        )

    async def attribute(
        self,
        trace: TraceLike,
        methods: str | list[str] = "checks",
        *,
        criteria: Criteria | None = None,
        responses: list[MultiAgentTraceResponse] | None = None,
        outcome: str | None = None,
        failed: bool | None = None,
        max_step_chars: int = 3000,
    ) -> Attribution:
        """Which agent and step caused a trace's failure. See `Composo.attribute`."""
        return await self._engine.attribute(
            trace=trace,
            methods=methods,
            criteria=criteria,
            responses=responses,
            outcome=outcome,
            failed=failed,
            max_step_chars=max_step_chars,
        )

    async def get_task(self, task_id: str) -> TaskResponse:
        """The status of a `block=False` evaluation. See `Composo.get_task`."""
        return await self._engine.get_task(task_id)

    async def aclose(self) -> None:
        """Cancel background tasks and release connections (and a judge this client built)."""
        await self._engine.aclose()

    def close(self) -> asyncio.Task[None] | None:
        """Close the client from code that cannot await (prefer `await aclose()`).

        The client refuses new work at once. Inside a running event loop the release is
        scheduled, and the returned task may be awaited; otherwise it happens now.
        """
        self._engine.refuse_work()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self._engine.aclose())
            return None
        return loop.create_task(self._engine.aclose())

    async def __aenter__(self) -> AsyncComposo:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class Composo(_Client):
    """Synchronous client for evaluating LLM conversations and multi-agent traces.

    Parameters follow the Composo SDK:

    - `api_key`: key for a remote server (default `COMPOSO_API_KEY`); giving one
      selects the remote server.
    - `base_url`: the remote server (default the Composo platform); giving one
      selects the remote server.
    - `num_retries`: retries on a failed request, with exponential backoff and
      jitter; at least 1 (retries cannot be disabled).
    - `model_core`: the remote server's evaluation model (sent as
      "align-20251111" when None); the in-process judge ignores it.
    - `timeout`: seconds for one request, retries included.

    tracejudge adds `judge` (a spec such as "openai:gpt-4.1-mini" or
    "anthropic:claude-sonnet-4-5", or a `Judge` object) to evaluate in process,
    `cache` (the judge's result cache: None = in memory, False = off, a path =
    SQLite, or a cache object) and `max_concurrency` (judge or server requests in
    flight, shared by every call of the client; `max_concurrent_requests` is the
    same) and `emit_evaluation_events` (write trace scores back onto the traces as
    OTel GenAI evaluation events; see `evaluate_trace`), and `prices` (what the
    in-process judge's model costs, dollars per million tokens, over the shipped table:
    `{"my-model": {"input": 0.3, "output": 1.2}}`, a `PriceTable` or a JSON file's path;
    default the file TRACEJUDGE_JUDGE_PRICES names): each result's `usage` then carries
    `cost_usd`. `single_call=True` (in process) judges all the criteria of one call
    for one agent in ONE judge call (one reply object per criterion): cheaper, at the price
    of some independence between the criteria. `exploration`: the caps of a judgement too
    long for the judge's input budget, which the judge explores through a digest and tools
    (`ExplorationLimits`; None: such a judgement is not evaluated). Without `judge`, the
    environment decides (see the module docs). A judge
    built here (from a spec or the environment) takes the client's `timeout`,
    `num_retries`, `cache` and `max_concurrency`, and is closed with the client; a
    `Judge` object passed in keeps its own settings and is left open for its owner
    (the client's `max_concurrency` still bounds the calls it makes to it).

    Use `with Composo(...) as client:` or call `close()` when done (a client that is
    garbage-collected unclosed is closed then, its connections released). Every
    `Composo` of a process shares one event-loop thread; a client used before
    `os.fork()` works in the child too.
    """

    def _setup(self) -> None:
        # The client's calls run on the process's one tracejudge loop; closing the client
        # (or, failing that, garbage collection) cancels those in flight and releases it.
        self._calls = _sync.CallGroup()
        self._finalizer = weakref.finalize(self, _release_unused, self._calls, self._engine)

    def evaluate(
        self,
        messages: list[dict[str, Any]] | None = None,
        criteria: str | TraceCheck | list[str | TraceCheck] | None = None,
        system: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        result: Any = None,
        block: bool = True,
        tags: dict[str, Any] | None = None,
        evaluate_latest: bool | None = None,
        explanation_cleaning: Literal["end_user"] | None = None,
        *,
        input: str | list[Any] | None = None,
    ) -> EvaluateResult:
        """Evaluate a conversation against one criterion or several.

        - `messages`: chat messages (OpenAI or Anthropic format; roles system, user,
          assistant, tool). Mutually exclusive with `input`.
        - `criteria`: a criterion ("Reward ...", "Penalize ...", "Passes if ...",
          "Fails if ..."; the first letter's case is ignored, and text with no such
          prefix is judged as Reward), a check object, or a list of them; each at
          most 4096 characters and not empty.
        - `system`, `tools`: the system prompt and tool definitions (OpenAI or
          Anthropic format) the assistant had.
        - `result`: the model's answer to append: an OpenAI ChatCompletion or
          Responses `Response`, an Anthropic `Message`, their dict forms, a message
          dict, or text. A Response's built-in tool calls (web search, code
          interpreter, MCP, ...) are shown to the judge as tool calls and results.
        - `block`: False returns `{"task_id": ...}` at once (a list of them when
          `criteria` is a list); read the outcome with `get_task`.
        - `tags`: str keys of at most 64 characters, str/int/float/bool values
          (sent as strings) of at most 64 characters, nothing nested. Sent to a
          remote server; not used in process.
        - `evaluate_latest`: True (the default) judges the assistant's latest
          response - everything it did after the last user message - with the rest
          as context; False judges every assistant response.
        - `explanation_cleaning`: "end_user" adds `cleaned_explanation`, the
          explanation rewritten to mention only what user and assistant messages show.
        - `input`: the Responses API input (text or a list of items), instead of
          `messages`.

        Returns one `EvaluationResponse` when `criteria` is one criterion (a string
        or a check), and a list of them, in the order of `criteria`, when it is a
        list (even a list of one: a list in, a list out). Criteria are judged
        concurrently.
        """
        return self._run(
            self._engine.evaluate(
                messages=messages,
                criteria=criteria,
                system=system,
                tools=tools,
                result=result,
                block=block,
                tags=tags,
                evaluate_latest=evaluate_latest,
                explanation_cleaning=explanation_cleaning,
                input=input,
            )
        )

    def evaluate_trace(
        self,
        trace: TraceLike,
        criteria: str | TraceCheck | list[str | TraceCheck],
        model_core: str | None = None,
        block: bool = True,
        tags: dict[str, Any] | None = None,
        evaluate_latest: bool | None = None,
        *,
        emit_events: bool | None = None,
    ) -> TraceResult:
        """Evaluate every agent instance of a multi-agent trace.

        `trace` is a `MultiAgentTrace`, an `AgentTracer` (its `.trace` is read) or
        the trace as a dict in wire form. Each agent instance is judged on its own
        model calls, its child agents shown as calls with their final outputs;
        instances with neither get None. Check objects in `criteria` run here,
        with no judge. `model_core` overrides the client's for a remote server.
        `evaluate_latest` must be False or None.

        Returns one `MultiAgentTraceResponse` when `criteria` is one criterion (a
        string or a check), and a list of them when it is a list (even a list of
        one: a list in, a list out): per-agent-name results with summary statistics,
        `agent_scores` by instance id, `overall_score` (the mean of the non-null
        instance scores, None when there is none) and an `explanation` with a line
        per instance. `block=False` returns `{"task_id": ...}` instead. Raises
        `NoLLMInteractionsError` when the trace holds no LLM interaction.

        `emit_events=True` (default: the client's `emit_evaluation_events`) writes the
        scores back onto the trace through your OpenTelemetry pipeline: one GenAI
        `gen_ai.evaluation.result` event per agent and criterion, parented to the
        agent's span (log records when a LoggerProvider is set, else span events on a
        short child span of the agent; see `tracejudge.evaluation.events`). Only for
        blocking calls on traces captured from spans (`AgentTracer.trace`, converted
        OTLP), whose span ids the trace keeps.
        """
        return self._run(
            self._engine.evaluate_trace(
                trace=trace,
                criteria=criteria,
                model_core=model_core,
                block=block,
                tags=tags,
                evaluate_latest=evaluate_latest,
                emit_events=emit_events,
            )
        )

    def attribute(
        self,
        trace: TraceLike,
        methods: str | list[str] = "checks",
        *,
        criteria: Criteria | None = None,
        responses: list[MultiAgentTraceResponse] | None = None,
        outcome: str | None = None,
        failed: bool | None = None,
        max_step_chars: int = 3000,
    ) -> Attribution:
        """Which agent and which step caused a trace's failure: a ranked list of causes.

        - `trace`: as `evaluate_trace` takes it.
        - `methods`: "checks" (the default: the deterministic checks' findings, with their
          exact steps, and the agents that failed a criterion) and/or the judge methods
          "all_at_once", "step_by_step", "binary_search", "counterfactual" (need a judge);
          the checks' findings rank first, then each judge method's, in the order given.
        - `criteria`: what decides that the trace failed (default: the built-in checks);
          `responses`: `evaluate_trace` answers the trace already has, used instead.
        - `outcome`: what went wrong, in words (the trace failed; the judge is told);
          `failed`: your word: True it failed (look for a cause even if no check fails),
          False it did not.
        - `max_step_chars`: characters of one message the judge methods show.

        A client of a remote tracejudge server (`base_url=`, no `judge=`) sends what needs
        a judge (a judge method, a text criterion) to the server's `POST
        /api/v1/attribution`, where its judge answers within the server's budget; the
        built-in checks go by name (for a check of your own, pass `responses=`). The
        checks alone never leave the client.

        Returns a `tracejudge.models.Attribution`: `failed`, `failures` (what failed),
        `causes` ranked (agent instance, `step` = its model call and tool call, `index` =
        the step's place in the trace, `method`, `evidence`, `confidence`,
        `consequence_of`, and for the counterfactual method `fix` and `outcome_changes`),
        `usage` (the judge calls' tokens and cost), `notes`.
        """
        return self._run(
            self._engine.attribute(
                trace=trace,
                methods=methods,
                criteria=criteria,
                responses=responses,
                outcome=outcome,
                failed=failed,
                max_step_chars=max_step_chars,
            )
        )

    def get_task(self, task_id: str) -> TaskResponse:
        """The status of a `block=False` evaluation: queued, running, done (with
        `result`) or failed (with `error`).

        A task run in process is forgotten once read finished (a remote tracejudge server
        keeps it for its retention period); in-process tasks also end when the client
        closes. Raises `BadRequestError` for an unknown id.
        """
        return self._run(self._engine.get_task(task_id))

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return _sync.run(work, group=self._calls)

    def close(self) -> None:
        """Cancel background tasks and calls in flight, and release connections.

        Calls still in flight in other threads raise ComposoError at once. Raises what
        releasing a judge built here raised.
        """
        if self._finalizer.detach() is not None:
            _release(self._calls, self._engine)

    def __enter__(self) -> Composo:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
