"""Hostile inputs for the server tests: OTLP traces with odd agent names, deep JSON."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openllmetry.jsonl"
OTLP_JSON = {"Content-Type": "application/json"}


def otlp_trace(writer_name: str = "writer", trace_id: str | None = None) -> tuple[str, str]:
    """The recorded three-agent OpenLLMetry run as one OTLP/JSON request, its writer agent
    renamed to `writer_name` (any text: a NUL, a lone surrogate) and under a fresh trace
    id. Returns (trace_id, body); the body escapes what it must (`json.dumps`)."""
    document: dict[str, Any] = json.loads(FIXTURE.read_text().splitlines()[0])
    trace_id = trace_id or secrets.token_hex(16)
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                span["traceId"] = trace_id
                if span["name"] == "invoke_agent writer":
                    span["name"] = f"invoke_agent {writer_name}"
                for attribute in span.get("attributes", []):
                    if attribute["key"] == "gen_ai.agent.name" and (
                        attribute["value"].get("stringValue") == "writer"
                    ):
                        attribute["value"]["stringValue"] = writer_name
    return trace_id, json.dumps(document)


def nested(depth: int, leaf: Any = 1) -> Any:
    """A JSON value `depth` lists deep."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def deep_json(depth: int) -> bytes:
    """`depth` nested lists as JSON text, made without recursion."""
    return b"[" * depth + b"1" + b"]" * depth
