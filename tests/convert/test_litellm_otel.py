"""LiteLLM's own OpenTelemetry callback (`litellm.callbacks = ["otel"]`), a producer no row of
the conventions table names, read by the phases that apply to every producer
(tests/fixtures/frameworks/programs_litellm_otel.py: agents written on `litellm.completion`).

What LiteLLM records, per call, after the call returns:

- `litellm_request` (GenAI keys, read by the GenAI row), unless the program has a span
  open around the call: then no `litellm_request`, and the call's `gen_ai.*` keys are
  written onto the program's span (each call over the one before);
- `raw_gen_ai_request` below it: the provider's request and response as Python literals
  (`llm.openai.messages`, `llm.openai.choices`, `llm.openai.usage`), which no row reads:
  a call found by its shape (`convert/_python_literals.py`, `_infer_calls.py`);
- a tool-call answer as an empty GenAI output message (`"parts": []`); the next call's
  input shows the calls (`"tool_calls"` beside the message's parts), which the walk
  gives back to the call that made them (`_infer_history_calls.py`).
"""

from __future__ import annotations

import json

import pytest

from tests.convert._helpers import agent_tree, only_recording
from tests.fixtures.frameworks import expectations
from tracejudge.convert import inspect_otlp, traces_from_otlp
from tracejudge.convert._python_literals import python_literal
from tracejudge.convert.conventions import Kind
from tracejudge.models import LLMToolCall

DEFECTS = expectations.FIXTURES / "defects"


@pytest.mark.parametrize("name", ["litellm_otel_agents", "litellm_otel_stream"])
def test_every_fact_of_the_litellm_programs_holds_with_no_row_of_its_own(name: str) -> None:
    facts = expectations.facts(name, expectations.convert(name))
    assert [text for text, holds in facts if not holds] == []


def test_the_program_spans_litellm_wrote_a_call_onto_are_its_agents() -> None:
    # `planner` and `researcher` carry the GenAI keys of one of their calls (LiteLLM wrote
    # each call's onto them); the calls are the `raw_gen_ai_request` spans below them.
    assert agent_tree(only_recording("litellm_otel_agents")) == [
        ("planner", None, 2),
        ("researcher", "planner", 2),
    ]
    (trace,) = inspect_otlp(expectations.FIXTURES / "litellm_otel_agents.pb").traces
    kinds = {span.name: span.kind for span in trace.read}
    assert kinds["planner"] != Kind.MODEL_CALL
    assert sum(span.kind == Kind.MODEL_CALL for span in trace.read) == 4  # as many as made


def test_a_raw_request_written_as_python_literals_is_the_whole_call() -> None:
    # One trace per call (no span around them): `litellm_request` records no tool call,
    # `raw_gen_ai_request` below it the provider's response, with the call's id.
    traces = traces_from_otlp(DEFECTS / "litellm_otel_agents_ungrouped.pb")
    assert len(traces) == 4  # LiteLLM's defect: each call a trace of its own
    calls = [
        (call.id, call.name, json.loads(call.parameters))
        for trace in traces
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for call in interaction.tool_calls
    ]
    assert sorted(calls) == [
        ("call_ask", "ask_researcher", {"task": "Find the current weather in Paris."}),
        ("call_weather", "get_weather", {"city": "Paris"}),
    ]
    assert all(trace.warnings == [] for trace in traces)
    usage = [i.usage for t in traces for a in t.iter_agents() for i in a.llm_interactions]
    assert all(u is not None and u.total_tokens > 0 for u in usage)


def test_a_streamed_tool_call_is_taken_from_the_next_input() -> None:
    # A streamed call's raw span is empty and its GenAI answer `"parts": []`: the next
    # call's input shows the assistant's call (`tool_calls` beside its parts).
    trace = only_recording("litellm_otel_stream")
    first, second = [i for a in trace.iter_agents() for i in a.llm_interactions]
    assert [(c.id, c.name) for c in first.tool_calls] == [("call_weather", "get_weather")]
    shown = [m.content for m in second.input_messages if isinstance(m.content, LLMToolCall)]
    assert [(c.id, c.name) for c in shown] == [("call_weather", "get_weather")]
    assert trace.warnings == []


@pytest.mark.parametrize(
    ("name", "rows"),
    [
        (
            "litellm_otel_agents_composed",
            [("app", None, 0), ("planner", "app", 2), ("researcher", "planner", 2)],
        ),
        ("litellm_otel_stream_composed", [("app", None, 0), ("weather_agent", "app", 2)]),
    ],
)
def test_the_programs_span_inside_tracejudges_agent_is_an_agent(
    name: str, rows: list[tuple[str, str | None, int]]
) -> None:
    # Under `AgentTracer("app")` the program's `planner` span is no longer the trace's
    # root; it is still the program's run of an agent, the root agent's child.
    assert agent_tree(only_recording(name)) == rows


def test_a_streamed_call_logged_outside_the_callers_context_is_a_trace_of_its_own() -> None:
    # LiteLLM's defect: without the span passed as the call's parent, a streamed call's
    # spans are written outside the program's span.
    traces = traces_from_otlp(DEFECTS / "litellm_otel_stream_unparented.pb")
    # (and a third, the program's `weather_agent` span alone: no agent, no call)
    assert [sum(len(a.llm_interactions) for a in t.iter_agents()) for t in traces] == [1, 1]


def test_a_call_alone_in_its_trace_takes_its_tool_call_from_its_indexed_keys() -> None:
    # The first streamed call, a trace of its own: no next input shows its call, but its
    # span names it under `gen_ai.completion.0.function_call.name` / `.arguments` (no id).
    traces = traces_from_otlp(DEFECTS / "litellm_otel_stream_unparented.pb")
    calls = [
        (call.name, json.loads(call.parameters))
        for trace in traces
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for call in interaction.tool_calls
    ]
    assert calls == [("get_weather", {"city": "Paris"})]
    assert all(trace.warnings == [] for trace in traces)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("{'role': 'assistant', 'content': None}", {"role": "assistant", "content": None}),
        ("[{'finish_reason': 'stop', 'ok': True}]", [{"finish_reason": "stop", "ok": True}]),
        ("{'a': __import__('os')}", None),  # no code runs
        ("{'a': 1", None),
        ("'text'", None),
    ],
)
def test_a_python_literal_is_read_as_its_json(raw: str, value: object) -> None:
    assert python_literal(raw) == value
