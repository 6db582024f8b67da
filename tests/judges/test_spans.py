"""The judge's own calls as GenAI spans, on a provider of their own, never in the user's
traces."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.judges.helpers import graded
from tracejudge import semconv
from tracejudge.judges import JUDGE_SERVICE_NAME, JudgeRequest
from tracejudge.testing import ScriptedLLMServer


async def test_judge_spans_go_to_their_own_provider_and_trace(
    server: ScriptedLLMServer, make_judge
) -> None:
    judge_spans = InMemorySpanExporter()
    user_spans = InMemorySpanExporter()
    user_provider = TracerProvider()
    user_provider.add_span_processor(SimpleSpanProcessor(user_spans))
    server.add(graded(8))
    judge = make_judge(spans=judge_spans)
    with user_provider.get_tracer("user").start_as_current_span("user work") as user_span:
        await judge.judge(JudgeRequest.of("Reward accuracy", "assistant: 4"))
    await judge.aclose()  # flushes the judge's batch processor
    spans = judge_spans.get_finished_spans()
    names = sorted(s.name for s in spans)
    assert names == ["chat judge-model", f"invoke_agent {JUDGE_SERVICE_NAME}"]
    chat = next(s for s in spans if s.name.startswith("chat"))
    root = next(s for s in spans if s.name.startswith("invoke_agent"))
    assert chat.parent is not None and chat.parent.span_id == root.context.span_id
    assert root.parent is None  # a trace of its own, not under the user's span
    assert root.context.trace_id != user_span.get_span_context().trace_id
    assert root.resource.attributes[semconv.SERVICE_NAME] == JUDGE_SERVICE_NAME
    assert chat.attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] > 0
    assert [s.name for s in user_spans.get_finished_spans()] == ["user work"]
