"""Scripted two-agent runs with one planted fault each, for the checks' tests and benchmark.

An orchestrator plans, a researcher answers with tools, and the orchestrator answers
the user from the researcher's findings. Every run goes through the real `openai`
client against a ScriptedLLMServer while the process's tracing records it, so the
checks see traces exactly as the converter builds them. A `Scenario` holds the
researcher's scripted model replies, what the tools return, the orchestrator's final
answer, and the ground truth: which check should flag which agent (None when clean).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tracejudge.models import MultiAgentTrace
from tracejudge.testing import Reply, ScriptedLLMServer, ToolCall

MODEL = "gpt-4.1-mini"
ORCHESTRATOR = "orchestrator"
RESEARCHER = "researcher"

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["C", "F"]},
                "days": {"type": "integer", "minimum": 1},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
CURRENCY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "convert_currency",
        "description": "Convert an amount between currencies.",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "source": {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY"]},
                "target": {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY"]},
            },
            "required": ["amount", "source", "target"],
        },
    },
}
SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {
                    "type": "object",
                    "properties": {"site": {"type": "string"}, "recent": {"type": "boolean"}},
                },
            },
            "required": ["query"],
        },
    },
}
TOOLS = [WEATHER_TOOL, CURRENCY_TOOL, SEARCH_TOOL]

#: What the tools return when a scenario does not say otherwise. The dispatcher is lenient
#: (like many real tool layers): it answers calls the model was not offered, and arguments
#: that break the schema, so that a planted argument fault does not also become an error.
ToolFn = Callable[[dict[str, Any]], str]


def weather(temp: int, conditions: str, city: str = "") -> ToolFn:
    return lambda args: json.dumps(
        {
            "city": args.get("city", city) if isinstance(args.get("city"), str) else city,
            "temperature": temp,
            "unit": args.get("unit", "C") if args.get("unit") in ("C", "F") else "C",
            "conditions": conditions,
        }
    )


@dataclass(frozen=True)
class Scenario:
    """One scripted run and its ground truth."""

    name: str
    question: str
    #: The researcher's model replies, in order (tool-call rounds, then its findings).
    researcher: tuple[Reply, ...]
    #: The orchestrator's final answer to the user.
    final: str
    #: Tool name -> result function (parsed arguments -> result string).
    tools: Mapping[str, ToolFn] = field(default_factory=dict)
    #: (check name, agent name) that should be flagged; None for a clean run. The check
    #: name is the base name, without arguments ("budgets", not "budgets(max_tokens=...)").
    fault: tuple[str, str] | None = None
    plan: str = "Plan: ask the researcher, then answer the user."
    #: How many times the researcher's agent code asks its model to go on after a text reply.
    nudges: int = 0
    #: Token usage scripted on every reply, so that budgets have data.
    usage: Mapping[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 40, "completion_tokens": 10}
    )

    @property
    def kind(self) -> str:
        return self.name.split(":", 1)[0]


def base_name(check_name: str) -> str:
    """A check's name without its arguments: "budgets(max_tokens=10)" -> "budgets"."""
    return check_name.split("(", 1)[0]


def _replies(scenario: Scenario) -> list[Reply]:
    usage = dict(scenario.usage)

    def with_usage(reply: Reply) -> Reply:
        return reply if reply.usage else dataclasses.replace(reply, usage=usage)

    return [
        with_usage(Reply.text(scenario.plan)),
        *(with_usage(r) for r in scenario.researcher),
        with_usage(Reply.text(scenario.final)),
    ]


def _parse(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _tool_loop(client: Any, scenario: Scenario, max_rounds: int = 8) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You research with tools."},
        {"role": "user", "content": scenario.question},
    ]
    nudges = scenario.nudges
    for _ in range(max_rounds):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        message = response.choices[0].message
        if not message.tool_calls:
            if nudges <= 0:
                return message.content or ""
            nudges -= 1
            messages.append({"role": "assistant", "content": message.content or ""})
            messages.append({"role": "user", "content": "Please go on."})
            continue
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            tool = scenario.tools.get(call.function.name)
            result = tool(_parse(call.function.arguments)) if tool else "{}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise RuntimeError(f"scenario {scenario.name} did not finish in {max_rounds} rounds")


