"""Scores written back onto traces as GenAI evaluation events, and read back by the converter.

A real three-agent run (the real openai client against a ScriptedLLMServer) is traced,
scored with the built-in checks, and the scores are emitted through real OTel providers
(span events on a short span, or log records); the converter then reads them back from
the SDK's spans and logs and from OTLP protobuf, onto the agents they judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import openai
import pytest
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.scenario import run_scenario, scripted_replies
from tracejudge import checks, semconv
from tracejudge.convert import traces_from_otlp, traces_from_spans
from tracejudge.evaluation.events import EvaluationEventEmitter, evaluation_events, label_of
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.testing import ScriptedLLMServer
from tracejudge.tracing import IsolatingSpanProcessor

CRITERIA = [checks.tool_results, checks.final_answer]


@pytest.fixture
def run(composo_tracing: TracerProvider) -> Iterator[tuple[MultiAgentTrace, list[ReadableSpan]]]:
    """The scenario's trace (from `AgentTracer.trace`) and the spans it exported."""
    exporter = InMemorySpanExporter()
    processor = IsolatingSpanProcessor(SimpleSpanProcessor(exporter))
    composo_tracing.add_span_processor(processor)
    try:
        with ScriptedLLMServer(scripted_replies()) as model:
            client = openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0)
            tracer = run_scenario(client)
        yield tracer.trace, list(exporter.get_finished_spans())
    finally:
        processor.detach()


def _score(trace: MultiAgentTrace) -> list[MultiAgentTraceResponse]:
    return asyncio.run(EvaluationService().score_trace(trace, CRITERIA))


def _expected(trace: MultiAgentTrace, responses: list[MultiAgentTraceResponse]) -> dict:
    """(agent id -> [(criterion, score)]) from the responses themselves."""
    found: dict[str, list[tuple[str, float | None]]] = {}
    for response in responses:
        for by_name in response.results_by_agent_name.values():
            for agent_id, result in by_name.results_by_agent_instance_id.items():
                if result is not None:
                    found.setdefault(agent_id, []).append((response.criterion, result.score))
    return found


def _read_back(trace: MultiAgentTrace) -> dict:
    return {
        agent.id: [(e.name, e.score) for e in agent.evaluations]
        for agent in trace.iter_agents()
        if agent.evaluations
    }


def test_the_trace_keeps_the_span_ids_and_compat_wire_drops_them(run) -> None:
    trace, spans = run
    agent_spans = {
        s.context.span_id: s for s in spans if s.name.startswith(semconv.INVOKE_AGENT_SPAN_PREFIX)
    }
    assert trace.trace_id == f"{spans[0].context.trace_id:032x}"
    for agent in trace.iter_agents():
        assert int(agent.span_id, 16) in agent_spans
        for call in agent.llm_interactions:
            assert call.span_id and call.response_id  # the scripted server's chatcmpl ids
    wire = trace.to_wire(compat=True)
    assert "trace_id" not in wire
    assert all("span_id" not in a for a in wire["agent_instance_by_id"].values())
    assert MultiAgentTrace.from_json(trace.to_json()).root.span_id == trace.root.span_id


