"""The demo's multi-agent program, its scripted model replies, and how it is traced.

An orchestrator plans a weekend trip and delegates to a researcher, which calls two
tools (both at once in its first turn), and to a writer; then it answers. Against the
scripted model two faults are planted so the scores have something to find: the
researcher's first hotel search sends a malformed price, and the writer states a
discount that no tool returned. Against a real model the same program runs unscripted.

`export_traced_run` runs it with the real `openai` client, traced by `ComposoTracer` /
`AgentTracer`, and exports the spans over OTLP/HTTP to a tracejudge server.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracejudge.errors import ComposoError, MissingDependencyError

if TYPE_CHECKING:
    from tracejudge.testing import Reply

#: The model the program asks for (the scripted server answers any name).
MODEL = "gpt-4.1-mini"
#: A researcher gives up after this many model calls (a real model may keep calling tools).
MAX_RESEARCH_TURNS = 6
QUESTION = "Plan a weekend in Lisbon: weather and a hotel under 150 EUR."

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["C", "F"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_hotels",
            "description": "Hotels in a city under a nightly price in EUR.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "max_price": {"type": "integer"},
                },
                "required": ["city", "max_price"],
            },
        },
    },
]


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    """The tools' (fixed) answers; a non-integer price gets the error a real API gives."""
    if name == "get_weather":
        return json.dumps({"city": arguments.get("city"), "temperature_c": 24, "sky": "sunny"})
    if name != "search_hotels":
        return json.dumps({"error": f"unknown tool {name!r}"})
    if not isinstance(arguments.get("max_price"), int):
        return json.dumps({"error": "max_price must be an integer number of EUR"})
    return json.dumps({"hotels": [{"name": "Hotel Sol", "price_eur": 120, "rating": 4.5}]})


def scripted_replies() -> list[Reply]:
    """What the scripted model answers, in call order."""
    from tracejudge.testing import Reply, ToolCall

    return [
        # orchestrator: plans
        Reply.text("Plan: the researcher checks weather and hotels, the writer drafts the note."),
        # researcher: two tools at once, the hotel search with a malformed price (fault 1)
        Reply.tool_calls(
            [
                ToolCall("get_weather", {"city": "Lisbon", "unit": "C"}, id="call_weather"),
                ToolCall("search_hotels", {"city": "Lisbon", "max_price": "cheap"}, id="call_h1"),
            ]
        ),
        Reply.tool_calls(
            [ToolCall("search_hotels", {"city": "Lisbon", "max_price": 150}, id="call_h2")]
        ),
        Reply.text("Lisbon: 24 C and sunny. Hotel Sol has rooms at 120 EUR per night."),
        # writer: a discount no tool returned (fault 2)
        Reply.text(
            "Pack light: Lisbon will be 24 C and sunny. Hotel Sol costs 120 EUR a night, "
            "15% below the city average."
        ),
        # orchestrator: answers
        Reply.text("Your Lisbon trip note is ready: sunny, 24 C, Hotel Sol at 120 EUR a night."),
    ]


def _researcher(client: Any, model: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You research trips with tools."},
        {"role": "user", "content": QUESTION},
    ]
    for _ in range(MAX_RESEARCH_TURNS):
        response = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {}
            result = run_tool(call.function.name, arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "The research did not finish."


def run_program(client: Any, model: str = MODEL) -> Any:
    """The traced program; returns the orchestrator's (entered and exited) AgentTracer."""
    from tracejudge import AgentTracer

    with AgentTracer(name="orchestrator") as orchestrator:
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": QUESTION}]
        )
        with AgentTracer(name="researcher"):
            findings = _researcher(client, model)
        with AgentTracer(name="writer"):
            note = client.chat.completions.create(
                model=model,
                messages=[{"role": "user", "content": f"Write a trip note from: {findings}"}],
            )
        client.chat.completions.create(
            model=model,
            messages=[
                {"role": "user", "content": QUESTION},
                {"role": "user", "content": f"Writer: {note.choices[0].message.content}"},
            ],
        )
    return orchestrator


class ServerExporter(SpanExporter):
    """OTLP/HTTP (protobuf, gzip) to one tracejudge server, set up by its arguments alone.

    Not the SDK's exporter: that one adds OTEL_EXPORTER_OTLP_HEADERS to the headers it is
    given, so a token set for another backend would be sent to the demo's server.
    """

    def __init__(self, endpoint: str, key: str | None) -> None:
        import httpx

        self.endpoint = endpoint
        self.error: str | None = None
        headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}
        self._http = httpx.Client(headers={**headers, **({"API-Key": key} if key else {})})

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        import httpx
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        body = gzip.compress(encode_spans(spans).SerializeToString())
        try:
            answer = self._http.post(self.endpoint, content=body, timeout=10)
        except httpx.HTTPError as error:
            self.error = type(error).__name__
            return SpanExportResult.FAILURE
        if answer.status_code != 200:
            self.error = f"HTTP {answer.status_code}"
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._http.close()


def export_traced_run(
    *, model_url: str, model_key: str, model: str, server_url: str, server_key: str | None
) -> str:
    """Run the program against the model at `model_url`, traced, and export every span over
    OTLP/HTTP to the tracejudge server at `server_url` (with `server_key` when given);
    return the trace id (hex). Tracing is shut down again before returning."""
    try:
        import opentelemetry.exporter.otlp.proto.common.trace_encoder  # noqa: F401
        from openai import OpenAI
    except ImportError as error:  # pragma: no cover - depends on the install
        raise MissingDependencyError(
            error.name or "openai", "demo", "the demo (the openai client, OTLP encoding)"
        ) from None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from tracejudge import ComposoTracer, Instruments

    provider = TracerProvider(resource=Resource.create({"service.name": "tracejudge-demo"}))
    exporter = ServerExporter(f"{server_url}/v1/traces", server_key)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    ComposoTracer.init(instruments=Instruments.OPENAI, tracer_provider=provider, otlp=False)
    try:
        with OpenAI(base_url=model_url, api_key=model_key, max_retries=0) as client:
            orchestrator = run_program(client, model)
        if not provider.force_flush(15_000) or exporter.error:
            why = f" ({exporter.error})" if exporter.error else ""
            raise ComposoError(f"the spans could not be exported to {server_url}{why}")
    finally:
        ComposoTracer.shutdown()
        provider.shutdown()
    return format(orchestrator.span.get_span_context().trace_id, "032x")