def run_scenario(client: Any, scenario: Scenario) -> MultiAgentTrace:
    """Run the orchestrator and researcher against a server scripted with the scenario's
    replies (the caller queues them: see `run`); returns the orchestrator's trace."""
    from tracejudge import AgentTracer

    system = {"role": "system", "content": "You coordinate a researcher."}
    user = {"role": "user", "content": scenario.question}
    with AgentTracer(name=ORCHESTRATOR) as orchestrator:
        plan = client.chat.completions.create(model=MODEL, messages=[system, user])
        with AgentTracer(name=RESEARCHER):
            findings = _tool_loop(client, scenario)
        client.chat.completions.create(
            model=MODEL,
            messages=[
                system,
                user,
                {"role": "assistant", "content": plan.choices[0].message.content},
                {"role": "user", "content": f"Researcher said: {findings}"},
            ],
        )
    return orchestrator.trace


def run(scenario: Scenario, server: ScriptedLLMServer | None = None) -> MultiAgentTrace:
    """Run one scenario through the real openai client and the process's tracing."""
    import openai

    own = server is None
    server = server or ScriptedLLMServer().start()
    try:
        server.reset()
        server.add(*_replies(scenario))
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            return run_scenario(client, scenario)
    finally:
        if own:
            server.stop()


# --------------------------------------------------------------------------- the scenarios

CITIES = [
    ("Paris", 18, "sunny"),
    ("Oslo", 4, "snowing"),
    ("Lima", 22, "cloudy"),
    ("Cairo", 35, "clear"),
    ("Tokyo", 27, "humid"),
    ("Quito", 13, "rainy"),
]


def clean(city: str = "Paris", temp: int = 18, conditions: str = "sunny") -> Scenario:
    """A clean run: one weather call, findings and answer restate its numbers."""
    return Scenario(
        name=f"clean:{city}",
        question=f"What is the weather in {city} today?",
        researcher=(
            Reply.tool_calls([ToolCall("get_weather", {"city": city, "unit": "C"}, id="call_w1")]),
            Reply.text(f"Findings: it is {temp}°C and {conditions} in {city}."),
        ),
        final=f"It is {temp} °C and {conditions} in {city} today.",
        tools={"get_weather": weather(temp, conditions, city)},
    )


