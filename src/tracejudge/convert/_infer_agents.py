"""Agents read from the spans' structure, whatever convention (or none) names them.

Phases of the walk that apply to every producer, with no row needed (a row only adds
names); they read what the table already said of each span (`Readings`) and the model
calls' extractions, nothing else.

- `settle` (on the agent spans the table found, before anything is placed):
  * a span marked "agent" under another agent that holds nothing (no model call, no tool
    run, no hand-off, no agent) and declares no agent id is a step of the agent around it,
    not a phantom agent that breaks its caller's call order: OpenInference's LangChain
    instrumentation marks every runnable whose name contains "agent" (scratchpad
    assigners, output parsers), some producers write an AGENT span per final answer;
    so is such a span with no name of its own that runs exactly one agent and does
    nothing else (OpenLLMetry's CrewAI task spans, `invoke_agent` around the agent that
    does the task): the agent it runs is the child of the agent around it;
  * a workflow span that holds nothing of its own and runs exactly one agent is the
    trace, not an agent above the program's root agent: the OpenAI Agents SDK's own
    "Agent workflow" (as logfire records it) around the agent the program ran.
- `infer` (once model calls are read): calls that sit under one agent but carry another
  system prompt, inside a span that holds none of the agent's own calls, are another
  agent's: a ReAct loop run through a tool of the first, an agent wrapped as a tool
  (Haystack's `AgentTool`), an agent run as a pipeline component. That span is the
  other agent, named by the spans between it and its calls where they give an agent
  name (`_agent_names`: the AI SDK's `ai.telemetry.functionId`), else after the tool
  call that ran it (the caller's call whose arguments
  hold the new agent's first user message, or its only pending tool call), else its tool
  span, else the span itself; when no tool call or tool span is known to have run it and
  it calls no tool, it is a step of the agent (an extractor or summariser with a prompt
  of its own). Repeated until no agent splits, so an agent run by an inferred agent's
  tool is found too.
- `answer_tool_calls` (once answers are known): the tool call that ran an inferred agent
  has that agent's final answer as its result, where no span recorded the result.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass

from tracejudge.convert import _json
from tracejudge.convert._agent_names import agent_name, run_name
from tracejudge.convert._agents import Layout, Readings, agent_above
from tracejudge.convert._common import Extraction
from tracejudge.convert._json import is_mapping
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._tools import ToolRun
from tracejudge.convert.conventions import UNNAMED_AGENT, Identity, Kind
from tracejudge.models import AgentInstance, LLMInteraction, LLMToolCall, LLMToolResponse

__all__ = ["InferredAgent", "answer_tool_calls", "infer", "settle"]

#: What an agent does that makes it an agent (a span of one of these kinds under it).
_ACTS = (Kind.MODEL_CALL, Kind.TOOL_RUN, Kind.HANDOFF)


# --------------------------------------------------------------------------- settle


def settle(layout: Layout, readings: Readings) -> None:
    """Drop the agent spans that are steps (phantoms) or the trace itself (a wrapper
    workflow) from `layout` (see the module's docstring)."""
    identities = layout.identities
    if not identities:
        return
    by_id = layout.by_id
    owner: dict[str, str | None] = {}  # agent span id -> its nearest agent ancestor
    acts: dict[str, int] = {}  # agent span id -> the acts it holds itself
    children: dict[str, list[str]] = {}  # agent span id -> its agent children, in order
    for span in layout.spans:
        span_id = span.span_id
        is_agent = span_id in identities
        if not is_agent:
            reading = readings.get(span_id)
            if reading is None or reading[2] not in _ACTS:
                continue
        above = agent_above(span, by_id, identities)
        if is_agent:
            owner[span_id] = above
            if above is not None:
                children.setdefault(above, []).append(span_id)
        elif above is not None:
            acts[above] = acts.get(above, 0) + 1
    # Deepest first (later starts first): a step's removal may leave its parent a step.
    for span_id in reversed(list(owner)):
        parent = owner[span_id]
        if acts.get(span_id) or span_id not in identities:
            continue
        if parent is None or readings[span_id][2] is not Kind.AGENT:
            continue
        declared, name = identities[span_id]
        if declared is not None:
            continue  # an agent id declared: an agent that did nothing, still an agent
        ran = children.get(span_id, [])
        if ran and (len(ran) > 1 or not _unnamed(name, by_id[span_id], identities[ran[0]][1])):
            continue
        _drop(layout, span_id)
        siblings = children[parent]
        siblings[siblings.index(span_id) : siblings.index(span_id) + 1] = ran
        for child in ran:
            owner[child] = parent
    for span_id, parent in owner.items():
        if span_id not in identities or readings[span_id][2] is not Kind.WORKFLOW:
            continue
        ran = children.get(span_id, [])
        if acts.get(span_id) or len(ran) != 1:
            continue
        _drop(layout, span_id)
        owner[ran[0]] = parent
        if parent is not None:
            siblings = children[parent]
            siblings[siblings.index(span_id)] = ran[0]


def _unnamed(name: str, span: SpanRecord, runs: str) -> bool:
    """Whether an agent span's name is its convention's fallback (`UNNAMED_AGENT`), its
    attributes naming no agent but the one it runs (`runs`: CrewAI's task span names its
    agent in `crewai.task.agent`), not an agent the producer named `agent`."""
    return name == UNNAMED_AGENT and agent_name(span.attributes) in (None, runs)


def _drop(layout: Layout, span_id: str) -> None:
    del layout.identities[span_id]
    layout.output_spans.pop(span_id, None)


# --------------------------------------------------------------------------- infer


@dataclass(frozen=True)
class InferredAgent:
    """An agent no span names as one: the span that holds its calls stands for it."""

    span: SpanRecord
    identity: Identity
    #: the caller's model-call span whose tool call ran this agent, and that call's
    #: position among the call's tool calls; None when no tool call of the caller ran it
    invoked_by: tuple[str, int] | None


def infer(
    readable: list[tuple[SpanRecord, Extraction]],
    by_id: dict[str, SpanRecord],
    agent_spans: Container[str],
    readings: Readings,
    tool_runs: list[tuple[SpanRecord, ToolRun]],
) -> list[InferredAgent]:
    """The agents the calls' system prompts and the spans around them show, beyond the
    agent spans `agent_spans` (see the module's docstring). `readable` is in start order."""
    systems = [system_prompt(extraction) for _, extraction in readable]
    if len({s for s in systems if s is not None}) <= 1:
        return []  # one system prompt in the whole trace (or none): nothing to tell apart
    calls = [
        _Call(span, extraction, system)
        for (span, extraction), system in zip(readable, systems, strict=True)
    ]
    tool_names = {span.span_id: run.name for span, run in tool_runs}
    found: list[InferredAgent] = []
    while True:
        known = _Known(agent_spans, {agent.span.span_id for agent in found})
        new = _split(calls, by_id, known, readings, tool_names)
        if not new:
            return found
        found.extend(new)


@dataclass(frozen=True)
class _Known:
    """The agent spans: the table's, and those inferred so far."""

    table: Container[str]
    inferred: set[str]

    def __contains__(self, span_id: object) -> bool:
        return span_id in self.inferred or span_id in self.table


@dataclass
class _Call:
    span: SpanRecord
    extraction: Extraction
    system: str | None


def system_prompt(extraction: Extraction) -> str | None:
    """The call's system prompt (its leading system messages' text), or None."""
    texts = []
    for item in extraction.inputs:
        if item.role != "system":
            break
        if isinstance(item.content, str):
            texts.append(item.content)
    return "\n".join(texts) if texts else None


def _first_user(extraction: Extraction) -> str | None:
    for item in extraction.inputs:
        if item.role == "user" and isinstance(item.content, str):
            return item.content
    return None


def _split(
    calls: list[_Call],
    by_id: dict[str, SpanRecord],
    agents: Container[str],
    readings: Readings,
    tool_names: dict[str, str],
) -> list[InferredAgent]:
    """One round: for each agent (and the root), the spans that hold only calls of
    another system prompt than its own become agents."""
    groups: dict[str | None, list[tuple[_Call, list[str]]]] = {}
    for call in calls:
        path, owner = _path(call.span, by_id, agents, readings)
        groups.setdefault(owner, []).append((call, path))
    found: list[InferredAgent] = []
    for members in groups.values():
        own = next((call.system for call, _ in members if call.system is not None), None)
        if all(call.system in (None, own) for call, _ in members):
            continue
        mine = {s for call, path in members if call.system == own for s in path}
        hosts: dict[str, list[_Call]] = {}
        for call, path in members:
            if call.system in (None, own):
                continue  # the agent's own calls (the root's too) stay its own
            host = _host(path, mine)
            if host is not None:
                hosts.setdefault(host, []).append(call)
        caller = [call for call, _ in members if call.system == own]
        for host_id, held in hosts.items():
            span = by_id[host_id]
            invoked, matched = _invocation(caller, span, held[0], by_id, agents, tool_names)
            if not (matched or any(_tool_calls(call.extraction) for call in held)):
                # A step with a prompt of its own that no tool call ran and that uses no
                # tool (an extractor, a summariser, a router): still the agent's step.
                continue
            ran_by = _tool_calls(_maker(caller, invoked)) if invoked is not None else []
            tools = {ran_by[invoked[1]].name} if invoked is not None else set()
            name = run_name(span, (call.span for call in held), by_id, tools) or _name(
                span, invoked, caller, by_id, agents, tool_names
            )
            found.append(InferredAgent(span, (None, name), invoked))
    return found


def _path(
    span: SpanRecord, by_id: dict[str, SpanRecord], agents: Container[str], readings: Readings
) -> tuple[list[str], str | None]:
    """The ancestors of a call's span that may stand for an agent (nearest first: not
    model calls, below its nearest agent), and that agent's span id (None: the root)."""
    path: list[str] = []
    seen = {span.span_id}
    parent_id = span.parent_id
    while parent_id and parent_id not in seen:
        if parent_id in agents:
            return path, parent_id
        parent = by_id.get(parent_id)
        if parent is None:
            return path, None
        seen.add(parent_id)
        reading = readings.get(parent_id)
        if reading is None or reading[2] is not Kind.MODEL_CALL:
            path.append(parent_id)
        parent_id = parent.parent_id
    return path, None


def _host(path: list[str], blocked: set[str]) -> str | None:
    """The highest span of `path` that holds none of the other agent's calls."""
    host = None
    for span_id in path:
        if span_id in blocked:
            break
        host = span_id
    return host


def _invocation(
    caller: list[_Call],
    host: SpanRecord,
    first: _Call,
    by_id: dict[str, SpanRecord],
    agents: Container[str],
    tool_names: dict[str, str],
) -> tuple[tuple[str, int] | None, bool]:
    """The caller's tool call that ran the agent held by `host`, and whether that is
    known (not only likely): of the caller's last call that started before it, the call
    named as a tool span around `host`, else the one whose arguments and the agent's first
    user message hold each other, else (likely) the only one."""
    start = host.start_ns
    before = [
        c
        for c in caller
        if c.span.start_ns is not None and start is not None and c.span.start_ns <= start
    ]
    around = _tool_span_names(host, by_id, agents, tool_names)
    maker = before[-1] if before and _tool_calls(before[-1].extraction) else None
    if maker is None:  # the caller's last call before it called no tool
        return None, bool(around)
    made = _tool_calls(maker.extraction)
    for position, call in enumerate(made):
        if call.name in around:
            return (maker.span.span_id, position), True
    task = _first_user(first.extraction)
    if task:
        holding = [p for p, call in enumerate(made) if _hands_on(call, task)]
        if len(holding) == 1:
            return (maker.span.span_id, holding[0]), True
    return ((maker.span.span_id, 0) if len(made) == 1 else None), bool(around)


def _hands_on(call: LLMToolCall, task: str) -> bool:
    """Whether the tool call's arguments hand `task` on: they hold it (Haystack's
    `AgentTool` passes the task as a message), or it holds every text argument (a
    framework that writes the arguments into its prompt template)."""
    if task in call.parameters:
        return True
    try:
        arguments = _json.loads(call.parameters)
    except (ValueError, RecursionError):
        return False
    texts = [v for v in arguments.values() if isinstance(v, str)] if is_mapping(arguments) else []
    return bool(texts) and all(text in task for text in texts)


def _tool_calls(extraction: Extraction) -> list[LLMToolCall]:
    return [item.content for item in extraction.outputs if isinstance(item.content, LLMToolCall)]


def _tool_span_names(
    host: SpanRecord,
    by_id: dict[str, SpanRecord],
    agents: Container[str],
    tool_names: dict[str, str],
) -> list[str]:
    """The tool names of `host` and its ancestors below the agent above it, nearest first."""
    names = []
    current: SpanRecord | None = host
    seen: set[str] = set()
    while current is not None and current.span_id not in agents and current.span_id not in seen:
        seen.add(current.span_id)
        if current.span_id in tool_names:
            names.append(tool_names[current.span_id])
        current = by_id.get(current.parent_id) if current.parent_id else None
    return names


def _maker(caller: list[_Call], invoked: tuple[str, int]) -> Extraction:
    """The caller's call that made the tool call `invoked`."""
    return next(c.extraction for c in caller if c.span.span_id == invoked[0])


def _name(
    host: SpanRecord,
    invoked: tuple[str, int] | None,
    caller: list[_Call],
    by_id: dict[str, SpanRecord],
    agents: Container[str],
    tool_names: dict[str, str],
) -> str:
    """The tool call that ran the agent names it, else the tool span around it, else its
    span."""
    if invoked is not None:
        return _tool_calls(_maker(caller, invoked))[invoked[1]].name
    around = _tool_span_names(host, by_id, agents, tool_names)
    return around[0] if around else host.name


# --------------------------------------------------------------------------- answers


def answer_tool_calls(
    inferred: list[InferredAgent],
    agent_ids: dict[str, str],
    instances: dict[str, AgentInstance],
    parent_of: Callable[[str], str],
) -> None:
    """Give each tool call that ran an inferred agent that agent's final answer as its
    result, where nothing recorded it: completed in the caller's later input that shows
    the result without text, else in the calling interaction's `tool_results`.
    `agent_ids` maps agent span ids to agent ids; `parent_of` gives an agent span's
    parent agent id."""
    for agent in inferred:
        if agent.invoked_by is None:
            continue
        child = instances.get(agent_ids[agent.span.span_id])
        parent = instances.get(parent_of(agent.span.span_id))
        if child is None or parent is None or child.final_output is None:
            continue
        maker_id, position = agent.invoked_by
        interactions = parent.llm_interactions
        at = next((i for i, x in enumerate(interactions) if x.span_id == maker_id), None)
        if at is None or position >= len(interactions[at].tool_calls):
            continue
        call = interactions[at].tool_calls[position]
        _answer(call, child.final_output, interactions[at], interactions[at + 1 :])


def _answer(
    call: LLMToolCall, answer: str, maker: LLMInteraction, later: list[LLMInteraction]
) -> None:
    if any(r.id == call.id and r.response for r in maker.tool_results or []):
        return
    for interaction in later:
        for message in interaction.input_messages:
            result = message.content
            if not isinstance(result, LLMToolResponse) or result.id != call.id:
                continue
            if call.id or result.name in (None, call.name):
                if not result.response:
                    result.response = answer
                    result.name = call.name
                return
    response = LLMToolResponse(id=call.id, response=answer, name=call.name)
    maker.tool_results = [*(maker.tool_results or []), response]
