"""Span records -> MultiAgentTrace: find the agents, place every model call in one.

What each span is comes from the conventions table (`conventions`), asked once per span
(`classify`): agents and workflows, model calls, tool runs, hand-offs. The walk reads
nothing else of a span's attributes. Each model call belongs to its nearest agent
ancestor; calls outside every agent, and spans whose parent is missing, belong to the
root. Agents no span names (an agent run as a tool or a pipeline component, told apart by
its own system prompt), agent spans that are steps and wrapper workflows are phases of
their own (`_infer_agents`), for every producer; so are agents named by the span that
groups their calls (`_infer_named_agents`, `_settle_named_agents`, `_infer_pipeline`),
model calls recognised by their shape on spans no row claims (`_infer_calls`), streamed
responses recorded apart from their request (`_infer_responses`), agents named only in
the events their steps return (`_infer_turns`), tool runs and hand-offs on steps
(`_infer_tool_runs`), and model-call spans that record nothing beside the call that does
(`_infer_wrappers`). Items are ordered by start time. A call recorded by several
instrumentations (nested or side by side) is one interaction: see `_merge` for how such
records are matched and merged.

One trace is built in phases, each a function that hands the next what it found as a
frozen record, whose fields are not reassigned afterwards (`_build_trace`): lay out
(`_LaidOut`: the table's readings, the agent spans settled), sort out (`_Found`: model
calls read, tool runs, hand-offs), infer the agents no span names (a new `_LaidOut` where
turns moved), place (`_Placed`: each agent's parent, each call's agent), choose the root
(`_Root`), assemble (interactions and child agents into their agents, in order; tool
results joined) and attach (hand-offs, answers, evaluations). What the phases fill in
place is the agents (`_Agent`, registered in `_Agents` with ids of their own), the calls'
extractions and the interactions built from them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from tracejudge import semconv
from tracejudge.convert import (
    _agents,
    _answers,
    _evaluations,
    _handoffs,
    _infer_agents,
    _infer_calls,
    _infer_history_calls,
    _infer_named_agents,
    _infer_pipeline,
    _infer_responses,
    _infer_summaries,
    _infer_tool_calls,
    _infer_tool_runs,
    _infer_turn_content,
    _infer_turns,
    _infer_unrecorded_calls,
    _infer_wrappers,
    _interactions,
    _merge,
    _records,
    _settle_named_agents,
    _tools,
    conventions,
)
from tracejudge.convert._agents import Readings
from tracejudge.convert._common import FINISH_TOOL_CALLS, Extraction
from tracejudge.convert._construct import build
from tracejudge.convert._memo import ConversionMemo
from tracejudge.convert._records import STATUS_ERROR, SpanRecord, describe
from tracejudge.convert._tool_ids import join_tool_ids
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import Kind
from tracejudge.models import (
    AgentInstance,
    LLMInteraction,
    LLMToolDefinition,
    MultiAgentTrace,
)

__all__ = ["build_traces", "classify", "ROOT_AGENT_ID", "ROOT_AGENT_NAME"]

logger = logging.getLogger("tracejudge.convert")

#: Id and name of the agent that holds model calls made outside every agent span.
ROOT_AGENT_ID = "root"
ROOT_AGENT_NAME = "root"

#: The fields of a converted interaction counted as set (`tool_results` is set later, when
#: a tool span supplies results).
_INTERACTION_GIVEN = frozenset(LLMInteraction.model_fields) - {"tool_results"}
_NO_TOOL_CALL = "finished for tool calls, but no tool call was recorded"
#: The fields of a converted agent instance counted as set (the others are set later).
_AGENT_GIVEN = frozenset({"id", "name", "interactions", "span_id"})


@dataclass
class _Agent:
    id: str
    name: str
    span: SpanRecord | None
    # (position of its span in start order, interaction or child agent id)
    items: list[tuple[int, LLMInteraction | str]] = field(default_factory=list)
    #: the tools its span says it offers (Strands, Agent Framework: `invoke_agent` spans)
    tools: list[LLMToolDefinition] | None = None


# --------------------------------------------------------------------------- classification


def classify(spans: Iterable[SpanRecord], memo: ConversionMemo | None = None) -> Readings:
    """What the conventions table says of each span it knows: (the span's view, the
    convention that claims it, its `Kind`), by span id."""
    memo = memo if memo is not None else ConversionMemo()
    readings: Readings = {}
    for span in spans:
        view = SpanView(span, memo)
        found = conventions.classify(view)
        if found is not None:
            readings[span.span_id] = (view, found[0], found[1])
    return readings


def is_llm_span(span: SpanRecord) -> bool:
    """Whether the span records one call to a model, in any convention we read."""
    found = conventions.classify(SpanView(span))
    return found is not None and found[1] is Kind.MODEL_CALL


def _sort_key(span: SpanRecord | None, seq: int) -> tuple[bool, int, int]:
    start = span.start_ns if span is not None else None
    return (start is None, start if start is not None else 0, seq)


_first = itemgetter(0)


def build_traces(
    records: Iterable[SpanRecord],
    warnings: list[str],
    *,
    release: bool = False,
    memo: ConversionMemo | None = None,
) -> list[MultiAgentTrace]:
    """One MultiAgentTrace per trace id holding an agent or model call, ordered by first
    span start. `warnings` (about the input as a whole) are copied into every trace.
    `memo` carries what was learnt reading spans before (see `_memo`); a new one without.

    With `release`, `records` (a list) is the converter's own: it is emptied once its
    records are grouped by trace, and each trace's records are let go once the trace is
    built, so that their memory serves the traces built after it instead of new pages.
    """
    by_trace: dict[str, dict[str, SpanRecord]] = {}
    linking: list[SpanRecord] = []
    for record in records:
        spans = by_trace.get(record.trace_id)
        if spans is None:
            spans = by_trace[record.trace_id] = {}
        previous = spans.get(record.span_id)
        # The same span seen twice (running, then ended): keep the ended copy.
        if previous is None or (previous.running and not record.running):
            spans[record.span_id] = record
        if record.links:
            linking.append(record)
    if linking:
        _join_linked(by_trace, linking)
    # Each trace's spans in start order: its first span's start is the trace's (unknown
    # only when every start is: those sort last).
    groups: list[list[SpanRecord] | None] = [
        _in_start_order(list(spans.values())) for spans in by_trace.values()
    ]
    del by_trace
    if release and isinstance(records, list):
        records.clear()

    def first_start(index: int) -> tuple[bool, int, int]:
        start = groups[index][0].start_ns  # type: ignore[index]  # none is released (None) yet
        return (start is None, start or 0, index)

    traces: list[MultiAgentTrace] = []
    memo = memo if memo is not None else ConversionMemo()
    for index in sorted(range(len(groups)), key=first_start):
        group = groups[index]
        assert group is not None
        if release:
            groups[index] = None
        try:
            trace = _build_trace(group, list(warnings), memo)
        except Exception:  # a safety net: one broken trace must not lose the others
            logger.exception("tracejudge.convert: could not convert a trace; skipped")
            continue
        if trace is not None:
            traces.append(trace)
    return traces


def _join_linked(by_trace: dict[str, dict[str, SpanRecord]], linking: list[SpanRecord]) -> None:
    """Traces tied by span links become one: AutoGen's runtime starts a new trace for each
    message it passes, linked to the span that sent it (autogen-core's
    `_telemetry/_tracing.py`: `start_as_current_span(..., links=get_telemetry_links(parent))`),
    so one `team.run` is a dozen traces, its agents in different ones. Each group of traces
    linked to one another (those in the input) is kept under the trace id of its first
    trace in input order; the spans keep their parents, so each trace's root stays a root."""
    joined: dict[str, str] = {}

    def top(trace_id: str) -> str:
        while trace_id in joined:
            trace_id = joined[trace_id]
        return trace_id

    order = {trace_id: i for i, trace_id in enumerate(by_trace)}
    for record in linking:
        for linked_trace, _ in record.links:
            if linked_trace not in by_trace:
                continue
            a, b = top(record.trace_id), top(linked_trace)
            if a != b:
                first, second = (a, b) if order[a] < order[b] else (b, a)
                joined[second] = first
    for trace_id in list(joined):
        target = top(trace_id)
        spans = by_trace.pop(trace_id)
        into = by_trace[target]
        for span_id, record in spans.items():
            into.setdefault(span_id, record)


