"""The capture is bounded per root agent: a long-lived agent keeps at most
`max_spans_per_trace` spans, says how many it dropped, and keeps every agent in the tree."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tracejudge import AgentTracer
from tracejudge.testing import Reply, ScriptedLLMServer
from tracejudge.tracing import CaptureSpanProcessor, ComposoTracer
from tracejudge.tracing._processors import DEFAULT_MAX_SPANS_PER_TRACE

MODEL = "gpt-4.1-mini"


def capture() -> CaptureSpanProcessor:
    processor = ComposoTracer.capture_processor()
    assert processor is not None
    return processor


def ask(client: openai.OpenAI, text: str) -> str:
    response = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": text}]
    )
    return response.choices[0].message.content or ""


@pytest.fixture
def cap() -> Iterator[None]:
    """Lets a test set `max_spans_per_trace`; puts the default back afterwards."""
    yield
    ComposoTracer.init(max_spans_per_trace=DEFAULT_MAX_SPANS_PER_TRACE)


def test_a_long_lived_root_agent_holds_at_most_the_default_cap(tracing: TracerProvider) -> None:
    processor = capture()
    assert processor.max_spans_per_trace == DEFAULT_MAX_SPANS_PER_TRACE == 10_000
    tracer = tracing.get_tracer("limit-test")
    steps = 2 * DEFAULT_MAX_SPANS_PER_TRACE
    with AgentTracer(name="daemon", agent_id="d") as agent:
        for _ in range(steps):
            with tracer.start_as_current_span("step"):
                pass
        assert processor.span_count == DEFAULT_MAX_SPANS_PER_TRACE
    assert processor.span_count == 0

    spans = agent.spans
    assert len(spans) == DEFAULT_MAX_SPANS_PER_TRACE
    assert spans[0] is agent.span  # the first spans are the ones kept
    dropped = steps - (DEFAULT_MAX_SPANS_PER_TRACE - 1)
    assert any(
        f"capture kept the first 10000 spans of this agent; {dropped} later spans were dropped"
        in warning
        for warning in agent.trace.warnings
    ), agent.trace.warnings


def test_calls_past_the_cap_are_dropped_and_reported(
    cap: None,
    client: openai.OpenAI,
    llm_server: ScriptedLLMServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ComposoTracer.init(max_spans_per_trace=3)
    assert capture().max_spans_per_trace == 3
    llm_server.add(*(Reply.text(f"answer {i}") for i in range(4)))
    with caplog.at_level(logging.WARNING, logger="tracejudge.tracing"):
        with AgentTracer(name="capped", agent_id="c") as agent:
            for i in range(4):
                ask(client, f"question {i}")

    trace = agent.trace
    assert [i.output_text for i in trace.root.llm_interactions] == ["answer 0", "answer 1"]
    [warning] = [w for w in trace.warnings if "max_spans_per_trace" in w]
    assert warning.startswith(
        "capture kept the first 3 spans of this agent; 2 later spans were dropped"
    )
    assert "max_spans_per_trace=3" in caplog.text  # said once, when dropping started
    assert caplog.text.count("reached max_spans_per_trace") == 1


def test_agents_past_the_cap_stay_under_their_parent_agent(
    cap: None, tracing: TracerProvider, client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    ComposoTracer.init(max_spans_per_trace=4)
    tracer = tracing.get_tracer("limit-test")
    llm_server.add(Reply.text("planned"), Reply.text("lost"), Reply.text("also lost"))
    with AgentTracer(name="orchestrator", agent_id="o") as root:
        ask(client, "plan")  # kept: root + this call
        with tracer.start_as_current_span("setup"):  # kept
            pass
        with tracer.start_as_current_span("tool: delegate"):  # kept (4th span)
            with AgentTracer(name="worker", agent_id="w1"):  # an agent: always kept
                ask(client, "work")  # dropped
        with tracer.start_as_current_span("tool: delegate"):  # dropped
            with tracer.start_as_current_span("inner"):  # dropped with its parent
                with AgentTracer(name="worker", agent_id="w2") as nested:  # still kept
                    ask(client, "more work")  # dropped
        assert capture().span_count == 6  # 4 kept + 2 agents; nothing dropped still runs
    assert capture().span_count == 0

    trace = root.trace
    assert trace.root_agent_instance_id == "o"
    assert trace.root.interactions[1:] == ["w1", "w2"]  # both workers are the root's children
    assert [i.output_text for i in trace.root.llm_interactions] == ["planned"]
    assert not [w for w in trace.warnings if "parent span is missing" in w]
    [warning] = [w for w in trace.warnings if "max_spans_per_trace" in w]
    assert "4 later spans were dropped" in warning  # tool, inner and two calls

    # A nested agent reads the same capture: its trace names the root agent.
    assert nested.trace.root_agent_instance_id == "w2"
    assert nested.trace.root.interactions == []
    assert any("of its root agent 'orchestrator'" in w for w in nested.trace.warnings)


def test_dropped_spans_still_running_are_forgotten_when_the_root_ends(
    cap: None, tracing: TracerProvider
) -> None:
    ComposoTracer.init(max_spans_per_trace=2)
    tracer = tracing.get_tracer("limit-test")
    with AgentTracer(name="leaky"):
        with tracer.start_as_current_span("kept"):
            pass
        left_running = tracer.start_span("never ended in the block")  # dropped, still running
        assert capture().span_count == 3
    assert capture().span_count == 0
    left_running.end()
    assert capture().span_count == 0


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "10"])
def test_max_spans_per_trace_must_be_a_positive_int(cap: None, bad: object) -> None:
    with pytest.raises(ValueError, match="max_spans_per_trace"):
        ComposoTracer.init(max_spans_per_trace=bad)  # type: ignore[arg-type]
    assert capture().max_spans_per_trace == DEFAULT_MAX_SPANS_PER_TRACE


def test_init_without_a_cap_keeps_the_one_set_before(cap: None) -> None:
    ComposoTracer.init(max_spans_per_trace=50_000)
    ComposoTracer.init()
    assert capture().max_spans_per_trace == 50_000