def clean_variants() -> list[Scenario]:
    """Clean runs that tempt the checks: reformatted numbers, dates, lists, innocuous
    "error" text in results, two identical calls, parallel calls, an apology after a
    failure-free run that is not a refusal."""
    out = [clean(*c) for c in CITIES]
    out.append(
        Scenario(
            name="clean:currency",
            question="How much is 1000 USD in EUR?",
            researcher=(
                Reply.tool_calls(
                    [
                        ToolCall(
                            "convert_currency",
                            {"amount": 1000, "source": "USD", "target": "EUR"},
                            id="call_c1",
                        )
                    ]
                ),
                Reply.text("Findings: 1,000 USD is 921.50 EUR at a rate of 0.9215."),
            ),
            final="1,000 USD is about €921.5 (rate 0.9215).",
            tools={
                "convert_currency": lambda a: json.dumps(
                    {"amount": 1000.0, "converted": 921.5, "rate": 0.9215}
                )
            },
        )
    )
    out.append(
        Scenario(
            name="clean:dates-and-list",
            question="When are the next two Paris marathon dates?",
            researcher=(
                Reply.tool_calls(
                    [ToolCall("search", {"query": "paris marathon dates"}, id="call_q1")]
                ),
                Reply.text(
                    "Findings:\n1. April 6, 2025 - 42.195 km\n2. 12/04/2026 - same course [1]"
                ),
            ),
            final="The next dates:\n1. 6 Apr 2025\n2. April 12th, 2026\nBoth run 42.195 km.",
            tools={
                "search": lambda a: json.dumps(
                    {
                        "results": [
                            "Paris marathon 2025-04-06, distance 42.195 km",
                            "Paris marathon 2026-04-12",
                        ]
                    }
                )
            },
        )
    )
    out.append(
        Scenario(
            name="clean:innocuous-error-text",
            question="How do I fix a 404 Not Found error on my site?",
            researcher=(
                Reply.tool_calls(
                    [ToolCall("search", {"query": "fix 404 not found error"}, id="call_q2")]
                ),
                Reply.text("Findings: a 404 means the page is missing; add a redirect."),
            ),
            final="A 404 means the page is missing: add a redirect.",
            tools={
                "search": lambda a: json.dumps(
                    {
                        "results": [
                            "How to fix error 404 Not Found: add a redirect",
                            "Traceback-free logging tips",
                        ],
                        "error": None,
                    }
                )
            },
        )
    )
    out.append(
        Scenario(
            name="clean:two-identical-calls",
            question="Is it sunny in Lima?",
            researcher=(
                Reply.tool_calls([ToolCall("get_weather", {"city": "Lima"}, id="call_l1")]),
                Reply.tool_calls([ToolCall("get_weather", {"city": "Lima"}, id="call_l2")]),
                Reply.text("Findings: Lima is cloudy at 22 C."),
            ),
            final="No, Lima is cloudy (22 °C).",
            tools={"get_weather": weather(22, "cloudy", "Lima")},
        )
    )
    out.append(
        Scenario(
            name="clean:parallel",
            question="Compare the weather in Oslo and Cairo.",
            researcher=(
                Reply.tool_calls(
                    [
                        ToolCall("get_weather", {"city": "Oslo", "unit": "F"}, id="call_p1"),
                        ToolCall("get_weather", {"city": "Cairo", "unit": "F"}, id="call_p2"),
                    ]
                ),
                Reply.text("Findings: Oslo 39 F, Cairo 95 F; Cairo is 56 degrees warmer."),
            ),
            final="Cairo (95°F) is far warmer than Oslo (39°F).",
            tools={
                "get_weather": lambda a: json.dumps(
                    {"city": a.get("city"), "temperature": 39 if a.get("city") == "Oslo" else 95}
                    | {"difference": 56}
                )
            },
        )
    )
    return out


def wrong_tool(variant: int = 0) -> Scenario:
    """The researcher calls a tool it was not offered (the tool layer still answers)."""
    city, temp, conditions = CITIES[variant % len(CITIES)]
    name = ["get_forecast", "weather_lookup", "fetch_weather", "getWeather"][variant % 4]
    return Scenario(
        name=f"wrong_tool:{name}",
        question=f"What is the weather in {city}?",
        researcher=(
            Reply.tool_calls([ToolCall(name, {"city": city}, id="call_bad")]),
            Reply.text(f"Findings: {city} is {conditions} at {temp} C."),
        ),
        final=f"{city}: {conditions}, {temp} °C.",
        tools={name: weather(temp, conditions, city)},
        fault=("tool_arguments", RESEARCHER),
    )


