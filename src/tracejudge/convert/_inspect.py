"""What the converter makes of each span of an input (`tracejudge inspect`).

Each trace is converted as `build_traces` converts it, and its spans are classified
through the conventions table the same way (`_tree.classify`, `_agents.layout`); the
two are then set side by side: which instrumentation scopes wrote the spans and which
conventions claimed them, which spans the trace was built from (and into which agent),
which were ignored and why, the agents with their calls, and the warnings. Nothing
here changes how a trace is converted: it reads the same answers again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Container, Iterable

from tracejudge.convert import _agents, _tree
from tracejudge.convert._agents import Readings
from tracejudge.convert._infer_calls import add_shaped_calls
from tracejudge.convert._infer_summaries import drop_run_summaries
from tracejudge.convert._memo import ConversionMemo
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import LANGGRAPH, TABLE, UNRECOGNISED, Convention, Kind
from tracejudge.models import (
    ANSWER_EXCERPT,
    InspectedAgent,
    InspectedProducer,
    InspectedSpan,
    InspectedTrace,
    Inspection,
    MultiAgentTrace,
)

__all__ = ["inspect_records"]

logger = logging.getLogger("tracejudge.convert")

_AGENT_KINDS = (Kind.AGENT, Kind.WORKFLOW)
_UNREADABLE = re.compile(r"\(([0-9a-f]+)\): unreadable \(")
_ORDER = {convention.name: position for position, convention in enumerate(TABLE)}


def inspect_records(records: Iterable[SpanRecord], warnings: Iterable[str] = ()) -> Inspection:
    """The inspection of span records (log-record events already attached), `warnings`
    being those about the input as a whole."""
    groups = _by_trace(records)
    memo = ConversionMemo()
    return Inspection(
        spans=sum(len(spans) for spans in groups),
        warnings=list(warnings),
        traces=[_inspect_trace(spans, memo) for spans in groups],
    )


def _by_trace(records: Iterable[SpanRecord]) -> list[list[SpanRecord]]:
    """Each trace's spans in start order, the traces in order of first start (the order
    and the choice between two copies of a span are `build_traces`')."""
    by_trace: dict[str, dict[str, SpanRecord]] = {}
    for record in records:
        spans = by_trace.setdefault(record.trace_id, {})
        previous = spans.get(record.span_id)
        if previous is None or (previous.running and not record.running):
            spans[record.span_id] = record
    groups = [_tree._in_start_order(list(spans.values())) for spans in by_trace.values()]
    positions = sorted(
        range(len(groups)),
        key=lambda i: (groups[i][0].start_ns is None, groups[i][0].start_ns or 0, i),
    )
    return [groups[i] for i in positions]


def _inspect_trace(spans: list[SpanRecord], memo: ConversionMemo) -> InspectedTrace:
    warnings: list[str] = []
    failed = False
    try:
        trace = _tree._build_trace(spans, warnings, memo)
    except Exception as error:  # as `build_traces`: one broken trace must not stop the others
        logger.exception("tracejudge.convert: could not convert a trace")
        warnings.append(f"the trace could not be converted ({type(error).__name__}: {error})")
        trace, failed = None, True
    inspected = InspectedTrace(trace_id=spans[0].trace_id, spans=len(spans), warnings=warnings)
    try:
        readings = _tree.classify(spans, memo)
        # (the calls that are runs of calls: read as the walk reads them, with the calls
        # found by their shape)
        add_shaped_calls(spans, readings, memo)
        summaries = drop_run_summaries(spans, dict(readings))
        layout = _agents.layout(spans, readings)
    except Exception as error:  # the same steps as the walk's: a trace it could not convert
        logger.exception("tracejudge.convert: could not read a trace's spans")
        inspected.warnings.append(f"its spans could not be read ({type(error).__name__}: {error})")
        return inspected
    if trace is not None:
        inspected.root = trace.root_agent_instance_id
        inspected.agents = _agents_of(trace)
    _sort_spans(inspected, spans, readings, layout, trace, failed, summaries)
    inspected.producers = _producers(spans, readings, {s.span_id for s in inspected.read})
    return inspected


