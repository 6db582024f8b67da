"""Which spans are agents, and what each is called: the agents of one trace, from what the
conventions table says of each span (`conventions.classify`).

Agent spans are the spans the table classifies as agents or workflows, with one rule of
LangGraph's: a node nested in another node is a step of the outer node's agent.

A framework that runs its agents' steps side by side marks whose turn it is with a step
(a TURN span): that agent runs the turn span and its later siblings until a turn of
another agent, which are re-parented under the turn span (copies), itself the agent span.

Two instrumentation habits are then undone, so that one agent run is one agent:

- a childless agent span that covers, in time, a sibling subtree of the same name
  (OpenLLMetry's `invoke_agent researcher` beside the `execute_task researcher` that holds
  the researcher's calls) owns that subtree;
- an agent span whose nearest agent ancestor has the same name and no other agent child
  (`invoke_agent X` around `X.workflow`) is that ancestor: the two are one agent;
- a workflow's first agent child is the workflow itself when it has the workflow's name,
  or the workflow has none, whatever other agents the workflow ran: Google ADK wraps the
  run of the runner's root agent X in `invoke_workflow X` (schema v2) or an unnamed
  `invocation` (schema v1), and an agent X transfers to runs beside X in it; the two are
  one agent (named X), and the agents beside it are its children.

An agent recorded turn by turn (AG2's classic `invoke_agent` per reply) is one agent: its
later turns in one conversation are joined into its first (`_join_turns`).

An agent run by another agent's tool is that agent's child, even where the instrumentation
records its span beside the caller's instead of under the tool run (OpenLLMetry's Agents
SDK instrumentation puts `translator.agent`, run by the manager's `Agent.as_tool` tool, under
the workflow): an agent span that lies, in time, within a tool run of a sibling agent is
re-parented under that tool run. (Time alone decides: a sibling agent run concurrently,
not by the tool, that starts and ends within another's tool run would be taken as run by
it; the frameworks recorded here run an agent's siblings one after the other.)

Both fold only a direct child: an agent run inside a tool run or a model call of its
ancestor is an agent of its own, whatever its name (pydantic-ai calls every unnamed agent
`agent`; an agent run by another's tool, or by MCP sampling, is its child).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Mapping
from dataclasses import dataclass, field

from tracejudge import semconv
from tracejudge.convert._common import as_str
from tracejudge.convert._join_turns import join_turns
from tracejudge.convert._records import SpanRecord, moved
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions import LANGGRAPH, Convention, Identity, Kind

__all__ = ["Layout", "agent_above", "inside_a_call", "layout"]

#: (the span's view, the convention that claims it, its kind), by span id
Readings = dict[str, tuple[SpanView, Convention, str]]
_AGENT_KINDS = (Kind.AGENT, Kind.WORKFLOW)
#: The name of a workflow that has none of its own and no agent to take it from.
_UNNAMED_WORKFLOW = "workflow"


@dataclass
class Layout:
    """The agents of one trace's spans.

    `spans` are the input spans, with the parent of an adopted subtree rewritten (copies;
    the input is not changed); `identities` maps each agent span's id to its identity;
    `output_spans` lists, per agent span, the spans whose recorded output is that agent's
    (itself first, then the twins folded into it); LangGraph node agents have none, since
    a node's output is a state update, not an answer. `by_id` maps span ids to `spans`;
    `warnings` says what agent spans' identities lack (`Convention.identity_warnings`).
    """

    spans: list[SpanRecord]
    identities: dict[str, Identity] = field(default_factory=dict)
    output_spans: dict[str, list[SpanRecord]] = field(default_factory=dict)
    by_id: dict[str, SpanRecord] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: the agent spans read as later turns of an agent (`_join_turns`): no agents of their
    #: own, still turns that record their model call's messages
    later_turns: set[str] = field(default_factory=set)


def _parent_chain(span: SpanRecord, by_id: dict[str, SpanRecord]) -> list[SpanRecord]:
    """The span's ancestors present in the input, nearest first (cycles cut)."""
    chain: list[SpanRecord] = []
    seen = {span.span_id}
    parent_id = span.parent_id
    while parent_id and parent_id not in seen and parent_id in by_id:
        seen.add(parent_id)
        parent = by_id[parent_id]
        chain.append(parent)
        parent_id = parent.parent_id
    return chain


def agent_above(
    span: SpanRecord, by_id: Mapping[str, SpanRecord], agents: Container[str]
) -> str | None:
    """The span id of the span's nearest ancestor among `agents` in the input, or None
    (any set of span ids: the nearest of them above the span)."""
    seen = {span.span_id}
    parent_id = span.parent_id
    while parent_id and parent_id not in seen:
        if parent_id in agents:
            return parent_id
        parent = by_id.get(parent_id)
        if parent is None:
            return None
        seen.add(parent_id)
        parent_id = parent.parent_id
    return None