def bad_arguments(variant: int = 0) -> Scenario:
    """The researcher's arguments break the schema: missing, mistyped, out-of-enum,
    unexpected, below minimum, or not JSON at all."""
    city, temp, conditions = CITIES[variant % len(CITIES)]
    arguments: list[dict[str, Any] | str] = [
        {"unit": "C"},  # missing required city
        {"city": 42},  # wrong type
        {"city": city, "unit": "kelvin"},  # not in enum
        {"city": city, "country": "XX"},  # additionalProperties false
        {"city": city, "days": 0},  # below minimum
        {"city": city, "days": 2.5},  # number where integer is required
        '{"city": "' + city + '", "unit": ',  # truncated JSON
    ]
    chosen = arguments[variant % len(arguments)]
    return Scenario(
        name=f"bad_arguments:{variant % len(arguments)}",
        question=f"What is the weather in {city}?",
        researcher=(
            Reply.tool_calls([ToolCall("get_weather", chosen, id="call_bad")]),
            Reply.text(f"Findings: {city} is {conditions} at {temp} C."),
        ),
        final=f"{city}: {conditions}, {temp} °C.",
        tools={"get_weather": weather(temp, conditions, city)},
        fault=("tool_arguments", RESEARCHER),
    )


ERROR_RESULTS = [
    json.dumps({"error": "upstream timeout"}),
    "Traceback (most recent call last):\n  File \"tools.py\", line 3\nKeyError: 'city'",
    "HTTP 503 Service Unavailable",
    json.dumps({"status": 500, "message": "internal failure"}),
    "Error: city not found",
    "<html><head><title>502 Bad Gateway</title></head></html>",
    json.dumps({"isError": True, "content": [{"type": "text", "text": "quota exceeded"}]}),
]


def error_result(variant: int = 0) -> Scenario:
    """The researcher's tool answers with an error; it says so (an apology is fair here)."""
    city = CITIES[variant % len(CITIES)][0]
    result = ERROR_RESULTS[variant % len(ERROR_RESULTS)]
    return Scenario(
        name=f"error_result:{variant % len(ERROR_RESULTS)}",
        question=f"What is the weather in {city}?",
        researcher=(
            Reply.tool_calls([ToolCall("get_weather", {"city": city}, id="call_err")]),
            Reply.text(f"I'm sorry, I could not get the weather for {city}: the service failed."),
        ),
        final=f"The weather service failed, so I cannot tell you the weather in {city} now.",
        tools={"get_weather": lambda a: result},
        fault=("tool_results", RESEARCHER),
    )


def repeated_call(variant: int = 0) -> Scenario:
    """The researcher makes the same call again and again (key order varies)."""
    city, temp, conditions = CITIES[variant % len(CITIES)]
    times = 3 + variant % 2
    orders = [{"city": city, "unit": "C"}, {"unit": "C", "city": city}]
    calls = tuple(
        Reply.tool_calls([ToolCall("get_weather", orders[i % 2], id=f"call_r{i}")])
        for i in range(times)
    )
    return Scenario(
        name=f"repeated_call:{city}x{times}",
        question=f"What is the weather in {city}?",
        researcher=(*calls, Reply.text(f"Findings: {city} is {conditions} at {temp} C.")),
        final=f"{city}: {conditions}, {temp} °C.",
        tools={"get_weather": weather(temp, conditions, city)},
        fault=("loops", RESEARCHER),
    )


def repeated_reply(variant: int = 0) -> Scenario:
    """The researcher gives the same reply three times, its agent code nudging it on."""
    city = CITIES[variant % len(CITIES)][0]
    text = f"Let me check the weather in {city}."
    return Scenario(
        name=f"repeated_reply:{city}",
        question=f"What is the weather in {city}?",
        researcher=(Reply.text(text), Reply.text(f"  {text.upper()}"), Reply.text(text)),
        final=f"I will get back to you about {city}.",
        tools={},
        nudges=2,
        fault=("loops", RESEARCHER),
    )


