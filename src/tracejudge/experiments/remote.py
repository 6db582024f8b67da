"""Runs on a `tracejudge serve`: stored there (`experiment(..., to=URL)`, `tracejudge run
--to URL`) and read back (`tracejudge compare URL/runs/ID ...`, the pytest plugin's
baseline).

A run goes up as its record (`POST /api/v1/runs`), then its row results in batches
(`POST /api/v1/runs/{id}/rows`), each with the row's trace and the answers it was scored
with, so the server lists the traces (tagged `run:ID`) with their scores. The run's id is
made here, so an upload retried stores each row once. A run is read back whole from
`GET /api/v1/runs/{id}`; a name instead of an id reads the newest run of that name.

The key is the one a client of a tracejudge server uses: written into the URL
(`http://KEY@host:8000`), else TRACEJUDGE_API_KEY, else COMPOSO_API_KEY; it is sent in
the API-Key header and never printed.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from tracejudge import _env
from tracejudge._http import redact, split_credentials
from tracejudge.errors import APIError, AuthenticationError, BadRequestError
from tracejudge.experiments.record import (
    RowResult,
    RunRecord,
    StoredRun,
    record_json,
    result_json,
    run_from_json,
)

__all__ = ["RUNS_PATH", "RowUpload", "RunServer", "read_any_run", "run_address"]

RUNS_PATH = "/api/v1/runs"
#: At most this many rows, and about this many bytes, per upload request (the server's
#: default body limit is 16 MiB).
_BATCH_ROWS = 100
_BATCH_BYTES = 4 * 1024 * 1024
_TIMEOUT = 60.0
#: `.../runs/ID` at the end of an address: a run's page, its API path, or the short form.
_RUN_ADDRESS = re.compile(r"^(?P<base>.*?)(?:/api/v1|/ui)?/runs/(?P<id>[^/?#]+)/?$")


def run_address(text: str) -> tuple[str, str] | None:
    """(the server's address, the run's id) of `http(s)://host[:port]/.../runs/ID` (the run's
    page, `/api/v1/runs/ID` or `/runs/ID`); None for anything else."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    found = _RUN_ADDRESS.match(parts.path)
    if found is None:
        return None
    base = f"{parts.scheme}://{parts.netloc}{found['base']}"
    return base, found["id"]


def read_any_run(text: str, server: str | None = None) -> StoredRun:
    """The run `text` names: a run directory or `tracejudge score --out` lines, a run's
    address on a server (`URL/runs/ID`), or with `server` a run's id or name there (a
    name: its newest run). Raises a `ComposoError` saying what is wrong."""
    from pathlib import Path

    from tracejudge.experiments.record import read_run

    if Path(text).exists():
        return read_run(text)
    found = run_address(text)
    if found is not None:
        with RunServer(found[0]) as remote:
            return remote.read(found[1])
    if server is not None:
        with RunServer(server) as remote:
            return remote.read(text)
    return read_run(text)  # says it is no run directory


