"""An agent recorded turn by turn is one agent (`convert/_join_turns.py`).

AG2's classic API (`autogen.opentelemetry`, AG2 0.14: programs_ag2.py's `ag2_classic`)
writes an `invoke_agent` span per reply of an agent: the assistant's turn that asks for
`get_weather`, `user_proxy`'s turn that runs it, and the assistant's turn that answers,
siblings under the conversation. The assistant's two turns are one agent whose calls are
in order; turns that do not continue one conversation stay agents of their own.
"""

from __future__ import annotations

import dataclasses
import json

from tests.convert.test_frameworks import FIXTURES
from tests.fixtures.frameworks.programs_ag2 import ANSWER
from tracejudge import checks, semconv
from tracejudge.convert import SpanRecord, traces_from_records
from tracejudge.convert._otlp import decode
from tracejudge.models import MultiAgentTrace


def _records() -> list[SpanRecord]:
    records, _, _ = decode((FIXTURES / "ag2_classic.pb").read_bytes())
    return records


def _convert(records: list[SpanRecord]) -> MultiAgentTrace:
    (trace,) = [t for t in traces_from_records(records) if t.has_llm_interactions]
    return trace


def _assistant_turns(records: list[SpanRecord]) -> list[SpanRecord]:
    turns = [
        r
        for r in records
        if r.attributes.get(semconv.GEN_AI_OPERATION_NAME) == "invoke_agent"
        and r.attributes.get(semconv.GEN_AI_AGENT_NAME) == "assistant"
    ]
    return sorted(turns, key=lambda r: r.start_ns or 0)


def test_an_agents_turns_in_one_conversation_are_one_agent() -> None:
    records = _records()
    first, second = _assistant_turns(records)
    assert first.parent_id == second.parent_id  # siblings, as AG2 records them
    trace = _convert(records)
    (assistant,) = [a for a in trace.iter_agents() if a.name == "assistant"]
    assert assistant.span_id == first.span_id
    calls = assistant.llm_interactions
    assert [c.finish_reason for c in calls] == ["tool_calls", "stop"]
    assert [call.name for call in calls[0].tool_calls] == ["get_weather"]
    assert calls[1].output_text == ANSWER
    # Its answer is its last turn's: the tool call it made was answered within the agent.
    result = checks.final_answer.evaluate(trace)[assistant.id]
    assert result is not None and result.score == 1.0, result


def test_turns_that_start_another_conversation_stay_agents_of_their_own() -> None:
    records = _records()
    _, second = _assistant_turns(records)
    fresh = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hello"}]}])
    changed = dataclasses.replace(
        second, attributes={**second.attributes, semconv.GEN_AI_INPUT_MESSAGES: fresh}
    )
    trace = _convert([changed if r is second else r for r in records])
    assistants = [a for a in trace.iter_agents() if a.name == "assistant"]
    assert [len(a.llm_interactions) for a in assistants] == [1, 1]


def test_turns_under_different_parents_stay_agents_of_their_own() -> None:
    records = _records()
    first, second = _assistant_turns(records)
    (user_proxy,) = [
        r
        for r in records
        if r.attributes.get(semconv.GEN_AI_OPERATION_NAME) == "invoke_agent"
        and r.attributes.get(semconv.GEN_AI_AGENT_NAME) == "user_proxy"
    ]
    moved = dataclasses.replace(second, parent_id=user_proxy.span_id)
    trace = _convert([moved if r is second else r for r in records])
    assistants = [a for a in trace.iter_agents() if a.name == "assistant"]
    assert [len(a.llm_interactions) for a in assistants] == [1, 1]
