"""Shared by the converter tests: the fixtures, what each instrumentation records,
and a comparable form of a trace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracejudge.models import LLMInteraction, LLMToolCall, LLMToolResponse, MultiAgentTrace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@dataclass(frozen=True)
class Instrumentation:
    """What one recorded instrumentation gives the converter (the differences are the
    instrumentations', not the converter's; see the report table in test_conventions)."""

    name: str
    package: str
    tools: bool  # records the tools offered to the model
    logs: bool = False  # message content is in log records, not on the span
    responses: bool = False  # a `<name>_responses` recording of the Responses API exists


INSTRUMENTATIONS = [
    Instrumentation("openllmetry", "opentelemetry.instrumentation.openai", True, responses=True),
    Instrumentation(
        "openllmetry_legacy", "opentelemetry.instrumentation.openai", True, responses=True
    ),
    # OpenLLMetry's events mode logs messages but not the tool definitions.
    Instrumentation("openllmetry_events", "opentelemetry.instrumentation.openai", False, True),
    Instrumentation("openinference", "openinference.instrumentation.openai", True, responses=True),
    # contrib openai-v2 records no tool definitions, in either mode.
    Instrumentation("genai_semconv", "opentelemetry.instrumentation.openai_v2", False),
    Instrumentation("genai_semconv_events", "opentelemetry.instrumentation.openai_v2", False, True),
]
BY_NAME = {i.name: i for i in INSTRUMENTATIONS}


def fixture(name: str, suffix: str) -> Path:
    return FIXTURES / f"{name}{suffix}"


# --------------------------------------------------------------------------- comparable form


def _content(content: Any) -> Any:
    if isinstance(content, LLMToolCall):
        return ("call", content.id, content.name, json.loads(content.parameters))
    if isinstance(content, LLMToolResponse):
        return ("result", content.id, content.name, content.response)
    return ("text", content)


def interaction_form(interaction: LLMInteraction, *, tools: bool = True) -> dict[str, Any]:
    form: dict[str, Any] = {
        "in": [(m.role, _content(m.content)) for m in interaction.input_messages],
        "out": [_content(m.content) for m in interaction.output_messages],
    }
    if tools:
        form["tools"] = (
            None
            if interaction.tools_available is None
            else [
                (d.name, d.description, json.loads(d.parameters))
                for d in interaction.tools_available
            ]
        )
    return form


def canonical(trace: MultiAgentTrace, *, tools: bool = True) -> list[Any]:
    """The trace without ids and times: agents depth first, each with its items in order
    (child agents by name, model calls by messages, tool calls with parsed arguments)."""
    agents = []
    for agent in trace.iter_agents():
        items: list[Any] = []
        for item in agent.interactions:
            if isinstance(item, str):
                items.append(("agent", trace.agent_instance_by_id[item].name))
            else:
                items.append(interaction_form(item, tools=tools))
        agents.append((agent.name, items))
    return agents


# --------------------------------------------------------------------------- OTLP/JSON editing


def json_requests(name: str) -> list[dict[str, Any]]:
    """The OTLP/JSON fixture's requests, one per line."""
    text = fixture(name, ".jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def dump(requests: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(r) for r in requests) + "\n"


def json_spans(requests: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for request in requests:
        for resource in request.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                yield from scope.get("spans", [])


def attr(span: dict[str, Any], key: str) -> Any:
    for item in span.get("attributes", []):
        if item["key"] == key:
            value = item["value"]
            return next(iter(value.values()), None)
    return None


def set_attr(span: dict[str, Any], key: str, value: Any) -> None:
    """Set (or with None, remove) a string/int attribute of an OTLP/JSON span."""
    span["attributes"] = [a for a in span.get("attributes", []) if a["key"] != key]
    if value is not None:
        kind = "intValue" if isinstance(value, int) else "stringValue"
        span["attributes"].append({"key": key, "value": {kind: value}})


def remove_spans(requests: list[dict[str, Any]], predicate: Any) -> None:
    for request in requests:
        for resource in request.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                scope["spans"] = [s for s in scope.get("spans", []) if not predicate(s)]


def agent_tree(trace: MultiAgentTrace) -> list[tuple[str, str | None, int]]:
    """(name, parent name, model calls) of every agent, depth first from the root."""
    rows: list[tuple[str, str | None, int]] = []

    def walk(agent_id: str, parent: str | None) -> None:
        agent = trace.agent_instance_by_id[agent_id]
        rows.append((agent.name, parent, len(agent.llm_interactions)))
        for child in agent.child_ids:
            walk(child, agent.name)

    walk(trace.root_agent_instance_id, None)
    return rows


def only_recording(name: str) -> MultiAgentTrace:
    """The one trace of framework recording `name` (tests/fixtures/frameworks)."""
    from tests.fixtures.frameworks import expectations

    (trace,) = expectations.convert(name)
    return trace
