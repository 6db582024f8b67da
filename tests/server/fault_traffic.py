"""Planted-fault traffic for the list's end-to-end tests: a three-agent trip planner run
`--runs` times with the real `openai` client against a ScriptedLLMServer, traced by
`ComposoTracer` / `AgentTracer` and exported with the standard OTLP/HTTP exporter
(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and friends, set by the test). Run as a script, in its
own process (one TracerProvider per process); prints one JSON line per run:
`{"trace_id", "fault", "writer"}`.

Run i plants `FAULTS[i % len(FAULTS)]`:

- `clean`: nothing (run 0's weather tool also returns `UNIQUE_PHRASE`, in no other trace);
- `writer_cutoff`: the writer's answer stops at the token limit (final_answer 0.0);
- `researcher_bad_args`: the researcher's first hotel search sends a malformed price
  (tool_arguments below 1.0, above 0.5);
- `writer_ungrounded`: the writer states a number no tool returned (grounded_numbers
  below 1.0, above 0.5);
- `Writer_cutoff`: as writer_cutoff, the agent named `Writer` (the filter is case-blind).

The orchestrator's span carries `tracejudge.tags.fault=<fault>`: the trace's tag.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from openai import OpenAI

from tracejudge import AgentTracer, ComposoTracer, Instruments
from tracejudge.testing import Reply, ScriptedLLMServer, ToolCall

FAULTS = ("clean", "writer_cutoff", "researcher_bad_args", "writer_ungrounded", "Writer_cutoff")
UNIQUE_PHRASE = "marmalade skies over Alfama"
MODEL = "gpt-4.1-mini"
QUESTION = "Plan a weekend in Lisbon: weather and a hotel under 150 EUR."
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
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
                "properties": {"city": {"type": "string"}, "max_price": {"type": "integer"}},
                "required": ["city", "max_price"],
            },
        },
    },
]


def _tool(name: str, arguments: dict[str, Any], run: int) -> str:
    if name == "get_weather":
        weather: dict[str, Any] = {"city": arguments.get("city"), "temperature_c": 24}
        if run == 0:
            weather["note"] = UNIQUE_PHRASE
        return json.dumps(weather)
    if not isinstance(arguments.get("max_price"), int):
        return json.dumps({"error": "max_price must be an integer number of EUR"})
    return json.dumps({"hotels": [{"name": "Hotel Sol", "price_eur": 120}]})


def _replies(fault: str) -> list[Reply]:
    def text(content: str, **options: Any) -> Reply:
        return Reply.text(content, model=MODEL, **options)

    research = [
        Reply.tool_calls(
            [
                ToolCall("get_weather", {"city": "Lisbon"}, id="call_weather"),
                ToolCall(
                    "search_hotels",
                    {
                        "city": "Lisbon",
                        "max_price": "cheap" if fault == "researcher_bad_args" else 150,
                    },
                    id="call_h1",
                ),
            ],
            model=MODEL,
        ),
    ]
    if fault == "researcher_bad_args":
        research.append(
            Reply.tool_calls(
                [ToolCall("search_hotels", {"city": "Lisbon", "max_price": 150}, id="call_h2")],
                model=MODEL,
            )
        )
    research.append(text("Lisbon: 24 C. Hotel Sol has rooms at 120 EUR per night."))
    note = "Lisbon will be 24 C. Hotel Sol costs 120 EUR a night."
    if fault == "writer_ungrounded":
        note += " That is 15% below the city average."
    cut = fault.endswith("cutoff")
    writer = text(
        "Lisbon will be 24 C. Hotel Sol costs" if cut else note,
        finish_reason="length" if cut else "stop",
    )
    return [
        text("Plan: the researcher checks weather and hotels, the writer drafts the note."),
        *research,
        writer,
        text("Your Lisbon trip note is ready."),
    ]


def _researcher(client: OpenAI, run: int) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You research trips with tools."},
        {"role": "user", "content": QUESTION},
    ]
    for _ in range(4):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments or "{}")  # type: ignore[union-attr]
            result = _tool(call.function.name, arguments, run)  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "The research did not finish."


def run_once(client: OpenAI, run: int, fault: str) -> str:
    """One traced run; the trace id (hex)."""
    writer_name = "Writer" if fault == "Writer_cutoff" else "writer"
    with AgentTracer(name="orchestrator") as orchestrator:
        orchestrator.span.set_attribute("tracejudge.tags.fault", fault)
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": QUESTION}]
        )
        with AgentTracer(name="researcher"):
            findings = _researcher(client, run)
        with AgentTracer(name=writer_name):
            note = client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": f"Write a trip note from: {findings}"}],
            )
        client.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "user", "content": QUESTION},
                {"role": "user", "content": f"Writer: {note.choices[0].message.content}"},
            ],
        )
    return format(orchestrator.span.get_span_context().trace_id, "032x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=len(FAULTS))
    args = parser.parse_args()
    faults = [FAULTS[i % len(FAULTS)] for i in range(args.runs)]
    replies = [reply for fault in faults for reply in _replies(fault)]
    with ScriptedLLMServer(replies) as model:
        provider = ComposoTracer.init(instruments=Instruments.OPENAI)
        client = OpenAI(base_url=model.base_url, api_key="agent-key", max_retries=0)
        for run, fault in enumerate(faults):
            trace_id = run_once(client, run, fault)
            writer = "Writer" if fault == "Writer_cutoff" else "writer"
            print(json.dumps({"trace_id": trace_id, "fault": fault, "writer": writer}), flush=True)
        provider.force_flush()
        provider.shutdown()


if __name__ == "__main__":
    main()