def _in_start_order(spans: list[SpanRecord]) -> list[SpanRecord]:
    """The spans by start time, those without one last, ties in input order (the sort is
    stable): the order `_sort_key` gives with each span's input position as `seq`."""
    try:  # the usual case, every start known: a plain sort (checking first cost as much)
        return sorted(spans, key=_start_ns)  # type: ignore[arg-type]  # a None start: TypeError
    except TypeError:  # a None was compared (with two spans or more, every key is compared)
        return sorted(spans, key=lambda span: _sort_key(span, 0))


def _start_ns(span: SpanRecord) -> int | None:
    return span.start_ns


def _build_trace(
    spans: list[SpanRecord], warnings: list[str], memo: ConversionMemo
) -> MultiAgentTrace | None:
    """The trace of `spans` (one trace's, in start order: see `_in_start_order`), or None
    when it holds no agent and no model call. Each phase hands the next what it found."""
    laid_out = _lay_out(spans, memo, warnings)
    agents = _Agents(warnings)
    found = _sort_out(laid_out, agents, warnings)
    if found is None:
        return None
    laid_out, inferred = _infer_agents_of(laid_out, found, agents)
    placed = _place(laid_out, found, agents, warnings)
    root = _choose_root(laid_out, placed, agents, warnings)
    where = _Where(laid_out.by_id, agents.by_span, root.agent)
    _assemble(laid_out, found, placed, root, agents, where, warnings)
    return _attach(laid_out, found, placed, root, agents, inferred, where, warnings)


