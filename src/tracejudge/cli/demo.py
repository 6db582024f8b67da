"""`tracejudge demo`: the whole pipeline offline, in one run.

A scripted trip-planning program (planner -> researcher -> writer) calls the
real `openai` client against a ScriptedLLMServer on loopback; OpenTelemetry
records it; the converter turns the spans into a MultiAgentTrace; the
deterministic checks score every agent. Two faults are planted so the scores
have something to find: the researcher sends a hotel search with a malformed
price, and the writer states a discount that no tool returned. When a judge is
configured (argument or environment), natural-language criteria are scored too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.cli._errors import UsageError
from tracejudge.errors import MissingDependencyError
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.report import format_agent_tree, format_results

if TYPE_CHECKING:
    from tracejudge.testing import Reply

MODEL = "gpt-4.1-mini"

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


def _run_tool(name: str, arguments: dict[str, Any]) -> str:
    if name == "get_weather":
        return json.dumps({"city": arguments.get("city"), "temperature_c": 24, "sky": "sunny"})
    if not isinstance(arguments.get("max_price"), int):
        return json.dumps({"error": "max_price must be an integer number of EUR"})
    return json.dumps({"hotels": [{"name": "Hotel Sol", "price_eur": 120, "rating": 4.5}]})


def scripted_replies() -> list[Reply]:
    """What the scripted model answers, in call order."""
    from tracejudge.testing import Reply, ToolCall

    return [
        Reply.text("Plan: the researcher checks weather and hotels, the writer drafts the note."),
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
        Reply.text(
            "Pack light: Lisbon will be 24 C and sunny. Hotel Sol costs 120 EUR a night, "
            "15% below the city average."
        ),
        Reply.text("Your Lisbon trip note is ready: sunny, 24 C, Hotel Sol at 120 EUR a night."),
    ]


def _researcher(client: Any, question: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You research trips with tools."},
        {"role": "user", "content": question},
    ]
    while True:
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = _run_tool(call.function.name, json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def run_program(base_url: str) -> Any:
    """The traced multi-agent program; returns the planner's AgentTracer."""
    try:
        from openai import OpenAI
    except ImportError:  # pragma: no cover - depends on the install
        raise MissingDependencyError(
            "openai", "demo", "the demo, which drives the real openai client,"
        ) from None

    from tracejudge import AgentTracer

    client = OpenAI(base_url=base_url, api_key="demo-key", max_retries=0)
    question = "Plan a weekend in Lisbon: weather and a hotel under 150 EUR."
    with AgentTracer(name="planner") as planner:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": question}]
        )
        with AgentTracer(name="researcher"):
            findings = _researcher(client, question)
        with AgentTracer(name="writer"):
            note = client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": f"Write a trip note from: {findings}"}],
            )
        client.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "user", "content": question},
                {"role": "user", "content": f"Writer: {note.choices[0].message.content}"},
            ],
        )
    return planner


def _configured_judge(judge: str | None) -> Any:
    if judge:
        return judge
    from tracejudge.judges import default_judge

    return default_judge()


def _as_list(answer: Any) -> list[MultiAgentTraceResponse]:
    return answer if isinstance(answer, list) else [answer]


_NO_JUDGE = (
    "No judge configured: scoring with the deterministic checks only. Set "
    "TRACEJUDGE_JUDGE=openai:gpt-4.1-mini (or OPENAI_BASE_URL for a local model) "
    "to add natural-language criteria.\n"
)


def _score(trace: MultiAgentTrace, judge: Any) -> list[MultiAgentTraceResponse]:
    """The checks' answers, then the judge's on two ready-made criteria when one is set."""
    from tracejudge import checks
    from tracejudge.client import Composo

    criteria: list[Any] = [*checks.ALL, checks.budgets(max_tokens=2000, max_seconds=30)]
    with Composo() as client:
        responses = _as_list(client.evaluate_trace(trace, criteria=criteria))
    if judge is not None:
        from tracejudge import criteria as ready_made

        try:
            with Composo(judge=judge) as client:
                answer = client.evaluate_trace(
                    trace, criteria=[ready_made.agent_tool_use, ready_made.agent_goal_pursuit]
                )
            responses.extend(_as_list(answer))
        except Exception as error:  # the checks still stand when the judge fails
            print(f"judge {judge!s} failed: {error}", file=sys.stderr)
    return responses


def run_demo(
    *, judge: str | None = None, as_json: bool = False, save_trace: str | None = None
) -> int:
    """Run the scripted program traced, score its trace, print the report (or JSON
    lines of the responses) to standard output; write the trace to `save_trace`."""
    from tracejudge import ComposoTracer, Instruments
    from tracejudge.testing import ScriptedLLMServer

    ComposoTracer.init(instruments=Instruments.OPENAI)
    with ScriptedLLMServer(scripted_replies()) as server:
        planner = run_program(server.base_url)
    trace = planner.trace
    ComposoTracer.force_flush()
    if save_trace:
        try:
            Path(save_trace).write_text(trace.to_json(indent=2))
        except OSError as error:
            raise UsageError(f"cannot write {save_trace}: {error.strerror or error}") from None

    if not as_json:
        print("Traced agents (depth first):")
        print(format_agent_tree(trace))
        print()
    configured = _configured_judge(judge)
    responses = _score(trace, configured)
    if configured is None and not as_json:
        print(_NO_JUDGE)
    if as_json:
        for response in responses:
            print(response.model_dump_json())
    else:
        print(format_results(trace, responses))
    return 0


def run(args: argparse.Namespace) -> int:
    """The command."""
    return run_demo(judge=args.judge, as_json=args.json, save_trace=args.save_trace)


def add_parser(commands: Any) -> None:
    """Register `demo` on the `tracejudge` command's subparsers."""
    demo = commands.add_parser(
        "demo",
        help="trace a scripted multi-agent program offline and score it",
        description="Run a scripted multi-agent program (the real openai client against a "
        "local scripted server: no network, no key), trace it and score the trace.",
    )
    demo.add_argument(
        "--judge",
        help="also score natural-language criteria with this judge, e.g. openai:gpt-4.1-mini "
        "(default: TRACEJUDGE_JUDGE / OPENAI_API_KEY / OPENAI_BASE_URL when set)",
    )
    demo.add_argument("--json", action="store_true", help="print results as JSON lines")
    demo.add_argument("--save-trace", metavar="PATH", help="write the captured trace as JSON")
    demo.set_defaults(run=run)
