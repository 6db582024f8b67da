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

from tracejudge.models import AgentInstance, MultiAgentTrace
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
    #: Whether the orchestrator's code gives its model the researcher's findings; without,
    #: its answer can only restate them from what its child agent found.
    relay: bool = True
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
                {
                    "role": "user",
                    "content": f"Researcher said: {findings}" if scenario.relay else "Answer now.",
                },
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


def one_call(
    name: str,
    question: str,
    call: ToolCall,
    result: ToolFn | str,
    findings: str,
    final: str,
    fault: tuple[str, str] | None = None,
) -> Scenario:
    """A run where the researcher makes one tool call, then reports `findings`; `result` is
    what the tool returns (a function of the arguments, or fixed text)."""
    tool = result if callable(result) else (lambda _args: result)
    return Scenario(
        name=name,
        question=question,
        researcher=(Reply.tool_calls([call]), Reply.text(findings)),
        final=final,
        tools={call.name: tool},
        fault=fault,
    )


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
    return one_call(
        f"clean:{city}",
        f"What is the weather in {city} today?",
        ToolCall("get_weather", {"city": city, "unit": "C"}, id="call_w1"),
        weather(temp, conditions, city),
        f"Findings: it is {temp}°C and {conditions} in {city}.",
        f"It is {temp} °C and {conditions} in {city} today.",
    )


