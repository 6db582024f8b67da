"""The remote backend: a Composo-compatible server (tracejudge's own or the hosted one).

It sends the wire models (`RewardRequest`, `TraceRewardRequest`) it validated, with the
same retry, backoff and deadline rules as the judges (`tracejudge._http`); and an
attribution's request to a tracejudge server's `POST /api/v1/attribution`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError

from tracejudge._http import (
    Endpoint,
    HTTPOptions,
    LoopClients,
    error_from_response,
    pooled_transport,
    send_with_retries,
    split_credentials,
)
from tracejudge.errors import MalformedError
from tracejudge.evaluation import summarize_trace_response
from tracejudge.models import (
    Attribution,
    EvaluationResponse,
    MultiAgentTraceResponse,
    RewardRequest,
    TaskResponse,
    TraceRewardRequest,
)

__all__ = [
    "ATTRIBUTION_PATH",
    "REWARD_PATH",
    "TASK_PATH",
    "TRACE_PATH",
    "RemoteServer",
    "wire_body",
]

ATTRIBUTION_PATH = "/api/v1/attribution"
REWARD_PATH = "/api/v1/evals/reward"
TRACE_PATH = "/api/v1/evals/trace"
TASK_PATH = "/api/v1/tasks/{task_id}"

_USER_AGENT = "tracejudge (composo-compatible)"
_BACKOFF_BASE = 0.5
_BACKOFF_MAX = 8.0


def wire_body(request: BaseModel) -> dict[str, Any]:
    """A wire request as the JSON body the published client sends: unset fields left out."""
    return {k: v for k, v in request.model_dump(mode="json").items() if v is not None}


class RemoteServer:
    """HTTP to a Composo-compatible server: retries with backoff inside one total timeout."""

    def __init__(
        self, base_url: str, api_key: str | None, options: HTTPOptions, *, default_url: str
    ) -> None:
        # A key written into the URL is sent as the API-Key header, never shown.
        clean_url, url_key = split_credentials(str(base_url))
        self.base_url = clean_url.rstrip("/")
        self.api_key = api_key or url_key
        self.options = options
        self._default_url = default_url
        # One connection pool and limit per event loop: an AsyncComposo may be used from
        # several loops in turn (one per test, one per asyncio.run).
        self._clients = LoopClients(self._new_client, options.max_concurrency)

    def _new_client(self) -> httpx.AsyncClient:
        limit = self.options.max_concurrency
        # Above 16 connections, several small pools (one large httpx pool is slow).
        return httpx.AsyncClient(
            transport=pooled_transport(limit), limits=httpx.Limits(max_connections=limit)
        )

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
            secrets=tuple(k for k in (self.api_key,) if k),
            not_found_hint=self._not_found_hint(path),
        )

    def _not_found_hint(self, path: str) -> str:
        if path.startswith(TASK_PATH.split("{", 1)[0]):
            return (
                "the server does not know this task id: check it, and that the task was "
                "started on this server (a tracejudge server keeps finished tasks for "
                "--task-retention-hours)"
            )
        if path == ATTRIBUTION_PATH:
            return (
                "this server does not attribute (a tracejudge server does, from the version "
                "with /api/v1/attribution): pass judge=... to attribute in process, or "
                "methods=['checks']"
            )
        return (
            "check that base_url is the root of a tracejudge or Composo server (such as "
            f"{self._default_url!r}), without the /api/v1 path"
        )

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one request, retrying 408/409/429/5xx, timeouts and connection errors
        `num_retries` times; all tries together get `timeout` seconds."""
        pair = self._clients.get()
        endpoint = self._endpoint(method, path)
        timeout = self.options.timeout
        async with pair.semaphore:
            deadline = asyncio.get_running_loop().time() + timeout
            response = await send_with_retries(
                pair.client,
                f"{self.base_url}{path}",
                method=method,
                body=body,
                headers=self._headers(),
                endpoint=endpoint,
                deadline=deadline,
                timeout=timeout,
                request_timeout=timeout,
                num_retries=self.options.num_retries,
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

    # ------------------------------------------------------------------ the endpoints

    async def evaluate(self, request: RewardRequest) -> EvaluationResponse:
        answer = await self.request("POST", REWARD_PATH, wire_body(request))
        return _evaluation_response(answer, request.evaluation_criteria or "")

    async def evaluate_trace(self, request: TraceRewardRequest) -> MultiAgentTraceResponse:
        answer = await self.request("POST", TRACE_PATH, wire_body(request))
        return _trace_response(answer, request.evaluation_criteria or "")

    async def submit(self, request: RewardRequest | TraceRewardRequest) -> dict[str, Any]:
        """Start a background evaluation; `{"task_id": ...}`."""
        path = REWARD_PATH if isinstance(request, RewardRequest) else TRACE_PATH
        answer = await self.request("POST", f"{path}/background", wire_body(request))
        if not isinstance(answer, dict) or "task_id" not in answer:
            raise MalformedError(f"the server answered {answer!r} without a task_id")
        return answer

    async def task(self, task_id: str) -> TaskResponse:
        answer = await self.request("GET", TASK_PATH.format(task_id=task_id))
        try:
            return TaskResponse.model_validate(answer)
        except ValidationError as exc:
            raise MalformedError(f"the server's task status is not readable: {exc}") from exc

    async def attribute(self, body: dict[str, Any]) -> Attribution:
        """A tracejudge server's attribution of the trace in `body` (the fields of its
        `POST /api/v1/attribution`)."""
        answer = await self.request("POST", ATTRIBUTION_PATH, body)
        try:
            return Attribution.model_validate(answer)
        except ValidationError as exc:
            raise MalformedError(f"the server's attribution is not usable: {exc}") from exc

    async def aclose(self) -> None:
        """Close the connection pools, each on its own event loop."""
        await self._clients.aclose()


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