def _agent_above(
    span: SpanRecord, by_id: dict[str, SpanRecord], identities: dict[str, Identity]
) -> str | None:
    """The span id of the span's nearest agent ancestor in the input, or None (the first
    agent of `_parent_chain`, found without walking on above it)."""
    found = agent_above(span, by_id, identities)
    return found if found in by_id else None


def layout(spans: list[SpanRecord], readings: Readings) -> Layout:
    """Find the agents among one trace's spans (ordered by start time), given what the
    conventions table says of each (`readings`)."""
    by_id = {span.span_id: span for span in spans}
    identities: dict[str, Identity] = {}
    output_spans: dict[str, list[SpanRecord]] = {}
    warnings: list[str] = []
    # What the readings hold, in one pass: LangGraph's nodes, turns, agents, workflows.
    nodes: dict[str, SpanView] = {}
    agent_spans: set[str] = set()
    workflows: set[str] = set()
    turns = False
    for span_id, (view, convention, kind) in readings.items():
        if kind is Kind.AGENT:
            agent_spans.add(span_id)
            if convention is LANGGRAPH:
                nodes[span_id] = view
        elif kind is Kind.WORKFLOW:
            workflows.add(span_id)
        elif kind is Kind.TURN:
            turns = True
    for span in spans:
        reading = readings.get(span.span_id)
        if reading is None or reading[2] not in _AGENT_KINDS:
            continue
        view, convention, _ = reading
        if span.span_id in nodes:
            nested = any(parent.span_id in nodes for parent in _parent_chain(span, by_id))
            if not nested:
                identities[span.span_id] = convention.agent(view)
            continue  # a step of the node it is nested in, whatever its kind
        identities[span.span_id] = convention.agent(view)
        output_spans[span.span_id] = [span]
        warnings.extend(convention.identity_warnings(view))

    if not identities and not turns:  # (no agent: nothing below applies)
        return Layout(spans=spans, by_id=by_id, warnings=warnings)
    if turns:
        spans = _take_turns(spans, readings, identities)
        by_id = {span.span_id: span for span in spans}
    node_names = {span_id: LANGGRAPH.agent(view)[1] for span_id, view in nodes.items()}
    adopted = _adopt_covered_siblings(spans, by_id, identities, node_names)
    if adopted is not spans:
        spans = adopted
        by_id = {span.span_id: span for span in spans}
    moved = _run_by_sibling_tools(spans, by_id, identities, readings)
    if moved is not spans:
        spans = moved
        by_id = {span.span_id: span for span in spans}
    joined, later_turns = join_turns(spans, identities, output_spans, agent_spans)
    if joined is not spans:
        spans = joined
        by_id = {span.span_id: span for span in spans}
    _fold_twins(spans, by_id, identities, output_spans, readings, workflows)
    for span_id in workflows:
        if span_id in identities and not identities[span_id][1]:
            identities[span_id] = (identities[span_id][0], _UNNAMED_WORKFLOW)
    return Layout(
        spans=spans,
        identities=identities,
        output_spans=output_spans,
        by_id=by_id,
        warnings=warnings,
        later_turns=later_turns,
    )


def _take_turns(
    spans: list[SpanRecord], readings: Readings, identities: dict[str, Identity]
) -> list[SpanRecord]:
    """`spans` (in start order) with each turn's later siblings re-parented under it, up
    to the next turn of another agent (a turn of the same agent is a step of the first);
    each turn span that starts a run of its agent is an agent span, ending when its last
    step ends. Its own output is the framework's event, not the agent's answer: the
    agent's answer is its last call's."""
    new_parent: dict[str, str] = {}
    new_end: dict[str, int] = {}
    current: dict[str | None, tuple[str, str]] = {}  # parent id -> (turn span id, agent name)
    for span in spans:
        reading = readings.get(span.span_id)
        if span.span_id in identities:
            continue
        active = current.get(span.parent_id)
        if reading is not None and reading[2] is Kind.TURN:
            identity = reading[1].agent(reading[0])
            if active is None or active[1] != identity[1]:
                identities[span.span_id] = identity
                current[span.parent_id] = (span.span_id, identity[1])
                continue
        if active is not None:
            new_parent[span.span_id] = active[0]
            if span.end_ns is not None:
                new_end[active[0]] = max(new_end.get(active[0], 0), span.end_ns)
    if not new_parent:
        return spans
    return moved(spans, new_parent, new_end)


