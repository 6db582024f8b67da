"""The three-agent scenario many tests share.

orchestrator -> researcher (two tool-call rounds, the first with two parallel
calls) -> writer, then the orchestrator answers. Run with the real `openai`
client against a ScriptedLLMServer; whatever instrumentation is active records it.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.testing import Reply, ToolCall

SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}
FETCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "fetch_page",
        "description": "Fetch a web page by URL.",
        "parameters": {
            "type": "object",
            "properties": {"url": {"type": "string"}},
            "required": ["url"],
        },
    },
}
RESEARCH_TOOLS = [SEARCH_TOOL, FETCH_TOOL]

TOOL_RESULTS = {
    "search": lambda args: json.dumps(
        {"results": [f"https://example.org/{args['query'].replace(' ', '-')}"]}
    ),
    "fetch_page": lambda args: "San Francisco weather today: 65 F and sunny.",
}

PLAN = "Plan: ask the researcher for the weather, then ask the writer for a summary."
FINDINGS = "Findings: it is 65 F and sunny in San Francisco."
REPORT = "Report: San Francisco enjoys a sunny 65 F today."
FINAL = "It is 65 F and sunny in San Francisco today."
MODEL = "gpt-4.1-mini"


def scripted_replies() -> list[Reply]:
    """The model's replies, in the order the scenario asks for them."""
    return [
        Reply.text(PLAN),
        Reply.tool_calls(
            [
                ToolCall("search", {"query": "sf weather"}, id="call_s1"),
                ToolCall("search", {"query": "san francisco forecast"}, id="call_s2"),
            ]
        ),
        Reply.tool_calls([ToolCall("fetch_page", {"url": "https://example.org/sf"}, id="call_f1")]),
        Reply.text(FINDINGS),
        Reply.text(REPORT),
        Reply.text(FINAL),
    ]


def _tool_loop(client: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    while True:
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            result = TOOL_RESULTS[call.function.name](args)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def run_scenario(client: Any) -> Any:
    """Run the three agents; returns the orchestrator's AgentTracer."""
    from tracejudge import AgentTracer

    question = "What is the weather in San Francisco?"
    with AgentTracer(name="orchestrator") as orchestrator:
        plan = client.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "system", "content": "You coordinate a researcher and a writer."},
                {"role": "user", "content": question},
            ],
        )
        with AgentTracer(name="researcher"):
            findings = _tool_loop(
                client,
                [
                    {"role": "system", "content": "You research with tools."},
                    {"role": "user", "content": question},
                ],
                RESEARCH_TOOLS,
            )
        with AgentTracer(name="writer"):
            report = client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": f"Summarise: {findings}"}],
            )
        client.chat.completions.create(
            model=MODEL,
            messages=[
                {"role": "system", "content": "You coordinate a researcher and a writer."},
                {"role": "user", "content": question},
                {"role": "assistant", "content": plan.choices[0].message.content},
                {"role": "user", "content": f"Writer said: {report.choices[0].message.content}"},
            ],
        )
    return orchestrator