@dataclass(frozen=True)
class _LaidOut:
    """The trace's spans as the layout settled them (`_agents.layout` and the phases that
    settle its agents), with the table's reading of each."""

    readings: Readings
    layout: _agents.Layout
    spans: list[SpanRecord]
    by_id: dict[str, SpanRecord]
    #: each span's position in start order
    seq: dict[str, int]
    #: the spans a row read as model calls that are runs of the calls below them
    runs: frozenset[str]


@dataclass(frozen=True)
class _Found:
    """What the spans are (`_sort_out`): model calls, tool runs, hand-offs."""

    llm_ids: frozenset[str]
    #: the model calls read, in start order
    readable: list[tuple[SpanRecord, Extraction]]
    #: warnings about calls, given after those about agents
    unreadable: list[str]
    tool_runs: list[tuple[SpanRecord, _tools.ToolRun]]
    handoffs: list[tuple[SpanRecord, _handoffs.Handoff]]
    #: the spans with events (where evaluation events may be)
    with_events: list[SpanRecord]


@dataclass(frozen=True)
class _Placed:
    """Where agents and calls sit in the tree (`_place`)."""

    #: each agent's parent agent (span ids; None: a top agent)
    parent_of_agent: dict[str, str | None]
    top_agents: list[str]
    #: top agents whose parent span is missing from the input (not real roots)
    orphan_agents: list[str]
    #: model calls outside every agent
    loose: list[SpanRecord]
    #: model calls whose parent span is missing
    orphan_calls: list[SpanRecord]
    #: each model call (its records grouped) with the span id of its agent (None: outside)
    calls: list[tuple[_merge.Call, str | None]]


@dataclass(frozen=True)
class _Root:
    agent: _Agent
    #: the root made for a trace without one real root agent (None: a real agent is root)
    implicit: _Agent | None


class _Agents:
    """The trace's agents by span id, each with an id no other agent has."""

    def __init__(self, warnings: list[str]) -> None:
        self.by_span: dict[str, _Agent] = {}
        self.used_ids: set[str] = set()
        self._warnings = warnings

    def add(self, span: SpanRecord, identity: tuple[str | None, str]) -> _Agent:
        declared, name = identity
        agent_id = declared or span.span_id
        if agent_id in self.used_ids:
            self._warnings.append(
                f"{describe(span)}: agent id {agent_id!r} is used by another agent span; "
                f"this one is {agent_id}#{span.span_id}"
            )
            agent_id = f"{agent_id}#{span.span_id}"
        self.used_ids.add(agent_id)
        agent = self.by_span[span.span_id] = _Agent(id=agent_id, name=name, span=span)
        return agent


#: Where a span sits: (its nearest agent ancestor's span id, its nearest model-call
#: ancestor's span id, whether the chain of parents is broken: a parent not in the input)
_Place = tuple["str | None", "str | None", bool]


def _placement(
    span: SpanRecord,
    by_id: dict[str, SpanRecord],
    agents: Container[str],
    llm_ids: Container[str] = (),
) -> _Place:
    """Where the span sits among the agent spans `agents` (see `_Place`)."""
    seen = {span.span_id}
    parent_id = span.parent_id
    llm_ancestor = None
    while parent_id and parent_id not in seen:
        seen.add(parent_id)
        if parent_id in agents:
            return parent_id, llm_ancestor, False
        parent = by_id.get(parent_id)
        if parent is None:
            return None, llm_ancestor, True
        if parent_id in llm_ids and llm_ancestor is None:
            llm_ancestor = parent_id
        parent_id = parent.parent_id
    return None, llm_ancestor, False


@dataclass(frozen=True)
class _Where:
    """The agent each span belongs to: its nearest agent above, else the root."""

    by_id: dict[str, SpanRecord]
    agents: dict[str, _Agent]
    root: _Agent

    def owner(self, span: SpanRecord) -> _Agent:
        agent_span_id = _placement(span, self.by_id, self.agents)[0]
        return self.agents[agent_span_id] if agent_span_id is not None else self.root


