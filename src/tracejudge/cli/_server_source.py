"""Labels and traces read from a tracejudge server (`tracejudge calibrate --server URL`):
the labels people recorded on its trace pages (`GET /api/v1/labels/export`) and the
stored traces they name (`GET /api/v1/traces/{id}`).

The key is the one a client of a remote server uses: written into the URL
(`http://KEY@host:8000`) or COMPOSO_API_KEY; it is sent in the API-Key header and never
printed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

import httpx

from tracejudge import _env
from tracejudge._http import redact, split_credentials
from tracejudge.cli._errors import UsageError
from tracejudge.models import MultiAgentTrace

__all__ = ["ServerSource"]

_TIMEOUT = 60.0


class ServerSource:
    """One tracejudge server's labels and stored traces, over one connection pool."""

    def __init__(self, url: str) -> None:
        clean, key = split_credentials(url)
        self.url = clean.rstrip("/")
        self.key = key or _env.read(_env.COMPOSO_API_KEY)
        headers = {"API-Key": self.key} if self.key else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=_TIMEOUT)

    def close(self) -> None:
        self.client.close()

    def _get(self, path: str, what: str) -> httpx.Response | None:
        try:
            answer = self.client.get(path)
        except httpx.HTTPError as error:
            problem = redact(str(error), [self.key])
            raise UsageError(f"--server {self.url}: cannot read {what} ({problem})") from None
        if answer.status_code == 404:
            return None
        if answer.status_code == 401:
            raise UsageError(
                f"--server {self.url} wants an API key: write it into the URL "
                "(http://KEY@host:port) or set COMPOSO_API_KEY"
            )
        if not answer.is_success:
            raise UsageError(
                f"--server {self.url}: {what} answered HTTP {answer.status_code}: "
                f"{redact(answer.text[:300], [self.key])}"
            )
        return answer

    def write_labels(self, path: Path) -> None:
        """The server's labels file, written to `path`."""
        answer = self._get("/api/v1/labels/export", "the labels")
        if answer is None:
            raise UsageError(
                f"--server {self.url} has no labels endpoint: is it a tracejudge server of "
                "this version?"
            )
        path.write_text(answer.text, encoding="utf-8")

    def traces(self, trace_ids: Iterable[str]) -> dict[str, MultiAgentTrace]:
        """The stored traces of `trace_ids` that the server holds converted."""
        found: dict[str, MultiAgentTrace] = {}
        for trace_id in sorted(set(trace_ids)):
            answer = self._get(f"/api/v1/traces/{quote(trace_id, safe='')}", f"trace {trace_id}")
            body = answer.json() if answer is not None else None
            if body and body.get("trace"):
                found[trace_id] = MultiAgentTrace.model_validate(body["trace"])
        return found
