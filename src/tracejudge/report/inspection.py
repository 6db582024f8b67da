"""`tracejudge inspect`'s text: what the converter made of each trace's spans, on an
80-column terminal.

One block per trace: its producers (instrumentation scope and version, the conventions
that read their spans), the spans read by kind, the ignored ones grouped by reason with
their names, the agent tree (calls per agent, tools called, the start of each answer),
then the converter's warnings. With `spans=True`, every span too, as a tree.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable

from tracejudge.models import InspectedAgent, InspectedSpan, InspectedTrace, Inspection

__all__ = ["format_inspection"]

WIDTH = 80
#: The order kinds of read spans are counted in.
_KINDS = ("workflow", "agent", "model call", "tool run", "hand-off")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _cut(text: str, width: int, indent: str = "") -> str:
    """`indent` then `text` on one line, at most `width` characters in all."""
    text = " ".join(text.split())
    room = max(width - len(indent), 1)
    return indent + (text if len(text) <= room else text[: room - 1] + "…")


def _wrapped(text: str, indent: str, width: int = WIDTH, *, hang: str = "  ") -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + hang,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [indent]


def format_inspection(inspection: Inspection, *, spans: bool = False) -> str:
    """The inspection as text: a summary line, the input's warnings, then one block per
    trace (see the module's docstring). `spans` adds every span of each trace."""
    lines = [
        f"{_count(len(inspection.traces), 'trace')}, {_count(inspection.spans, 'span')}",
    ]
    for warning in inspection.warnings:
        lines += _wrapped(f"- {warning}", "  ")
    for trace in inspection.traces:
        lines += ["", *_trace_lines(trace, spans=spans)]
    return "\n".join(lines)


def _trace_lines(trace: InspectedTrace, *, spans: bool) -> list[str]:
    lines = [
        f"trace {trace.trace_id}: {_count(trace.spans, 'span')}, {len(trace.read)} read, "
        f"{len(trace.ignored)} ignored"
    ]
    # (Each input on its own line, and not cut: a path is copied from here.)
    lines += [f"  from {source}" for source in trace.sources]
    lines.append("  producers")
    for producer in trace.producers:
        scope = producer.scope or "(no instrumentation scope)"
        if producer.version:
            scope += f" {producer.version}"
        read_by = ", ".join(producer.conventions) or "no convention"
        counts = f"{_count(producer.spans, 'span')}, {producer.read} read; conventions: {read_by}"
        if len(scope) + len(counts) + 6 <= WIDTH:
            lines.append(f"    {scope}: {counts}")
        else:
            lines.append(_cut(scope, WIDTH, "    "))
            lines += _wrapped(counts, "        ")
    kinds = Counter(span.kind for span in trace.read)
    counted = [_count(kinds[kind], kind) for kind in _KINDS if kinds[kind]]
    lines += _wrapped("read: " + (", ".join(counted) or "nothing"), "  ")
    if trace.ignored:
        lines.append(f"  ignored: {_count(len(trace.ignored), 'span')}")
        lines += _ignored_lines(trace.ignored)
    lines += _agent_lines(trace)
    if spans:
        lines.append("  spans")
        lines += _span_tree(trace)
    if trace.warnings:
        lines.append(f"  warnings ({len(trace.warnings)})")
        for warning in trace.warnings:
            lines += _wrapped(f"- {warning}", "    ")
    return lines


def _names(spans: Iterable[InspectedSpan]) -> str:
    counts = Counter(span.name for span in spans)
    return ", ".join(name if n == 1 else f"{name} ×{n}" for name, n in counts.items())


def _ignored_lines(ignored: list[InspectedSpan]) -> list[str]:
    by_detail: dict[str, list[InspectedSpan]] = {}
    for span in ignored:
        by_detail.setdefault(span.detail or span.reason or "?", []).append(span)
    lines = []
    for detail, group in sorted(by_detail.items(), key=lambda item: -len(item[1])):
        lines += _wrapped(f"{len(group):>3} {detail}", "    ", hang="    ")
        lines.append(_cut(_names(group), WIDTH, "        "))
    return lines


def _agent_lines(trace: InspectedTrace) -> list[str]:
    if not trace.agents:
        return ["  agents: none (the trace holds no agent and no model call)"]
    lines = [f"  agents ({len(trace.agents)})"]
    depth: dict[str, int] = {}
    for agent in trace.agents:  # depth first: a parent comes before its children
        level = depth[agent.id] = depth.get(agent.parent or "", -1) + 1
        indent = "    " + "  " * min(level, 10)
        head, calls = f"{agent.name} [{agent.id}]", _calls(agent)
        if len(indent) + len(head) + 2 + len(calls) <= WIDTH:
            lines.append(f"{indent}{head}  {calls}")
        else:
            lines.append(_cut(head, WIDTH, indent))
            lines += _wrapped(calls, indent + "    ")
        if agent.answer:
            lines.append(_cut(f"answer: {agent.answer!r}", WIDTH, indent + "  "))
    if not any(agent.model_calls for agent in trace.agents):
        lines.append("  no model call was read in this trace")
    return lines


def _calls(agent: InspectedAgent) -> str:
    text = f"{_count(agent.model_calls, 'model call')}, {_count(agent.tool_calls, 'tool call')}"
    if agent.tools:
        text += f" ({', '.join(agent.tools)})"
    if agent.handoff is not None:
        text += f", hand-off to {agent.handoff}" if agent.handoff else ", hand-off"
    return text


def _span_tree(trace: InspectedTrace) -> list[str]:
    """Every span, indented under its parent, siblings in start order: `+` read (what as,
    by which convention, into which agent), `-` ignored (the reason)."""
    entries = [(span, True) for span in trace.read] + [(span, False) for span in trace.ignored]
    names = {agent.id: agent.name for agent in trace.agents}
    ids = {span.span_id for span, _ in entries}
    children: dict[str | None, list[tuple[InspectedSpan, bool]]] = {}
    for entry in entries:
        parent = entry[0].parent_id
        children.setdefault(parent if parent in ids else None, []).append(entry)
    for siblings in children.values():
        siblings.sort(key=lambda entry: (entry[0].start is None, entry[0].start or 0.0))
    lines: list[str] = []
    stack = [(entry, 0) for entry in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        (span, read), level = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        indent = "    " + " " * min(level, 20)
        lines.append(_cut(_span_text(span, read, names), WIDTH, indent))
        if span.attributes:
            lines += _wrapped("attributes: " + ", ".join(span.attributes), indent + "    ")
        stack.extend((entry, level + 1) for entry in reversed(children.get(span.span_id, [])))
    return lines


def _span_text(span: InspectedSpan, read: bool, names: dict[str, str]) -> str:
    if not read:
        return f"- {span.name}: ignored, {span.reason}"
    what = f"{span.kind} ({span.convention})"
    if span.kind not in ("agent", "workflow") and span.agent is not None:
        what += f" in {names.get(span.agent, span.agent)}"
    if span.detail:
        what += f"; {span.detail}"
    return f"+ {span.name}: {what}"
