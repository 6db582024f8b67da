"""The agent spans the table found, settled by the names they give, for every producer.

Phases on the layout (before anything is placed), with no row needed; they read the
spans' agent names (`_agent_names`) and the kinds the table gave:

- `name_agents_by_attribute`: an agent span a format names only by the span's own name
  takes the name an attribute gives (`ai.generateText lead` -> `lead`);
- `fold_named_twins`: an agent span that is the only agent child of an agent and names
  itself after it is that agent's own span;
- `drop_nested_runs`: an agent span that is a node nested in another node's run is a step
  of that run.
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from tracejudge.convert._agent_names import agent_name, named_keys, names_an_agent
from tracejudge.convert._agents import Layout, Readings, agent_above, inside_a_call
from tracejudge.convert._infer_named_agents import BOUNDARIES
from tracejudge.convert._records import SpanRecord
from tracejudge.convert.conventions import Kind

__all__ = ["drop_nested_runs", "fold_named_twins", "name_agents_by_attribute"]


def fold_named_twins(layout: Layout, readings: Readings) -> None:
    """An agent span that is the only agent child of an agent and names itself after it,
    by an agent-naming attribute (`graph.node.id = weather_agent` under `invoke_agent
    weather_agent`) or as a method of it (`weather_agent.on_messages_stream`), is that
    agent's own span, not an agent inside it: two instrumentations' records of one agent
    run (unless a tool run or a model call lies between them). It is dropped from
    `layout`, its output spans given to the agent. (`_agents` folds twins of one name
    before the agents are renamed by `name_agents_by_attribute`; this reads the name the
    twin gives of itself.)"""
    identities = layout.identities
    if len(identities) < 2:
        return
    by_id = layout.by_id
    above = {
        span_id: agent_above(by_id[span_id], by_id, identities)
        for span_id in identities
        if span_id in by_id
    }
    children: dict[str, list[str]] = {}
    for span_id, parent in above.items():
        if parent is not None:
            children.setdefault(parent, []).append(span_id)
    for parent, kids in children.items():
        if len(kids) != 1 or parent not in identities:
            continue
        (child,) = kids
        name, own = identities[parent][1], identities[child][1]
        named = own == name or agent_name(by_id[child].attributes) == name
        if not (named or own.startswith(name + ".")):
            continue
        if inside_a_call(by_id[child], parent, by_id, readings):
            continue  # an agent run by a tool or a call: its own, whatever its name
        del identities[child]
        layout.output_spans.setdefault(parent, []).extend(layout.output_spans.pop(child, []))


def drop_nested_runs(layout: Layout, readings: Readings) -> None:
    """An agent span (the table's, with no agent id declared) whose name as a node, a
    function or a workflow (not as an agent: an agent inside an agent's span is its child,
    as in a conversation span naming the agent that started it) is given under a key that
    a span above it gives another name under, with no agent, tool run
    or model call between them, is a step of that run: a graph's node inside another
    node's subgraph (OpenInference marks LangGraph's `agent` node an AGENT span, inside
    the `researcher` node). It is dropped from `layout`; the run above it is the agent
    (`infer_named`)."""
    identities = layout.identities
    by_id = layout.by_id
    for span_id in list(identities):
        reading = readings.get(span_id)
        span = by_id.get(span_id)
        if span is None or reading is None or reading[2] is not Kind.AGENT:
            continue
        if identities[span_id][0] is not None:
            continue  # an agent id declared: an agent of its own
        own = {k: name for _, k, name in named_keys(span.attributes) if not names_an_agent(k)}
        if own and _named_above(span, own, by_id, identities, readings):
            del identities[span_id]
            layout.output_spans.pop(span_id, None)


def _named_above(
    span: SpanRecord,
    own: Mapping[str, str],
    by_id: Mapping[str, SpanRecord],
    agents: Container[str],
    readings: Readings,
) -> bool:
    """Whether a span above `span`, before any agent, tool run or model call, gives a name
    other than `span`'s under one of `own`'s keys."""
    seen = {span.span_id}
    parent_id = span.parent_id
    while parent_id and parent_id not in seen and parent_id not in agents:
        parent = by_id.get(parent_id)
        reading = readings.get(parent_id)
        if parent is None or (reading is not None and reading[2] in BOUNDARIES):
            return False
        seen.add(parent_id)
        for _, key, name in named_keys(parent.attributes):
            if key in own and own[key] != name:
                return True
        parent_id = parent.parent_id
    return False


def name_agents_by_attribute(layout: Layout) -> None:
    """An agent span that the table names only by the span's own name (`ai.generateText
    lead`: a format's reading of a span it knows as an agent, with no agent name key of
    its own) takes the agent name an attribute of the span gives (`_agent_names`)."""
    by_id = layout.by_id
    for span_id, (declared, name) in list(layout.identities.items()):
        span = by_id.get(span_id)
        if span is None or name != span.name:
            continue
        given = agent_name(span.attributes)
        if given is not None and given != name:
            layout.identities[span_id] = (declared, given)
