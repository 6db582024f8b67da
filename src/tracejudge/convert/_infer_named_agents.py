"""Agents named by the span that groups their model calls, whatever wrote it.

A phase of the walk for every producer, with no row needed: it reads the spans' agent
names (`_agent_names`: an attribute whose key names an agent, a function, a node or a
workflow, such as the AI SDK's `ai.telemetry.functionId`) and the kinds the table gave
(`Readings`), nothing else.

The span that holds a model call's run is the outermost span giving an agent name
between the call and its nearest agent (not past a tool run or another model call: an
agent run by a tool, or inside a call, is the caller's child agent, not its step); where
the name is an agent's (its key names an agent, not a function, node or workflow), the
nearest such span, and the spans above it of the same name, up to one giving another
agent's name (its caller's). It is an agent of its own unless:

- its name is the name of the agent around it (the spans of one run repeat its name);
- a name every span of an enclosing agent's run repeats (a workflow's name carried down
  to each step, the caller's name on the tool run that runs the agent) is no name of a
  run of its own: such values are passed over;
- a span further up, past the agent around it, gives a name under the same key, not an
  agent's: it is a nested step of that run (a graph's node inside another node's
  subgraph).

A span that gives an agent name and holds two agents or more (a workflow of agents no
row knows) is the agent above them.

Where no span is an agent by the table's reading, the trace's root span around every
call is the program's run, an agent above those found, when it is named as a program
names a function or a flow (`supervisor_graph`, `lead`); a call with no host under such
a root is that root's.

Hosts of one name side by side (the same parent, one after the other: no span holding
other calls between them) are the turns of one agent (a loop that records each turn as
a span naming its agent): the later turns are re-parented under the first
(`later_turns`), which is the agent.

Model-call and tool-run spans are never agents here, whatever they carry. (The agent
spans the table found are settled by `_settle_named_agents` first; a pipeline of agents
with no agent span is `_infer_pipeline`'s.)
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass

from tracejudge.convert._agent_names import (
    is_given_name,
    named_keys,
    names_an_agent,
    says_agent,
)
from tracejudge.convert._agents import Readings
from tracejudge.convert._common import Extraction
from tracejudge.convert._infer_agents import InferredAgent
from tracejudge.convert._records import SpanRecord
from tracejudge.convert.conventions import Kind

__all__ = ["BOUNDARIES", "NamedAgents", "infer_named"]

#: Spans that end the search for a call's agent: a tool run (an agent it runs is its
#: caller's child) and a model call (an agent run inside one is an agent of its own).
BOUNDARIES = (Kind.TOOL_RUN, Kind.MODEL_CALL)


@dataclass(frozen=True)
class NamedAgents:
    """What the phase found: the new agents, in start order, and the later turns of
    each (span id of a later turn -> span id of the agent's first turn)."""

    agents: list[InferredAgent]
    later_turns: dict[str, str]


def infer_named(
    readable: list[tuple[SpanRecord, Extraction]],
    by_id: Mapping[str, SpanRecord],
    agents: Mapping[str, str],
    readings: Readings,
    runs: Container[str] = (),
) -> NamedAgents:
    """The agents named by the spans that group the calls of `readable` (in start order),
    beyond the agent spans `agents` (span id -> the agent's name). `runs`: the spans a row
    read as model calls that are runs of the calls below them (`_infer_summaries`)."""
    hosts: dict[str, str] = {}  # span id -> its agent name
    keys: dict[str, list[tuple[int, str, str]]] = {}  # the naming keys of each span seen
    done: set[str | None] = set()  # (the host depends on the call's parent alone)
    for span, _ in readable:
        if span.parent_id in done or span.parent_id in agents:
            continue  # (a call in an agent's own span: no span between to name a run)
        done.add(span.parent_id)
        found = _host(span, by_id, agents, readings, keys, runs)
        if found is not None:
            hosts[found[0]] = found[1]
    hosts.update(_runs_around_agents(by_id, agents, readings, keys))
    top = _named_top(readable, by_id) if hosts and not agents else None
    if top is not None and top.span_id not in hosts:
        hosts[top.span_id] = top.name  # (the program's run, around its agents)
    if not hosts:
        return NamedAgents([], {})  # (the usual case: no span names a run of its own)
    ordered = sorted(hosts, key=lambda span_id: by_id[span_id].start_ns or 0)
    # Turn by turn: a host beside the previous host of the same parent, with its name, is
    # a later turn of that agent (an agent loop that records each turn as a span).
    later: dict[str, str] = {}
    by_parent: dict[str | None, list[str]] = {}
    for span_id in ordered:
        by_parent.setdefault(by_id[span_id].parent_id, []).append(span_id)
    if any(len(set(map(hosts.get, group))) < len(group) for group in by_parent.values()):
        busy = _holding_calls(readable, by_id)
        previous: dict[str | None, str] = {}  # parent id -> its last child holding calls
        for span_id in sorted(busy, key=lambda span_id: by_id[span_id].start_ns or 0):
            parent_id = by_id[span_id].parent_id
            before = previous.get(parent_id)
            previous[parent_id] = span_id
            if span_id in hosts and before in hosts and hosts[before] == hosts[span_id]:
                later[span_id] = later.get(before, before)
    return NamedAgents(
        [
            InferredAgent(by_id[span_id], (None, hosts[span_id]), None)
            for span_id in ordered
            if span_id not in later
        ],
        later,
    )


def _runs_around_agents(
    by_id: Mapping[str, SpanRecord],
    agents: Mapping[str, str],
    readings: Readings,
    keys: dict[str, list[tuple[int, str, str]]],
) -> dict[str, str]:
    """The spans that give an agent name and hold two agents or more with no agent between
    (a workflow of agents no row knows: Agent Framework's `workflow.run`, named by its
    `workflow.name`), with their names: the agent above those agents. Not past a tool run
    or a model call, and not a name of an agent around it or of one it holds."""
    if len(agents) < 2:
        return {}  # (a span holding two agents or more is looked for)
    held: dict[str, set[str]] = {}  # span id -> the agents it holds
    names: dict[str, str] = {}
    for span_id in agents:
        span = by_id.get(span_id)
        if span is None:
            continue
        enclosing: set[str] = set()
        chain: list[str] = []
        seen = {span_id}
        parent_id = span.parent_id
        while parent_id and parent_id not in seen:
            if parent_id in agents:
                enclosing.add(agents[parent_id])
                break
            parent = by_id.get(parent_id)
            reading = readings.get(parent_id)
            if parent is None or (reading is not None and reading[2] in BOUNDARIES):
                break
            seen.add(parent_id)
            chain.append(parent_id)
            parent_id = parent.parent_id
        for span_in_chain in chain:
            if span_in_chain not in keys:
                keys[span_in_chain] = named_keys(by_id[span_in_chain].attributes)
            given = [k[2] for k in keys[span_in_chain] if k[2] not in enclosing]
            if given:
                held.setdefault(span_in_chain, set()).add(span_id)
                names[span_in_chain] = given[0]
    found = {}
    for span_id, inside in held.items():
        if len(inside) >= 2 and names[span_id] not in {agents[a] for a in inside}:
            found[span_id] = names[span_id]
    if len(found) < 2:
        return found  # (none nested in another)
    # The outermost of nested ones (each holds the same agents): the run's own span.
    return {
        span_id: name
        for span_id, name in found.items()
        if not any(_is_above(other, span_id, by_id) for other in found if other != span_id)
    }


def _is_above(ancestor: str, span_id: str, by_id: Mapping[str, SpanRecord]) -> bool:
    seen = {span_id}
    parent_id = by_id[span_id].parent_id if span_id in by_id else None
    while parent_id and parent_id not in seen:
        if parent_id == ancestor:
            return True
        seen.add(parent_id)
        parent = by_id.get(parent_id)
        parent_id = parent.parent_id if parent is not None else None
    return False


def _named_top(
    readable: list[tuple[SpanRecord, Extraction]], by_id: Mapping[str, SpanRecord]
) -> SpanRecord | None:
    """The trace's root span, when every call sits under it and it is named as a program
    names a function or a flow (`is_given_name`), else None."""
    tops = set()
    for span, _ in readable:
        current = span
        seen = {span.span_id}
        while current.parent_id and current.parent_id not in seen:
            parent = by_id.get(current.parent_id)
            if parent is None:
                return None  # (a broken chain: no root known)
            seen.add(parent.span_id)
            current = parent
        tops.add(current.span_id)
    if len(tops) != 1:
        return None
    top = by_id.get(tops.pop())
    return top if top is not None and is_given_name(top.name) else None


def _run_inside(
    chain: list[str],
    nearest: int,
    by_id: Mapping[str, SpanRecord],
    agents: Mapping[str, str],
    readings: Readings,
    runs: Container[str],
) -> tuple[str, str] | None:
    """(span id, name) of the span right inside the trace's root agent around a call, when
    it is the program's own and says it runs an agent, and is named as a program names a
    function or flow and as no agent around it is: the program's run of an agent inside
    the root's (a user's `planner` span inside tracejudge's `app`), as the trace's root
    span is one where no agent is (see `_host`). It says so by the attributes of a call a
    producer wrote onto it (a row reads it as a model call, the walk as a run of the calls
    below it, `_infer_summaries`: one of `runs`), or, with no attribute at all, by its
    name (its last word is `agent`: `weather_agent`). Any other span of the program's
    there (`retrieve`) is a step of the root agent, which the program declared
    (`AgentTracer`); a framework's step records what it is (Semantic Kernel's
    `AutoFunctionInvocationLoop`, its `sk.available_functions`)."""
    if nearest == 0 or nearest == len(chain) or by_id[chain[nearest]].parent_id is not None:
        return None
    outer = by_id[chain[nearest - 1]]
    if outer.parent_id != chain[nearest] or outer.span_id in readings:
        return None
    if not is_given_name(outer.name):
        return None
    if outer.span_id not in runs and (outer.attributes or not says_agent(outer.name)):
        return None
    if outer.name in {agents[span_id] for span_id in chain[nearest:] if span_id in agents}:
        return None
    return outer.span_id, outer.name


def _holding_calls(
    readable: list[tuple[SpanRecord, Extraction]], by_id: Mapping[str, SpanRecord]
) -> set[str]:
    """The span ids of every span that holds a model call (its ancestors)."""
    found: set[str] = set()
    for span, _ in readable:
        parent_id = span.parent_id
        while parent_id and parent_id not in found and parent_id in by_id:
            found.add(parent_id)
            parent_id = by_id[parent_id].parent_id
    return found


def _host(
    call: SpanRecord,
    by_id: Mapping[str, SpanRecord],
    agents: Mapping[str, str],
    readings: Readings,
    keys: dict[str, list[tuple[int, str, str]]],
    runs: Container[str],
) -> tuple[str, str] | None:
    """(span id, agent name) of the span that holds the call's run as an agent of its
    own, or None (see the module's docstring)."""
    # The call's ancestors up to a tool run or model call (or the top), nearest first.
    chain: list[str] = []
    seen = {call.span_id}
    parent_id = call.parent_id
    boundary: list[tuple[int, str, str]] = []  # the names the tool run or call above gives
    while parent_id and parent_id not in seen:
        parent = by_id.get(parent_id)
        if parent is None:
            break
        seen.add(parent_id)
        reading = readings.get(parent_id)
        if reading is not None and reading[2] in BOUNDARIES:
            boundary = named_keys(parent.attributes)
            break
        chain.append(parent_id)
        if parent_id not in keys:
            keys[parent_id] = named_keys(parent.attributes)
        parent_id = parent.parent_id
    if not chain:
        return None  # (a call in the trace's root, or right under a tool run or call)
    nearest = next((i for i, span_id in enumerate(chain) if span_id in agents), len(chain))
    # Names that every span of an enclosing agent's run repeats (a workflow's name carried
    # down to each step) do not name a run of their own.
    enclosing = {agents[span_id] for span_id in chain[nearest:] if span_id in agents}
    enclosing.update(k[2] for k in boundary)  # (the caller's name, on its tool run)
    host: tuple[int, str, str] | None = None  # (position in chain, key, name)
    for position in range(nearest):
        named = [k for k in keys[chain[position]] if k[2] not in enclosing]
        if not named:
            continue
        if host is not None and names_an_agent(host[1]):
            # An agent's span is the agent: a span above it giving another agent's name
            # is its caller's (an agent run by a tool no row knows); the same name, the
            # run's outer span.
            if any(k[2] != host[2] and names_an_agent(k[1]) for k in named):
                break
            if any(k[2] == host[2] for k in named):
                host = (position, host[1], host[2])
            continue
        host = (position, named[0][1], named[0][2])
    if host is None:
        # Calls outside every agent, under the trace's root span: a root named as a
        # program names a function or flow (`lead`) is the agent that made them.
        top = by_id[chain[-1]] if chain and nearest == len(chain) else None
        if top is not None and top.parent_id is None and is_given_name(top.name):
            # (`parent_id is None`: the walk reached the trace's root, no tool run or
            # call stopped it, which would have been the root's span)
            return top.span_id, top.name
        return _run_inside(chain, nearest, by_id, agents, readings, runs)
    position, key, name = host
    if nearest < len(chain) and agents[chain[nearest]] == name:
        return None  # a step of the agent around it, which bears its name
    # A span named under the same key further up (past the agent around it) makes this
    # one a nested step of that run (a graph's node inside another node's subgraph); not
    # an agent's name: an agent inside an agent's run is its child.
    if not names_an_agent(key) and any(
        key == k[1] for span_id in chain[position + 1 :] for k in keys[span_id]
    ):
        return None
    return chain[position], name