def ungrounded_number(variant: int = 0) -> Scenario:
    """The researcher's findings state a number no tool returned (the orchestrator repeats
    it, grounded in what the researcher said)."""
    city, temp, conditions = CITIES[variant % len(CITIES)]
    claims = [
        (f"it is {temp + 7}°C and {conditions} in {city}", f"{temp + 7} °C"),
        (f"it is {temp}°C, {conditions}, with 85% humidity in {city}", "85% humidity"),
        (f"it is {temp}°C in {city}, the warmest since March 3, 2019", "since March 3, 2019"),
        (f"it is {temp}°C in {city}, with winds of 12.5 km/h", "winds of 12.5 km/h"),
    ]
    claim, repeated = claims[variant % len(claims)]
    return Scenario(
        name=f"ungrounded_number:{variant % len(claims)}",
        question=f"What is the weather in {city}?",
        researcher=(
            Reply.tool_calls([ToolCall("get_weather", {"city": city}, id="call_w")]),
            Reply.text(f"Findings: {claim}."),
        ),
        final=f"In {city}: {repeated}.",
        tools={"get_weather": weather(temp, conditions, city)},
        fault=("grounded_numbers", RESEARCHER),
    )


def empty_answer(variant: int = 0) -> Scenario:
    """An agent's last reply is empty: the researcher's, or the orchestrator's."""
    city, temp, conditions = CITIES[variant % len(CITIES)]
    if variant % 2 == 0:
        return Scenario(
            name=f"empty_answer:{RESEARCHER}",
            question=f"What is the weather in {city}?",
            researcher=(
                Reply.tool_calls([ToolCall("get_weather", {"city": city}, id="call_w")]),
                Reply.text(""),
            ),
            final="The researcher returned nothing.",
            tools={"get_weather": weather(temp, conditions, city)},
            fault=("final_answer", RESEARCHER),
        )
    return Scenario(
        name=f"empty_answer:{ORCHESTRATOR}",
        question=f"What is the weather in {city}?",
        researcher=(
            Reply.tool_calls([ToolCall("get_weather", {"city": city}, id="call_w")]),
            Reply.text(f"Findings: {city} is {conditions} at {temp} C."),
        ),
        final="",
        tools={"get_weather": weather(temp, conditions, city)},
        fault=("final_answer", ORCHESTRATOR),
    )


#: The token budget the suite's `budgets` check is given (see `over_budget`).
TOKEN_BUDGET = 10_000


def over_budget(variant: int = 0) -> Scenario:
    """The researcher's model calls use more tokens than the budget: one huge prompt, or
    several large ones (the orchestrator's calls stay small)."""
    city, temp, conditions = CITIES[variant % len(CITIES)]
    rounds = 1 + variant % 3
    per_call = TOKEN_BUDGET // rounds + 500 * (variant + 1)
    usage = {"prompt_tokens": per_call, "completion_tokens": 20}
    calls = tuple(
        Reply.tool_calls(
            [ToolCall("get_weather", {"city": city, "days": i + 1}, id=f"call_b{i}")], usage=usage
        )
        for i in range(rounds)
    )
    return Scenario(
        name=f"over_budget:{rounds}x{per_call}",
        question=f"What is the weather in {city}?",
        researcher=(*calls, Reply.text(f"Findings: {city} is {conditions} at {temp} C.")),
        final=f"{city}: {conditions}, {temp} °C.",
        tools={"get_weather": weather(temp, conditions, city)},
        fault=("budgets", RESEARCHER),
    )


FAULTS: dict[str, Callable[[int], Scenario]] = {
    "wrong_tool": wrong_tool,
    "bad_arguments": bad_arguments,
    "error_result": error_result,
    "repeated_call": repeated_call,
    "repeated_reply": repeated_reply,
    "ungrounded_number": ungrounded_number,
    "empty_answer": empty_answer,
    "over_budget": over_budget,
}


def suite(variants: int = 4, seed: int = 7) -> list[Scenario]:
    """Clean runs plus every fault kind `variants` times, shuffled reproducibly."""
    scenarios = clean_variants()
    for make in FAULTS.values():
        scenarios.extend(make(v) for v in range(variants))
    random.Random(seed).shuffle(scenarios)
    return scenarios