# --------------------------------------------------------------------------- spans


def _sort_spans(
    inspected: InspectedTrace,
    spans: list[SpanRecord],
    readings: Readings,
    layout: _agents.Layout,
    trace: MultiAgentTrace | None,
    failed: bool,
    summaries: Container[str] = (),
) -> None:
    """Put each span in `inspected.read` or `inspected.ignored` (`summaries`: the spans
    the catch-all row took for calls that are runs of the calls below them)."""
    by_id = layout.by_id  # (parents as the layout set them: adopted subtrees moved)
    agent_of_span: dict[str, str] = {}
    primaries: set[str] = set()
    if trace is not None:
        for instance in trace.agent_instance_by_id.values():
            if instance.span_id is not None:
                agent_of_span[instance.span_id] = instance.id
            primaries.update(i.span_id for i in instance.llm_interactions if i.span_id)
    unreadable = _unreadable(inspected.warnings)
    nodes = {
        span_id
        for span_id, (_, convention, kind) in readings.items()
        if convention is LANGGRAPH and kind is Kind.AGENT
    }
    for span in spans:
        entry = InspectedSpan(
            span_id=span.span_id,
            parent_id=span.parent_id,
            name=span.name,
            scope=span.scope,
            start=span.start,
        )
        reading = readings.get(span.span_id)
        if reading is None or reading[1] is UNRECOGNISED:
            entry.attributes = list(span.attributes)
        if reading is None:
            where = f"instrumentation scope {span.scope}" if span.scope else "no scope"
            _ignore(inspected, entry, "unknown", f"no convention knows it ({where})")
            continue
        view, convention, kind = reading
        entry.convention, entry.kind = convention.name, kind
        if span.span_id in summaries and trace is not None:
            owner = _owner(span, by_id, agent_of_span, trace.root_agent_instance_id)
            entry.kind = Kind.AGENT
            totals = " (their model and tokens)" if convention is UNRECOGNISED else ""
            _read(
                inspected,
                entry,
                agent_of_span.get(span.span_id, owner),
                f"a run of the model calls below it{totals}, not a call",
            )
            continue
        if trace is None:
            if failed:
                _ignore(inspected, entry, "failed", "its trace could not be converted")
            elif kind is Kind.STEP:
                _ignore(inspected, entry, "step", _step(convention, view))
            else:
                _ignore(inspected, entry, "no_agent", "its trace holds no agent or model call")
            continue
        agent = _owner(span, by_id, agent_of_span, trace.root_agent_instance_id)
        if kind in _AGENT_KINDS:
            if span.span_id in layout.identities:
                _read(inspected, entry, agent_of_span.get(span.span_id, agent))
            elif span.span_id in nodes and _has_ancestor_in(span, by_id, nodes):
                outer = _nearest_ancestor_in(span, by_id, nodes)
                _ignore(
                    inspected,
                    entry,
                    "nested_node",
                    f"a LangGraph node nested in node {outer}: a step of its agent",
                )
            else:
                _read(inspected, entry, agent, "the same agent as the agent span above it")
        elif kind is Kind.MODEL_CALL:
            if span.span_id in unreadable:
                _ignore(inspected, entry, "unreadable", "unreadable as a model call (see warnings)")
            elif span.span_id in primaries:
                _read(inspected, entry, agent)
            else:
                _read(inspected, entry, agent, "another record of a call, read with it")
        elif kind is Kind.TOOL_RUN:
            if convention.tool_run(view) is None:
                _ignore(inspected, entry, "no_tool", "a tool span that names no tool")
            else:
                _read(inspected, entry, agent)
        elif kind is Kind.HANDOFF:
            if convention.handoff(view) is None:
                _ignore(inspected, entry, "no_handoff", "a hand-off span that names no agent")
            else:
                _read(inspected, entry, agent)
        else:
            _ignore(inspected, entry, "step", _step(convention, view))


def _read(
    inspected: InspectedTrace, entry: InspectedSpan, agent: str, detail: str | None = None
) -> None:
    entry.agent, entry.detail = agent, detail
    inspected.read.append(entry)


