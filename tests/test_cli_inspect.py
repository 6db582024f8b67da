"""`tracejudge inspect`: what the converter made of each trace's spans, on recorded traces.

The facts checked come from the recordings themselves (their raw OTLP: span count, scopes
and versions) and from the programs that made them (`programs.py`: agents, calls, tools,
answers), not from the converter's output.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from tests.fixtures.frameworks.programs import LANGGRAPH_EXPECTED
from tracejudge.cli import main
from tracejudge.convert import inspect_otlp, inspect_records, inspect_spans
from tracejudge.convert._otlp import decode
from tracejudge.models import IGNORED_REASONS, Inspection

FIXTURES = Path(__file__).parent / "fixtures"
FRAMEWORKS = FIXTURES / "frameworks"
LANGGRAPH = FRAMEWORKS / "langgraph_openinference"
OPENLLMETRY = FIXTURES / "openllmetry"
HTTPX = "opentelemetry.instrumentation.httpx"


def _inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["inspect", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def _raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _raw_spans(path: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(scope, span) of every span of an OTLP/JSON file, as written."""
    return [
        (scope_spans["scope"], span)
        for line in _raw(path)
        for resource in line["resourceSpans"]
        for scope_spans in resource["scopeSpans"]
        for span in scope_spans["spans"]
    ]