# --------------------------------------------------------------------- 0. lay out


def _lay_out(spans: list[SpanRecord], memo: ConversionMemo, warnings: list[str]) -> _LaidOut:
    """Read each span through the table, with what the phases that need no row add, and
    settle which spans are agents."""
    readings = classify(spans, memo)
    # (model calls no row claims, recognised by their shape)
    _infer_calls.add_shaped_calls(spans, readings, memo)
    # (an agent's run that names its model and totals its calls' tokens: no call itself)
    runs = _infer_summaries.drop_run_summaries(spans, readings)
    # (agents named only in the events their steps return)
    _infer_turns.add_named_turns(spans, readings, memo)
    # (tool runs on steps, where no row reads a tool span of the trace)
    _infer_tool_runs.add_shaped_tool_runs(spans, readings, memo)
    layout = _agents.layout(spans, readings)
    _infer_agents.settle(layout, readings)  # phantom agents, wrapper workflows
    _settle_named_agents.name_agents_by_attribute(layout)  # (not by the span's name)
    # (an agent's span named after it; a node nested in another node's run)
    _settle_named_agents.fold_named_twins(layout, readings)
    _settle_named_agents.drop_nested_runs(layout, readings)
    warnings.extend(layout.warnings)  # what agent spans' identities lack
    seq = {span.span_id: i for i, span in enumerate(layout.spans)}
    return _LaidOut(readings, layout, layout.spans, layout.by_id, seq, frozenset(runs))


# --------------------------------------------------------------------- 1. sort out


def _sort_out(laid_out: _LaidOut, agents: _Agents, warnings: list[str]) -> _Found | None:
    """Read every span as what the table says it is (agents into `agents`); None when the
    trace holds no agent and no model call."""
    identities = laid_out.layout.identities
    readings = laid_out.readings
    llm_ids: set[str] = set()
    readable: list[tuple[SpanRecord, Extraction]] = []
    unreadable: list[str] = []
    tool_runs: list[tuple[SpanRecord, _tools.ToolRun]] = []
    handoffs: list[tuple[SpanRecord, _handoffs.Handoff]] = []
    with_events: list[SpanRecord] = []
    #: (scope, how to get agents) of the first model call whose producer names its agents
    #: only in recorded content (`Convention.agent_setting`)
    agentless: tuple[str, str] | None = None
    named = False  # an agent named by a producer that names them only in content
    for span in laid_out.spans:
        if span.events:
            with_events.append(span)
        identity = identities.get(span.span_id)
        reading = readings.get(span.span_id)
        if identity is not None:
            agent = agents.add(span, identity)
            if reading is not None:
                agent.tools = reading[1].agent_tools(reading[0], warnings)
                handoff = reading[1].agent_handoff(reading[0])
                if handoff is not None:
                    handoffs.append((span, handoff))
                named |= reading[1].agent_setting is not None
            continue
        if reading is None:
            continue
        view, convention, kind = reading
        if kind is Kind.MODEL_CALL:
            llm_ids.add(span.span_id)
            if convention.agent_setting is not None and agentless is None:
                agentless = (span.scope or convention.name, convention.agent_setting)
            extraction = _interactions.read_call(view, convention, unreadable)
            if extraction is not None:
                readable.append((span, extraction))
        elif kind is Kind.TOOL_RUN:
            run = convention.tool_run(view)
            if run is not None:
                tool_runs.append((span, run))
                if run.handoff_to:
                    handoffs.append((span, _handoffs.Handoff(None, run.handoff_to, span.start_ns)))
        elif kind is Kind.HANDOFF:
            found = convention.handoff(view)
            if found is not None:
                handoffs.append((span, found))
    if tool_runs and not handoffs:
        handoffs = _handoffs_by_arguments(laid_out, agents, tool_runs)
    # (the steps on the way to a call that an instrumentation records as calls)
    steps = _infer_wrappers.empty_steps(readable, laid_out.spans)
    if steps:
        readable = [item for item in readable if item[0].span_id not in steps]
        llm_ids -= steps
    if agentless is not None and not named:
        scope, setting = agentless
        unreadable.append(
            f"{scope} recorded no agent identity: its model calls belong to the agent "
            f"around them (or the root); {setting}"
        )
    if not agents.by_span and not llm_ids:
        return None
    return _Found(frozenset(llm_ids), readable, unreadable, tool_runs, handoffs, with_events)


