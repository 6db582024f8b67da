"""The machinery every HTTP judge shares; a backend only says how to speak its API.

`HTTPJudge.judge()` does, in order: build the prompt, look in the cache, take a slot of the
concurrency limit, count the request's tokens against the input budget (over it: explore,
or answer "not evaluated"), ask (retrying, and falling back from options the endpoint
rejects), parse the reply (re-asking once when it is unusable), turn it into a score,
cache it. A backend subclass supplies the URL, headers, request body, how to read an
answer, and which rejected options it can do without. What is done with an answer (the
re-ask, the judgement, the verdict) is `_reading.ReplyReading`; several criteria in one
call, `_batch.BatchJudging`; both are mixed into `HTTPJudge`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import httpx

from tracejudge import _watch
from tracejudge._http import (
    Endpoint,
    LoopClients,
    error_from_response,
    error_message,
    pooled_transport,
    redact,
    send_with_retries,
    split_credentials,
)
from tracejudge.errors import APIError, BadRequestError, ConfigurationError
from tracejudge.judges._ask import StructuredRequest, messages_for, structured_verdict
from tracejudge.judges._batch import BatchJudging
from tracejudge.judges._budget import (
    TokenEstimator,
    default_max_input_tokens,
    table_budget_source,
)
from tracejudge.judges._cache import JudgeCache, MemoryCache, cache_key, make_cache
from tracejudge.judges._exchange import Answer, Ask, Tally, ToolsRefused
from tracejudge.judges._options import JudgeOptions
from tracejudge.judges._prompt import (
    build_messages,
    reask_message,
    reply_schema,
)
from tracejudge.judges._reading import ReplyReading, verdict_entry
from tracejudge.judges._server_context import ServerContext
from tracejudge.judges._spans import JudgeSpans, make_spans
from tracejudge.judges._types import JudgeRequest, Verdict
from tracejudge.models import JudgeUsage

__all__ = [
    "HTTPJudge",
    "Answer",
    "endpoint_identity",
    "requires_key",
    "join_url",
    "token_count",
]

logger = logging.getLogger("tracejudge.judges")

_USER_AGENT = "tracejudge-judge/0.1"
# Hosts that never answer without a key: fail at construction rather than on the first call.
_KEYED_HOSTS = ("api.openai.com", "api.anthropic.com", "openrouter.ai", "api.together.xyz")

_ssl_context: Any = None


def _shared_ssl_context() -> Any:
    """One TLS context for every judge's client: building one loads the CA bundle (tens of
    milliseconds), which would otherwise be paid per judge and per event loop."""
    global _ssl_context
    if _ssl_context is None:
        factory = getattr(httpx, "create_ssl_context", None)  # httpx >= 0.28
        _ssl_context = factory() if factory is not None else True
    return _ssl_context


def requires_key(base_url: str) -> bool:
    """Whether the host behind `base_url` is a hosted API that needs a key."""
    host = (httpx.URL(base_url).host or "").lower()
    return host in _KEYED_HOSTS or host.endswith(".azure.com")


class HTTPJudge(ReplyReading, BatchJudging):
    """Base class of the HTTP judge backends. Not used directly: see
    `OpenAICompatibleJudge` and `AnthropicJudge`."""

    def __init__(
        self,
        model: str,
        *,
        name: str,
        base_url: str,
        api_key: str | None,
        key_env: str | None,
        options: JudgeOptions,
        max_tokens: int | None,
        features: dict[str, Any] | None = None,
    ) -> None:
        """`options` whole, with `max_tokens` resolved by the backend (its `DEFAULT`
        is the backend's own default for the model); `features`: the optional request
        features the backend tries first (each dropped when the endpoint rejects it)."""
        if not model or not model.strip():
            raise ConfigurationError("a judge needs a model name, e.g. 'gpt-4.1-mini'")
        self.options = options
        self.model = model
        self.name = name
        # Never a key in the URL kept (it shows in errors, repr and httpx's log lines).
        self.base_url, url_key = split_credentials(base_url)
        # Parsed once: it is part of every cache key.
        self._endpoint_identity = endpoint_identity(self.base_url)
        self.api_key = api_key or url_key or None
        self.key_env = key_env
        self.timeout = options.timeout
        self.request_timeout = options.request_timeout or options.timeout
        self.num_retries = options.num_retries
        self.max_concurrency = options.max_concurrency
        self.temperature = options.temperature
        self.max_tokens = max_tokens
        self.extra_headers = dict(options.headers or {})
        self.extra_body = dict(options.extra_body or {})
        self.backoff_base = options.backoff_base
        self.backoff_max = options.backoff_max
        self.max_response_bytes = options.max_response_bytes
        #: The most tokens one request of a judgement may hold (counted before sending):
        #: the one given, else the model table's, made smaller by what the server says
        #: its context is (asked once, at the first judgement: `learn_input_budget`).
        self.max_input_tokens = (
            options.max_input_tokens
            if options.max_input_tokens is not None
            else default_max_input_tokens(model, max_tokens)
        )
        #: One reply schema for every criterion kind (OpenAI: the schema is part of the
        #: cached prefix), else one by kind (see `_prompt.reply_schema`).
        self.one_reply_schema_for_all_kinds = False
        #: Where `max_input_tokens` comes from, in words.
        self.input_budget_source = (
            "max_input_tokens as given"
            if options.max_input_tokens is not None
            else table_budget_source(model, max_tokens)
        )
        # A budget given is the user's word: the server is not asked.
        self._budget_learned = options.max_input_tokens is not None
        self._budget_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self.estimator = TokenEstimator()
        self.spans: JudgeSpans | None = make_spans(options.spans)
        self.cache: JudgeCache | None = make_cache(options.cache)
        self._transport = options.transport
        # The optional request features tried first; each is dropped, for good, when the
        # endpoint rejects it.
        self._features: dict[str, Any] = {
            "temperature": options.temperature is not None,
            "tools": True,
        }
        self._features.update(features or {})
        self._features_lock = threading.Lock()
        self._logprobs_notice_given = False
        self._cache_notice_given = False
        # One HTTP client and one limit per event loop, each closed on its own loop.
        self._clients = LoopClients(self._new_client, self.max_concurrency)
        self._endpoint = Endpoint(
            label=f"judge {name}",
            model=model,
            base_url=base_url,
            key_hint=self._key_hint(),
            secrets=tuple(k for k in (self.api_key,) if k),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"

    # ----------------------------------------------------------------- backend hooks

    def _url(self) -> httpx.URL:
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _body(
        self, messages: Sequence[dict[str, Any]], ask: Ask, features: dict[str, Any]
    ) -> dict[str, Any]:
        """The API's request body for `messages` (in the shape `_exchange` describes)."""
        raise NotImplementedError

    def _read(self, data: Any) -> Answer:
        """Read a 2xx answer's JSON; raise APIError when it is not the API's shape."""
        raise NotImplementedError

    async def _server_context(self, client: httpx.AsyncClient) -> ServerContext | None:
        """The context one request may hold, as the server says it (None: it cannot)."""
        return None

    async def learn_input_budget(self) -> None:
        """Ask the server its context once (the first judgement of this judge asks; the
        others wait for that answer) and keep the smaller budget: the table's or the
        server's less the reply's `max_tokens`. A server that cannot say changes nothing."""
        if self._budget_learned:
            return
        loop = asyncio.get_running_loop()
        lock = self._budget_locks.setdefault(loop, asyncio.Lock())
        async with lock:
            if self._budget_learned:
                return
            found = await self._server_context(self._clients.get().client)
            self._budget_learned = True
        if found is None:
            return
        reserve = self.max_tokens or 0
        # A reply bound as large as the context leaves half of it to the input.
        budget = max(found.tokens // 2, found.tokens - reserve)
        if budget < self.max_input_tokens:
            self.max_input_tokens = budget
            self.input_budget_source = (
                f"the server's context ({found.source}) less {reserve:,} for the reply"
            )
        else:
            self.input_budget_source += f"; the server allows more ({found.source})"
        logger.info(
            "judge %s: input budget %s tokens: %s",
            self.name,
            f"{self.max_input_tokens:,}",
            self.input_budget_source,
        )

    def _without_rejected(
        self, features: dict[str, Any], ask: Ask, rejection: str
    ) -> dict[str, Any] | None:
        """The features to try after a 400/422 (or a 500) saying `rejection` (lower-cased
        message and body), or None when nothing the judge may drop explains it."""
        if features.get("temperature") and "temperature" in rejection:
            return {**features, "temperature": False}
        if ask.tools and features.get("tools") and "tool" in rejection:
            return {**features, "tools": False}
        return None

    def _requests_logprobs(self, ask: Ask, features: dict[str, Any]) -> bool:
        return False

    @property
    def supports_tools(self) -> bool:
        """Whether this judge can explore (call tools); False once its endpoint refused."""
        return bool(self._features.get("tools"))

    def _key_hint(self) -> str:
        where = (
            f"check {self.key_env} (or pass api_key=...)"
            if self.key_env
            else ("check the api_key passed to the judge")
        )
        return f"{where} and that the key may use model {self.model!r}"

    # ----------------------------------------------------------------- lifecycle

    def _new_client(self) -> httpx.AsyncClient:
        limits = httpx.Limits(
            max_connections=self.max_concurrency,
            max_keepalive_connections=self.max_concurrency,
        )
        # Above 16 connections, several small pools (one large httpx pool is slow).
        transport = self._transport or pooled_transport(
            self.max_concurrency, verify=_shared_ssl_context()
        )
        return httpx.AsyncClient(
            transport=transport,
            verify=_shared_ssl_context(),
            limits=limits,
            timeout=httpx.Timeout(self.request_timeout),
            headers={"user-agent": _USER_AGENT},
        )

    async def aclose(self) -> None:
        """Close the connections (on every event loop that used this judge) and the cache
        file, and flush the judge's spans. The judge may be used again afterwards (it
        reconnects)."""
        await self._clients.aclose()
        if self.spans is not None:
            await asyncio.to_thread(self.spans.flush)
        if self.cache is not None:
            # Unlike get and set, a failing close is reported: the caller asked for it.
            if isinstance(self.cache, MemoryCache):
                self.cache.close()
            else:
                await asyncio.to_thread(self.cache.close)

    async def __aenter__(self) -> HTTPJudge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ----------------------------------------------------------------- judging

    def _cache_parameters(self, request: JudgeRequest) -> dict[str, Any]:
        return {
            # Two servers may serve the same model name with different weights.
            "endpoint": self._endpoint_identity,
            "kind": request.kind.value,
            "clean_explanation": request.clean_explanation,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "extra_body": self.extra_body,
        }

    async def _cache_call(self, limit: float, function: Any, *args: Any) -> Any:
        """`function(*args)` on the cache, or None when the cache fails or takes longer than
        `limit` seconds: the cache is an optimisation, never a reason for a call to fail."""
        try:
            # The in-memory cache is instant; any other may touch the disk, which must not
            # stall the event loop that every other judge call shares.
            if isinstance(self.cache, MemoryCache):
                return function(*args)
            # A thread stuck on a lock finishes (or gives up) on its own; the call goes on.
            return await asyncio.wait_for(asyncio.to_thread(function, *args), max(limit, 0.05))
        except asyncio.TimeoutError:
            self._cache_notice(f"it took longer than {limit:.3g}s")
        except Exception as error:  # a JudgeCache of the user's may raise anything
            self._cache_notice(f"{type(error).__name__}: {error}")
        return None

    def _cache_notice(self, what: str) -> None:
        if not self._cache_notice_given:
            self._cache_notice_given = True
            logger.warning("judge %s: its cache failed (%s); going on without it", self.name, what)
        else:
            logger.debug("judge %s: its cache failed (%s)", self.name, what)

    def _cached_verdict(self, hit: Any, started: float) -> Verdict | None:
        """The verdict a cache entry holds, or None when the entry is not one."""
        if isinstance(hit, dict) and hit.get("not_evaluated") is not None:
            return None  # never stored; an entry of a user's cache that says so is a miss
        score = hit.get("score") if isinstance(hit, dict) else None
        explanation = hit.get("explanation") if isinstance(hit, dict) else None
        cleaned = hit.get("cleaned_explanation") if isinstance(hit, dict) else None
        raw = hit.get("raw", {}) if isinstance(hit, dict) else None
        if not (
            isinstance(hit, dict)
            # no `score` key is no verdict (null is one: not applicable)
            and "score" in hit
            and (score is None or (isinstance(score, (int, float)) and 0.0 <= score <= 1.0))
            and not isinstance(score, bool)
            and isinstance(explanation, str)
            and (cleaned is None or isinstance(cleaned, str))
            and isinstance(raw, dict)
        ):
            self._cache_notice(f"an entry is not a verdict: {str(hit)[:80]}")
            return None
        return Verdict(
            score=None if score is None else float(score),
            explanation=explanation,
            cleaned_explanation=cleaned,
            usage=JudgeUsage(cached_calls=1, latency_seconds=time.perf_counter() - started),
            raw={**raw, "cached": True},
        )

    def _features_now(self) -> dict[str, Any]:
        with self._features_lock:
            return dict(self._features)

    def estimate(self, messages: Sequence[dict[str, Any]], ask: Ask) -> int:
        """The input tokens a request of `messages` would hold, counted before sending
        (see `tracejudge.judges._budget`)."""
        return self.estimator.estimate(self._body(messages, ask, self._features_now()))

    def _single_ask(self, request: JudgeRequest) -> Ask:
        if isinstance(request, StructuredRequest):  # a question with a schema of its own
            return Ask(schema=dict(request.schema), schema_name=request.schema_name)
        return Ask(
            schema=reply_schema(
                request.kind, request.clean_explanation, self.one_reply_schema_for_all_kinds
            ),
            logprobs=not request.kind.is_binary,
        )

    def _over_budget(self, needed: int) -> str:
        return (
            f"the judgement needs about {needed:,} input tokens, more than judge "
            f"{self.name}'s budget of {self.max_input_tokens:,} (max_input_tokens)"
        )

    @staticmethod
    def _not_evaluated(reason: str, started: float, **raw: Any) -> Verdict:
        return Verdict(
            score=None,
            explanation=f"Not evaluated: {reason}.",
            usage=JudgeUsage(latency_seconds=time.perf_counter() - started),
            raw={"cached": False, **raw},
            not_evaluated=reason,
        )

    def _exploring_refusal(self, request: JudgeRequest, why: str) -> str | None:
        """Why a request over the budget cannot be explored (None: it can)."""
        if request.exploration is None:
            return f"{why}, and exploration is off"
        if not self.supports_tools:
            return (
                f"{why}, and it cannot explore the material: {self.base_url} does not take "
                "tool calls"
            )
        return None

    async def judge(self, request: JudgeRequest) -> Verdict:
        """Judge one request: a score in 0..1 (None when not applicable) with its explanation.

        A request over `max_input_tokens` is explored when it carries an `Exploration` and
        the endpoint takes tool calls; otherwise, or when a cap of the exploration runs out
        before a verdict, the verdict is not evaluated (`Verdict.not_evaluated` says why).
        Raises AuthenticationError, BadRequestError, RateLimitError, APIError, TimeoutError
        or MalformedError (never a made-up score) when no verdict can be had. A cache that
        fails or stalls is gone around (one warning), within the same `timeout`.
        """
        if not isinstance(request, JudgeRequest):
            raise TypeError(f"judge() takes a JudgeRequest, got {type(request).__name__}")
        if not request.criterion.strip():
            raise BadRequestError("the criterion is empty; write what to reward or penalise")
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        await self.learn_input_budget()
        messages = messages_for(request) or build_messages(request)
        ask = self._single_ask(request)
        needed = self.estimate(messages, ask)
        parameters = self._cache_parameters(request)
        why: str | None = None
        if needed > self.max_input_tokens:
            why = self._over_budget(needed)
            refusal = self._exploring_refusal(request, why)
            if refusal is not None:
                logger.info("judge %s: not evaluated: %s", self.name, refusal)
                return self._not_evaluated(refusal, started)
            assert request.exploration is not None
            parameters = {
                **parameters,
                "explore": request.exploration.limits.key(),
                "max_input_tokens": self.max_input_tokens,
            }
        key: str | None = None
        if self.cache is not None:
            key = cache_key(self.name, self.model, messages, parameters)
            hit = await self._cache_call(self.timeout / 4, self.cache.get, key)
            verdict = self._cached_verdict(hit, started) if hit is not None else None
            if verdict is not None:
                return verdict
        state = self._clients.get()
        async with state.semaphore:
            # The deadline starts with the slot: time queued behind other calls is not the
            # endpoint's fault and must not time a call out.
            deadline = loop.time() + self.timeout
            with self._judgement_span(request), self._watched(request):
                if why is not None:
                    # Imported here: the exploring loop drives this class's _ask.
                    from tracejudge.judges._exploring import explore

                    verdict = await explore(self, request, why, needed, state.client, started)
                    # Each exploring round has a timeout of its own.
                    deadline = loop.time() + self.timeout
                else:
                    verdict = await self._judge_now(
                        request, messages, ask, state.client, deadline, started
                    )
        if key is not None and self.cache is not None and verdict.not_evaluated is None:
            # The verdict is paid for: it is returned whether or not it can be stored, and
            # storing waits no longer than what is left of the deadline.
            await self._cache_call(
                deadline - loop.time(), self.cache.set, key, verdict_entry(verdict)
            )
        return verdict

    def _watched(self, request: JudgeRequest, criterion: str | None = None) -> Any:
        """The judgement in flight for a watcher (the CLI's live line), from its slot on."""
        subject = request.subject or request.target
        return _watch.judging(subject, criterion or request.criterion, self.name)

    def _judgement_span(self, request: JudgeRequest) -> Any:
        if self.spans is None:
            return _NO_SPAN
        return self.spans.judgement(self.model, request.criterion)

    async def _judge_now(
        self,
        request: JudgeRequest,
        messages: list[dict[str, Any]],
        ask: Ask,
        client: httpx.AsyncClient,
        deadline: float,
        started: float,
    ) -> Verdict:
        tally = Tally()
        if isinstance(request, StructuredRequest):
            return await structured_verdict(
                self, request, messages, ask, client, deadline, tally, started
            )
        answer, (judgement, value, weighted), logprobs_asked = await self._readable(
            messages,
            ask,
            client,
            deadline,
            tally,
            lambda answer: self._interpret(answer, request),
            lambda problem: reask_message(problem, request.kind, request.clean_explanation),
        )
        return self._verdict(
            request,
            judgement,
            value,
            weighted,
            answer,
            logprobs_asked,
            tally.usage(time.perf_counter() - started),
        )

    # ----------------------------------------------------------------- one question

    async def _ask(
        self,
        messages: Sequence[dict[str, Any]],
        ask: Ask,
        client: httpx.AsyncClient,
        deadline: float,
        tally: Tally,
    ) -> tuple[Answer, bool]:
        """One question to the model: the answer, and whether logprobs were asked for.

        Options the endpoint rejects with 400/422 (or with a 500 whose message names them,
        as llama-cpp-python's server answers `response_format: json_schema`) are dropped,
        and remembered for every later call of this judge, before the request is sent
        again.
        """

        def count() -> None:
            tally.calls += 1

        # Each rejection drops at least one option; the bound only guards against an
        # endpoint that keeps rejecting after everything droppable is gone.
        for _ in range(8):
            features = self._features_now()
            if ask.tools and not features.get("tools"):
                raise ToolsRefused()
            body = self._body(messages, ask, features)
            estimated = self.estimator.estimate(body)

            def names_a_feature(response: httpx.Response, tried: dict[str, Any] = features) -> bool:
                return response.status_code == 500 and (
                    self._without_rejected(tried, ask, error_message(response).lower()) is not None
                )

            with self._call_span(body) as span:
                response = await send_with_retries(
                    client,
                    self._url(),
                    body=body,
                    headers=self._headers(),
                    endpoint=self._endpoint,
                    deadline=deadline,
                    timeout=self.timeout,
                    request_timeout=self.request_timeout,
                    num_retries=self.num_retries,
                    backoff_base=self.backoff_base,
                    backoff_max=self.backoff_max,
                    max_response_bytes=self.max_response_bytes,
                    on_attempt=count,
                    give_back=names_a_feature,
                )
                if response.is_success:
                    data = await self._off_loop(
                        deadline, len(response.content), _decode_json, response.content
                    )
                    try:
                        answer = self._read(data)
                    except APIError as error:
                        # the body as sent (not JSON: `data` is None), not what parsed
                        error.response_body = redact(response.text[:2000], self._endpoint.secrets)
                        raise
                    tally.add(answer)
                    self.estimator.learn(estimated, answer.input_tokens)
                    if span is not None:
                        span.answered(answer, data)
                    return answer, self._requests_logprobs(ask, features)
                if span is not None:
                    span.failed(response.status_code)
            fewer: dict[str, Any] | None = None
            if response.status_code in (400, 422):
                # The provider's message first: a body may echo the whole request back, and
                # then every option's name would appear in it.
                fewer = self._without_rejected(
                    features, ask, error_message(response).lower()
                ) or self._without_rejected(features, ask, response.text.lower())
            elif response.status_code == 500:
                fewer = self._without_rejected(features, ask, error_message(response).lower())
            if fewer is not None:
                self._drop_features(features, fewer, error_message(response))
                continue
            raise error_from_response(response, self._endpoint)
        raise BadRequestError(
            f"judge {self.name} at {self.base_url} kept rejecting the request after every "
            "optional parameter was dropped"
        )

    def _call_span(self, body: dict[str, Any]) -> Any:
        if self.spans is None:
            return _NO_SPAN
        return self.spans.call(self.name, self.model, self.base_url, body)

    def _drop_features(self, tried: dict[str, Any], fewer: dict[str, Any], why: str) -> None:
        with self._features_lock:
            for feature, value in fewer.items():
                if tried.get(feature) == value:
                    continue
                # Only step down from what was tried: a concurrent call may already have
                # stepped further, and must not be stepped back up or past.
                if self._features.get(feature) == tried.get(feature):
                    self._features[feature] = value
                    logger.info(
                        "%s at %s rejected %s=%r (%s); using %r from now on",
                        self.name,
                        self.base_url,
                        feature,
                        tried.get(feature),
                        why[:200],
                        value,
                    )
                    if feature == "logprobs":
                        self._logprobs_notice(f"logprobs not supported by {self.base_url}")


class _NoSpan:
    """A span context that records nothing (the judge's spans are off)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


_NO_SPAN = _NoSpan()


def _decode_json(content: bytes) -> Any:
    """A response body's JSON, or None when it is not JSON (or nested too deep to read)."""
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        return None


def join_url(base_url: str, path: str) -> httpx.URL:
    """`base_url` with `path` appended to its path, its query (Azure's api-version) kept."""
    url = httpx.URL(base_url)
    return url.copy_with(path=url.path.rstrip("/") + "/" + path.lstrip("/"))


def endpoint_identity(base_url: str) -> str:
    """`base_url` without what may be secret (user, password, query, fragment): which
    server answers, fit to be written into a shared cache."""
    url = httpx.URL(base_url)
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}{url.path.rstrip('/')}"


def token_count(value: Any) -> int:
    """A usage field's token count: 0 unless the API gave an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
