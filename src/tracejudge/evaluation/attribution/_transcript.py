"""The whole trace written out for a judge as numbered steps (what attribution asks about).

Unlike `render.render_agent` (one agent judged, the others context), attribution looks at
every agent at once: first the agents (name, instance, who called them, their tools),
then every step in the order they ran, `STEP N` headed with its agent and its own model
call index: the input messages new to that call (a message that repeats an earlier
step's output is named, not repeated: "sees the outputs of steps 3, 4"), then what the
model answered (text, tool calls), the results of those calls its tool spans recorded,
and an unusual ending (cut off, filtered, refused, failed). Every message is cut to
`max_chars` characters, its middle left out, so a long tool result cannot crowd out
the rest.
"""

from __future__ import annotations

from collections.abc import Iterable

from tracejudge.evaluation._endings import unusual_ending
from tracejudge.evaluation._history import new_messages
from tracejudge.evaluation.attribution._steps import StepRef, TraceSteps
from tracejudge.models import AgentInstance, LLMInput, LLMToolCall, LLMToolResponse, Step

__all__ = [
    "DEFAULT_MAX_CHARS",
    "StepTexts",
    "agent_label",
    "agent_lines",
    "cut",
    "render_steps",
]

#: Characters of one message kept in the transcript by default.
DEFAULT_MAX_CHARS = 3000


def cut(text: str, limit: int) -> str:
    """`text`, its middle left out (and counted) when it is longer than `limit`."""
    if len(text) <= limit:
        return text
    head = max(1, limit * 2 // 3)
    tail = max(1, limit - head)
    return f"{text[:head]} [... {len(text) - head - tail} characters left out ...] {text[-tail:]}"


def agent_label(agent: AgentInstance) -> str:
    return f'"{agent.name}" (instance {agent.id})'


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else "" for line in text.splitlines() or [""])


def _normal(text: str) -> str:
    return " ".join(text.split())


def agent_lines(steps: TraceSteps) -> list[str]:
    """The AGENTS block: each agent, who called it, its model calls and its tools."""
    trace = steps.trace
    lines = ["AGENTS"]
    counts: dict[str, int] = {}
    for step in steps:
        counts[step.agent.id] = counts.get(step.agent.id, 0) + 1
    for agent in trace.iter_agents():
        parent = trace.parent_of(agent.id)
        role = f"called by {agent_label(parent)}" if parent is not None else "the root agent"
        calls = counts.get(agent.id, 0)
        tools = sorted(
            {tool.name for call in agent.llm_interactions for tool in call.tools_available or []}
        )
        line = f"- {agent_label(agent)}: {role}; {calls} model call{'s' if calls != 1 else ''}"
        if tools:
            line += f"; tools: {', '.join(tools)}"
        lines.append(line)
    return lines


def _input_line(message: LLMInput, limit: int) -> str:
    content = message.content
    if isinstance(content, LLMToolCall):
        return f"  [{message.role or 'assistant'} calls {content.name} (id {content.id})] " + cut(
            content.parameters, limit
        )
    if isinstance(content, LLMToolResponse):
        name = f" {content.name}" if content.name else ""
        return f"  [tool result{name}, id {content.id}]\n" + _indent(
            cut(content.response or "(empty)", limit)
        )
    return f"  [{message.role or 'user'}]\n" + _indent(cut(content or "(empty)", limit))


def _step_lines(
    step: StepRef, new: Iterable[LLMInput], written: dict[str, int], limit: int
) -> list[str]:
    call = step.call
    lines = [
        "",
        f"STEP {step.index} | agent {agent_label(step.agent)} | its "
        f"{Step.call_name(step.interaction)}",
    ]
    seen_steps: list[int] = []
    for message in new:
        if isinstance(message.content, str) and message.role != "system":
            earlier = written.get(_normal(message.content))
            if earlier is not None and earlier < step.index:
                seen_steps.append(earlier)
                continue
        lines.append(_input_line(message, limit))
    if seen_steps:
        shown = ", ".join(str(i) for i in sorted(set(seen_steps)))
        lines.insert(
            2, f"  sees the output{'s' if len(set(seen_steps)) > 1 else ''} of step {shown}"
        )
    outputs = call.output_messages
    if not outputs and not call.refusal:
        reason = f" (error: {call.error})" if call.error else ""
        lines.append(f"  -> (no output){reason}")
    for output in outputs:
        content = output.content
        if isinstance(content, LLMToolCall):
            lines.append(
                f"  -> calls {content.name} (id {content.id}): {cut(content.parameters, limit)}"
            )
        else:
            lines.append("  -> answers:\n" + _indent(cut(content or "(empty)", limit)))
    if call.refusal:
        lines.append("  -> refuses:\n" + _indent(cut(call.refusal, limit)))
    for result in call.tool_results or []:
        lines.append(_input_line(LLMInput(role="tool", content=result), limit))
    ending = unusual_ending(call)
    if ending:
        lines.append(f"  (this model call was {ending})")
    return lines


class StepTexts:
    """Each step of a trace written on its own, as `render_steps` writes it (what an
    exploring judge reads one step at a time): the input messages new to each step are
    found once, for the whole trace."""

    def __init__(self, steps: TraceSteps) -> None:
        self.steps = steps
        self.new: dict[int, list[LLMInput]] = {}
        by_agent: dict[str, list[StepRef]] = {}
        for step in steps:
            by_agent.setdefault(step.agent.id, []).append(step)
        for agent_steps in by_agent.values():
            agent_steps.sort(key=lambda s: s.interaction)
            turns = new_messages(s.call for s in agent_steps)
            for step, turn in zip(agent_steps, turns, strict=True):
                self.new[step.index] = list(turn.new)
        # The first step whose output says each text: a later input repeating it is named.
        self._written: dict[str, int] = {}
        for step in steps:
            text = step.call.output_text
            if text.strip():
                self._written.setdefault(_normal(text), step.index)

    def lines(self, step: StepRef, max_chars: int = DEFAULT_MAX_CHARS) -> list[str]:
        """The step's lines, its heading first, every message cut to `max_chars`."""
        return _step_lines(step, self.new.get(step.index, ()), self._written, max_chars)

    def text(self, step: StepRef, max_chars: int = DEFAULT_MAX_CHARS) -> str:
        """The step as one text (see `lines`)."""
        return "\n".join(self.lines(step, max_chars)).strip("\n")

    def tool_results(self, step: StepRef) -> list[LLMToolResponse]:
        """The tool results the step shows: those new in its input, then those its tool
        spans recorded."""
        new = self.new.get(step.index, ())
        shown = [c for m in new if isinstance(c := m.content, LLMToolResponse)]
        return [*shown, *(step.call.tool_results or [])]


def render_steps(
    steps: TraceSteps,
    *,
    upto: int | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    heading: str = "",
) -> str:
    """The transcript of `steps` (those numbered up to `upto` when given)."""
    texts = StepTexts(steps)
    lines = [heading] if heading else []
    lines.extend(agent_lines(steps))
    lines.append("")
    lines.append("STEPS (each is one model call of one agent, numbered in the order they ran)")
    last = len(steps) - 1 if upto is None else min(upto, len(steps) - 1)
    for step in steps:
        if step.index > last:
            break
        lines.extend(texts.lines(step, max_chars))
    return "\n".join(lines)