def _handoffs_by_arguments(
    laid_out: _LaidOut, agents: _Agents, tool_runs: list[tuple[SpanRecord, _tools.ToolRun]]
) -> list[tuple[SpanRecord, _handoffs.Handoff]]:
    """In a trace that records no hand-off: a tool run whose arguments name another agent
    of the trace (`to_agent`, `agent_name`) passed the run to it."""
    names = {agent.name for agent in agents.by_span.values()}
    if not names:
        return []
    # (the root is not chosen yet: a run outside every agent is the root's, by its name)
    unchosen = _Agent(id=ROOT_AGENT_ID, name=ROOT_AGENT_NAME, span=None)
    where = _Where(laid_out.by_id, agents.by_span, unchosen)
    found = []
    for span, run in tool_runs:
        target = _infer_tool_runs.handoff_target(run.arguments)
        if target in names and target != where.owner(span).name:
            found.append((span, _handoffs.Handoff(None, target, span.start_ns)))
    return found


# --------------------------------------------------------------------- 2. infer agents


def _infer_agents_of(
    laid_out: _LaidOut, found: _Found, agents: _Agents
) -> tuple[_LaidOut, list[_infer_agents.InferredAgent]]:
    """Add the agents that only the calls' system prompts and the spans around them show
    (see `_infer_agents`); the spans with later turns moved under their first, and the
    agents found from the calls' structure."""
    readable, readings = found.readable, laid_out.readings
    named = _infer_named_agents.infer_named(
        readable,
        laid_out.by_id,
        {span_id: agent.name for span_id, agent in agents.by_span.items()},
        readings,
        laid_out.runs,
    )
    if named.later_turns:
        laid_out = _join_later_turns(laid_out, named.later_turns)
    by_id = laid_out.by_id
    for agent in named.agents:
        agents.add(by_id[agent.span.span_id], agent.identity)
    pipeline = _infer_pipeline.infer_pipeline(readable, by_id, agents.by_span, readings)
    for agent in pipeline:
        agents.add(agent.span, agent.identity)
    named_agents = named.agents + pipeline
    structural = _infer_agents.infer(readable, by_id, agents.by_span, readings, found.tool_runs)
    for agent in structural:
        agents.add(agent.span, agent.identity)
    return laid_out, named_agents + structural


def _join_later_turns(laid_out: _LaidOut, later_turns: dict[str, str]) -> _LaidOut:
    """Re-parent each later turn of an agent under its first turn, which ends when its
    last turn does (copies of the spans, as `_agents.layout` makes)."""
    ends: dict[str, int] = {}
    for later, first in later_turns.items():
        end = laid_out.by_id[later].end_ns
        if end is not None:
            ends[first] = max(ends.get(first, 0), end)
    spans = _records.moved(laid_out.spans, later_turns, ends)
    by_id = {span.span_id: span for span in spans}
    return dataclasses.replace(laid_out, spans=spans, by_id=by_id)


# --------------------------------------------------------------------- 3. place


def _place(laid_out: _LaidOut, found: _Found, agents: _Agents, warnings: list[str]) -> _Placed:
    """Each agent's parent agent, and each model call (its records grouped) with the span
    id of the agent it belongs to (None: outside every agent)."""
    by_span, by_id, llm_ids = agents.by_span, laid_out.by_id, found.llm_ids
    agent_places = {
        span_id: _placement(agent.span, by_id, by_span, llm_ids)
        for span_id, agent in by_span.items()
        if agent.span
    }
    parent_of_agent = {span_id: place[0] for span_id, place in agent_places.items()}
    _break_cycles(parent_of_agent, by_span, laid_out.seq, warnings)
    top_agents = [s for s, parent in parent_of_agent.items() if parent is None]
    orphan_agents = [s for s in top_agents if agent_places[s][2]]
    readable = found.readable
    # (calls recorded without messages, in agent turns recorded with them)
    turns = by_span.keys() | laid_out.layout.later_turns
    _infer_turn_content.fill_from_turns(readable, by_id, turns)
    # (a streamed call's response recorded apart from its request: one call)
    _infer_responses.mark_responses_apart(readable)
    places = {span.span_id: _placement(span, by_id, by_span, llm_ids) for span, _ in readable}
    warnings.extend(found.unreadable)
    calls: list[tuple[_merge.Call, str | None]] = []
    loose: list[SpanRecord] = []
    orphan_calls: list[SpanRecord] = []
    for call in _merge.group_calls(readable, lambda span: places[span.span_id][1]):
        agent_span_id, _, broken = places[call.span.span_id]
        calls.append((call, agent_span_id))
        if agent_span_id is None:
            (orphan_calls if broken else loose).append(call.span)
        for inner, outer in call.doubled:
            warnings.append(
                f"{describe(inner)}: nested in model-call span {outer.span_id} of the "
                f"same instrumentation ({inner.scope}), which wrapped the client twice; "
                "read as one call"
            )
    return _Placed(parent_of_agent, top_agents, orphan_agents, loose, orphan_calls, calls)


