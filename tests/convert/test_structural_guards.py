"""Limits of the readings for producers no row names, found by a review of them: each
test is an input on which a reading went wrong (a false merge, a lost trace, a step read
as an agent), and what the walk makes of it now.

Spans are written here as the GenAI conventions write them (an `invoke_agent` span per
agent, a `chat` span per call), the smallest inputs that show each case.
"""

from __future__ import annotations

import json
from typing import Any

from tests.convert._helpers import agent_tree
from tracejudge import semconv
from tracejudge.convert import SpanRecord, traces_from_records
from tracejudge.models import MultiAgentTrace

MS = 1_000_000


def agent(span_id: str, parent: str | None, name: str | None, start: int, end: int) -> SpanRecord:
    attributes: dict[str, Any] = {semconv.GEN_AI_OPERATION_NAME: "invoke_agent"}
    if name is not None:
        attributes[semconv.GEN_AI_AGENT_NAME] = name
    return SpanRecord(
        "t", span_id, parent, "invoke_agent", start * MS, end * MS, attributes=attributes
    )


def chat(
    span_id: str,
    parent: str | None,
    start: int,
    end: int,
    *,
    scope: str,
    question: str,
    tokens: tuple[int, int] = (12, 3),
    answer: list[dict[str, Any]] | None = None,
    finish: str = "stop",
    extra: dict[str, Any] | None = None,
) -> SpanRecord:
    parts = answer if answer is not None else [{"type": "text", "content": "Yes."}]
    attributes = {
        semconv.GEN_AI_OPERATION_NAME: "chat",
        semconv.GEN_AI_REQUEST_MODEL: "scripted-model",
        semconv.GEN_AI_USAGE_INPUT_TOKENS: tokens[0],
        semconv.GEN_AI_USAGE_OUTPUT_TOKENS: tokens[1],
        semconv.GEN_AI_INPUT_MESSAGES: json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": question}]}]
        ),
        semconv.GEN_AI_OUTPUT_MESSAGES: json.dumps(
            [{"role": "assistant", "parts": parts, "finish_reason": finish}]
        ),
        **(extra or {}),
    }
    return SpanRecord(
        "t", span_id, parent, "chat", start * MS, end * MS, attributes=attributes, scope=scope
    )


def only(spans: list[SpanRecord]) -> MultiAgentTrace:
    (trace,) = traces_from_records(spans)
    return trace


def test_calls_of_two_agents_with_equal_tokens_one_within_the_other_stay_apart() -> None:
    # Rule 5 of `_merge` joins a record within another's time that counts the same tokens
    # (a framework's late spans beside a client's): two agents asking different questions
    # of equal length are two calls.
    trace = only(
        [
            agent("root", None, "app", 0, 10),
            agent("a", "root", "judge_a", 0, 9),
            chat("ca", "a", 1, 8, scope="langchain", question="Is claim A true?"),
            agent("b", "root", "judge_b", 2, 7),
            chat(
                "cb",
                "b",
                3,
                6,
                scope="opentelemetry.instrumentation.openai",
                question="Is claim B true?",
            ),
        ]
    )
    assert agent_tree(trace) == [("app", None, 0), ("judge_a", "app", 1), ("judge_b", "app", 1)]


def test_an_attribute_key_with_a_huge_index_loses_no_trace() -> None:
    # A call that finished for tool calls without recording any, and a `function_call` key
    # whose index has 5,000 digits: `int` refuses it, which dropped the whole trace.
    key = f"gen_ai.completion.{'9' * 5000}.function_call.name"
    trace = only(
        [
            chat(
                "c",
                None,
                0,
                5,
                scope="litellm",
                question="What is the weather in Paris?",
                answer=[],
                finish="tool_calls",
                extra={key: "get_weather"},
            )
        ]
    )
    assert [len(a.llm_interactions) for a in trace.iter_agents()] == [1]


def test_an_agent_the_producer_named_agent_is_kept_above_the_agent_it_runs() -> None:
    # An agent span with no name of its own around one agent is a step (CrewAI's tasks);
    # one whose `gen_ai.agent.name` is "agent" is named so, and stays.
    trace = only(
        [
            agent("root", None, "app", 0, 10),
            chat("c0", "root", 1, 2, scope="genai", question="Route this."),
            agent("m", "root", "agent", 3, 9),
            agent("r", "m", "researcher", 4, 8),
            chat("c1", "r", 5, 6, scope="genai", question="Research this."),
        ]
    )
    assert agent_tree(trace) == [("app", None, 1), ("agent", "app", 0), ("researcher", "agent", 1)]


