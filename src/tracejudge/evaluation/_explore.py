"""What an exploring judge is handed for a trace too long to show whole: a digest of the
trace and the tools that read it.

A judgement whose transcript is over the judge's input budget (`max_input_tokens`) is not
truncated: the evaluator gives its request an `Exploration` (see `tracejudge.judges`),
and the judge reads what it needs under the caps of `ExplorationLimits`. What it is given
is made here, from the trace:

- the digest: the judged agent and where it sits (who called it, whom it called, its
  steps), every agent, the deterministic checks' findings with their steps, then one line
  per step (its agent, what it was given, what it answered or called, the sizes of tool
  results, errors and unusual endings). When that is longer than the room it is given,
  steps with a finding or an error and the judged agent's steps stay listed, and runs of
  the other steps are summed up, a line each;
- the tools: `read_step` (one step, as attribution's transcript writes it), `search_trace`
  (where a text occurs: steps and snippets) and `read_tool_result` (a long tool result,
  page by page from a character offset).

Steps are the trace's model calls in the order they ran, numbered from 0
(`attribution.trace_steps`), as attribution numbers them. Everything is built on first
need and once per trace, however many criteria and agents explore it.
"""

from __future__ import annotations

import functools
import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tracejudge.evaluation._checks.defaults import ALL
from tracejudge.evaluation._endings import unusual_ending
from tracejudge.evaluation.attribution import (
    StepRef,
    StepTexts,
    TraceSteps,
    agent_label,
    agent_lines,
    cut,
    trace_steps,
)
from tracejudge.judges import BYTES_PER_TOKEN, Exploration, ExplorationLimits, ExplorationTool
from tracejudge.models import LLMToolCall, LLMToolResponse, MultiAgentTrace, Step

__all__ = ["READ_RESULT", "READ_STEP", "SEARCH", "TraceMaterial"]

READ_STEP = "read_step"
SEARCH = "search_trace"
READ_RESULT = "read_tool_result"

# What one digest line of a finding, and one search snippet, may hold.
_FINDING_CHARS = 240
_SNIPPET_CHARS = 160
# The cuts a step read tries, longest first, when the step is longer than the read.
_STEP_CUTS = (8_000, 4_000, 2_000, 1_000, 500, 250)


def _sent_bytes(text: str) -> int:
    """The bytes `text` takes in a request (JSON-escaped UTF-8)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def _room(max_tokens: int) -> int:
    """The bytes a tool's answer of `max_tokens` may take (see `ExplorationTool`)."""
    return max_tokens * BYTES_PER_TOKEN


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _integer(arguments: dict[str, Any], name: str, default: int | None = None) -> int:
    value = arguments.get(name, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f'"{name}" must be a whole number, got {value!r}')
    return value


@dataclass(frozen=True)
class _Piece:
    """One text of a step, for search: where it is, and what it says."""

    where: str
    text: str