# --------------------------------------------------------------------- 4. choose the root


def _choose_root(
    laid_out: _LaidOut, placed: _Placed, agents: _Agents, warnings: list[str]
) -> _Root:
    """The one real root agent, or (several top agents, or model calls outside every
    agent) an implicit root agent holding them. Spans whose parent is missing attach to
    the root; a lone agent whose parent is missing is the root itself (the spans of one
    agent's subtree, as `AgentTracer.trace` reads them)."""
    by_span, orphans = agents.by_span, placed.orphan_agents
    real_roots = [span_id for span_id in placed.top_agents if span_id not in orphans]
    implicit = None
    if not placed.loose and len(real_roots) == 1:
        root = by_span[real_roots[0]]
    elif not placed.loose and not real_roots and not placed.orphan_calls and len(orphans) == 1:
        root = by_span[orphans[0]]
    else:
        root_id = ROOT_AGENT_ID
        while root_id in agents.used_ids:
            root_id = "_" + root_id
        root = implicit = _Agent(id=root_id, name=ROOT_AGENT_NAME, span=None)
    for span_id in placed.top_agents:
        if by_span[span_id] is not root:
            if span_id in orphans and implicit is None:
                warnings.append(
                    f"{describe(laid_out.by_id[span_id])}: its parent span is missing; "
                    "attached to the root agent"
                )
            root.items.append((laid_out.seq[span_id], by_span[span_id].id))
    if placed.orphan_calls and implicit is None:
        warnings.append(
            f"{len(placed.orphan_calls)} model-call spans whose parent span is missing; "
            "attached to the root agent"
        )
    return _Root(root, implicit)


def _every_agent(agents: _Agents, root: _Root) -> list[_Agent]:
    implicit = [root.implicit] if root.implicit is not None else []
    return implicit + list(agents.by_span.values())


# --------------------------------------------------------------------- 5. assemble


def _assemble(
    laid_out: _LaidOut,
    found: _Found,
    placed: _Placed,
    root: _Root,
    agents: _Agents,
    where: _Where,
    warnings: list[str],
) -> None:
    """Child agents and interactions into their agents, in start order; tool call ids
    joined across the trace; tool results from tool spans."""
    by_span, seq = agents.by_span, laid_out.seq
    for span_id, parent in placed.parent_of_agent.items():
        if parent is not None:
            by_span[parent].items.append((seq[span_id], by_span[span_id].id))
    aliases: dict[str, str] = {}
    for call, agent_span_id in placed.calls:
        interaction = _interactions.interaction(call, warnings, aliases)
        owner = by_span[agent_span_id] if agent_span_id is not None else root.agent
        owner.items.append((seq[call.span.span_id], interaction))
    every = _every_agent(agents, root)
    for agent in every:
        agent.items.sort(key=_first)
        if agent.tools is not None:
            _offer_agent_tools(agent)
    join_tool_ids(((item for _, item in agent.items) for agent in every), aliases)
    _supply_tool_results(found.tool_runs, every, where, warnings)
    _join_history_calls(every, placed.calls, warnings)


def _join_history_calls(
    every: list[_Agent], calls: list[tuple[_merge.Call, str | None]], warnings: list[str]
) -> None:
    """Calls no answer and no tool span recorded, from the agent's next input, else from
    the call's indexed keys (`_infer_history_calls`); only where a call finished for tool
    calls with none (most traces have none: nothing is made for them)."""
    spans: dict[str, Mapping[str, Any]] | None = None  # each call span's attributes
    for agent in every:
        interactions = [i for _, i in agent.items if isinstance(i, LLMInteraction)]
        if any(i.finish_reason == FINISH_TOOL_CALLS and not i.tool_calls for i in interactions):
            if spans is None:
                spans = {call.span.span_id: call.span.attributes for call, _ in calls}
            _infer_history_calls.join_calls_from_history(interactions)
            _infer_history_calls.join_calls_from_keys(interactions, spans)
            _interactions.drop_answered_warnings(interactions, warnings)