def _ignore(inspected: InspectedTrace, entry: InspectedSpan, reason: str, detail: str) -> None:
    entry.reason, entry.detail = reason, detail  # type: ignore[assignment]  # an IgnoredReason
    inspected.ignored.append(entry)


def _step(convention: Convention, view: SpanView) -> str:
    own = convention.step_kind(view)
    return f"a step of {convention.name} ({own})" if own else f"a step of {convention.name}"


def _unreadable(warnings: list[str]) -> set[str]:
    """The ids of the model-call spans the walk could not read: it says so in a warning
    (`_interactions.read_call`: "span 'name' (id): unreadable (...)")."""
    return {found.group(1) for w in warnings if (found := _UNREADABLE.search(w)) is not None}


def _ancestors(span: SpanRecord, by_id: dict[str, SpanRecord]) -> Iterable[SpanRecord]:
    seen = {span.span_id}
    parent_id = span.parent_id
    while parent_id and parent_id not in seen and parent_id in by_id:
        seen.add(parent_id)
        parent = by_id[parent_id]
        yield parent
        parent_id = parent.parent_id


def _has_ancestor_in(span: SpanRecord, by_id: dict[str, SpanRecord], ids: set[str]) -> bool:
    return any(parent.span_id in ids for parent in _ancestors(span, by_id))


def _nearest_ancestor_in(span: SpanRecord, by_id: dict[str, SpanRecord], ids: set[str]) -> str:
    return next((p.name for p in _ancestors(span, by_id) if p.span_id in ids), "?")


def _owner(
    span: SpanRecord, by_id: dict[str, SpanRecord], agent_of_span: dict[str, str], root: str
) -> str:
    """The id of the agent whose run the span is in: its nearest ancestor that is an
    agent's span, else the root."""
    current = by_id.get(span.span_id, span)
    for parent in _ancestors(current, by_id):
        found = agent_of_span.get(parent.span_id)
        if found is not None:
            return found
    return root


# --------------------------------------------------------------------------- producers


def _producers(
    spans: list[SpanRecord], readings: Readings, read: set[str]
) -> list[InspectedProducer]:
    """One entry per (scope, version), in order of first span."""
    found: dict[tuple[str | None, str | None], InspectedProducer] = {}
    for span in spans:
        key = (span.scope, span.scope_version)
        producer = found.get(key)
        if producer is None:
            producer = found[key] = InspectedProducer(scope=key[0], version=key[1])
        producer.spans += 1
        producer.read += span.span_id in read
        reading = readings.get(span.span_id)
        if reading is not None and reading[1].name not in producer.conventions:
            producer.conventions.append(reading[1].name)
    for producer in found.values():
        producer.conventions.sort(key=lambda name: _ORDER.get(name, len(_ORDER)))
    return list(found.values())


# --------------------------------------------------------------------------- agents


def _agents_of(trace: MultiAgentTrace) -> list[InspectedAgent]:
    parents: dict[str, str] = {}  # (the first agent that lists it, as `parent_of` says)
    for parent in trace.agent_instance_by_id.values():
        for child in parent.child_ids:
            parents.setdefault(child, parent.id)
    agents = []
    for agent in trace.iter_agents():
        calls = agent.llm_interactions
        tool_names: list[str] = []
        tool_calls = 0
        for call in calls:
            for tool_call in call.tool_calls:
                tool_calls += 1
                if tool_call.name not in tool_names:
                    tool_names.append(tool_call.name)
        answer = agent.final_output
        if answer is not None and len(answer) > ANSWER_EXCERPT:
            answer = answer[: ANSWER_EXCERPT - 1] + "…"
        agents.append(
            InspectedAgent(
                id=agent.id,
                name=agent.name,
                parent=parents.get(agent.id),
                span_id=agent.span_id,
                model_calls=len(calls),
                tool_calls=tool_calls,
                tools=tool_names,
                handoff=agent.handoff,
                answer=answer,
            )
        )
    return agents