def _adopt_covered_siblings(
    spans: list[SpanRecord],
    by_id: dict[str, SpanRecord],
    identities: dict[str, Identity],
    nodes: dict[str, str],
) -> list[SpanRecord]:
    """`spans`, or (when a childless agent span covers a sibling subtree of its name) a
    new list with the adopted subtrees' roots re-parented (see the module's docstring)."""
    parents = {span.parent_id for span in spans}
    if all(span_id in parents for span_id in identities):
        return spans  # the usual case: no agent span is childless
    children: dict[str | None, list[SpanRecord]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    new_parent: dict[str, str] = {}
    for span_id, (_, name) in identities.items():
        if span_id in children:
            continue
        span = by_id[span_id]
        if span.parent_id is None:
            continue
        for sibling in children.get(span.parent_id, []):
            if sibling.span_id == span_id or sibling.span_id in identities:
                continue
            if sibling.span_id in new_parent:
                continue
            sibling_name = nodes.get(sibling.span_id) or as_str(
                sibling.attributes.get(semconv.GEN_AI_TASK_NAME)
            )
            if sibling_name == name and _covers(span, sibling):
                new_parent[sibling.span_id] = span_id
    if not new_parent:
        return spans
    return [
        dataclasses.replace(span, parent_id=new_parent[span.span_id])
        if span.span_id in new_parent
        else span
        for span in spans
    ]


def _run_by_sibling_tools(
    spans: list[SpanRecord],
    by_id: dict[str, SpanRecord],
    identities: dict[str, Identity],
    readings: Readings,
) -> list[SpanRecord]:
    """`spans`, or (when an agent span lies within a tool run of a sibling agent) a new
    list with that agent span re-parented under the tool run (see the module's docstring)."""
    by_parent: dict[str | None, list[str]] = {}
    for span_id in identities:
        by_parent.setdefault(by_id[span_id].parent_id, []).append(span_id)
    if all(len(siblings) < 2 for siblings in by_parent.values()):
        return spans  # the usual case: no agent has a sibling agent
    tools_of: dict[str, list[SpanRecord]] = {}  # agent span id -> its tool runs
    for span_id, (_, _, kind) in readings.items():
        if kind is Kind.TOOL_RUN and span_id in by_id:
            agent = _agent_above(by_id[span_id], by_id, identities)
            if agent is not None:
                tools_of.setdefault(agent, []).append(by_id[span_id])
    new_parent: dict[str, str] = {}
    for siblings in by_parent.values():
        for span_id in siblings:
            span = by_id[span_id]
            for other in siblings:
                if other == span_id:
                    continue
                tool = next((t for t in tools_of.get(other, []) if _covers(t, span)), None)
                if tool is not None:
                    new_parent[span_id] = tool.span_id
                    break
    if not new_parent:
        return spans
    return [
        dataclasses.replace(span, parent_id=new_parent[span.span_id])
        if span.span_id in new_parent
        else span
        for span in spans
    ]


def _covers(outer: SpanRecord, inner: SpanRecord) -> bool:
    start, end, inner_start, inner_end = outer.start_ns, outer.end_ns, inner.start_ns, inner.end_ns
    if start is None or end is None or inner_start is None or inner_end is None:
        return False
    return start <= inner_start and inner_end <= end


def _fold_twins(
    spans: list[SpanRecord],
    by_id: dict[str, SpanRecord],
    identities: dict[str, Identity],
    output_spans: dict[str, list[SpanRecord]],
    readings: Readings,
    workflows: set[str],
) -> None:
    parent_agent: dict[str, str | None] = {
        span.span_id: _agent_above(span, by_id, identities)
        for span in spans
        if span.span_id in identities
    }
    agent_children: dict[str, list[str]] = {}
    for span_id, parent in parent_agent.items():
        if parent is not None:
            agent_children.setdefault(parent, []).append(span_id)
    for span_id in list(parent_agent):  # outermost first: in the spans' start order
        parent = parent_agent[span_id]
        if parent is None or parent not in identities or span_id not in identities:
            continue
        name, siblings = identities[span_id][1], agent_children[parent]
        if parent in workflows:  # the workflow of its first agent (see the docstring)
            if siblings[0] != span_id or identities[parent][1] not in (name, ""):
                continue
        elif identities[parent][1] != name or siblings != [span_id]:
            continue
        if inside_a_call(by_id[span_id], parent, by_id, readings):
            continue
        if parent in workflows:
            identities[parent] = (identities[parent][0], name)
        del identities[span_id]
        output_spans.setdefault(parent, []).extend(output_spans.pop(span_id, []))
        # The twin's agent children are the parent's now, before the agents beside it.
        agent_children[parent] = agent_children.pop(span_id, []) + siblings[1:]
        for child in agent_children[parent]:
            parent_agent[child] = parent


#: Spans an agent run inside is an agent of its own: a tool run, a model call.
_CALL_KINDS = (Kind.TOOL_RUN, Kind.MODEL_CALL)


def inside_a_call(
    span: SpanRecord, agent_id: str, by_id: Mapping[str, SpanRecord], readings: Readings
) -> bool:
    """Whether a tool run or model call lies between `span` and its agent ancestor."""
    seen = {span.span_id}
    parent_id = span.parent_id
    while parent_id and parent_id != agent_id and parent_id not in seen:
        reading = readings.get(parent_id)
        if reading is not None and reading[2] in _CALL_KINDS:
            return True
        parent = by_id.get(parent_id)
        if parent is None:
            return False
        seen.add(parent_id)
        parent_id = parent.parent_id
    return False