def test_calls_made_side_by_side_are_not_given_each_others_tool_calls() -> None:
    # Two calls of one prompt, both finishing for tool calls without recording them, each
    # followed up apart (one with Paris, one with Rome): which call made which is not
    # recorded, so neither is given a call (the reading from the next input gave the
    # second call Paris and the first nothing).
    question = "What is the weather?"

    def follow_up(span_id: str, start: int, call_id: str, city: str) -> SpanRecord:
        messages = [
            {"role": "user", "parts": [{"type": "text", "content": question}]},
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": call_id,
                        "name": "get_weather",
                        "arguments": {"city": city},
                    }
                ],
            },
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": call_id, "response": "Sunny"}],
            },
        ]
        span = chat(span_id, "a", start, start + 1, scope="genai", question=question)
        span.attributes[semconv.GEN_AI_INPUT_MESSAGES] = json.dumps(messages)
        return span

    trace = only(
        [
            agent("a", None, "weather", 0, 20),
            chat("m1", "a", 1, 3, scope="genai", question=question, answer=[], finish="tool_calls"),
            chat("m2", "a", 1, 3, scope="genai", question=question, answer=[], finish="tool_calls"),
            follow_up("f1", 5, "call_paris", "Paris"),
            follow_up("f2", 7, "call_rome", "Rome"),
        ]
    )
    makers = trace.root.llm_interactions[:2]
    assert [[c.id for c in m.tool_calls] for m in makers] == [[], []]


def test_parallel_runs_of_one_tool_each_take_their_own_twins_result() -> None:
    # Each run recorded twice (the framework's span with the call id, an instrumentation's
    # with the result, as AutoGen and OpenInference do): the second call's runs started
    # first, so the first unused twin of the first call's run was the other call's.
    def execute(span_id: str, start: int, call_id: str) -> SpanRecord:
        attributes = {
            semconv.GEN_AI_OPERATION_NAME: "execute_tool",
            semconv.GEN_AI_TOOL_NAME: "get_weather",
            semconv.GEN_AI_TOOL_CALL_ID: call_id,
        }
        return SpanRecord(
            "t", span_id, "a", "execute_tool", start * MS, (start + 1) * MS, attributes=attributes
        )

    def tool(span_id: str, start: int, result: str) -> SpanRecord:
        attributes = {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "output.value": result,
        }
        return SpanRecord(
            "t", span_id, "a", "get_weather", start * MS, (start + 1) * MS, attributes=attributes
        )

    calls = [
        {
            "type": "tool_call",
            "id": "call_paris",
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        },
        {
            "type": "tool_call",
            "id": "call_rome",
            "name": "get_weather",
            "arguments": {"city": "Rome"},
        },
    ]
    trace = only(
        [
            agent("a", None, "weather", 0, 30),
            chat(
                "c",
                "a",
                1,
                2,
                scope="genai",
                question="Weather?",
                answer=calls,
                finish="tool_calls",
            ),
            execute("xr", 3, "call_rome"),
            tool("tr", 4, "Rainy in Rome"),
            execute("xp", 10, "call_paris"),
            tool("tp", 11, "Sunny in Paris"),
        ]
    )
    (interaction,) = trace.root.llm_interactions
    results = {r.id: r.response for r in interaction.tool_results or []}
    assert results == {"call_paris": "Sunny in Paris", "call_rome": "Rainy in Rome"}


def test_inspect_reports_a_trace_whose_spans_cannot_be_read(monkeypatch) -> None:
    # (A fault injected in a step the walk shares with `inspect`: the walk's safety net
    # reports the trace; `inspect` now does too, instead of raising for the whole input.)
    from tracejudge.convert import _inspect, inspect_records

    def broken(*_: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_inspect, "add_shaped_calls", broken)
    spans = [chat("c", None, 0, 5, scope="genai", question="Hi?")]
    (inspected,) = inspect_records(spans).traces
    assert "its spans could not be read (RuntimeError: a bug)" in inspected.warnings
