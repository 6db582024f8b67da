"""The demo's calls to a tracejudge server's HTTP API: is it there, has the trace arrived,
is it scored, score it with the judge, read it back.

Errors name the server's URL and what to do; the API key is sent, never shown.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from tracejudge.cli._errors import UsageError
from tracejudge.errors import ComposoError
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse

__all__ = ["SCORE_TIMEOUT", "ServerReader"]

#: How long the demo waits for the server to store or score the trace (and the judge).
SCORE_TIMEOUT = 60.0


class ServerReader:
    """An HTTP client for the tracejudge server at `url`, sending `key` when given."""

    def __init__(self, url: str, key: str | None) -> None:
        self.url = url
        headers = {"API-Key": key} if key else {}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=10)
        self._keyed = bool(key)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> ServerReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def check_reachable(self) -> None:
        """UsageError (status 2) unless a tracejudge server answers at `url` and takes the key
        (or needs none): one line naming the URL and the fix."""
        fix = "start one with `tracejudge serve` (or `tracejudge demo --serve`) or correct --to"
        try:
            health = self.http.get("/health")
        except httpx.HTTPError as error:
            why = "connection refused" if isinstance(error, httpx.ConnectError) else "no answer"
            raise UsageError(f"no tracejudge server at {self.url} ({why}): {fix}") from None
        if health.status_code != 200 or _json(health).get("status") != "ok":
            raise UsageError(
                f"{self.url} answered HTTP {health.status_code} to /health, not as a tracejudge "
                f"server does: {fix}"
            )
        listed = self.http.get("/api/v1/traces", params={"limit": 1})
        if listed.status_code == 401:
            if self._keyed:
                raise UsageError(
                    f"the tracejudge server at {self.url} refused the API key given by "
                    "--api-key (or TRACEJUDGE_API_KEY): pass one of the server's keys"
                )
            raise UsageError(
                f"the tracejudge server at {self.url} needs an API key: pass --api-key KEY or "
                "set TRACEJUDGE_API_KEY"
            )
        if listed.status_code != 200:
            raise ComposoError(f"{self.url} answered HTTP {listed.status_code} to /api/v1/traces")

    def _poll(
        self,
        path: str,
        done: Callable[[dict[str, Any]], bool],
        what: str,
        wait: float = SCORE_TIMEOUT,
    ) -> dict[str, Any]:
        deadline = time.monotonic() + wait
        while True:
            answer = self.http.get(path)
            if answer.status_code == 200 and done(body := answer.json()):
                return body  # type: ignore[no-any-return]  # JSON object
            if answer.status_code not in (200, 404):
                raise ComposoError(
                    f"the server at {self.url} answered {answer.status_code} to {path}"
                )
            if time.monotonic() > deadline:
                raise ComposoError(f"the server at {self.url} did not {what} within {wait:g} s")
            time.sleep(0.05)

    def arrived(self, trace_id: str) -> dict[str, Any]:
        """The stored trace's summary once the server has it (any status)."""
        return self._poll(f"/api/v1/traces/{trace_id}", lambda b: True, "store the trace")

    def scored(self, trace_id: str) -> dict[str, Any]:
        """The stored trace once the server has converted and scored it."""
        body = self._poll(
            f"/api/v1/traces/{trace_id}",
            lambda b: b["status"] in ("scored", "unscorable"),
            "score the trace",
        )
        if body["status"] != "scored":
            raise ComposoError(f"the server could not score the trace: {body.get('error')}")
        return body

    def judge(
        self, trace_id: str, criteria: Sequence[str], wait: float = SCORE_TIMEOUT
    ) -> str | None:
        """Score the stored trace again with `criteria` (the server's judge), waiting at
        most `wait` seconds; the task's error (or that it did not end in time), or None
        when it succeeded. A judge that fails never raises: the checks still stand."""
        answer = self.http.post(f"/api/v1/traces/{trace_id}/score", json={"criteria": criteria})
        if answer.status_code != 202:
            return f"HTTP {answer.status_code}: {_json(answer).get('detail')}"
        try:
            task = self._poll(
                f"/api/v1/tasks/{answer.json()['task_id']}",
                lambda b: b["status"] in ("done", "failed"),
                "hear back from the judge",
                wait,
            )
        except ComposoError as error:
            return str(error)
        return task.get("error") if task["status"] == "failed" else None

    def trace(self, trace_id: str) -> tuple[MultiAgentTrace, list[MultiAgentTraceResponse]]:
        """The converted trace and its evaluations, oldest first."""
        answer = self.http.get(f"/api/v1/traces/{trace_id}")
        answer.raise_for_status()
        body = answer.json()
        trace = MultiAgentTrace.from_json(json.dumps(body["trace"]))
        responses = [
            MultiAgentTraceResponse.model_validate(e["response"])
            for e in body["evaluations"]
            if e["kind"] == "trace"
        ]
        return trace, responses


def _json(answer: httpx.Response) -> dict[str, Any]:
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
