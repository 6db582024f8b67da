"""The agents of a pipeline that records no agent span, whatever wrote it.

A phase of the walk for every producer, with no row needed (`infer_pipeline`): agents run
one after the other as the steps of a program or a pipeline component, each with its own
system prompt in a span of its own (OpenLIT's `@openlit.trace` functions `researcher` and
`writer` under `report`), are agents, named by the spans that hold their calls
(`_agent_names.run_name`).
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from tracejudge.convert._agent_names import run_name
from tracejudge.convert._agents import Readings
from tracejudge.convert._common import Extraction
from tracejudge.convert._infer_agents import InferredAgent, system_prompt
from tracejudge.convert._records import SpanRecord
from tracejudge.convert.conventions import Kind

__all__ = ["infer_pipeline"]


def infer_pipeline(
    readable: list[tuple[SpanRecord, Extraction]],
    by_id: Mapping[str, SpanRecord],
    agents: Container[str],
    readings: Readings,
) -> list[InferredAgent]:
    """The agents of a pipeline: an agent (or the root) that makes no call of its own, all
    its calls sitting in spans below it, one span per system prompt, each span named
    (`run_name`) and holding the calls of one prompt only: each such span is an agent
    (agents run one after the other as the steps of a program or a pipeline component,
    each with its own prompt). Nothing is found where a call sits in the agent itself, a
    span holds calls of two prompts or none, or two spans share a prompt or a name."""
    systems = [system_prompt(extraction) for _, extraction in readable]
    if len({s for s in systems if s is not None}) < 2:
        return []  # (one system prompt in the whole trace, or none: no pipeline to see)
    groups: dict[str | None, list[tuple[SpanRecord, str | None, str | None]]] = {}
    for (span, _), system in zip(readable, systems, strict=True):
        top, owner = _top_below_agent(span, by_id, agents, readings)
        groups.setdefault(owner, []).append((span, top, system))
    found: list[InferredAgent] = []
    for members in groups.values():
        prompts: dict[str, set[str | None]] = {}
        calls: dict[str, list[SpanRecord]] = {}
        for span, top, system in members:
            if top is None:
                break  # a call of the agent's own
            prompts.setdefault(top, set()).add(system)
            calls.setdefault(top, []).append(span)
        else:
            if len(prompts) < 2 or any(len(p) != 1 or None in p for p in prompts.values()):
                continue
            if len({next(iter(p)) for p in prompts.values()}) != len(prompts):
                continue  # two spans of one prompt: turns of one agent, or not agents
            names = {top: run_name(by_id[top], calls[top], by_id) for top in prompts}
            if None in names.values() or len(set(names.values())) != len(names):
                continue
            found.extend(
                InferredAgent(by_id[top], (None, name), None)
                for top, name in names.items()
                if name is not None
            )
    return sorted(found, key=lambda agent: agent.span.start_ns or 0)


def _top_below_agent(
    call: SpanRecord, by_id: Mapping[str, SpanRecord], agents: Container[str], readings: Readings
) -> tuple[str | None, str | None]:
    """(the highest span between the call and its nearest agent, not a model call, or
    None when the call sits in the agent itself; the agent's span id, None for the root)."""
    top = None
    seen = {call.span_id}
    parent_id = call.parent_id
    while parent_id and parent_id not in seen:
        if parent_id in agents:
            return top, parent_id
        parent = by_id.get(parent_id)
        if parent is None:
            break
        seen.add(parent_id)
        reading = readings.get(parent_id)
        if reading is None or reading[2] is not Kind.MODEL_CALL:
            top = parent_id
        parent_id = parent.parent_id
    return top, None
