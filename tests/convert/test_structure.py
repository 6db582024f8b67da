"""The span tree -> agents: roots, orphans, running spans, ids, order, errors.

These edit the recorded fixtures (agent spans moved, removed, left running) rather
than writing instrumentation spans by hand.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToJson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests import scenario
from tests.convert._helpers import (
    attr,
    canonical,
    dump,
    fixture,
    json_requests,
    json_spans,
    remove_spans,
    set_attr,
)
from tracejudge import semconv
from tracejudge.convert import (
    ROOT_AGENT_ID,
    ROOT_AGENT_NAME,
    OTLPDecodeError,
    TraceList,
    traces_from_otlp,
    traces_from_spans,
)
from tracejudge.convert._common import finish_reason
from tracejudge.errors import NoLLMInteractionsError
from tracejudge.models import LLMToolCall


def _agent_span(requests: list[dict], name: str) -> dict:
    return next(s for s in json_spans(requests) if attr(s, semconv.GEN_AI_AGENT_NAME) == name)


def _llm_spans(requests: list[dict]) -> list[dict]:
    return [
        s
        for s in json_spans(requests)
        if attr(s, semconv.GEN_AI_OPERATION_NAME) == semconv.OPERATION_CHAT
    ]


def _one(text: str) -> object:
    traces = traces_from_otlp(text)
    assert len(traces) == 1
    return traces[0]


# --------------------------------------------------------------------------- roots


def test_spans_whose_parent_is_missing_attach_to_an_implicit_root() -> None:
    requests = json_requests("openllmetry")
    orchestrator = _agent_span(requests, "orchestrator")
    remove_spans(requests, lambda s: s is orchestrator)
    trace = _one(dump(requests))
    assert trace.root_agent_instance_id == ROOT_AGENT_ID
    assert trace.root.name == ROOT_AGENT_NAME
    items = trace.root.interactions
    names = [trace.agent_instance_by_id[i].name if isinstance(i, str) else "llm" for i in items]
    assert names == ["llm", "researcher", "writer", "llm"]
    assert trace.root.llm_interactions[0].output_text == scenario.PLAN


def test_spans_whose_parent_is_missing_attach_to_the_root_agent() -> None:
    requests = json_requests("openllmetry")
    researcher = _agent_span(requests, "researcher")
    remove_spans(requests, lambda s: s is researcher)
    trace = _one(dump(requests))
    # The researcher's calls lost their parent: they attach to the orchestrator, the root
    # of the trace, in start order among its own calls and its remaining child agent.
    orchestrator = _agent_span(requests, "orchestrator")
    assert trace.root_agent_instance_id == attr(orchestrator, semconv.GEN_AI_AGENT_ID)
    kinds = [
        trace.agent_instance_by_id[i].name if isinstance(i, str) else i.output_text[:8]
        for i in trace.root.interactions
    ]
    assert kinds == [scenario.PLAN[:8], "", "", scenario.FINDINGS[:8], "writer", scenario.FINAL[:8]]
    assert [a.name for a in trace.iter_agents()] == ["orchestrator", "writer"]
    assert any("parent span is missing" in w for w in trace.warnings)


def test_an_agent_whose_parent_is_missing_becomes_a_child_of_the_root_agent() -> None:
    requests = json_requests("openllmetry")
    writer = _agent_span(requests, "writer")
    writer["parentSpanId"] = "00000000000000aa"
    trace = _one(dump(requests))
    assert trace.root.name == "orchestrator"
    assert [a.name for a in trace.iter_agents()] == ["orchestrator", "researcher", "writer"]
    assert any("writer" in w and "parent span is missing" in w for w in trace.warnings)


def test_model_calls_outside_every_agent_belong_to_an_implicit_root() -> None:
    requests = json_requests("openllmetry")
    orchestrator = _agent_span(requests, "orchestrator")
    first_call = next(
        s for s in _llm_spans(requests) if s.get("parentSpanId") == orchestrator["spanId"]
    )
    del first_call["parentSpanId"]  # a call made before the agent started, in no agent
    trace = _one(dump(requests))
    assert trace.root_agent_instance_id == ROOT_AGENT_ID
    assert trace.root.name == ROOT_AGENT_NAME
    kinds = [
        trace.agent_instance_by_id[i].name if isinstance(i, str) else i.output_text
        for i in trace.root.interactions
    ]
    assert kinds == ["orchestrator", scenario.PLAN]  # by start time: the agent started first
    assert not any("missing" in w for w in trace.warnings)


def test_several_top_level_agents_get_an_implicit_root() -> None:
    requests = json_requests("openinference")
    orchestrator = _agent_span(requests, "orchestrator")
    remove_spans(
        requests,
        lambda s: (
            s is orchestrator
            or s.get("parentSpanId") == orchestrator["spanId"]
            and attr(s, semconv.OPENINFERENCE_SPAN_KIND) == "LLM"
        ),
    )
    trace = _one(dump(requests))
    assert trace.root_agent_instance_id == ROOT_AGENT_ID
    assert [trace.agent_instance_by_id[c].name for c in trace.root.child_ids] == [
        "researcher",
        "writer",
    ]
    assert trace.root.llm_interactions == []


def test_model_calls_without_any_agent_make_a_root_agent() -> None:
    requests = json_requests("genai_semconv")
    remove_spans(requests, lambda s: attr(s, semconv.GEN_AI_OPERATION_NAME) == "invoke_agent")
    trace = _one(dump(requests))
    assert list(trace.agent_instance_by_id) == [ROOT_AGENT_ID]
    assert len(trace.root.llm_interactions) == 6
    assert trace.root.llm_interactions[-1].output_text == scenario.FINAL


def test_agent_id_defaults_to_the_span_id() -> None:
    requests = json_requests("openllmetry")
    for span in json_spans(requests):
        set_attr(span, semconv.GEN_AI_AGENT_ID, None)
    trace = _one(dump(requests))
    orchestrator = _agent_span(requests, "orchestrator")
    assert trace.root_agent_instance_id == orchestrator["spanId"]
    assert all(len(a.id) == 16 for a in trace.iter_agents())
    assert canonical(trace) == canonical(_one(fixture("openllmetry", ".jsonl").read_text()))


def test_duplicate_agent_ids_stay_distinct_with_a_warning() -> None:
    requests = json_requests("openllmetry")
    writer_id = attr(_agent_span(requests, "writer"), semconv.GEN_AI_AGENT_ID)
    set_attr(_agent_span(requests, "researcher"), semconv.GEN_AI_AGENT_ID, writer_id)
    trace = _one(dump(requests))
    assert len(trace.agent_instance_by_id) == 3
    assert any("is used by another agent span" in w for w in trace.warnings)


def test_openinference_agent_spans_are_agents() -> None:
    requests = json_requests("openinference")
    for span in json_spans(requests):
        name = attr(span, semconv.GEN_AI_AGENT_NAME)
        if name:
            span["attributes"] = []
            span["name"] = name
            set_attr(span, semconv.OPENINFERENCE_SPAN_KIND, "AGENT")
    trace = _one(dump(requests))
    assert canonical(trace) == canonical(_one(fixture("openinference", ".jsonl").read_text()))
    assert (
        trace.root_agent_instance_id
        == _agent_span(json_requests("openinference"), "orchestrator")["spanId"]
    )


def test_only_spans_of_agents_or_model_calls_make_traces() -> None:
    requests = json_requests("openllmetry")
    remove_spans(requests, lambda s: attr(s, semconv.GEN_AI_OPERATION_NAME) is not None)
    assert traces_from_otlp(dump(requests)) == []


# --------------------------------------------------------------------------- running spans


def test_running_agent_span_is_still_the_root() -> None:
    requests = json_requests("openllmetry")
    _agent_span(requests, "orchestrator")["endTimeUnixNano"] = "0"
    trace = _one(dump(requests))
    assert trace.root.name == "orchestrator"
    assert canonical(trace) == canonical(_one(fixture("openllmetry", ".jsonl").read_text()))


def test_running_model_call_is_kept_without_its_end() -> None:
    requests = json_requests("openllmetry")
    last = _llm_spans(requests)[-1]
    del last["endTimeUnixNano"]
    set_attr(last, semconv.GEN_AI_OUTPUT_MESSAGES, None)
    trace = _one(dump(requests))
    interaction = trace.root.llm_interactions[-1]
    assert interaction.end_time is None and interaction.output_messages == []
    assert any("no end time and no answer recorded" in w for w in trace.warnings)


def test_a_model_call_with_its_answer_and_no_end_time_is_not_running() -> None:
    """Some producers write spans with no end time; one that carries its answer is a call
    that answered, not one "still running"."""
    requests = json_requests("openllmetry")
    last = _llm_spans(requests)[-1]
    del last["endTimeUnixNano"]
    trace = _one(dump(requests))
    whole = _one(fixture("openllmetry", ".jsonl").read_text())
    assert trace.root.llm_interactions[-1].end_time is None
    assert trace.root.llm_interactions[-1].output_messages
    assert trace.warnings == whole.warnings == []
    assert trace.final_output == whole.final_output


def test_running_sdk_spans_convert() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    attributes = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT,
        semconv.GEN_AI_AGENT_NAME: "solo",
        semconv.GEN_AI_AGENT_ID: "solo-1",
    }
    agent = tracer.start_span("invoke_agent solo", attributes=attributes)
    assert agent.end_time is None
    (trace,) = traces_from_spans([agent])
    assert trace.root_agent_instance_id == "solo-1" and trace.root.interactions == []
    agent.end()
    assert traces_from_spans(exporter.get_finished_spans())[0].to_wire() == trace.to_wire()


def test_a_span_seen_running_then_ended_counts_once() -> None:
    requests = json_requests("openllmetry")
    running = copy.deepcopy(requests)
    for span in json_spans(running):
        span["endTimeUnixNano"] = "0"
    trace = _one(dump(running + requests))
    assert trace.to_wire() == _one(dump(requests)).to_wire()


# --------------------------------------------------------------------------- order, errors


def test_traces_are_ordered_by_first_span_start() -> None:
    first = fixture("openllmetry", ".jsonl").read_text()
    second = fixture("openllmetry_responses", ".jsonl").read_text()
    traces = traces_from_otlp(second + first)
    assert [t.root.name for t in traces] == ["orchestrator", "lead"]


def test_child_agents_are_placed_where_they_started() -> None:
    requests = json_requests("openllmetry")
    # Move the writer's start before the orchestrator's first model call.
    writer = _agent_span(requests, "writer")
    first_call = min(_llm_spans(requests), key=lambda s: int(s["startTimeUnixNano"]))
    writer["startTimeUnixNano"] = str(int(first_call["startTimeUnixNano"]) - 1000)
    trace = _one(dump(requests))
    assert trace.root.interactions[0] == attr(writer, semconv.GEN_AI_AGENT_ID)


def test_only_error_status_is_failure() -> None:
    requests = json_requests("openllmetry")
    failed = _llm_spans(requests)[0]
    failed["status"] = {"code": 2, "message": "Connection error."}
    set_attr(failed, semconv.ERROR_TYPE, "APIConnectionError")
    trace = _one(dump(requests))
    errors = [i.error for a in trace.iter_agents() for i in a.llm_interactions]
    assert errors[0] == "APIConnectionError: Connection error."
    assert errors[1:] == [None] * 5
    # OpenInference marks success OK: not an error.
    openinference = _one(fixture("openinference", ".jsonl").read_text())
    assert all(i.error is None for a in openinference.iter_agents() for i in a.llm_interactions)


def test_a_client_wrapped_twice_counts_each_call_once_and_says_so() -> None:
    requests = json_requests("openllmetry")
    original = _llm_spans(requests)[0]
    twin = copy.deepcopy(original)
    twin["spanId"] = "00000000000000aa"
    twin["parentSpanId"] = original["spanId"]
    requests[0]["resourceSpans"][0]["scopeSpans"][0]["spans"].append(twin)
    trace = _one(dump(requests))
    assert canonical(trace) == canonical(_one(fixture("openllmetry", ".jsonl").read_text()))
    assert any("wrapped the client twice; read as one call" in w for w in trace.warnings)


def test_tool_call_finish_reasons_are_the_same() -> None:
    assert finish_reason("tool_call") == finish_reason("tool_calls") == "tool_calls"


def test_index_gaps_and_none_values_are_tolerated() -> None:
    requests = json_requests("openinference")
    span = next(
        s for s in json_spans(requests) if attr(s, f"{semconv.LLM_INPUT_MESSAGES}.3.message.role")
    )
    span["attributes"] = [
        a for a in span["attributes"] if not a["key"].startswith(f"{semconv.LLM_INPUT_MESSAGES}.1.")
    ]
    span["attributes"].append({"key": semconv.LLM_MODEL_NAME, "value": {}})  # a None value
    trace = _one(dump(requests))
    researcher = next(a for a in trace.iter_agents() if a.name == "researcher")
    changed = next(i for i in researcher.llm_interactions if len(i.input_messages) == 5)
    assert changed.input_messages[0].role == "system"
    assert isinstance(changed.input_messages[1].content, LLMToolCall)


# --------------------------------------------------------------------------- inputs


def test_every_input_form_gives_the_same_trace(tmp_path: Path) -> None:
    data = fixture("openllmetry", ".pb").read_bytes()
    expected = traces_from_otlp(data)[0].to_wire()
    request = ExportTraceServiceRequest.FromString(data)
    base64_json = MessageToJson(request)  # one pretty document, base64 ids, enum names
    hex_lines = fixture("openllmetry", ".jsonl").read_text()
    (tmp_path / "trace.json").write_text(base64_json)
    (tmp_path / "trace.pb.gz").write_bytes(gzip.compress(data))
    sources = [
        data,
        bytearray(data),
        str(fixture("openllmetry", ".pb")),
        fixture("openllmetry", ".jsonl"),
        hex_lines,
        hex_lines.encode(),
        base64_json,
        json.dumps([json.loads(hex_lines)]),
        tmp_path / "trace.json",
        tmp_path / "trace.pb.gz",
    ]
    for source in sources:
        (trace,) = traces_from_otlp(source)
        assert trace.to_wire() == expected, type(source)


@pytest.mark.parametrize("empty", [b"", "", "  \n", b"\n"])
def test_empty_input_gives_a_typed_no_llm_interactions_outcome(
    empty: bytes | str, tmp_path: Path
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(empty.encode() if isinstance(empty, str) else empty)
    for result in (traces_from_otlp(empty), traces_from_otlp(path), traces_from_spans([])):
        assert isinstance(result, TraceList)
        assert result == [] and not result
        assert result.has_llm_interactions is False
        assert result.spans_read == 0
        assert any("no LLM interactions" in w for w in result.warnings)
        with pytest.raises(NoLLMInteractionsError, match="no LLM interactions"):
            result.require_llm_interactions()


def test_agents_without_model_calls_are_a_trace_without_llm_interactions() -> None:
    result = traces_from_spans(_sdk_spans_of_an_agent())
    (trace,) = result
    assert trace.root.name == "a" and trace.root.interactions == []
    assert trace.has_llm_interactions is False
    assert result.has_llm_interactions is False and result.spans_read == 1
    with pytest.raises(NoLLMInteractionsError, match="1 traces with 1 agents"):
        result.require_llm_interactions()


def test_a_result_with_model_calls_passes_the_requirement() -> None:
    result = traces_from_otlp(fixture("openllmetry", ".jsonl"))
    assert result.require_llm_interactions() is result
    assert result.has_llm_interactions and result.warnings == []


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\x01\x02garbage",
        b"\xff" * 64,
        "plain text, not a file",
        '{"hello": "world"}',
        b"[1, 2]",
        b"\x1f\x8bnot gzip",
    ],
)
def test_input_that_is_not_otlp_gives_no_traces_and_says_why(garbage: bytes | str) -> None:
    result = traces_from_otlp(garbage)
    assert result == [] and not result.has_llm_interactions
    assert any("not OTLP" in w or "gzip" in w or "existing file" in w for w in result.warnings)
    with pytest.raises(NoLLMInteractionsError, match="no LLM interactions"):
        result.require_llm_interactions()
    assert issubclass(OTLPDecodeError, ValueError)  # what the low-level decoders raise


def test_every_member_of_a_multi_member_gzip_file_is_read(tmp_path: Path) -> None:
    # `cat a.gz b.gz > both.gz`, or a Collector appending compressed batches to one file.
    first = fixture("openllmetry", ".jsonl").read_bytes().rstrip(b"\n") + b"\n"
    second = fixture("genai_semconv", ".jsonl").read_bytes()
    both = gzip.compress(first) + gzip.compress(second) + b"\x00" * 8  # zero padding
    (tmp_path / "both.gz").write_bytes(both)
    for source in (both, tmp_path / "both.gz"):
        result = traces_from_otlp(source)
        assert len(result) == 2, result.warnings
        assert result.warnings == []


def test_a_member_that_does_not_inflate_keeps_the_members_before_it() -> None:
    data = gzip.compress(fixture("openllmetry", ".jsonl").read_bytes()) + b"\x1f\x8bbroken"
    result = traces_from_otlp(data)
    assert len(result) == 1
    assert any("gzip member 2 does not inflate" in w for w in result.warnings)


def test_gzip_input_inflates_to_at_most_the_cap_and_says_so() -> None:
    from tracejudge.convert import MAX_INFLATED_BYTES

    assert MAX_INFLATED_BYTES == 256 * 1024 * 1024
    text = fixture("openllmetry", ".jsonl").read_bytes()
    # A small file that inflates far beyond the cap (a "zip bomb"): the rest is not read.
    bomb = gzip.compress(text + b" " * 50_000_000)
    assert len(bomb) < 100_000
    result = traces_from_otlp(bomb, max_inflated_bytes=len(text) + 1000)
    assert len(result) == 1  # what lies within the cap is still converted
    assert any(f"more than {len(text) + 1000} bytes" in w for w in result.warnings)
    cut = traces_from_otlp(gzip.compress(text), max_inflated_bytes=len(text) // 2)
    assert any("inflates to more than" in w for w in cut.warnings)


def test_a_missing_path_object_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        traces_from_otlp(tmp_path / "missing.jsonl")
    with pytest.raises(TypeError):
        traces_from_otlp(42)  # type: ignore[arg-type]


def test_unreadable_log_data_is_a_warning_not_an_error() -> None:
    result = traces_from_otlp(fixture("openllmetry", ".jsonl"), logs=b"\x00garbage")
    (trace,) = result
    assert trace.has_llm_interactions
    assert any(w.startswith("logs: not OTLP") for w in trace.warnings)


def test_truncated_protobuf_gives_the_spans_before_the_cut() -> None:
    data = fixture("openllmetry", ".pb").read_bytes()
    (trace,) = traces_from_otlp(data[: int(len(data) * 0.7)])
    assert trace.has_llm_interactions
    assert any("truncated or corrupt" in w for w in trace.warnings)


def test_truncated_json_gives_the_complete_spans() -> None:
    text = fixture("openllmetry", ".jsonl").read_text()
    (trace,) = traces_from_otlp(text[: int(len(text) * 0.8)])
    assert trace.has_llm_interactions
    assert any("truncated" in w for w in trace.warnings)


def test_unreadable_attributes_are_skipped_and_reported() -> None:
    requests = json_requests("openllmetry")
    span = _llm_spans(requests)[0]
    set_attr(span, semconv.GEN_AI_INPUT_MESSAGES, '[{"role": "user", "parts": [')
    trace = _one(dump(requests) + "not json at all\n")
    assert trace.root.llm_interactions[0].input_messages == []
    assert trace.root.llm_interactions[0].output_text == scenario.PLAN
    assert any(semconv.GEN_AI_INPUT_MESSAGES in w and "not JSON" in w for w in trace.warnings)
    assert any("line 2 is not JSON" in w for w in trace.warnings)


def test_objects_that_are_not_spans_are_reported() -> None:
    (trace,) = traces_from_spans([object(), *_sdk_spans_of_an_agent()])
    assert any("not spans" in w for w in trace.warnings)


def _sdk_spans_of_an_agent() -> list[object]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    attributes = {semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT}
    provider.get_tracer("test").start_span("invoke_agent a", attributes=attributes).end()
    return list(exporter.get_finished_spans())


# --------------------------------------------------------------------------- structured answers


def test_a_json_object_answer_is_an_answer_not_an_empty_one() -> None:
    """A producer that writes the model's structured answer (Genkit's `output: {schema}`)
    as a JSON object in the message's content, not as text: the answer is that object's
    JSON, and `final_answer` scores it as an answer."""
    from tracejudge import checks

    requests = json_requests("openllmetry")
    last = _llm_spans(requests)[-1]
    messages = json.loads(attr(last, semconv.GEN_AI_OUTPUT_MESSAGES))
    report = {"city": "Paris", "forecast": "sunny, 22 C"}
    for message in messages:
        for part in message["parts"]:
            if part["type"] == "text":
                part["content"] = report
    set_attr(last, semconv.GEN_AI_OUTPUT_MESSAGES, json.dumps(messages))
    trace = _one(dump(requests))
    agent = next(
        a
        for a in trace.iter_agents()
        if any(i.span_id == last["spanId"] for i in a.llm_interactions)
    )
    assert json.loads(agent.llm_interactions[-1].output_text) == report
    score = checks.final_answer.evaluate(trace)[agent.id]
    assert score is not None and score.score == 1.0, score
