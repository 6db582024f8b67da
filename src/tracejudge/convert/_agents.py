"""Which spans are agents, and what each is called, across frameworks and instrumentations.

Agent spans are:

- `invoke_agent` spans (tracejudge's, pydantic-ai's, any OTel GenAI instrumentation's,
  OpenLLMetry's agent spans); OpenLLMetry's CrewAI task spans, though written as
  `invoke_agent`, are steps of the agent nested in them;
- OpenLLMetry workflow spans (`traceloop.span.kind=workflow`: the Agents SDK's
  `Agent Workflow`, a LangGraph graph's `X.workflow`, CrewAI's `crewai.workflow`), named
  after the workflow;
- OpenInference AGENT spans, named by `agent.name`, else by the span name less a
  framework suffix (smolagents' `manager.run`, CrewAI's `researcher._execute_core`);
- OpenInference's CrewAI crew run (`Crew_<id>.kickoff`, a CHAIN span), named `crew`;
- LangGraph nodes and graphs (see `langgraph`).

Two instrumentation habits are then undone, so that one agent run is one agent:

- a childless agent span that covers, in time, a sibling subtree of the same name
  (OpenLLMetry's `invoke_agent researcher` beside the `execute_task researcher` that holds
  the researcher's calls) owns that subtree;
- an agent span whose nearest agent ancestor has the same name and no other agent child
  (`invoke_agent X` around `X.workflow`) is that ancestor: the two are one agent.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tracejudge import semconv
from tracejudge.convert import langgraph
from tracejudge.convert._common import as_str
from tracejudge.convert._records import SpanRecord

__all__ = ["Layout", "identity", "layout"]

#: Suffixes frameworks add to an agent's name in the span name.
_NAME_SUFFIXES = (".run", "._execute_core")
_KICKOFF = ".kickoff"
_CREW = "crew"

Identity = tuple[str | None, str]  # (declared agent id or None, agent name)


@dataclass
class Layout:
    """The agents of one trace's spans.

    `spans` are the input spans, with the parent of an adopted subtree rewritten (copies;
    the input is not changed); `identities` maps each agent span's id to its identity;
    `output_spans` lists, per agent span, the spans whose recorded output is that agent's
    (itself first, then the twins folded into it); LangGraph node agents have none, since
    a node's output is a state update, not an answer. `by_id` maps span ids to `spans`.
    """

    spans: list[SpanRecord]
    identities: dict[str, Identity] = field(default_factory=dict)
    output_spans: dict[str, list[SpanRecord]] = field(default_factory=dict)
    by_id: dict[str, SpanRecord] = field(default_factory=dict)


def _strip_suffix(name: str) -> str:
    for suffix in _NAME_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


_AGENT_SPAN_START = semconv.INVOKE_AGENT_SPAN_PREFIX + " "


def identity(span: SpanRecord) -> Identity | None:
    """(declared agent id or None, agent name) when the span itself is an agent run."""
    # Asked of every span, most of which are not agents: each attribute is read only when
    # the one before it leaves the question open.
    attrs = span.attributes
    traceloop_kind = attrs.get(semconv.TRACELOOP_SPAN_KIND)
    if traceloop_kind == semconv.TRACELOOP_KIND_TASK:
        return None  # a step (CrewAI task, LangChain runnable) of the agent it runs in
    if traceloop_kind == semconv.TRACELOOP_KIND_WORKFLOW:
        name = (
            as_str(attrs.get(semconv.GEN_AI_AGENT_NAME))
            or as_str(attrs.get(semconv.CREWAI_CREW_NAME))
            or as_str(attrs.get(semconv.TRACELOOP_WORKFLOW_NAME))
            or span.name
        )
        return as_str(attrs.get(semconv.GEN_AI_AGENT_ID)), name
    prefix = semconv.INVOKE_AGENT_SPAN_PREFIX
    operation = attrs.get(semconv.GEN_AI_OPERATION_NAME)
    named_like_agent = span.name == prefix or span.name.startswith(_AGENT_SPAN_START)
    if operation == semconv.OPERATION_INVOKE_AGENT or (operation is None and named_like_agent):
        name = as_str(attrs.get(semconv.GEN_AI_AGENT_NAME))
        if name is None and named_like_agent:
            name = span.name[len(prefix) :].strip() or None
        name = name or as_str(attrs.get(semconv.CREWAI_CREW_NAME))
        return as_str(attrs.get(semconv.GEN_AI_AGENT_ID)), name or "agent"
    if attrs.get(semconv.CREWAI_CREW_AGENTS) is not None and span.name.endswith(_KICKOFF):
        # OpenInference's CrewAI crew run (a CHAIN)
        name = as_str(attrs.get(semconv.GEN_AI_AGENT_NAME)) or _CREW
        return as_str(attrs.get(semconv.GEN_AI_AGENT_ID)), name
    if attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OPENINFERENCE_KIND_AGENT:
        name = as_str(attrs.get(semconv.GEN_AI_AGENT_NAME)) or as_str(attrs.get(semconv.AGENT_NAME))
        name = name or _strip_suffix(span.name) or "agent"
        return as_str(attrs.get(semconv.GEN_AI_AGENT_ID)), name
    return None


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


def _agent_above(
    span: SpanRecord, by_id: dict[str, SpanRecord], identities: dict[str, Identity]
) -> str | None:
    """The span id of the span's nearest agent ancestor in the input, or None (the first
    agent of `_parent_chain`, found without walking on above it)."""
    seen = {span.span_id}
    parent_id = span.parent_id
    while parent_id and parent_id not in seen:
        if parent_id in identities:
            return parent_id if parent_id in by_id else None
        parent = by_id.get(parent_id)
        if parent is None:
            return None
        seen.add(parent_id)
        parent_id = parent.parent_id
    return None


def layout(spans: list[SpanRecord]) -> Layout:
    """Find the agents among one trace's spans (ordered by start time)."""
    by_id = {span.span_id: span for span in spans}
    identities: dict[str, Identity] = {}
    output_spans: dict[str, list[SpanRecord]] = {}
    nodes = {span.span_id: node for span in spans if (node := langgraph.node_name(span))}
    for span in spans:
        node = nodes.get(span.span_id)
        if node is not None:
            nested = any(parent.span_id in nodes for parent in _parent_chain(span, by_id))
            if not nested:
                identities[span.span_id] = (None, node)
            continue  # a step of the node it is nested in, whatever its kind
        found = identity(span)
        if found is None and langgraph.is_graph(span):
            found = (None, span.name)
        if found is not None:
            identities[span.span_id] = found
            output_spans[span.span_id] = [span]

    adopted = _adopt_covered_siblings(spans, by_id, identities, nodes)
    if adopted is not spans:
        spans = adopted
        by_id = {span.span_id: span for span in spans}
    _fold_twins(spans, by_id, identities, output_spans)
    return Layout(spans=spans, identities=identities, output_spans=output_spans, by_id=by_id)


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


def _covers(outer: SpanRecord, inner: SpanRecord) -> bool:
    if None in (outer.start_ns, outer.end_ns, inner.start_ns, inner.end_ns):
        return False
    return outer.start_ns <= inner.start_ns and inner.end_ns <= outer.end_ns  # type: ignore[operator]


def _fold_twins(
    spans: list[SpanRecord],
    by_id: dict[str, SpanRecord],
    identities: dict[str, Identity],
    output_spans: dict[str, list[SpanRecord]],
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
        if identities[parent][1] == identities[span_id][1] and agent_children[parent] == [span_id]:
            del identities[span_id]
            output_spans.setdefault(parent, []).extend(output_spans.pop(span_id, []))
            # The twin's agent children are the parent's now.
            agent_children[parent] = agent_children.pop(span_id, [])
            for child in agent_children[parent]:
                parent_agent[child] = parent