class TraceMaterial:
    """One trace's material for exploring judges: its steps, their texts, the checks'
    findings, the digest of each agent and the tools."""

    def __init__(self, trace: MultiAgentTrace) -> None:
        self.trace = trace
        # The same digest for every criterion of an agent: their requests share a prefix.
        self._digests: dict[tuple[str, int], str] = {}
        # Judges make digests in worker threads (the checks take a while on a long trace).
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ built on first need

    @functools.cached_property
    def steps(self) -> TraceSteps:
        return trace_steps(self.trace)

    @functools.cached_property
    def texts(self) -> StepTexts:
        return StepTexts(self.steps)

    @functools.cached_property
    def findings(self) -> tuple[dict[int, list[str]], list[str]]:
        """The built-in checks' findings: by step, and those about an agent as a whole."""
        by_step: dict[int, list[str]] = {}
        whole: list[str] = []
        for check in ALL:
            for agent_id, result in check.evaluate(self.trace).items():
                if result is None or result.score is None or result.score >= 1.0:
                    continue
                agent = self.trace.agent_instance_by_id[agent_id]
                lines = [line.lstrip("- ").strip() for line in result.explanation.splitlines()]
                lines = [line for line in lines if line] or [f"scored {result.score:.2f}"]
                placed = False
                for pointer in result.steps or []:
                    ref = self.steps.at(agent_id, pointer.interaction)
                    if ref is None:
                        continue
                    line = next(
                        (
                            item
                            for item in lines
                            if pointer.named_in(item)
                            and (pointer.tool_call_id is None or pointer.tool_call_id in item)
                        ),
                        next((item for item in lines if pointer.named_in(item)), lines[0]),
                    )
                    by_step.setdefault(ref.index, []).append(f"{check.name}: {line}")
                    placed = True
                if not placed:
                    whole.append(f"{check.name}, agent {agent_label(agent)}: {lines[0]}")
        return by_step, whole

    @property
    def tools(self) -> tuple[ExplorationTool, ...]:
        """The tools, made anew on each read: they hold this material's bound methods, so
        kept on it they would make a reference cycle, and the trace they read (a 10 MiB
        request's 4,800 messages: 90 MB) would outlive its request until a full
        collection, which an idle server never runs (issue #32 item 8)."""
        return (
            ExplorationTool(
                name=READ_STEP,
                description=(
                    "Read one step of the trace (one model call of one agent): the input "
                    "messages new to it, what the model answered or called, and the tool "
                    "results it shows. Long messages are cut in the middle; read a whole "
                    f"tool result with {READ_RESULT}."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "step": {
                            "type": "integer",
                            "description": "the step number (the digest lists them)",
                        }
                    },
                    "required": ["step"],
                },
                run=self._read_step,
            ),
            ExplorationTool(
                name=SEARCH,
                description=(
                    "Search the whole trace for a text (case ignored): the steps where it "
                    "occurs, each with a snippet around it."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "the text to look for"},
                        "agent": {
                            "type": "string",
                            "description": "only the steps of this agent (name or instance id)",
                        },
                    },
                    "required": ["query"],
                },
                run=self._search,
            ),
            ExplorationTool(
                name=READ_RESULT,
                description=(
                    "Read a tool result of a step page by page: the characters from "
                    "`offset` on, as many as a read holds, and the offset of the next page."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "step": {"type": "integer", "description": "the step that shows it"},
                        "tool_call_id": {"type": "string", "description": "the call's id"},
                        "offset": {
                            "type": "integer",
                            "description": "the first character to read (0: the start)",
                        },
                    },
                    "required": ["step", "tool_call_id"],
                },
                run=self._read_result,
            ),
        )

    def exploration(self, agent_id: str, limits: ExplorationLimits) -> Exploration:
        """What a judge of agent `agent_id` explores with (nothing is read from the trace
        until the judge asks for the digest or calls a tool)."""
        return Exploration(
            digest=functools.partial(self.digest, agent_id), tools=self.tools, limits=limits
        )

    # ------------------------------------------------------------------ the digest

    def digest(self, agent_id: str, max_tokens: int) -> str:
        """The digest of the trace for a judge of agent `agent_id`, in `max_tokens`."""
        key = (agent_id, max_tokens)
        with self._lock:
            if key not in self._digests:
                self._digests[key] = self._digest(agent_id, max_tokens)
            return self._digests[key]

    def _digest(self, agent_id: str, max_tokens: int) -> str:
        room = _room(max_tokens)
        head = self._head(agent_id)
        flagged = self._flagged()
        lines = {step.index: self._step_line(step, agent_id, flagged) for step in self.steps}
        own = {step.index for step in self.steps if step.agent.id == agent_id}
        legend = (
            "STEPS (one line each: number, agent and its model call index, what it was "
            "given, what it answered or called and the size of each call's result; * the "
            "judged agent's own step, ! a finding or an error)"
        )
        # Fewer steps listed one by one at each try; the others summed up by runs.
        for keep in (None, own | set(flagged), set(flagged)):
            table = self._table(lines, keep, agent_id)
            text = "\n".join([*head, "", legend, *table])
            if _sent_bytes(text) <= room:
                return text
        text = "\n".join([*head, "", legend, *self._table(lines, set(), agent_id)])
        return _cut_to(text, room)

    def _head(self, agent_id: str) -> list[str]:
        trace = self.trace
        agent = trace.agent_instance_by_id[agent_id]
        parent = trace.parent_of(agent_id)
        own = [step.index for step in self.steps if step.agent.id == agent_id]
        total = sum(len(piece.text) for step in self.steps for piece in _pieces(step, self.texts))
        lines = [
            f"A multi-agent trace of {_plural(len(self.steps), 'step')} (model calls) by "
            f"{_plural(len(trace.agent_instance_by_id), 'agent instance')}; its messages "
            f"hold about {total:,} characters.",
            "",
            f"JUDGED: agent {agent_label(agent)}, "
            + (f"called by {agent_label(parent)}" if parent is not None else "the root agent")
            + f"; {_plural(len(own), 'own step')}: {_ranges(own) or 'none'}.",
        ]
        children = [trace.agent_instance_by_id.get(c) for c in agent.child_ids]
        if children:
            named = ", ".join(agent_label(c) for c in children if c is not None)
            lines.append(f"It calls the sub-agents {named}; their work is judged separately.")
        lines += ["", *agent_lines(self.steps)]
        by_step, whole = self.findings
        lines += ["", "FINDINGS OF THE DETERMINISTIC CHECKS"]
        found = [
            f"- step {index}: {_one_line(text, _FINDING_CHARS)}"
            for index in sorted(by_step)
            for text in by_step[index]
        ]
        found += [f"- {_one_line(text, _FINDING_CHARS)}" for text in whole]
        lines += found[:40] or ["- none"]
        if len(found) > 40:
            lines.append(f"- and {len(found) - 40:,} more, on the steps marked !")
        return lines

    def _flagged(self) -> dict[int, str]:
        """The steps with a finding or an error, and what to say of it."""
        by_step, _ = self.findings
        flagged: dict[int, str] = {}
        for step in self.steps:
            call = step.call
            notes: list[str] = []
            if step.index in by_step:
                checks = sorted({text.split(":", 1)[0] for text in by_step[step.index]})
                notes.append(f"finding: {', '.join(checks)}")
            if call.error:
                notes.append(f"error: {_one_line(call.error, 80)}")
            ending = unusual_ending(call)
            if ending:
                notes.append(ending)
            if call.refusal:
                notes.append("refused")
            if notes:
                flagged[step.index] = "; ".join(notes)
        return flagged

    def _step_line(self, step: StepRef, agent_id: str, flagged: dict[int, str]) -> str:
        mark = ("*" if step.agent.id == agent_id else " ") + ("!" if step.index in flagged else " ")
        new = self.texts.new.get(step.index, ())
        given = sum(len(_content(m)) for m in new)
        results = {r.id: r for r in step.call.tool_results or []}
        results.update((r.id, r) for _, r in self._answers(step))
        did: list[str] = []
        text = step.call.output_text
        if text.strip():
            did.append(f"answers {len(text):,} ch")
        for output in step.call.output_messages:
            call = output.content
            if isinstance(call, LLMToolCall):
                result = results.get(call.id)
                size = f"{len(result.response or ''):,} ch" if result is not None else "none"
                did.append(f"calls {call.name} ({call.id}), result {size}")
        parts = [
            f"{mark}{step.index:>5} {step.agent.name} {Step.call_name(step.interaction)}",
            f"given {_plural(len(new), 'new message')} ({given:,} ch)",
            "; ".join(did) or "no output",
        ]
        if step.index in flagged:
            parts.append(flagged[step.index])
        return " | ".join(parts)

    def _table(self, lines: dict[int, str], keep: set[int] | None, agent_id: str) -> list[str]:
        """The step lines, those not in `keep` summed up by runs (`keep` None: all)."""
        if keep is None:
            return [lines[step.index] for step in self.steps]
        table: list[str] = []
        run: list[StepRef] = []
        for step in self.steps:
            if step.index in keep:
                table.extend(self._summary(run, agent_id))
                run = []
                table.append(lines[step.index])
            else:
                run.append(step)
        table.extend(self._summary(run, agent_id))
        return table

    def _summary(self, run: list[StepRef], agent_id: str) -> Iterator[str]:
        if not run:
            return
        agents = Counter(step.agent.name for step in run)
        tools = Counter(
            o.content.name
            for step in run
            for o in step.call.output_messages
            if isinstance(o.content, LLMToolCall)
        )
        judged = sum(step.agent.id == agent_id for step in run)
        who = ", ".join(f"{name} x{n}" for name, n in agents.most_common(3))
        if len(agents) > 3:
            who += f" and {len(agents) - 3} more agents"
        line = f"  steps {run[0].index}-{run[-1].index}: {_plural(len(run), 'model call')} ({who})"
        if judged:
            line += f", {judged:,} of them the judged agent's"
        if tools:
            line += "; tools called: " + ", ".join(f"{n} x{c}" for n, c in tools.most_common(5))
        yield line

    # ------------------------------------------------------------------ the tools

    def _step(self, arguments: dict[str, Any]) -> StepRef:
        index = _integer(arguments, "step")
        step = self.steps.get(index)
        if step is None:
            raise ValueError(f"there is no step {index}: steps are 0 to {len(self.steps) - 1}")
        return step

    def _read_step(self, arguments: dict[str, Any], max_tokens: int) -> str:
        step = self._step(arguments)
        room = _room(max_tokens)
        whole = self._step_text(step, 10**12)
        if _sent_bytes(whole) <= room:
            return whole
        for limit in _STEP_CUTS:
            results = [*self.texts.tool_results(step), *(r for _, r in self._answers(step))]
            long = [r for r in results if len(r.response or "") > limit]
            note = f"\n(messages over {limit:,} characters are cut in the middle"
            if long:
                note += f"; read a whole tool result with {READ_RESULT}: " + ", ".join(
                    f"id {r.id} ({len(r.response or ''):,} characters)" for r in long[:10]
                )
            text = self._step_text(step, limit) + note + ")"
            if _sent_bytes(text) <= room:
                return text
        return _cut_to(self._step_text(step, _STEP_CUTS[-1]), room)

    def _step_text(self, step: StepRef, max_chars: int) -> str:
        """The step as attribution writes it, and the results of its tool calls that a
        later step was given (a chat agent reads them in its next call)."""
        lines = self.texts.lines(step, max_chars)
        for later, result in self._answers(step):
            lines.append(
                f"  <- result of {result.name or 'tool'} (id {result.id}), given to step "
                f"{later.index}:"
            )
            lines.extend(
                "    " + line for line in cut(result.response or "(empty)", max_chars).splitlines()
            )
        return "\n".join(lines).strip("\n")

    def _answers(self, step: StepRef) -> list[tuple[StepRef, LLMToolResponse]]:
        """The results of the step's tool calls that a later step of its agent shows (the
        results its own tool spans recorded are in the step already)."""
        recorded = {r.id for r in step.call.tool_results or []}
        wanted = {
            o.content.id
            for o in step.call.output_messages
            if isinstance(o.content, LLMToolCall) and o.content.id not in recorded
        }
        found: list[tuple[StepRef, LLMToolResponse]] = []
        position = step.interaction + 1
        while wanted:
            later = self.steps.at(step.agent.id, position)
            if later is None or position > step.interaction + 3:
                break
            for message in self.texts.new.get(later.index, ()):
                content = message.content
                if isinstance(content, LLMToolResponse) and content.id in wanted:
                    wanted.discard(content.id)
                    found.append((later, content))
            position += 1
        return found

    def _search(self, arguments: dict[str, Any], max_tokens: int) -> str:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ValueError('"query" must be a non-empty text to look for')
        needle = query.strip().casefold()
        agent = arguments.get("agent")
        wanted = agent.strip().casefold() if isinstance(agent, str) and agent.strip() else None
        room = _room(max_tokens) - 200
        lines: list[str] = []
        used = 0
        found = 0
        for step in self.steps:
            if wanted is not None and wanted not in (
                step.agent.id.casefold(),
                step.agent.name.casefold(),
            ):
                continue
            for piece in _pieces(step, self.texts):
                at = piece.text.casefold().find(needle)
                if at < 0:
                    continue
                found += 1
                start = max(0, at - _SNIPPET_CHARS // 2)
                snippet = _one_line(piece.text[start : at + len(needle) + _SNIPPET_CHARS // 2], 400)
                place = f"step {step.index} ({step.agent.name} {Step.call_name(step.interaction)})"
                line = f"- {place}, {piece.where}: ...{snippet}..."
                size = _sent_bytes(line)
                if used + size > room:
                    continue
                lines.append(line)
                used += size
        if not found:
            scope = f" in the steps of agent {agent!r}" if wanted else ""
            return f"no match for {query!r}{scope}"
        heading = f"{_plural(found, 'match')} for {query!r}"
        if len(lines) < found:
            heading += f" ({len(lines):,} shown; narrow the query or pass agent for the others)"
        return "\n".join([heading + ":", *lines])

    def _read_result(self, arguments: dict[str, Any], max_tokens: int) -> str:
        step = self._step(arguments)
        wanted = arguments.get("tool_call_id")
        results = [*self.texts.tool_results(step), *(r for _, r in self._answers(step))]
        result = next((r for r in results if r.id == wanted), None)
        if result is None:
            ids = ", ".join(str(r.id) for r in results) or "none"
            raise ValueError(
                f"step {step.index} shows no tool result with id {wanted!r} (its results: {ids})"
            )
        text = result.response or ""
        offset = _integer(arguments, "offset", 0)
        if not 0 <= offset <= max(len(text) - 1, 0):
            raise ValueError(f"offset must be from 0 to {max(len(text) - 1, 0):,}, got {offset:,}")
        room = _room(max_tokens) - 300
        end = min(len(text), offset + max(room, 1))
        while end > offset + 1 and _sent_bytes(text[offset:end]) > room:
            size = _sent_bytes(text[offset:end])
            end = offset + max(1, int((end - offset) * room / size * 0.98))
        heading = (
            f"tool result {result.name or 'tool'} (id {result.id}) of step {step.index}: "
            f"characters {offset:,} to {end:,} of {len(text):,}"
        )
        tail = (
            f"[more: {READ_RESULT} with offset {end}]" if end < len(text) else "[end of the result]"
        )
        return f"{heading}\n{text[offset:end]}\n{tail}"


def _content(message: Any) -> str:
    content = message.content
    if isinstance(content, LLMToolCall):
        return content.parameters
    if isinstance(content, LLMToolResponse):
        return content.response or ""
    return content or ""


def _pieces(step: StepRef, texts: StepTexts) -> Iterator[_Piece]:
    """Every text of a step, with where it is (for search)."""
    for message in texts.new.get(step.index, ()):
        content = message.content
        if isinstance(content, LLMToolResponse):
            yield _Piece(
                f"tool result {content.name or ''} (id {content.id})", content.response or ""
            )
        elif isinstance(content, LLMToolCall):
            yield _Piece(
                f"call of {content.name} (id {content.id})", f"{content.name} {content.parameters}"
            )
        else:
            yield _Piece(f"{message.role or 'user'} message", content or "")
    for output in step.call.output_messages:
        content = output.content
        if isinstance(content, LLMToolCall):
            yield _Piece(
                f"calls {content.name} (id {content.id})", f"{content.name} {content.parameters}"
            )
        else:
            yield _Piece("its answer", content or "")
    for result in step.call.tool_results or []:
        yield _Piece(f"tool result {result.name or ''} (id {result.id})", result.response or "")
    if step.call.refusal:
        yield _Piece("its refusal", step.call.refusal)
    if step.call.error:
        yield _Piece("its error", step.call.error)


def _ranges(indexes: list[int]) -> str:
    """'3-179, 181, 190-200'."""
    parts: list[str] = []
    start = previous = None
    for index in indexes:
        if previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            parts.append(f"{start}-{previous}" if previous != start else f"{start}")
        start = previous = index
    if start is not None:
        parts.append(f"{start}-{previous}" if previous != start else f"{start}")
    return ", ".join(parts)


def _cut_to(text: str, room: int) -> str:
    """`text` cut at a line to fit `room` bytes as sent."""
    suffix = "\n[the digest is cut here: search the trace or read its steps for the rest]"
    keep = len(text)
    while keep > 0 and _sent_bytes(text[:keep] + suffix) > room:
        keep = int(keep * 0.9)
        keep = text.rfind("\n", 0, keep) if "\n" in text[:keep] else keep
    return text[: max(keep, 0)] + suffix
