"""The capture holds spans only while their root agent is live, and nothing after."""

from __future__ import annotations

import gc
import threading
import tracemalloc

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tracejudge import AgentTracer
from tracejudge.tracing import CaptureSpanProcessor, ComposoTracer

ROUNDS = 3000


def capture() -> CaptureSpanProcessor:
    processor = ComposoTracer.capture_processor()
    assert processor is not None
    return processor


@pytest.mark.heavy("thousands of traced agents, memory measured")
def test_thousands_of_root_agents_leave_nothing_behind(tracing: TracerProvider) -> None:
    processor = capture()
    tracer = tracing.get_tracer("memory-test")

    def one_round(i: int) -> None:
        with AgentTracer(name="loop", agent_id=f"a{i}") as agent:
            with tracer.start_as_current_span("step"):
                with tracer.start_as_current_span("sub-step"):
                    pass
            assert processor.span_count == 3  # only while the root agent is live
            assert len(agent.spans) == 3
        with tracer.start_as_current_span("outside any agent"):
            pass
        assert processor.span_count == 0

    for i in range(ROUNDS):
        one_round(i)
    assert processor.span_count == 0

    # And the process does not grow either: the rounds above warmed every cache (tracers,
    # interned strings); keeping each new round's spans would cost well over 1 MB.
    gc.collect()
    tracemalloc.start()
    try:
        baseline, _ = tracemalloc.get_traced_memory()
        for i in range(ROUNDS // 3):
            one_round(i)
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert current - baseline < 64 * 1024, f"grew by {current - baseline} bytes"


def test_spans_outside_agents_are_never_held(tracing: TracerProvider) -> None:
    processor = capture()
    tracer = tracing.get_tracer("memory-test")
    for _ in range(ROUNDS):
        with tracer.start_as_current_span("request"):
            with tracer.start_as_current_span("child"):
                assert processor.span_count == 0


def test_tracer_keeps_its_spans_after_the_processor_forgets_them(tracing: TracerProvider) -> None:
    tracer = tracing.get_tracer("memory-test")
    with AgentTracer(name="keeper") as agent:
        with tracer.start_as_current_span("kept"):
            pass
    assert capture().span_count == 0
    assert [span.name for span in agent.spans] == ["invoke_agent keeper", "kept"]


def test_concurrent_root_agents_in_threads_stay_apart(tracing: TracerProvider) -> None:
    processor = capture()
    tracer = tracing.get_tracer("memory-test")
    results: dict[str, list[str]] = {}
    start = threading.Barrier(8)

    def run(worker: int) -> None:
        start.wait()
        for round_ in range(50):
            agent_id = f"w{worker}-{round_}"
            with AgentTracer(name="worker", agent_id=agent_id) as agent:
                with tracer.start_as_current_span(f"step {agent_id}"):
                    pass
            results[agent_id] = [span.name for span in agent.spans]

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 400
    for agent_id, names in results.items():
        assert names == ["invoke_agent worker", f"step {agent_id}"]
    assert processor.span_count == 0