def _supply_tool_results(
    tool_runs: list[tuple[SpanRecord, _tools.ToolRun]],
    every: list[_Agent],
    where: _Where,
    warnings: list[str],
) -> None:
    """Complete each agent's tool results from its tool spans (see `_tools`)."""
    runs: dict[int, list[tuple[SpanRecord, _tools.ToolRun]]] = {}
    for span, run in tool_runs:
        runs.setdefault(id(where.owner(span)), []).append((span, run))
    if not runs:
        return
    for owner in every:
        owned = runs.get(id(owner))
        if owned:  # (`supply_results` does nothing without runs)
            interactions = [i for _, i in owner.items if isinstance(i, LLMInteraction)]
            _tools.supply_results(interactions, [run for _, run in owned])
            # (runs no recorded call claimed: calls recorded only on their tool spans)
            _infer_unrecorded_calls.join_unrecorded_calls(interactions, [run for _, run in owned])
            # (runs no recorded call claimed: calls written in the model's text)
            _infer_tool_calls.join_text_calls(
                interactions, [(span.span_id, span.start_ns, run) for span, run in owned]
            )
            _interactions.drop_answered_warnings(interactions, warnings)


# --------------------------------------------------------------------- 6. attach


def _attach(
    laid_out: _LaidOut,
    found: _Found,
    placed: _Placed,
    root: _Root,
    agents: _Agents,
    inferred: list[_infer_agents.InferredAgent],
    where: _Where,
    warnings: list[str],
) -> MultiAgentTrace:
    """The agent instances, depth first from the root, with their hand-offs, answers and
    evaluations, as one trace."""
    every = _every_agent(agents, root)
    instances = _instances(root.agent, every)
    _record_handoffs(found.handoffs, agents.by_span, placed.parent_of_agent, where, instances)
    recorded = _recorded_answers(laid_out, agents.by_span, every, instances)
    _answers.fill_answers(instances, root.agent.id, recorded)
    if inferred:
        parent_of_agent, by_span = placed.parent_of_agent, agents.by_span

        def parent_agent_id(span_id: str) -> str:
            parent = parent_of_agent.get(span_id)
            return by_span[parent].id if parent is not None else root.agent.id

        _infer_agents.answer_tool_calls(
            inferred,
            {span_id: agent.id for span_id, agent in by_span.items()},
            instances,
            parent_agent_id,
        )
    _infer_tool_calls.join_agent_calls(instances)  # (managed agents run from code)
    _place_evaluations(found.with_events, agents.by_span, where, instances, warnings)
    # Built without validation: the converter guarantees what `MultiAgentTrace` checks
    # (the root is an instance, each key is its instance's id, every child id is an
    # instance: `instances` holds the tree walked from the root; no cycle: cut above).
    return build(
        MultiAgentTrace,
        {
            "root_agent_instance_id": root.agent.id,
            "agent_instance_by_id": instances,
            "warnings": warnings,
            "trace_id": laid_out.spans[0].trace_id if laid_out.spans else None,
        },
    )


def _instances(root: _Agent, every: list[_Agent]) -> dict[str, AgentInstance]:
    by_agent_id = {agent.id: agent for agent in every}
    instances: dict[str, AgentInstance] = {}
    stack = [root.id]
    while stack:  # depth first from the root, so the dict reads like the tree
        agent = by_agent_id[stack.pop()]
        if agent.id in instances:
            continue
        instances[agent.id] = build(
            AgentInstance,
            {
                "id": agent.id,
                "name": agent.name,
                "interactions": [item for _, item in agent.items],
                "output": None,
                "handoff": None,
                "span_id": agent.span.span_id if agent.span is not None else None,
                "evaluations": None,
            },
            _AGENT_GIVEN,
        )
        stack.extend(reversed([i for _, i in agent.items if isinstance(i, str)]))
    return instances


def _recorded_answers(
    laid_out: _LaidOut,
    by_span: dict[str, _Agent],
    every: list[_Agent],
    instances: dict[str, AgentInstance],
) -> dict[str, str]:
    """Each agent's answer as its own spans record it (or its last tool result, for an
    agent that ended on a tool)."""
    recorded = {}
    output_spans = laid_out.layout.output_spans
    for span_id, agent in by_span.items():
        for record in output_spans.get(span_id, []):
            text = _answers.recorded_output(record)
            if text is not None:
                recorded[agent.id] = text
                break
        instance = instances.get(agent.id)
        if agent.id not in recorded and instance is not None and agent.span is not None:
            text = _answers.tool_answer(instance, failed=agent.span.status == STATUS_ERROR)
            if text is not None:
                recorded[agent.id] = text
    for agent in every:  # (the implicit root too)
        instance = instances.get(agent.id)
        if agent.id in recorded or instance is None:
            continue
        last = next((i for i in reversed(instance.llm_interactions) if i.output_text), None)
        if last is not None and last.span_id is not None:
            steps = _steps_above(laid_out.by_id, by_span, last.span_id, agent)
            text = _answers.field_answer(last.output_text, steps)
            if text is not None:
                recorded[agent.id] = text
    return recorded