def hard_cases() -> list[Scenario]:
    """Cases at the edge of what text rules can see, for the benchmark to report honestly:
    some are caught, some are known misses (numbers in words, paraphrased loops, error
    text with no error marker) or known false alarms (derived arithmetic, an apology for
    an empty result)."""
    return [
        Scenario(
            name="hard:number-in-words",
            question="What is the weather in Paris?",
            researcher=(
                Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"}, id="call_h1")]),
                Reply.text("Findings: it is twenty-five degrees and sunny in Paris."),
            ),
            final="It is warm and sunny in Paris.",
            tools={"get_weather": weather(18, "sunny", "Paris")},
            fault=("grounded_numbers", RESEARCHER),
        ),
        Scenario(
            name="hard:derived-number",
            question="How much warmer is Cairo than Oslo?",
            researcher=(
                Reply.tool_calls(
                    [
                        ToolCall("get_weather", {"city": "Oslo"}, id="call_h2"),
                        ToolCall("get_weather", {"city": "Cairo"}, id="call_h3"),
                    ]
                ),
                Reply.text("Findings: Cairo (35 °C) is 31 degrees warmer than Oslo (4 °C)."),
            ),
            final="Cairo is 31 degrees warmer than Oslo.",
            tools={
                "get_weather": lambda a: json.dumps(
                    {"city": a.get("city"), "temperature": 4 if a.get("city") == "Oslo" else 35}
                )
            },
        ),
        Scenario(
            name="hard:plain-error-text",
            question="What is the weather in Atlantis?",
            researcher=(
                Reply.tool_calls([ToolCall("get_weather", {"city": "Atlantis"}, id="call_h4")]),
                Reply.text("Findings: the weather service does not know Atlantis."),
            ),
            final="The weather service does not know Atlantis.",
            tools={"get_weather": lambda a: "city not found"},
            fault=("tool_results", RESEARCHER),
        ),
        Scenario(
            name="hard:paraphrased-loop",
            question="What is the weather in Paris?",
            researcher=(
                Reply.tool_calls([ToolCall("search", {"query": "paris weather"}, id="call_h5")]),
                Reply.tool_calls(
                    [ToolCall("search", {"query": "Paris weather today"}, id="call_h6")]
                ),
                Reply.tool_calls([ToolCall("search", {"query": "weather in paris"}, id="call_h7")]),
                Reply.text("Findings: Paris is sunny."),
            ),
            final="Paris is sunny.",
            tools={"search": lambda a: json.dumps({"results": ["Paris: sunny"]})},
            fault=("loops", RESEARCHER),
        ),
        Scenario(
            name="hard:refusal-after-success",
            question="What is the weather in Quito?",
            researcher=(
                Reply.tool_calls([ToolCall("get_weather", {"city": "Quito"}, id="call_h8")]),
                Reply.text("I'm sorry, but I can't share weather information."),
            ),
            final="The researcher would not say.",
            tools={"get_weather": weather(13, "rainy", "Quito")},
            fault=("final_answer", RESEARCHER),
        ),
        Scenario(
            name="hard:apology-for-empty-result",
            question="Find news about the Paris marathon from tomorrow.",
            researcher=(
                Reply.tool_calls(
                    [ToolCall("search", {"query": "paris marathon news"}, id="call_h9")]
                ),
                Reply.text("Sorry, I could not find any news about it yet."),
            ),
            final="There is no news about it yet.",
            tools={"search": lambda a: json.dumps({"results": []})},
        ),
        Scenario(
            name="hard:rounded-value",
            question="What is the weather in Tokyo?",
            researcher=(
                Reply.tool_calls([ToolCall("get_weather", {"city": "Tokyo"}, id="call_h10")]),
                Reply.text("Findings: about 27 °C and humid in Tokyo."),
            ),
            final="About 27 °C and humid.",
            tools={
                "get_weather": lambda a: json.dumps({"temperature": 26.8, "conditions": "humid"})
            },
        ),
    ]
