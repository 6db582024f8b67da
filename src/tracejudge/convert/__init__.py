"""Spans -> MultiAgentTrace, for spans captured in process and spans received over OTLP.

One converter for every source. Inputs are normalised into span records
(`_records`, `_otlp`), the span tree is walked into agents and model calls
(`_tree`), and one small module per attribute convention reads a model-call
span: `genai_semconv` (OTel GenAI semantic conventions: contrib openai-v2,
OpenLLMetry 0.55+, other languages), `openllmetry` (OpenLLMetry's older indexed
attributes) and `openinference`.

Conversion never raises on partial or broken span data: what cannot be read is
skipped and described in `MultiAgentTrace.warnings`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tracejudge.convert._otlp import OTLPDecodeError, decode, decode_logs, read_source
from tracejudge.convert._records import (
    EventRecord,
    SpanRecord,
    attach_events,
    log_event,
    span_record,
)
from tracejudge.convert._tree import ROOT_AGENT_ID, ROOT_AGENT_NAME, build_traces
from tracejudge.models import MultiAgentTrace

__all__ = [
    "traces_from_spans",
    "traces_from_otlp",
    "OTLPDecodeError",
    "SpanRecord",
    "EventRecord",
    "ROOT_AGENT_ID",
    "ROOT_AGENT_NAME",
    "OTLPSource",
]


def traces_from_spans(
    spans: Iterable[Any], *, logs: Iterable[Any] | None = None
) -> list[MultiAgentTrace]:
    """Convert OpenTelemetry SDK spans (`ReadableSpan`s, finished or still running)
    into one MultiAgentTrace per trace id, in order of each trace's first span start.

    `logs` are optional SDK log records (`LogData` or `ReadableLogRecord`); those
    emitted inside a span are read as that span's events, which is where GenAI
    instrumentations put message content in their events mode. Objects that are not
    spans are skipped with a warning. Traces with neither an agent span nor a model
    call are left out; no spans give an empty list.
    """
    warnings: list[str] = []
    records: list[SpanRecord] = []
    skipped = 0
    for span in spans:
        try:
            records.append(span_record(span))
        except Exception:  # not a span, or a span without a valid context
            skipped += 1
    if skipped:
        warnings.append(f"{skipped} objects were not spans with a valid context; skipped")
    if logs is not None:
        placed = []
        for record in logs:
            try:
                item = log_event(record)
            except Exception:  # arbitrary objects: report, never raise
                item = None
            if item is not None:
                placed.append(item)
        attach_events(records, placed)
    return build_traces(records, warnings)


OTLPSource = bytes | bytearray | memoryview | str | os.PathLike[str]


def traces_from_otlp(
    source: OTLPSource, *, logs: OTLPSource | None = None
) -> list[MultiAgentTrace]:
    """Convert OTLP trace data into one MultiAgentTrace per trace id, in order of each
    trace's first span start.

    `source` is the data (protobuf `ExportTraceServiceRequest` bytes, OTLP/JSON bytes
    or text: one request per line as the Collector's file exporter writes, or one JSON
    document; gzip-compressed too) or the path of a file holding it; the format is
    detected. OTLP/JSON `resourceLogs` lines are read as events of the spans they
    belong to; `logs` is optional OTLP log data (protobuf `ExportLogsServiceRequest`
    or OTLP/JSON, or a path) read the same way, for GenAI instrumentations whose
    message content is exported as log records. Empty input gives an empty list.

    Raises `OTLPDecodeError` (a `ValueError`) only when the whole input is not OTLP
    trace data at all; truncated or partly corrupt input is converted as far as it
    can be read, and the rest is described in each trace's `warnings`. Reading
    protobuf needs the `opentelemetry-proto` package (an ImportError says so).
    """
    data = read_source(source)
    records, events, warnings = decode(data)
    if logs is not None:
        log_events, log_warnings = decode_logs(read_source(logs))
        events = events + log_events
        warnings.extend(log_warnings)
    unplaced = attach_events(records, events)
    if unplaced:
        warnings.append(f"{unplaced} log records belong to no span in the input; ignored")
    return build_traces(records, warnings)