def clean_variants() -> list[Scenario]:
    """Clean runs that tempt the checks: reformatted numbers, dates, lists, counts and
    ordinals, innocuous "error" text in results, the same tool with other arguments,
    parallel calls, an apology for an empty result, an orchestrator that restates its
    researcher's findings without being passed them."""
    out = [clean(*c) for c in CITIES]
    search = "search"
    out += [
        one_call(
            "clean:currency",
            "How much is 1000 USD in EUR?",
            ToolCall(
                "convert_currency", {"amount": 1000, "source": "USD", "target": "EUR"}, id="call_c1"
            ),
            json.dumps({"amount": 1000.0, "converted": 921.5, "rate": 0.9215}),
            "Findings: 1,000 USD is 921.50 EUR at a rate of 0.9215.",
            "1,000 USD is about €921.5 (rate 0.9215).",
        ),
        one_call(
            "clean:dates-and-list",
            "When are the next two Paris marathon dates?",
            ToolCall(search, {"query": "paris marathon dates"}, id="call_q1"),
            json.dumps(
                {
                    "results": [
                        "Paris marathon 2025-04-06, distance 42.195 km",
                        "Paris marathon 2026-04-12",
                    ]
                }
            ),
            "Findings:\n1. April 6, 2025 - 42.195 km\n2. 12/04/2026 - same course [1]",
            "The next dates:\n1. 6 Apr 2025\n2. April 12th, 2026\nBoth run 42.195 km.",
        ),
        one_call(
            "clean:innocuous-error-text",
            "How do I fix a 404 Not Found error on my site?",
            ToolCall(search, {"query": "fix 404 not found error"}, id="call_q2"),
            json.dumps(
                {
                    "results": [
                        "How to fix error 404 Not Found: add a redirect",
                        "Traceback-free logging tips",
                    ],
                    "error": None,
                }
            ),
            "Findings: a 404 means the page is missing; add a redirect.",
            "A 404 means the page is missing: add a redirect.",
        ),
    ]
    out.append(
        Scenario(
            name="clean:same-tool-other-arguments",
            question="Is it sunny in Lima today and tomorrow?",
            researcher=(
                Reply.tool_calls([ToolCall("get_weather", {"city": "Lima"}, id="call_l1")]),
                Reply.tool_calls(
                    [ToolCall("get_weather", {"city": "Lima", "days": 2}, id="call_l2")]
                ),
                Reply.text("Findings: Lima is cloudy at 22 C, today and tomorrow."),
            ),
            final="No, Lima is cloudy (22 °C) today and tomorrow.",
            tools={"get_weather": weather(22, "cloudy", "Lima")},
        )
    )
    hotels = [
        {"name": "Sol", "price_eur": 120, "rating": 4.5},
        {"name": "Mar", "price_eur": 95},
        {"name": "Luz", "price_eur": 140},
    ]
    out += [
        one_call(
            "clean:counts-and-ordinals",
            "Find hotels in Lisbon under 150 EUR.",
            ToolCall(search, {"query": "Lisbon hotels under 150 EUR"}, id="call_s1"),
            json.dumps({"hotels": hotels}),
            "Findings: Sol 120 EUR (rated 4.5), Mar 95 EUR, Luz 140 EUR.",
            "## 1. Top picks\nHere are the top 3 hotels, open 24/7:\n"
            "- 1st: Sol, €120 a night (4.5 stars)\n- 2nd: Mar, €95\n- 3rd: Luz, €140\n"
            "All 3 are under 150 EUR; step 1 is to book.",
        ),
        one_call(
            "clean:apology-for-empty-result",
            "Find news about the 2025 Lisbon marathon.",
            ToolCall(search, {"query": "lisbon marathon"}, id="call_e1"),
            json.dumps({"results": []}),
            "Sorry, I could not find any news about it yet.",
            "There is no news about the 2025 Lisbon marathon yet.",
        ),
    ]
    out.append(dataclasses.replace(clean("Oslo", 4, "snowing"), name="clean:no-relay", relay=False))
    out.append(
        dataclasses.replace(
            clean("Paris", 18, "sunny"),
            name="clean:apology-then-answer",
            final="Sorry for the wait! I can't promise it will last, but it is 18 °C and sunny "
            "in Paris.",
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
    # Odd variants: a strict tool layer answers the unknown tool with an error, which is the
    # same fault's consequence and must not be flagged again by tool_results.
    strict = variant % 2 == 1
    return Scenario(
        name=f"wrong_tool:{name}",
        question=f"What is the weather in {city}?",
        researcher=(
            Reply.tool_calls([ToolCall(name, {"city": city}, id="call_bad")]),
            Reply.text(_findings(city, temp, conditions, failed=strict)),
        ),
        final=_answer(city, temp, conditions, failed=strict),
        tools={name: _unknown_tool(name) if strict else weather(temp, conditions, city)},
        fault=("tool_arguments", RESEARCHER),
    )


def _findings(city: str, temp: int, conditions: str, *, failed: bool = False) -> str:
    if failed:
        return f"I'm sorry, the weather tool failed, so I cannot say how {city} is."
    return f"Findings: {city} is {conditions} at {temp} C."


def _answer(city: str, temp: int, conditions: str, *, failed: bool = False) -> str:
    if failed:
        return f"The weather in {city} is not available right now."
    return f"{city}: {conditions}, {temp} °C."


def _unknown_tool(name: str) -> ToolFn:
    return lambda args: json.dumps({"error": f"unknown tool {name!r}"})


def _strict_weather(temp: int, conditions: str, city: str) -> ToolFn:
    """A weather tool that rejects arguments that break its schema, as real ones do."""
    lenient = weather(temp, conditions, city)

    def run(args: dict[str, Any]) -> str:
        if not isinstance(args.get("city"), str) or set(args) - {"city", "unit", "days"}:
            return "ValueError: invalid arguments for get_weather"
        return lenient(args)

    return run


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
    tool = _strict_weather(temp, conditions, city)
    failed = tool(chosen if isinstance(chosen, dict) else _parse(chosen)).startswith("ValueError")
    return Scenario(
        name=f"bad_arguments:{variant % len(arguments)}",
        question=f"What is the weather in {city}?",
        researcher=(
            Reply.tool_calls([ToolCall("get_weather", chosen, id="call_bad")]),
            Reply.text(_findings(city, temp, conditions, failed=failed)),
        ),
        final=_answer(city, temp, conditions, failed=failed),
        tools={"get_weather": tool},
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
    """The researcher makes the same call again (key order varies): twice, although the
    first call already succeeded, or three or four times."""
    city, temp, conditions = CITIES[variant % len(CITIES)]
    times = (2, 3, 4)[variant % 3]
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
        # Odd variants: the orchestrator's code does not pass the findings on, yet its
        # answer repeats them: grounded in its child agent's findings, not flagged again.
        relay=variant % 2 == 0,
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


#: Refusals written as text (no refusal field, no finish reason): what models say.
WRITTEN_REFUSALS = (
    "I'm sorry, but I can't help with that request.",
    "I'm unable to assist with this. Is there anything else I can help you with?",
    "As an AI, I can't provide travel advice.",
    "I cannot provide weather information. Please check a local forecast service.",
)


def plain_refusal(variant: int = 0) -> Scenario:
    """The orchestrator (which calls no tool) answers the user with a refusal written as
    text, although its researcher found the answer."""
    city, temp, conditions = CITIES[variant % len(CITIES)]
    return dataclasses.replace(
        clean(city, temp, conditions),
        name=f"plain_refusal:{variant}",
        final=WRITTEN_REFUSALS[variant % len(WRITTEN_REFUSALS)],
        fault=("final_answer", ORCHESTRATOR),
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
    "plain_refusal": plain_refusal,
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
    text with no error marker) or known false alarms (derived arithmetic, unit
    conversions, a status tool polled again: `loops_with(polling=True)` is for that)."""
    return [
        one_call(
            "hard:number-in-words",
            "What is the weather in Paris?",
            ToolCall("get_weather", {"city": "Paris"}, id="call_h1"),
            weather(18, "sunny", "Paris"),
            "Findings: it is twenty-five degrees and sunny in Paris.",
            "It is warm and sunny in Paris.",
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
        one_call(
            "hard:plain-error-text",
            "What is the weather in Atlantis?",
            ToolCall("get_weather", {"city": "Atlantis"}, id="call_h4"),
            "The weather service is down for maintenance.",
            "Findings: the weather service is down for maintenance.",
            "The weather service is down for maintenance.",
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
        one_call(
            "hard:refusal-after-success",
            "What is the weather in Quito?",
            ToolCall("get_weather", {"city": "Quito"}, id="call_h8"),
            weather(13, "rainy", "Quito"),
            "I'm sorry, but I can't share weather information.",
            "The researcher would not say.",
            fault=("final_answer", RESEARCHER),
        ),
        one_call(
            "hard:unit-conversion",
            "How windy is it in Oslo?",
            ToolCall("get_weather", {"city": "Oslo"}, id="call_h9"),
            json.dumps({"city": "Oslo", "wind_kph": 19.3}),
            "Findings: wind of 12 mph in Oslo.",
            "Oslo has a wind of 12 mph.",
        ),
        Scenario(
            name="hard:polling-a-status-tool",
            question="Is the Oslo forecast ready?",
            researcher=(
                Reply.tool_calls([ToolCall("search", {"query": "forecast status"}, id="call_p1")]),
                Reply.tool_calls([ToolCall("search", {"query": "forecast status"}, id="call_p2")]),
                Reply.text("Findings: the forecast is ready."),
            ),
            final="The forecast is ready.",
            tools={"search": lambda a: json.dumps({"results": ["forecast status: pending"]})},
        ),
        one_call(
            "hard:rounded-value",
            "What is the weather in Tokyo?",
            ToolCall("get_weather", {"city": "Tokyo"}, id="call_h10"),
            json.dumps({"temperature": 26.8, "conditions": "humid"}),
            "Findings: about 27 °C and humid in Tokyo.",
            "About 27 °C and humid.",
        ),
    ]


def long_agent(rounds: int, *, same_call: bool = False) -> AgentInstance:
    """One agent that makes `rounds` tool calls, one per model call, each resending the
    whole conversation (as chat agents do), then answers from two of the results. With
    `same_call`, every call is the same: an agent stuck for `rounds` rounds."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {
                    "type": "object",
                    "properties": {"i": {"type": "integer"}},
                    "required": ["i"],
                },
            },
        }
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Today is 2024-03-05."},
        {"role": "user", "content": "Add up the values."},
    ]
    for i in range(rounds):
        arguments = json.dumps({"i": 0 if same_call else i})
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "lookup", "arguments": arguments},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        result = {"i": i, "value": i * 3.5, "date": f"2024-01-{i % 28 + 1:02d}", "at": "10:30"}
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps(result)})
    messages.append(
        {"role": "assistant", "content": "The values of 2024-01-05 at 10:30 add up to 17.5."}
    )
    return AgentInstance.from_chat_session(messages, tools=tools, name="long")