def _steps_above(
    by_id: dict[str, SpanRecord], agent_spans: Container[str], span_id: str, agent: _Agent
) -> Iterator[SpanRecord]:
    """The spans enclosing `span_id` below `agent`'s own span, nearest first (up to the
    trace's root for an agent without a span); none past another agent's span."""
    record = by_id.get(span_id)
    stop = agent.span.span_id if agent.span is not None else None
    seen = {span_id}
    while record is not None and record.parent_id and record.parent_id not in seen:
        parent_id = record.parent_id
        if parent_id == stop or parent_id in agent_spans:
            return
        seen.add(parent_id)
        record = by_id.get(parent_id)
        if record is not None:
            yield record


def _offer_agent_tools(agent: _Agent) -> None:
    """The tools an agent's span lists are offered in each of its calls that records none
    (the calls' own lists, where recorded, are what the model saw)."""
    for _, item in agent.items:
        if isinstance(item, LLMInteraction) and item.tools_available is None:
            item.tools_available = list(agent.tools or [])


def _place_evaluations(
    with_events: list[SpanRecord],
    by_span: dict[str, _Agent],
    where: _Where,
    instances: dict[str, AgentInstance],
    warnings: list[str],
) -> None:
    """Put every evaluation event of the trace's spans that have events (in start order)
    on the agent it judges (see `_evaluations`): the instance the event names, else the
    agent whose span carries it, else the nearest agent above that span."""
    for span in with_events:
        for event in span.events:
            if not _evaluations.is_evaluation(event):
                continue
            result = _evaluations.recorded_evaluation(event)
            if result is None:
                warnings.append(
                    f"{describe(span)}: an evaluation event without "
                    f"{semconv.GEN_AI_EVALUATION_NAME}; skipped"
                )
                continue
            named = _evaluations.judged_instance(event)
            if named in instances:
                owner = instances[named]
            elif span.span_id in by_span:
                owner = instances[by_span[span.span_id].id]
            else:
                owner = instances[where.owner(span).id]
            owner.evaluations = [*(owner.evaluations or []), result]


def _break_cycles(
    parent_of_agent: dict[str, str | None],
    agents: dict[str, _Agent],
    seq: dict[str, int],
    warnings: list[str],
) -> None:
    """Corrupt parent ids can make agents each other's ancestors; such agents would be
    unreachable from the root. Cut each cycle at its earliest agent, which becomes top-level."""
    for span_id in list(parent_of_agent):
        chain: list[str] = []
        current: str | None = span_id
        while current is not None and current not in chain:
            chain.append(current)
            current = parent_of_agent.get(current)
        if current is None:
            continue
        cycle = chain[chain.index(current) :]
        cut = min(cycle, key=lambda sid: _sort_key(agents[sid].span, seq[sid]))
        parent_of_agent[cut] = None
        warnings.append(
            f"agent spans {', '.join(cycle)} are each other's ancestors (a cycle); "
            f"{cut} is taken as top-level"
        )


def _record_handoffs(
    handoffs: list[tuple[SpanRecord, _handoffs.Handoff]],
    agents: dict[str, _Agent],
    parent_of_agent: dict[str, str | None],
    where: _Where,
    instances: dict[str, AgentInstance],
) -> None:
    """Set `AgentInstance.handoff` from the trace's hand-off spans (see `_handoffs`), given
    with what each records, in start order."""
    for span, found in handoffs:
        owner = where.owner(span)
        if found.from_agent and owner.name != found.from_agent:
            named = [a for a in agents.values() if a.name == found.from_agent and a.span]
            covering = [a for a in named if _started_before(a.span, found.start_ns)]
            owner = covering[-1] if covering else owner
        target = found.to_agent
        if target is None and found.start_ns is not None:
            excluded = {owner.span.span_id} if owner.span else set()
            ancestor = parent_of_agent.get(owner.span.span_id) if owner.span else None
            while ancestor is not None and ancestor not in excluded:
                excluded.add(ancestor)
                ancestor = parent_of_agent.get(ancestor)
            later = [
                a
                for span_id, a in agents.items()
                if span_id not in excluded
                and a.span is not None
                and a.span.start_ns is not None
                and a.span.start_ns >= found.start_ns
            ]
            if later:
                target = min(
                    later, key=lambda a: (a.span.start_ns or 0) if a.span is not None else 0
                ).name
        if owner.id in instances:
            instances[owner.id].handoff = target or ""


def _started_before(span: SpanRecord | None, start_ns: int | None) -> bool:
    if span is None or span.start_ns is None or start_ns is None:
        return False
    return span.start_ns <= start_ns and (span.end_ns is None or start_ns <= span.end_ns)