def test_scores_as_span_events_are_read_back_onto_their_agents(run) -> None:
    trace, spans = run
    responses = _score(trace)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emitter = EvaluationEventEmitter(signal="spans", tracer_provider=provider)

    sent = emitter.emit(trace, responses)

    emitted = exporter.get_finished_spans()
    assert set(_expected(trace, responses)) == set(trace.agent_instance_by_id)  # all three
    assert len(emitted) == 3
    assert len(sent) == sum(len(v) for v in _expected(trace, responses).values())
    # One short span per judged agent, a child of that agent's span in the same trace.
    by_agent = {a.span_id: a for a in trace.iter_agents()}
    for span in emitted:
        assert span.instrumentation_scope.name == semconv.EVALUATION_SCOPE
        assert f"{span.context.trace_id:032x}" == trace.trace_id
        agent = by_agent[f"{span.parent.span_id:016x}"]
        assert span.name == f"evaluate {agent.name}"
        for event in span.events:
            assert event.name == semconv.EVENT_EVALUATION_RESULT
            attrs = event.attributes
            assert attrs[semconv.GEN_AI_EVALUATION_NAME] in {c.name for c in CRITERIA}
            value = attrs.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE)
            assert attrs[semconv.GEN_AI_EVALUATION_SCORE_LABEL] == label_of(value)
            assert attrs[semconv.GEN_AI_EVALUATION_EXPLANATION]
            assert attrs[semconv.GEN_AI_RESPONSE_ID].startswith("chatcmpl")

    back = traces_from_spans([*spans, *emitted])
    assert len(back) == 1
    assert _read_back(back[0]) == _expected(trace, responses)
    assert back[0] == trace  # the short spans add no agent and no interaction

    # The same through OTLP protobuf, as a collector or the server receives them.
    otlp = encode_spans([*spans, *emitted]).SerializeToString()
    assert _read_back(traces_from_otlp(otlp)[0]) == _expected(trace, responses)


def test_scores_as_log_records_are_tied_to_the_judged_spans_and_read_back(run) -> None:
    trace, spans = run
    responses = _score(trace)
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))

    EvaluationEventEmitter(logger_provider=provider).emit(trace, responses)  # auto: logs

    records = exporter.get_finished_logs()
    by_span = {a.span_id: a for a in trace.iter_agents()}
    for data in records:
        record = data.log_record
        assert record.event_name == semconv.EVENT_EVALUATION_RESULT
        assert f"{record.trace_id:032x}" == trace.trace_id
        assert f"{record.span_id:016x}" in by_span
    back = traces_from_spans(spans, logs=records)[0]
    assert _read_back(back) == _expected(trace, responses)
    logs = encode_logs(records).SerializeToString()
    otlp = encode_spans(spans).SerializeToString()
    assert _read_back(traces_from_otlp(otlp, logs=logs)[0]) == _expected(trace, responses)


def test_an_agent_without_a_span_is_judged_on_its_last_model_call() -> None:
    trace = MultiAgentTrace.model_validate(
        {
            "root_agent_instance_id": "root",
            "trace_id": "0af7651916cd43dd8448eb211c80319c",
            "agent_instance_by_id": {
                "root": {
                    "id": "root",
                    "name": "root",
                    "interactions": [
                        {
                            "input_messages": [{"role": "user", "content": "2+2?"}],
                            "output_messages": [{"content": "4"}],
                            "span_id": "b7ad6b7169203331",
                            "response_id": "chatcmpl-9",
                        }
                    ],
                }
            },
        }
    )
    responses = _score(trace)
    (event, *_) = evaluation_events(trace, responses)
    assert event.span_id == "b7ad6b7169203331"
    assert event.attributes[semconv.GEN_AI_RESPONSE_ID] == "chatcmpl-9"


def test_labels_pass_fail_and_not_applicable() -> None:
    assert label_of(0.9) == "pass"
    assert label_of(0.2) == "fail"
    assert label_of(0.7, threshold=0.8) == "fail"
    assert label_of(None) == "not applicable"


def test_the_client_writes_scores_back_through_the_processs_pipeline(
    run, composo_tracing: TracerProvider
) -> None:
    from tracejudge import Composo
    from tracejudge.evaluation.events import logger_provider_is_set

    trace, spans = run
    assert not logger_provider_is_set()  # so the span-event form is the one expected
    exporter = InMemorySpanExporter()
    processor = IsolatingSpanProcessor(SimpleSpanProcessor(exporter))
    composo_tracing.add_span_processor(processor)
    try:
        with Composo(emit_evaluation_events=True) as client:
            results = client.evaluate_trace(trace, criteria=CRITERIA)
            quiet = client.evaluate_trace(trace, criteria=CRITERIA, emit_events=False)
    finally:
        processor.detach()
    emitted = exporter.get_finished_spans()
    assert len(emitted) == 3  # one short span per agent, none for the emit_events=False call
    back = traces_from_spans([*spans, *emitted])[0]
    assert _read_back(back) == _expected(trace, results) == _expected(trace, quiet)
