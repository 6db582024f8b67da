"""Spans -> MultiAgentTrace, for spans captured in process and spans received over OTLP.

One converter for every source. Inputs are normalised into span records
(`_records`, `_otlp`), the span tree is walked into agents and model calls
(`_tree`), and one small module per attribute convention reads a model-call
span: `genai_semconv` (OTel GenAI semantic conventions: contrib openai-v2,
OpenLLMetry 0.55+, other languages), `openllmetry` (OpenLLMetry's older indexed
attributes) and `openinference`.

Conversion never raises on partial or broken data: what cannot be read is skipped
and described in `warnings` (of each `MultiAgentTrace`, and of the `TraceList` both
entry points return). Model calls outside every agent belong to an implicit root
agent (`ROOT_AGENT_ID`); spans whose parent span is missing attach to the root.
Input without any model call (empty, not OTLP, agents that made no LLM call) gives
a `TraceList` whose `has_llm_interactions` is False and whose
`require_llm_interactions()` raises `NoLLMInteractionsError`, the error evaluating
such a trace raises.

`inspect_otlp`, `inspect_spans` and `inspect_records` take the same inputs and say what
the conversion made of each span (`tracejudge.models.Inspection`): the producers found,
the spans read and those ignored with the reason, the agents, the warnings. This is
what `tracejudge inspect` prints.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterable
from typing import Any

from tracejudge.convert._gc import without_gc
from tracejudge.convert._inspect import inspect_records as _inspect_records
from tracejudge.convert._memo import ConversionMemo
from tracejudge.convert._otlp import (
    MAX_INFLATED_BYTES,
    OTLPDecodeError,
    decode,
    decode_logs,
    decode_logs_stream,
    decode_stream,
)
from tracejudge.convert._records import (
    EventRecord,
    SpanRecord,
    attach_events,
    log_event,
    span_record,
)
from tracejudge.convert._source import Source, sources
from tracejudge.convert._tree import ROOT_AGENT_ID, ROOT_AGENT_NAME, build_traces
from tracejudge.convert.stream import OTLPBatch, read_otlp_batches
from tracejudge.models import Inspection, MultiAgentTrace, no_llm_interactions_error

__all__ = [
    "traces_from_spans",
    "traces_from_otlp",
    "traces_from_records",
    "inspect_otlp",
    "inspect_spans",
    "inspect_records",
    "read_otlp_batches",
    "OTLPBatch",
    "ConversionMemo",
    "TraceList",
    "OTLPDecodeError",
    "SpanRecord",
    "EventRecord",
    "ROOT_AGENT_ID",
    "ROOT_AGENT_NAME",
    "OTLPSource",
    "MAX_INFLATED_BYTES",
]

logger = logging.getLogger("tracejudge.convert")

#: The start of the warning that says an input holds no model call.
_NO_CALLS = "no LLM interactions: "


class TraceList(list[MultiAgentTrace]):
    """What a conversion gives: a list of `MultiAgentTrace` (one per trace id, in order of
    each trace's first span start) that also says what the input as a whole held.

    An input with no model call at all (no spans, spans of no agent or model call, data
    that is not OTLP) gives an empty list with :attr:`has_llm_interactions` False and
    the reason in :attr:`warnings`; a trace whose agents made no model call is in the
    list with its own ``has_llm_interactions`` False. Nothing raises on such input:
    call :meth:`require_llm_interactions` to turn "no LLM interactions" into
    `tracejudge.errors.NoLLMInteractionsError`, the error evaluating such a trace raises.
    """

    def __init__(
        self,
        traces: Iterable[MultiAgentTrace] = (),
        *,
        warnings: Iterable[str] = (),
        spans_read: int = 0,
    ) -> None:
        super().__init__(traces)
        #: What was skipped or unreadable in the input as a whole (each trace's own
        #: `warnings` repeat these and add what concerns that trace).
        self.warnings: list[str] = list(warnings)
        #: How many spans the input held.
        self.spans_read = spans_read

    @property
    def has_llm_interactions(self) -> bool:
        """Whether any converted trace holds a model call."""
        return any(trace.has_llm_interactions for trace in self)

    def require_llm_interactions(self) -> TraceList:
        """Return self, or raise `NoLLMInteractionsError` (saying what the input held and
        what to check, as `MultiAgentTrace.require_llm_interactions` does) when no trace
        holds a model call."""
        if self.has_llm_interactions:
            return self
        if not self:
            found = (
                f"the input holds {self.spans_read} spans, none of them an agent or a model call"
            )
        else:
            agents = sum(len(trace.agent_instance_by_id) for trace in self)
            found = f"the input holds {len(self)} traces with {agents} agents and no model call"
        reasons = "; ".join([w for w in self.warnings if not w.startswith(_NO_CALLS)][:3])
        raise no_llm_interactions_error(found + (f" ({reasons})" if reasons else ""))


def _result(
    records: list[SpanRecord], warnings: list[str], memo: ConversionMemo | None = None
) -> TraceList:
    """The traces of `records`, a list of the caller's own that this empties."""
    count = len(records)
    traces = build_traces(records, warnings, release=True, memo=memo)
    if not any(trace.has_llm_interactions for trace in traces):
        what = "no spans" if not count else f"{count} spans but no model call"
        warnings = [*warnings, f"{_NO_CALLS}the input holds {what}"]
    return TraceList(traces, warnings=warnings, spans_read=count)


@without_gc
def traces_from_spans(spans: Iterable[Any], *, logs: Iterable[Any] | None = None) -> TraceList:
    """Convert OpenTelemetry SDK spans (`ReadableSpan`s, finished or still running)
    into one MultiAgentTrace per trace id, in order of each trace's first span start.

    `logs` are optional SDK log records (`LogData` or `ReadableLogRecord`); those
    emitted inside a span are read as that span's events, which is where GenAI
    instrumentations put message content in their events mode. Never raises on the
    spans' content: objects that are not spans are skipped, unreadable attributes
    are skipped, and both are reported in `warnings` (of the result and of each
    trace). Traces with neither an agent span nor a model call are left out; see
    `TraceList` for what an input without any model call gives.
    """
    return _result(*_sdk_records(spans, logs))


def _sdk_records(
    spans: Iterable[Any], logs: Iterable[Any] | None
) -> tuple[list[SpanRecord], list[str]]:
    """(span records, warnings) of SDK spans and log records."""
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
    return records, warnings


@without_gc
def traces_from_records(
    spans: Iterable[SpanRecord],
    events: Iterable[tuple[str, str, EventRecord]] = (),
    *,
    warnings: Iterable[str] = (),
    memo: ConversionMemo | None = None,
) -> TraceList:
    """Convert span records (and log-record events placed by trace and span id), as
    `read_otlp_batches` yields them, into one MultiAgentTrace per trace id. For callers
    that read a large input piece by piece and convert one trace at a time: give all
    the records of a trace at once, and one `ConversionMemo` to every call, so that what
    is learnt of the attribute keys reading one trace serves the next (results are the
    same without). `warnings` are copied into the result and each trace.
    """
    return _result(*_placed_records(spans, events, warnings), memo)


def _placed_records(
    spans: Iterable[SpanRecord],
    events: Iterable[tuple[str, str, EventRecord]],
    warnings: Iterable[str],
) -> tuple[list[SpanRecord], list[str]]:
    records = list(spans)
    unplaced = attach_events(records, list(events))
    found = list(warnings)
    if unplaced:
        found.append(f"{unplaced} log records belong to no span in the input; ignored")
    return records, found


OTLPSource = bytes | bytearray | memoryview | str | os.PathLike[str]


@without_gc
def traces_from_otlp(
    source: OTLPSource,
    *,
    logs: OTLPSource | None = None,
    max_inflated_bytes: int = MAX_INFLATED_BYTES,
) -> TraceList:
    """Convert OTLP trace data into one MultiAgentTrace per trace id, in order of each
    trace's first span start.

    `source` is the data (protobuf `ExportTraceServiceRequest` bytes, OTLP/JSON bytes
    or text: one request per line as the Collector's file exporter writes, or one JSON
    document; gzip-compressed too, in one member or several) or the path of a file
    holding it (a `Path`, or a one-line string that names an existing file); the format
    is detected. Gzip input is inflated to at most `max_inflated_bytes` (256 MiB by
    default): what lies beyond is not read, and a warning says so. OTLP/JSON
    `resourceLogs` lines are read as events of the spans they belong to; `logs` is
    optional OTLP log data (protobuf `ExportLogsServiceRequest` or OTLP/JSON, or a
    path) read the same way, for GenAI instrumentations whose message content is
    exported as log records.

    Never raises on the data: truncated or partly corrupt input is converted as far as
    it can be read, input that is not OTLP at all gives an empty `TraceList`, and what
    was skipped is described in `warnings` (of the result and of each trace). It raises
    only for a `Path` that does not exist (`FileNotFoundError`), an argument of the
    wrong type (`TypeError`), or when protobuf is given and `opentelemetry-proto` is
    not installed (an `ImportError` that says so).
    """
    return _result(*_otlp_records(source, logs, max_inflated_bytes))


def _otlp_records(
    source: OTLPSource, logs: OTLPSource | None, max_inflated_bytes: int
) -> tuple[list[SpanRecord], list[str]]:
    """(span records with their log events attached, warnings) of OTLP data."""
    warnings: list[str] = []
    read_traces = functools.partial(_traces, max_inflated_bytes=max_inflated_bytes)
    records, events = _decoded(source, "", read_traces, warnings)
    if logs is not None:
        read_logs = functools.partial(_logs_only, max_inflated_bytes=max_inflated_bytes)
        _, log_events = _decoded(logs, "logs: ", read_logs, warnings)
        events = events + log_events
    unplaced = attach_events(records, events)
    if unplaced:
        warnings.append(f"{unplaced} log records belong to no span in the input; ignored")
    return records, warnings


# --------------------------------------------------------------------------- inspection


def inspect_otlp(
    source: OTLPSource,
    *,
    logs: OTLPSource | None = None,
    max_inflated_bytes: int = MAX_INFLATED_BYTES,
) -> Inspection:
    """What `traces_from_otlp` makes of each span of the same arguments, per trace: the
    producers found (instrumentation scope and version, the conventions that read their
    spans), the spans read and those ignored with the reason, the agents with their
    calls, and every warning (see `tracejudge.models.Inspection`). Raises only as
    `traces_from_otlp` does."""
    return _inspect_records(*_otlp_records(source, logs, max_inflated_bytes))


def inspect_spans(spans: Iterable[Any], *, logs: Iterable[Any] | None = None) -> Inspection:
    """`inspect_otlp` for OpenTelemetry SDK spans, taken as `traces_from_spans` takes them."""
    return _inspect_records(*_sdk_records(spans, logs))


def inspect_records(
    spans: Iterable[SpanRecord],
    events: Iterable[tuple[str, str, EventRecord]] = (),
    *,
    warnings: Iterable[str] = (),
) -> Inspection:
    """`inspect_otlp` for span records and placed log events, as `read_otlp_batches`
    yields them (taken as `traces_from_records` takes them)."""
    return _inspect_records(*_placed_records(spans, events, warnings))


def _traces(
    source: Source, *, max_inflated_bytes: int
) -> tuple[list[SpanRecord], list[Any], list[str]]:
    if source.text is not None:
        return decode(source.text, max_inflated_bytes=max_inflated_bytes)
    assert source.opener is not None
    return decode_stream(source.opener, max_inflated_bytes=max_inflated_bytes)


def _logs_only(
    source: Source, *, max_inflated_bytes: int
) -> tuple[list[SpanRecord], list[Any], list[str]]:
    if source.text is not None:
        events, warnings = decode_logs(source.text, max_inflated_bytes=max_inflated_bytes)
    else:
        assert source.opener is not None
        events, warnings = decode_logs_stream(source.opener, max_inflated_bytes=max_inflated_bytes)
    return [], events, warnings


def _decoded(
    source: OTLPSource, label: str, decoder: Any, warnings: list[str]
) -> tuple[list[SpanRecord], list[Any]]:
    """(spans, placed log events) of one argument (every file of it, for a directory);
    what cannot be read becomes a warning."""
    try:
        inputs = sources(source)
    except OTLPDecodeError as error:  # text that is neither OTLP/JSON nor an existing path
        warnings.append(f"{label}{error}")
        logger.warning("tracejudge.convert: %s%s", label, error)
        return [], []
    records: list[SpanRecord] = []
    events: list[Any] = []
    for one in inputs:
        where = label + one.label
        try:
            found, placed, decode_warnings = decoder(one)
        except ImportError:
            raise  # protobuf support missing: the message says what to install
        except OTLPDecodeError as error:
            warnings.append(f"{where}{error}")
            logger.warning("tracejudge.convert: %s%s", where, error)
            continue
        except OSError:
            raise  # the file cannot be read (permissions, a device): not the data's fault
        except Exception as error:  # a safety net: the data is untrusted
            logger.exception("tracejudge.convert: could not decode the input")
            warnings.append(f"{where}unreadable input ({type(error).__name__}: {error})")
            continue
        warnings.extend(f"{where}{w}" for w in decode_warnings)
        records.extend(found)
        events.extend(placed)
    return records, events