class RowUpload:
    """One row result as it goes up: the result, its trace (wire JSON) and the answers
    (`MultiAgentTraceResponse` JSON) it was scored with."""

    __slots__ = ("evaluations", "result", "trace")

    def __init__(
        self,
        result: RowResult,
        trace: Mapping[str, Any] | None = None,
        evaluations: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.result = result
        self.trace = trace
        self.evaluations = evaluations

    def as_json(self) -> dict[str, Any]:
        return {
            "result": result_json(self.result),
            "trace": self.trace,
            "evaluations": list(self.evaluations),
        }


class RunServer:
    """One tracejudge server's runs, over one connection pool. `url` is the server's
    address (a key may be written into it); `api_key` overrides the environment's."""

    def __init__(self, url: str, *, api_key: str | None = None) -> None:
        clean, key = split_credentials(url)
        self.url = clean.rstrip("/")
        if urlsplit(self.url).scheme not in ("http", "https"):
            raise BadRequestError(
                f"{self.url!r} is not a server's address: give http://host:port (the address "
                "`tracejudge serve` prints)"
            )
        self.key = (
            api_key or key or _env.read(_env.TRACEJUDGE_API_KEY) or _env.read(_env.COMPOSO_API_KEY)
        )
        headers = {"API-Key": self.key} if self.key else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=_TIMEOUT)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> RunServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def page_of(self, run_id: str) -> str:
        """The address of the run's page on the server."""
        return f"{self.url}/ui/runs/{quote(run_id, safe='')}"

    # ------------------------------------------------------------------ requests

    def _send(self, method: str, path: str, what: str, body: Any = None) -> httpx.Response:
        try:
            if body is None:
                answer = self.client.request(method, path)
            else:
                content = json.dumps(body).encode("utf-8")
                answer = self.client.request(
                    method, path, content=content, headers={"Content-Type": "application/json"}
                )
        except httpx.HTTPError as error:
            problem = redact(str(error) or type(error).__name__, [self.key])
            raise APIError(f"{self.url}: cannot {what} ({problem})") from None
        if answer.status_code == 401:
            raise AuthenticationError(
                f"{self.url} wants a valid API key to {what}: write it into the URL "
                "(http://KEY@host:port) or set TRACEJUDGE_API_KEY"
            )
        return answer

    def _failed(self, answer: httpx.Response, what: str) -> APIError | BadRequestError:
        try:
            detail = str(answer.json().get("detail"))
        except (ValueError, AttributeError):
            detail = answer.text[:300]
        text = f"{self.url}: cannot {what}: HTTP {answer.status_code}: {redact(detail, [self.key])}"
        if answer.status_code in (404, 405) and "runs" in detail + answer.request.url.path:
            text += " (is it a tracejudge server of this version?)"
        return BadRequestError(text) if answer.status_code < 500 else APIError(text)

    # ------------------------------------------------------------------ storing

    def upload(
        self, record: RunRecord, rows: Sequence[RowUpload], run_id: str | None = None
    ) -> str:
        """Store the run (its record, then its rows in batches); returns its id."""
        chosen = run_id or uuid.uuid4().hex
        body = {"id": chosen, **record_json(record)}
        answer = self._send("POST", RUNS_PATH, "store the run", body)
        if answer.status_code not in (200, 201):
            raise self._failed(answer, "store the run")
        path = f"{RUNS_PATH}/{quote(chosen, safe='')}/rows"
        first = 0
        for batch in _batches([row.as_json() for row in rows]):
            body = {"rows": batch, "first": first}
            answer = self._send("POST", path, "store the run's rows", body)
            if answer.status_code != 200:
                raise self._failed(answer, "store the run's rows")
            first += len(batch)
        return chosen

    # ------------------------------------------------------------------ reading

    def read(self, run: str) -> StoredRun:
        """The run whose id is `run`, else the newest run named `run`."""
        what = f"read run {run!r}"
        answer = self._send("GET", f"{RUNS_PATH}/{quote(run, safe='')}", what)
        if answer.status_code == 404:
            answer = self._send("GET", f"{RUNS_PATH}?{_query(name=run, limit='1')}", what)
            if answer.status_code != 200:
                raise self._failed(answer, what)
            listed = answer.json().get("runs") or []
            if not listed:
                raise BadRequestError(
                    f"{self.url} has no run with id or name {run!r} (its runs: {self.url}/ui/runs)"
                )
            run = str(listed[0]["id"])
            answer = self._send("GET", f"{RUNS_PATH}/{quote(run, safe='')}", what)
        if answer.status_code != 200:
            raise self._failed(answer, what)
        document = answer.json()
        return run_from_json(
            document.get("record") or {},
            document.get("results") or [],
            url=self.page_of(run),
            where=f"{self.url} run {run!r}",
        )


def _query(**values: str) -> str:
    return "&".join(f"{k}={quote(v, safe='')}" for k, v in values.items())


def _batches(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """`rows` cut into batches of at most `_BATCH_ROWS` rows and about `_BATCH_BYTES`."""
    batches: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        length = len(json.dumps(row))
        if current and (len(current) >= _BATCH_ROWS or size + length > _BATCH_BYTES):
            batches.append(current)
            current, size = [], 0
        current.append(row)
        size += length
    if current:
        batches.append(current)
    return batches