def _fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["inspect", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("tracejudge inspect: ")
    return line


# --------------------------------------------------------------------------- what is read


def test_langgraph_producer_spans_and_agents(capsys: pytest.CaptureFixture[str]) -> None:
    raw = _raw_spans(LANGGRAPH.with_suffix(".jsonl"))
    found = _inspect(capsys, str(LANGGRAPH.with_suffix(".pb")))
    assert found["spans"] == len(raw) and found["warnings"] == []
    (trace,) = found["traces"]
    assert trace["sources"] == [str(LANGGRAPH.with_suffix(".pb"))]
    ((scope, _),) = {(s["name"], s["version"]): None for s, _ in raw}.items()
    assert trace["producers"] == [
        {
            "scope": scope[0],
            "version": scope[1],
            "conventions": ["langgraph", "openinference"],
            "spans": len(raw),
            "read": len(trace["read"]),
        }
    ]
    # Every span is read or ignored, once.
    ids = [s["span_id"] for s in trace["read"] + trace["ignored"]]
    assert sorted(ids) == sorted(span["spanId"] for _, span in raw)

    expected = LANGGRAPH_EXPECTED
    kinds = Counter(span["kind"] for span in trace["read"])
    assert kinds == {
        "workflow": 1,  # the graph
        "agent": len(expected.agents) - 1,  # its nodes
        "model call": sum(calls for _, _, calls, _ in expected.agents),
        "tool run": len(expected.tool_calls),
    }
    # Chains are steps; the ReAct researcher's own graph nodes are steps of its agent.
    reasons = Counter(span["reason"] for span in trace["ignored"])
    assert set(reasons) == {"step", "nested_node"}
    steps = {span["detail"] for span in trace["ignored"] if span["reason"] == "step"}
    assert steps == {"a step of openinference (CHAIN)"}
    nested = [span for span in trace["ignored"] if span["reason"] == "nested_node"]
    assert Counter(span["name"] for span in nested) == {"researcher": 1, "agent": 2, "tools": 1}
    assert all("nested in node researcher" in span["detail"] for span in nested)
    assert all(span["agent"] is None and span["convention"] for span in trace["ignored"])

    agents = trace["agents"]
    by_id = {agent["id"]: agent for agent in agents}
    assert [
        (
            a["name"],
            by_id[a["parent"]]["name"] if a["parent"] else None,
            a["model_calls"],
            a["answer"],
        )
        for a in agents
    ] == expected.agents
    assert trace["root"] == agents[0]["id"] == agents[0]["span_id"]
    assert [(a["name"], a["tools"], a["tool_calls"]) for a in agents if a["tools"]] == [
        ("researcher", ["search"], 1)
    ]
    # Each read span names the agent it was read into.
    researcher = next(a["id"] for a in agents if a["name"] == "researcher")
    tool_run = next(s for s in trace["read"] if s["kind"] == "tool run")
    assert tool_run["name"] == "search" and tool_run["agent"] == researcher


def test_scope_versions_and_producers_of_a_composed_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    raw = _raw_spans(OPENLLMETRY.with_suffix(".jsonl"))
    versions = {s["name"]: s.get("version") for s, _ in raw}
    counts = Counter(s["name"] for s, _ in raw)
    (trace,) = _inspect(capsys, str(OPENLLMETRY.with_suffix(".pb")))["traces"]
    # In order of each producer's first span: the app's agent span starts first.
    assert [(p["scope"], p["version"], p["spans"], p["read"]) for p in trace["producers"]] == [
        (name, versions[name], counts[name], counts[name])
        for name in ("tracejudge.tracing", "opentelemetry.instrumentation.openai.v1")
    ]
    assert versions["opentelemetry.instrumentation.openai.v1"] == "0.62.4"
    assert versions["tracejudge.tracing"] is None
    assert trace["ignored"] == []
    assert [(a["name"], a["model_calls"]) for a in trace["agents"]] == [
        ("orchestrator", 2),
        ("researcher", 3),
        ("writer", 1),
    ]


def test_merged_records_and_folded_twins_are_read_and_say_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Composed: the openai client is instrumented twice, each call recorded twice.
    (trace,) = _inspect(capsys, str(FRAMEWORKS / "crewai_openinference_composed.pb"))["traces"]
    merged = [s for s in trace["read"] if s["detail"]]
    assert len(merged) == sum(a["model_calls"] for a in trace["agents"]) == 3
    assert {s["kind"] for s in merged} == {"model call"}
    assert trace["ignored"] == []
    # OpenLLMetry's LangGraph: `invoke_agent researcher` around the node span of one agent.
    found = _inspect(capsys, str(FRAMEWORKS / "langgraph_openllmetry.pb"))
    twins = [s for t in found["traces"] for s in t["read"] if s["detail"]]
    assert twins and all("same agent" in s["detail"] for s in twins)
    assert {s["kind"] for s in twins} <= {"agent", "workflow"}


def test_warnings_are_every_warning_of_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    path = FRAMEWORKS / "openai_agents_openllmetry_chat.pb"
    (trace,) = _inspect(capsys, str(path))["traces"]
    assert len(trace["warnings"]) == 3
    assert all("opentelemetry.instrumentation.openai_agents" in w for w in trace["warnings"])
    assert main(["inspect", str(path)]) == 0
    assert "warnings (3)" in capsys.readouterr().out


def _with_httpx_span(tmp_path: Path) -> Path:
    """The LangGraph recording plus an HTTP client span under its first model call."""
    (line,) = _raw(LANGGRAPH.with_suffix(".jsonl"))
    call = next(
        span
        for resource in line["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
        if span["name"] == "ChatOpenAI"
    )
    http = copy.deepcopy(call)
    http.update(spanId="00000000000000ff", parentSpanId=call["spanId"], name="POST", attributes=[])
    extra = {"scopeSpans": [{"scope": {"name": HTTPX, "version": "0.9b0"}, "spans": [http]}]}
    line["resourceSpans"].append(extra)
    path = tmp_path / "with_httpx.jsonl"
    path.write_text(json.dumps(line) + "\n")
    return path


def test_a_span_no_convention_knows_is_ignored_with_its_scope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (trace,) = _inspect(capsys, str(_with_httpx_span(tmp_path)))["traces"]
    (unknown,) = [s for s in trace["ignored"] if s["reason"] == "unknown"]
    assert unknown["name"] == "POST" and unknown["scope"] == HTTPX
    assert unknown["convention"] is None and unknown["kind"] is None
    assert HTTPX in unknown["detail"]
    assert unknown["attributes"] == []  # (the test's span has none)
    assert all(s["attributes"] == [] for s in trace["read"])
    assert trace["producers"][-1] == {
        "scope": HTTPX,
        "version": "0.9b0",
        "conventions": [],
        "spans": 1,
        "read": 0,
    }


def test_a_trace_of_unknown_spans_only_is_shown_with_nothing_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (line,) = _raw(_with_httpx_span(tmp_path))
    line["resourceSpans"] = line["resourceSpans"][-1:]
    path = tmp_path / "only_httpx.jsonl"
    path.write_text(json.dumps(line))
    (trace,) = _inspect(capsys, str(path))["traces"]
    assert trace["read"] == [] and trace["agents"] == [] and trace["root"] is None
    assert [s["reason"] for s in trace["ignored"]] == ["unknown"]
    assert main(["inspect", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # (a long line is wrapped)
    assert "read: nothing" in out and "agents: none" in out
    assert f"1 no convention knows it (instrumentation scope {HTTPX}) POST" in out


# --------------------------------------------------------------------------- the API


def _sdk_spans(path: Path) -> list[ReadableSpan]:
    records, _, _ = decode(path.read_bytes())
    spans = []
    for r in records:
        trace_id = int(r.trace_id, 16)
        parent = SpanContext(trace_id, int(r.parent_id, 16), False) if r.parent_id else None
        spans.append(
            ReadableSpan(
                name=r.name,
                context=SpanContext(trace_id, int(r.span_id, 16), False),
                parent=parent,
                attributes=r.attributes,
                events=[Event(e.name, e.attributes, int(e.time * 1e9)) for e in r.events],
                kind=SpanKind[r.kind] if r.kind else SpanKind.INTERNAL,
                status=Status(StatusCode[r.status], r.status_message),
                start_time=r.start_ns,
                end_time=r.end_ns,
                instrumentation_scope=InstrumentationScope(r.scope or "", r.scope_version),
            )
        )
    return spans


@pytest.mark.parametrize("name", ["langgraph_openinference", "crewai_openllmetry_composed"])
def test_protobuf_json_and_sdk_spans_inspect_alike(name: str) -> None:
    path = FRAMEWORKS / name
    from_pb = inspect_otlp(path.with_suffix(".pb"))
    assert from_pb.traces and from_pb.spans == sum(t.spans for t in from_pb.traces)
    assert inspect_otlp(path.with_suffix(".jsonl")) == from_pb
    assert inspect_spans(_sdk_spans(path.with_suffix(".pb"))) == from_pb
    records, _, _ = decode(path.with_suffix(".pb").read_bytes())
    assert inspect_records(records) == from_pb


def test_the_json_shape_is_stable(capsys: pytest.CaptureFixture[str]) -> None:
    found = _inspect(capsys, str(LANGGRAPH.with_suffix(".pb")))
    assert set(found) == {"version", "spans", "warnings", "traces"} and found["version"] == 1
    (trace,) = found["traces"]
    assert set(trace) == {
        "trace_id",
        "sources",
        "spans",
        "producers",
        "read",
        "ignored",
        "root",
        "agents",
        "warnings",
    }
    assert set(trace["producers"][0]) == {"scope", "version", "conventions", "spans", "read"}
    span_keys = {
        "span_id",
        "parent_id",
        "name",
        "scope",
        "start",
        "convention",
        "kind",
        "agent",
        "reason",
        "detail",
        "attributes",
    }
    assert all(set(span) == span_keys for span in trace["read"] + trace["ignored"])
    assert {s["reason"] for s in trace["ignored"]} <= set(IGNORED_REASONS)
    assert all(set(agent) == {
        "id", "name", "parent", "span_id", "model_calls", "tool_calls", "tools", "handoff",
        "answer",
    } for agent in trace["agents"])  # fmt: skip
    assert Inspection.model_validate(found).model_dump(mode="json") == found


# --------------------------------------------------------------------------- the command


def test_human_output_fits_80_columns_and_says_it_all(capsys: pytest.CaptureFixture[str]) -> None:
    inputs = [LANGGRAPH.with_suffix(".pb"), OPENLLMETRY.with_suffix(".jsonl")]
    assert main(["inspect", "--spans", *map(str, inputs)]) == 0
    out = capsys.readouterr().out
    # (Only the lines naming the inputs, which are not cut, may be longer.)
    assert max(len(line) for line in out.splitlines() if not line.startswith("  from ")) <= 80
    assert out.startswith("2 traces, ")
    for text in (
        "openinference.instrumentation.langchain 0.1.80",
        "conventions: langgraph, openinference",
        "read: 1 workflow, 5 agents, 6 model calls, 1 tool run",
        "a step of openinference (CHAIN)",
        "a LangGraph node nested in node researcher",
        "1 tool call (search)",
        "answer: 'Report: Paris is sunny",
        "opentelemetry.instrumentation.openai.v1 0.62.4",
        "+ search: tool run (openinference) in researcher",
        "- RunnableSequence: ignored, step",
    ):
        assert text in out, text


def test_inputs_are_read_as_score_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A trace split over two files of a directory is one trace, from both.
    (line,) = _raw(LANGGRAPH.with_suffix(".jsonl"))
    scope_spans = line["resourceSpans"][0]["scopeSpans"][0]
    spans = scope_spans["spans"]
    for part, chunk in (("a", spans[:10]), ("b", spans[10:])):
        piece = copy.deepcopy(line)
        piece["resourceSpans"][0]["scopeSpans"][0]["spans"] = chunk
        (tmp_path / f"{part}.jsonl").write_text(json.dumps(piece))
    whole = _inspect(capsys, str(LANGGRAPH.with_suffix(".pb")))
    (trace,) = _inspect(capsys, str(tmp_path))["traces"]
    assert trace["sources"] == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    assert {**trace, "sources": []} == {**whole["traces"][0], "sources": []}
    # A glob, and --trace keeping one trace of several.
    found = _inspect(capsys, str(FIXTURES / "openllmetry*.pb"))
    assert len(found["traces"]) > 1
    first = found["traces"][0]["trace_id"]
    kept = _inspect(capsys, str(FIXTURES / "openllmetry*.pb"), "--trace", first[:8])
    assert [t["trace_id"] for t in kept["traces"]] == [first]


def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "no such file: missing.pb" in _fails(capsys, "missing.pb")
    text = tmp_path / "notes.jsonl"
    text.write_text("hello\n")
    assert "notes.jsonl: cannot read it as OTLP" in _fails(capsys, str(text))
    empty = tmp_path / "empty.pb"
    empty.write_bytes(b"")
    assert "empty.pb: no span in the input (the input is empty)" in _fails(capsys, str(empty))
    trace = tmp_path / "trace.json"
    trace.write_text(inspect_free_trace_json())
    assert "a MultiAgentTrace (already converted" in _fails(capsys, str(trace))
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n')
    assert "not OTLP (no resourceSpans)" in _fails(capsys, str(other))
    assert "--trace ffff: no trace id starts with it" in _fails(
        capsys, str(LANGGRAPH.with_suffix(".pb")), "--trace", "ffff"
    )


def inspect_free_trace_json() -> str:
    """A converted trace (MultiAgentTrace JSON): nothing for `inspect` to read."""
    from tracejudge.convert import traces_from_otlp

    (trace,) = traces_from_otlp(OPENLLMETRY.with_suffix(".jsonl"))
    return trace.to_json()


def test_the_installed_command_reads_stdin_and_files() -> None:
    pb = LANGGRAPH.with_suffix(".pb")
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "inspect", "--json", "-"],
        input=pb.read_bytes(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (trace,) = json.loads(done.stdout)["traces"]
    assert trace["sources"] == ["<stdin>"] and len(trace["agents"]) == 6
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "inspect", str(pb), str(tmp_missing := "nope.pb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"tracejudge inspect: no such file: {tmp_missing}"


def test_help_names_the_command() -> None:
    from tracejudge.cli import build_parser

    assert "inspect" in build_parser().format_help()
    with pytest.raises(SystemExit) as exited:
        main(["inspect", "--help"])
    assert exited.value.code == 0


def test_an_unreadable_model_call_is_ignored_and_the_warning_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracejudge.convert.conventions.formats import openinference

    records, _, _ = decode(LANGGRAPH.with_suffix(".pb").read_bytes())
    broken = next(r.span_id for r in records if r.name == "ChatOpenAI")
    read = openinference.extract

    def extract(span: Any) -> Any:
        if span.span_id == broken:
            raise ValueError("bad messages")
        return read(span)

    monkeypatch.setattr(openinference, "extract", extract)
    (trace,) = inspect_records(records).traces
    (ignored,) = [s for s in trace.ignored if s.reason == "unreadable"]
    assert ignored.span_id == broken and ignored.kind == "model call"
    assert any(f"({broken}): unreadable (ValueError: bad messages)" in w for w in trace.warnings)
    assert sum(a.model_calls for a in trace.agents) == len(
        [s for s in trace.read if s.kind == "model call"]
    )


def test_spans_no_convention_reads_whole_list_their_attributes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A span of an unknown producer that names a model and counts tokens is a model call
    # (the table's last row) whose messages are not read: its attribute keys are shown.
    # (Its one other attribute is nothing the content reader takes for a prompt or an
    # answer by its shape: a prompt under a prompt-like key would be read.)
    (line,) = _raw(_with_httpx_span(tmp_path))
    (http,) = line["resourceSpans"][-1]["scopeSpans"][0]["spans"]
    call = next(
        s
        for s in line["resourceSpans"][0]["scopeSpans"][0]["spans"]
        if s["spanId"] == http["parentSpanId"]
    )
    http["parentSpanId"] = call["parentSpanId"]  # beside the call, not a record of it
    http["name"] = "acme.generate"
    http["attributes"] = [
        {"key": "gen_ai.request.model", "value": {"stringValue": "acme-1"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
        {"key": "acme.sampling_seed", "value": {"stringValue": "7"}},
    ]
    path = tmp_path / "acme.jsonl"
    path.write_text(json.dumps(line))
    (trace,) = _inspect(capsys, str(path))["traces"]
    (call,) = [s for s in trace["read"] if s["name"] == "acme.generate"]
    assert (call["convention"], call["kind"]) == ("unrecognised", "model call")
    assert call["attributes"] == [
        "gen_ai.request.model",
        "gen_ai.usage.input_tokens",
        "acme.sampling_seed",
    ]
    assert any(HTTPX in w and "without messages" in w for w in trace["warnings"]), trace["warnings"]
    assert main(["inspect", "--spans", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "+ acme.generate: model call (unrecognised) in supervisor" in out
    assert "attributes: gen_ai.request.model, gen_ai.usage.input_tokens, acme.sampling_seed" in out
