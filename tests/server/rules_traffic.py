"""Ingested traffic for the rules' and sessions' tests: one recorded OpenLLMetry run
(tests/fixtures/openllmetry.jsonl: an orchestrator, a researcher and a writer, recorded by
running the instrumentation) sent again under other trace ids, services, versions, sessions
and users, as the same application would send it from other requests."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import httpx

from tests.server.harness import wait_for

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openllmetry.jsonl"
_DOCUMENT = json.loads(FIXTURE.read_text().splitlines()[0])
JSON = {"Content-Type": "application/json"}


def trace_ids(count: int, seed: int = 33) -> list[str]:
    """`count` random trace ids (32 hex digits), the same for the same seed."""
    generator = random.Random(seed)
    return [f"{generator.getrandbits(128):032x}" for _ in range(count)]


def _attribute(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def run(
    trace_id: str,
    *,
    service: str | None = None,
    version: str | None = None,
    session: str | None = None,
    user: str | None = None,
    start_shift_ns: int = 0,
    city: str | None = None,
) -> bytes:
    """The recorded run as an OTLP/JSON request under `trace_id`: its resource naming
    `service` and `version`, its root span carrying `session.id` and `user.id` (as the
    application sets them on the request's span), its times shifted by `start_shift_ns`,
    the user asking about `city` instead of San Francisco (a session's turns told apart)."""
    document = copy.deepcopy(_DOCUMENT)
    for resource_spans in document["resourceSpans"]:
        attributes = resource_spans["resource"]["attributes"]
        for key, value in (("service.name", service), ("service.version", version)):
            if value is not None:
                attributes[:] = [a for a in attributes if a["key"] != key]
                attributes.append(_attribute(key, value))
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                span["traceId"] = trace_id
                for field in ("startTimeUnixNano", "endTimeUnixNano"):
                    span[field] = str(int(span[field]) + start_shift_ns)
                if span.get("parentSpanId"):
                    continue
                for key, value in (("session.id", session), ("user.id", user)):
                    if value is not None:
                        span["attributes"].append(_attribute(key, value))
    text = json.dumps(document)
    return (text.replace("San Francisco", city) if city else text).encode()


def send(http: httpx.Client, body: bytes) -> None:
    answer = http.post("/v1/traces", content=body, headers=JSON)
    assert answer.status_code == 200, answer.text


def scored(http: httpx.Client, count: int) -> list[dict[str, Any]]:
    """Wait until `count` traces are scored; their summaries."""

    def found() -> list[dict[str, Any]] | None:
        listed = http.get("/api/v1/traces", params={"status": "scored", "limit": 500}).json()
        return listed["traces"] if len(listed["traces"]) >= count else None

    result: list[dict[str, Any]] = wait_for(found, timeout=60)
    return result
