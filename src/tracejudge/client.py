"""`Composo` and `AsyncComposo`: evaluate conversations and traces, in process or remotely.

The API is the Composo SDK's (see the seed reference): the same constructor,
`evaluate()`, `evaluate_trace()` and context managers, so code written for
`composo` ports by changing the import. Where evaluation happens:

1. `judge=` given (a spec such as "openai:gpt-4.1-mini", or a `Judge`): in process.
2. `base_url=` or `api_key=` given: a remote Composo-compatible server.
3. `TRACEJUDGE_JUDGE` set: in process, with that judge.
4. `COMPOSO_API_KEY` set: the remote server at `base_url`.
5. `OPENAI_API_KEY` / `OPENAI_BASE_URL` set: in process, with an OpenAI-compatible judge.
6. Otherwise nothing: a text criterion raises `ConfigurationError` saying how to
   configure a judge (constructing the client never fails for this, and
   deterministic checks need no judge).

`Composo` runs the asynchronous core on one private event-loop thread, so the
judge's connections, concurrency limit and cache are shared by all calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import weakref
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Literal, TypeVar

import httpx
from pydantic import ValidationError

from tracejudge._chat import text_of
from tracejudge.errors import (
    BadRequestError,
    ComposoError,
    ConfigurationError,
    MalformedError,
)
from tracejudge.evaluation import TraceCheck
from tracejudge.evaluation._adapt import adapt_input, adapt_result, as_plain
from tracejudge.evaluation._tasks import TaskRegistry
from tracejudge.evaluation._validate import (
    Criterion,
    validate_criteria,
    validate_explanation_cleaning,
    validate_tags,
)
from tracejudge.evaluation.evaluator import (
    Evaluator,
    gather_all,
    needs_judge,
    require_llm_interactions,
    summarize_trace_response,
)
from tracejudge.evaluation.render import RenderedContent, conversation_agent
from tracejudge.judges import CacheOption, Judge
from tracejudge.judges._http import Endpoint, error_from_response, send_with_retries
from tracejudge.judges._loops import LoopClients
from tracejudge.models import (
    EvaluationResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    TaskResponse,
)

__all__ = ["Composo", "AsyncComposo", "DEFAULT_BASE_URL", "DEFAULT_MODEL_CORE"]

T = TypeVar("T")

logger = logging.getLogger("tracejudge")


class _DefaultURL(str):
    """The default base URL, told apart from the same URL passed explicitly."""


#: Where the remote Composo platform lives.
DEFAULT_BASE_URL: str = _DefaultURL("https://platform.composo.ai")
#: The model core sent to a remote server when none is chosen.
DEFAULT_MODEL_CORE = "align-20251111"

REWARD_PATH = "/api/v1/evals/reward"
TRACE_PATH = "/api/v1/evals/trace"
TASK_PATH = "/api/v1/tasks/{task_id}"

_USER_AGENT = "tracejudge (composo-compatible)"
_BACKOFF_BASE = 0.5
_BACKOFF_MAX = 8.0

TraceLike = Any  # MultiAgentTrace | AgentTracer-like | dict | JSON text
EvaluateResult = EvaluationResponse | list[EvaluationResponse] | dict[str, Any] | list[Any]
TraceResult = MultiAgentTraceResponse | list[MultiAgentTraceResponse] | dict[str, Any] | list[Any]


# --------------------------------------------------------------------------- remote server


class _RemoteServer:
    """HTTP to a Composo-compatible server: retries with backoff inside one total timeout."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float,
        num_retries: int,
        max_concurrency: int,
    ) -> None:
        self.base_url = str(base_url).rstrip("/")
        self.api_key = api_key
        self.timeout = float(timeout)
        # As the Composo SDK documents: at least one retry; retries cannot be disabled.
        self.num_retries = max(1, int(num_retries))
        self.max_concurrency = max(1, int(max_concurrency))
        # One connection pool and limit per event loop: an AsyncComposo may be used from
        # several loops in turn (one per test, one per asyncio.run).
        self._clients = LoopClients(self._new_client, self.max_concurrency)

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(limits=httpx.Limits(max_connections=self.max_concurrency))

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
        if self.api_key:
            headers["API-Key"] = self.api_key
        return headers

    def _endpoint(self, method: str, path: str) -> Endpoint:
        return Endpoint(
            label=f"{method} {path} on the server",
            model="",
            base_url=self.base_url,
            key_hint="check api_key= (or COMPOSO_API_KEY) and that base_url is the right server",
            not_found_hint=(
                "the server no longer knows this task (a finished task is forgotten once read)"
                if path.startswith(TASK_PATH.split("{", 1)[0])
                else "check that base_url is the root of a tracejudge or Composo server (such "
                f"as {str(DEFAULT_BASE_URL)!r}), without the /api/v1 path"
            ),
        )

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one request, retrying 408/409/429/5xx, timeouts and connection errors
        `num_retries` times; all tries together get `timeout` seconds."""
        pair = self._clients.get()
        endpoint = self._endpoint(method, path)
        async with pair.semaphore:
            deadline = asyncio.get_running_loop().time() + self.timeout
            response = await send_with_retries(
                pair.client,
                f"{self.base_url}{path}",
                method=method,
                body=body,
                headers=self._headers(),
                endpoint=endpoint,
                deadline=deadline,
                timeout=self.timeout,
                request_timeout=self.timeout,
                num_retries=self.num_retries,
                backoff_base=_BACKOFF_BASE,
                backoff_max=_BACKOFF_MAX,
            )
        if not response.is_success:
            raise error_from_response(response, endpoint)
        try:
            return response.json()
        except ValueError as exc:
            raise MalformedError(
                f"{endpoint.where()} answered HTTP {response.status_code} with a body that is "
                f"not JSON: {response.text[:200]!r}",
                response.status_code,
                response.text[:2000],
            ) from exc

    async def aclose(self) -> None:
        """Close the connection pools, each on its own event loop."""
        await self._clients.aclose()


# --------------------------------------------------------------------------- inputs


def _coerce_trace(trace: TraceLike) -> MultiAgentTrace:
    """A MultiAgentTrace from what `evaluate_trace` accepts."""
    if isinstance(trace, MultiAgentTrace):
        return trace
    if trace is None:
        raise BadRequestError("trace is required: pass a MultiAgentTrace or tracer.trace")
    try:
        if isinstance(trace, (str, bytes)):
            return MultiAgentTrace.from_json(trace)
        if isinstance(trace, Mapping):
            return MultiAgentTrace.model_validate(dict(trace))
        inner = getattr(trace, "trace", None)
        if inner is not None and not callable(getattr(trace, "model_dump", None)):
            return _coerce_trace(inner)
        if hasattr(type(trace), "trace"):
            raise BadRequestError(
                f"the {type(trace).__name__} holds no trace yet: read `tracer.trace` after "
                "model calls were made inside `with AgentTracer(...)`"
            )
        dumped = as_plain(trace)
        if isinstance(dumped, Mapping):
            return MultiAgentTrace.model_validate(dict(dumped))
    except ValidationError as exc:
        raise BadRequestError(f"trace is not a valid MultiAgentTrace: {exc}") from exc
    raise BadRequestError(
        f"trace is a {type(trace).__name__}: pass a MultiAgentTrace, an AgentTracer (its "
        "`.trace`), or the trace as a dict in wire form"
    )


class _Conversation:
    """What `evaluate()` judges: chat messages, system prompt and tools, result appended."""

    def __init__(
        self,
        messages: list[dict[str, Any]],
        system: str | None,
        tools: list[dict[str, Any]] | None,
    ) -> None:
        self.messages = messages
        self.system = system
        self.tools = tools


def _plain_list(value: Any, what: str) -> list[dict[str, Any]]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise BadRequestError(
            f"{what} must be a list of dicts, got {type(value).__name__}"
            + (
                ' (wrap a single message in a list: [{"role": "user", "content": "..."}])'
                if isinstance(value, Mapping)
                else ""
            )
        )
    items: list[dict[str, Any]] = []
    for index, raw in enumerate(value):
        item = as_plain(raw)
        if not isinstance(item, Mapping):
            raise BadRequestError(
                f"{what}[{index}] is a {type(raw).__name__}; each must be a dict"
                + (" with 'role' and 'content'" if what == "messages" else "")
            )
        items.append(dict(item))
    return items


def _conversation(messages: Any, input: Any, result: Any, system: Any, tools: Any) -> _Conversation:
    if messages is not None and input is not None:
        raise BadRequestError(
            "pass either messages= (chat messages) or input= (the Responses API input), not both"
        )
    discovered: list[dict[str, Any]] = []
    if messages is not None:
        chat = _plain_list(messages, "messages")
    elif input is not None:
        adapted_input = adapt_input(input)
        chat, discovered = adapted_input.messages, list(adapted_input.discovered_tools)
    else:
        raise BadRequestError(
            "messages= is required: the conversation to evaluate, e.g. "
            '[{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}] '
            "(or input= with the Responses API input)"
        )
    declared = _plain_list(tools, "tools") if tools is not None else None
    if system is not None and not isinstance(system, str):
        system = text_of(as_plain(system))
    if result is not None:
        adapted = adapt_result(result)
        chat.extend(adapted.messages)
        if declared is None and adapted.tools:
            declared = list(adapted.tools)
        discovered.extend(adapted.discovered_tools)
        if system is None:
            system = adapted.system
    if discovered:
        declared = (declared or []) + discovered
    return _Conversation(chat, system or None, declared or None)


def _evaluate_latest(value: Any) -> bool:
    if value is None:
        return True
    if not isinstance(value, bool):
        raise BadRequestError(f"evaluate_latest must be True, False or None, got {value!r}")
    return value


# --------------------------------------------------------------------------- the core


class _Engine:
    """The asynchronous core behind both clients: one backend, one task registry."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str,
        num_retries: int,
        model_core: str | None,
        timeout: float,
        judge: str | Judge | None,
        cache: CacheOption,
        max_concurrency: int,
    ) -> None:
        from tracejudge.judges import default_judge, judge_from_spec

        self.model_core = model_core
        self.remote: _RemoteServer | None = None
        self.judge: Judge | None = None
        self._owns_judge = False
        # A judge the environment names but that cannot be built: reported when needed.
        self._judge_problem: Exception | None = None
        self._tasks = TaskRegistry()
        self._closed = False
        self._released = False
        options: dict[str, Any] = {
            "timeout": timeout,
            "num_retries": num_retries,
            "max_concurrency": max_concurrency,
            "cache": cache,
        }
        key = api_key if api_key is not None else os.environ.get("COMPOSO_API_KEY") or None
        explicit_remote = not isinstance(base_url, _DefaultURL) or api_key is not None

        def remote() -> _RemoteServer:
            return _RemoteServer(
                base_url,
                key,
                timeout=timeout,
                num_retries=num_retries,
                max_concurrency=max_concurrency,
            )

        def from_environment() -> None:
            try:
                self.judge = default_judge(**options)
            except ComposoError as exc:
                self._judge_problem = exc
            self._owns_judge = self.judge is not None

        if judge is not None:
            self.judge = judge_from_spec(judge, **options)
            self._owns_judge = self.judge is not judge
        elif explicit_remote:
            self.remote = remote()
        elif os.environ.get("TRACEJUDGE_JUDGE"):
            from_environment()
        elif key:
            self.remote = remote()
        else:
            from_environment()
        self.evaluator = Evaluator(self.judge, max_concurrency=max_concurrency)

    # ------------------------------------------------------------------ helpers

    def describe(self) -> str:
        if self.judge is not None:
            return f"judge={getattr(self.judge, 'name', self.judge)!r}"
        if self.remote is not None:
            return f"base_url={self.remote.base_url!r}"
        return "no judge configured"

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the client is closed; create a new one")

    def _require_judging(self, criteria: Sequence[Criterion]) -> None:
        if not needs_judge(criteria) or self.remote is not None or self.judge is not None:
            return
        if self._judge_problem is not None:
            raise self._judge_problem
        self.evaluator.require_judge(criteria)

    def _local(self, criterion: Criterion) -> bool:
        """Checks always run here; text criteria here unless a remote server judges them."""
        return isinstance(criterion, TraceCheck) or self.remote is None

    # ------------------------------------------------------------------ evaluate

    async def evaluate(
        self,
        messages: Any,
        criteria: Any,
        system: Any,
        tools: Any,
        result: Any,
        block: bool,
        tags: Any,
        evaluate_latest: Any,
        explanation_cleaning: Any,
        input: Any,
    ) -> EvaluateResult:
        self._check_open()
        checked, _ = validate_criteria(criteria)
        clean_tags = validate_tags(tags)
        clean = validate_explanation_cleaning(explanation_cleaning)
        latest = _evaluate_latest(evaluate_latest)
        conversation = _conversation(messages, input, result, system, tools)
        self._require_judging(checked)
        agent = None
        if any(self._local(c) for c in checked):
            agent = conversation_agent(
                conversation.messages, system=conversation.system, tools=conversation.tools
            )
            self.evaluator.require_conversation(agent)

        def local(criterion: Criterion) -> Coroutine[Any, Any, EvaluationResponse]:
            assert agent is not None
            return self.evaluator.score_conversation(
                agent, criterion, evaluate_latest=latest, clean_explanation=clean
            )

        def body(criterion: str) -> dict[str, Any]:
            data: dict[str, Any] = {
                "evaluation_criteria": criterion,
                "model_core": self.model_core or DEFAULT_MODEL_CORE,
                "tags": clean_tags or {},
                "messages": conversation.messages,
            }
            if conversation.system is not None:
                data["system"] = conversation.system
            if conversation.tools is not None:
                data["tools"] = conversation.tools
            data["evaluate_latest"] = latest
            if clean:
                data["explanation_cleaning"] = "end_user"
            return data

        async def remote(criterion: str) -> EvaluationResponse:
            assert self.remote is not None
            answer = await self.remote.request("POST", REWARD_PATH, body(criterion))
            return _evaluation_response(answer, criterion)

        if block:
            results: list[Any] = await gather_all(
                local(c) if self._local(c) else remote(c)  # type: ignore[arg-type]
                for c in checked
            )
        else:
            results = await gather_all(
                self._submit(local(c)) if self._local(c) else self._background(REWARD_PATH, body(c))  # type: ignore[arg-type]
                for c in checked
            )
        return results if len(checked) > 1 else results[0]

    async def _submit(self, work: Coroutine[Any, Any, Any]) -> dict[str, Any]:
        return {"task_id": self._tasks.submit(work)}

    async def _background(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self.remote is not None
        answer = await self.remote.request("POST", f"{path}/background", body)
        if not isinstance(answer, dict) or "task_id" not in answer:
            raise MalformedError(f"the server answered {answer!r} without a task_id")
        return answer

    # ------------------------------------------------------------------ evaluate_trace

    async def evaluate_trace(
        self,
        trace: Any,
        criteria: Any,
        model_core: str | None,
        block: bool,
        tags: Any,
        evaluate_latest: Any,
    ) -> TraceResult:
        self._check_open()
        if evaluate_latest is not None and evaluate_latest is not False:
            raise BadRequestError(
                f"evaluate_latest={evaluate_latest!r}: evaluate_latest must be False for trace "
                "evaluations (every agent's responses are judged); leave it unset"
            )
        checked, _ = validate_criteria(criteria)
        clean_tags = validate_tags(tags)
        multi = _coerce_trace(trace)
        require_llm_interactions(multi)
        self._require_judging(checked)
        core = model_core or self.model_core or DEFAULT_MODEL_CORE

        def body(criterion: str) -> dict[str, Any]:
            return {
                "evaluation_criteria": criterion,
                "model_core": core,
                "tags": clean_tags or {},
                "trace": multi.to_wire(compat=True),
                "evaluate_latest": False,
            }

        async def remote(criterion: str) -> MultiAgentTraceResponse:
            assert self.remote is not None
            answer = await self.remote.request("POST", TRACE_PATH, body(criterion))
            return _trace_response(answer, criterion)

        renders: dict[str, RenderedContent] = {}  # each agent rendered once for all criteria

        def local(criterion: Criterion) -> Coroutine[Any, Any, MultiAgentTraceResponse]:
            return self.evaluator.score_trace(multi, criterion, renders=renders)

        if block:
            results: list[Any] = await gather_all(
                local(c) if self._local(c) else remote(c)  # type: ignore[arg-type]
                for c in checked
            )
        else:
            results = await gather_all(
                self._submit(local(c)) if self._local(c) else self._background(TRACE_PATH, body(c))  # type: ignore[arg-type]
                for c in checked
            )
        return results if len(checked) > 1 else results[0]

    # ------------------------------------------------------------------ tasks, closing

    async def get_task(self, task_id: str) -> TaskResponse:
        self._check_open()
        if task_id in self._tasks or self.remote is None:
            return self._tasks.get(task_id)
        answer = await self.remote.request("GET", TASK_PATH.format(task_id=task_id))
        try:
            return TaskResponse.model_validate(answer)
        except ValidationError as exc:
            raise MalformedError(f"the server's task status is not readable: {exc}") from exc

    def refuse_work(self) -> None:
        """Refuse new evaluations from now on (releasing is `aclose`'s job)."""
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True
        if self._released:
            return
        self._released = True
        await self._tasks.aclose()
        if self.remote is not None:
            await self.remote.aclose()
        if self.judge is not None and self._owns_judge:
            await self.judge.aclose()


def _evaluation_response(answer: Any, criterion: str) -> EvaluationResponse:
    if not isinstance(answer, dict):
        raise MalformedError(f"the server's evaluation answer is not an object: {answer!r}")
    try:
        return EvaluationResponse.model_validate(
            {
                "score": answer.get("score"),
                "explanation": answer.get("explanation", ""),
                "cleaned_explanation": answer.get("cleaned_explanation"),
                "criterion": criterion,
            }
        )
    except ValidationError as exc:
        raise MalformedError(f"the server's evaluation answer is not usable: {exc}") from exc


def _trace_response(answer: Any, criterion: str) -> MultiAgentTraceResponse:
    try:
        response = MultiAgentTraceResponse.model_validate(answer)
    except ValidationError as exc:
        raise MalformedError(f"the server's trace answer is not usable: {exc}") from exc
    if not response.criterion:
        response = response.model_copy(update={"criterion": criterion})
    return summarize_trace_response(response)


# --------------------------------------------------------------------------- loop thread


class _LoopThread:
    """One private event loop in a daemon thread, started on first use.

    `close()` does not wait for calls still in flight in other threads: it cancels them,
    and each raises ComposoError ("the client was closed ...") in its caller at once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        # The futures callers wait on, so that closing can wake every one of them.
        self._waiting: set[concurrent.futures.Future[Any]] = set()

    def _start(self) -> asyncio.AbstractEventLoop:
        """The loop, started if need be; call with the lock held."""
        if self._loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                try:
                    loop.run_forever()
                finally:
                    loop.close()

            thread = threading.Thread(target=main, name="tracejudge-client", daemon=True)
            thread.start()
            ready.wait()
            self._loop, self._thread = loop, thread
        return self._loop

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the loop and wait for its result here."""
        with self._lock:
            if self._closed or threading.current_thread() is self._thread:
                work.close()
                if self._closed:
                    raise RuntimeError("the client is closed; create a new one")
                raise RuntimeError("a Composo client cannot be called from its own evaluations")
            # Submitted under the lock: `close()` then either refuses this call or sees it.
            future = asyncio.run_coroutine_threadsafe(work, self._start())
            self._waiting.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            if self._closed:
                raise ComposoError(
                    "the client was closed while this call was in flight; its result is lost"
                ) from None
            raise
        except BaseException:
            future.cancel()  # e.g. KeyboardInterrupt: do not leave the work running
            raise
        finally:
            with self._lock:
                self._waiting.discard(future)

    def close(self, final: Coroutine[Any, Any, Any]) -> None:
        """Cancel the calls in flight, run `final`, then stop the loop and its thread.

        Raises what `final` raised, once the loop has stopped. Closing twice does nothing.
        """
        with self._lock:
            if self._closed:
                final.close()
                return
            self._closed = True
            if self._loop is None and not _in_running_loop():
                loop = None  # never started: nothing of this client runs on a loop
            else:
                loop = self._start()
            thread = self._thread
        if loop is None:
            asyncio.run(final)  # release here rather than start a thread to do it
            return
        assert thread is not None
        shutdown = self._shutdown(final)
        if threading.current_thread() is thread:
            # Closed from the loop's own thread (a finalizer run there): it cannot wait on
            # itself, so the loop stops once the shutdown is done.
            def stop(task: asyncio.Task[None]) -> None:
                if not task.cancelled() and task.exception() is not None:
                    logger.debug("closing the client failed", exc_info=task.exception())
                loop.stop()

            loop.create_task(shutdown).add_done_callback(stop)
            return
        outcome = asyncio.run_coroutine_threadsafe(shutdown, loop)
        try:
            outcome.result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            with self._lock:
                stranded = list(self._waiting)
            for future in stranded:  # any the loop stopped under: wake their callers too
                future.cancel()

    @staticmethod
    async def _shutdown(final: Coroutine[Any, Any, Any]) -> None:
        current = asyncio.current_task()
        in_flight = [task for task in asyncio.all_tasks() if task is not current]
        for task in in_flight:
            task.cancel()
        if in_flight:
            await asyncio.wait(in_flight, timeout=10)
        try:
            await final
        finally:
            # Closes, among others, the connections every judge opened on this loop (see
            # tracejudge.judges._loops), the judges this client does not own included.
            await asyncio.get_running_loop().shutdown_asyncgens()


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _release(runner: _LoopThread, engine: _Engine) -> None:
    """Close a `Composo`'s engine and thread (what `close()` and the finalizer do)."""
    engine.refuse_work()
    runner.close(engine.aclose())


def _release_unused(runner: _LoopThread, engine: _Engine) -> None:
    """The finalizer of a `Composo` that was never closed: release, quietly."""
    try:
        _release(runner, engine)
    except Exception:  # noqa: BLE001 - nobody is left to tell
        logger.debug("closing an unreferenced Composo client failed", exc_info=True)


# --------------------------------------------------------------------------- public clients


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
    ) -> None:
        if max_concurrent_requests is not None:  # the Composo SDK's name (AsyncComposo)
            max_concurrency = max_concurrent_requests
        if max_concurrency < 1:
            raise ConfigurationError(f"max_concurrency must be at least 1, got {max_concurrency}")
        self._engine = _Engine(
            api_key=api_key,
            base_url=base_url,
            num_retries=num_retries,
            model_core=model_core,
            timeout=timeout,
            judge=judge,
            cache=cache,
            max_concurrency=max_concurrency,
        )
        self.api_key = api_key
        self.base_url = str(base_url).rstrip("/")
        self.num_retries = max(1, int(num_retries))
        self.model_core = model_core
        self.timeout = float(timeout)
        self.max_concurrency = int(max_concurrency)
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
            messages,
            criteria,
            system,
            tools,
            result,
            block,
            tags,
            evaluate_latest,
            explanation_cleaning,
            input,
        )

    async def evaluate_trace(
        self,
        trace: TraceLike,
        criteria: str | TraceCheck | list[str | TraceCheck],
        model_core: str | None = None,
        block: bool = True,
        tags: dict[str, Any] | None = None,
        evaluate_latest: bool | None = None,
    ) -> TraceResult:
        """Evaluate every agent of a multi-agent trace. See `Composo.evaluate_trace`."""
        return await self._engine.evaluate_trace(
            trace, criteria, model_core, block, tags, evaluate_latest
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
    same). Without `judge`, the environment decides (see the module docs). A judge
    built here (from a spec or the environment) takes the client's `timeout`,
    `num_retries`, `cache` and `max_concurrency`, and is closed with the client; a
    `Judge` object passed in keeps its own settings and is left open for its owner
    (the client's `max_concurrency` still bounds the calls it makes to it).

    Use `with Composo(...) as client:` or call `close()` when done (a client that is
    garbage-collected unclosed is closed then, its thread and connections released).
    """

    def _setup(self) -> None:
        # One private event-loop thread per client, started on first use; released when
        # the client is closed or, failing that, garbage-collected.
        self._runner = _LoopThread()
        self._finalizer = weakref.finalize(self, _release_unused, self._runner, self._engine)

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
        - `block`: False returns `{"task_id": ...}` at once (a list of them for
          several criteria); read the outcome with `get_task`.
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

        Returns one `EvaluationResponse` when one criterion is given (a string, or
        a list of one, as the Composo SDK does), else a list of them in the order
        of `criteria`. Criteria are judged concurrently.
        """
        return self._runner.run(
            self._engine.evaluate(
                messages,
                criteria,
                system,
                tools,
                result,
                block,
                tags,
                evaluate_latest,
                explanation_cleaning,
                input,
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
    ) -> TraceResult:
        """Evaluate every agent instance of a multi-agent trace.

        `trace` is a `MultiAgentTrace`, an `AgentTracer` (its `.trace` is read) or
        the trace as a dict in wire form. Each agent instance is judged on its own
        model calls, its child agents shown as calls with their final outputs;
        instances with neither get None. Check objects in `criteria` run here,
        with no judge. `model_core` overrides the client's for a remote server.
        `evaluate_latest` must be False or None.

        Returns one `MultiAgentTraceResponse` when one criterion is given (a list
        of them for several): per-agent-name results with summary statistics,
        `agent_scores` by instance id, `overall_score` (the mean of the non-null
        instance scores, None when there is none) and an `explanation` with a line
        per instance. `block=False` returns `{"task_id": ...}` instead. Raises
        `NoLLMInteractionsError` when the trace holds no LLM interaction.
        """
        return self._runner.run(
            self._engine.evaluate_trace(trace, criteria, model_core, block, tags, evaluate_latest)
        )

    def get_task(self, task_id: str) -> TaskResponse:
        """The status of a `block=False` evaluation: pending, running, succeeded (with
        `result`) or failed (with `error`).

        A finished task is forgotten once read; tasks also end when the client
        closes. Raises `BadRequestError` for an unknown id.
        """
        return self._runner.run(self._engine.get_task(task_id))

    def close(self) -> None:
        """Cancel background tasks, release connections and stop the client's thread.

        Calls still in flight in other threads raise ComposoError at once. Raises what
        releasing a judge built here raised (the thread is stopped all the same).
        """
        if self._finalizer.detach() is not None:
            _release(self._runner, self._engine)

    def __enter__(self) -> Composo:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _client_owning(judge: Judge, **options: Any) -> Composo:
    """A `Composo` that closes `judge` when it closes: for a judge built on its behalf."""
    client = Composo(judge=judge, **options)
    client._engine._owns_judge = True
    return client
