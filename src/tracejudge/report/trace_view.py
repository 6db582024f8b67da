"""One scored trace as the data the trace viewer draws (`viewer.js`).

The same data serves the server's page of one trace (`render_trace_page`) and every trace
of the batch report (`write_report`), so both show one view: the verdict first, the agent
tree with each agent's scores, a timeline of agents, model calls and tool runs, and each
model call's messages. `trace_entry(trace_id, trace, lines)` makes it from the trace and
its result lines (`tracejudge.report.results`); the verdict is `TraceVerdict`'s, so
"failing" means here what it means everywhere.

The entry, as plain JSON (the batch CLI spools it)::

    {"id", "source"?, "worst", "failing", "status",        # the trace's verdict in brief
     "start": unix seconds | null, "totals": {...},          # what it ran, used and cost
     "verdict": {"failures": [...], "not_evaluated": [...], "scored", "not_applicable"},
     "results": [{"criterion", "overall", "bar", "explanation",
                  "agents": [{"agent": index, "score", "explanation", "not_evaluated"?}]}],
     "attribution"?: {"methods", "notes", "outcome"?, "usage"?,   # a failed trace's causes
                      "left_out"?,
                      "causes": [{"rank", "agent": index, "step": finding step | null,
                                  "index", "method", "criteria", "evidence",
                                  "confidence", "consequence_of"?, "fix"?,
                                  "outcome_changes"?}]},
     "agents": [agent, ...]}                                 # tree order, the root first

An agent is `{"name", "parent", "depth", "t0", "t1", "n", "children", "steps", "calls"}`:
`children` lists `[calls before it, child index]`, so the timeline can place each child
where it ran; `steps` holds one light record per model call (times, model, tokens, cost,
its tool runs) that the timeline draws; `calls` the heavy part (messages), None when left
out. Times are milliseconds from the trace's first recorded time, absent when not
recorded. Findings point at steps as `[agent index, interaction index, tool call id,
tool name]` (the last two None when the finding names no tool call). An entry says
`"steps_left_out": n` when its timeline stops short, and `"left_out": true` when the
batch report kept only its verdict and scores (`html.write_report`).

`attribution` is the trace's `tracejudge.models.Attribution` (the caller makes it: the
deterministic one from the answers, or one stored by the server), there only when the
trace failed: its ranked causes, each an agent and, where known, its step in the
findings' form; the viewer lists them and marks the first cause with a step on the
timeline. At most `MAX_CAUSES` causes are kept (`"left_out"` says how many more).

Bounds, so that a trace of any size makes a page of bounded size: every text is cut at
`max_text` characters; a call whose input repeats the previous call's input keeps only
the messages after it (`skip` says how many were left out); past `max_steps` model calls
the rest get no timeline rows; past `max_call_text` characters of messages the other
calls' messages are left out (their `calls` entry is None). Each cut says so on the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.models import (
    AgentInstance,
    AgentTraceResult,
    Attribution,
    JudgeUsage,
    LLMInput,
    LLMInteraction,
    LLMToolCall,
    LLMToolResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    Price,
    PriceTable,
    ScoreResponse,
    Step,
    TraceVerdict,
)
from tracejudge.report.results import line_bar, line_usage, usage_of

__all__ = [
    "MAX_CALL_TEXT",
    "MAX_CAUSES",
    "MAX_STEPS",
    "MAX_TEXT",
    "responses_of_lines",
    "trace_entry",
    "verdict_of_lines",
]

#: Characters of one message, tool argument, result or explanation kept.
MAX_TEXT = 4000
#: Model calls of one trace drawn on its timeline.
MAX_STEPS = 20_000
#: Characters of messages kept for one trace; later calls' messages are left out.
MAX_CALL_TEXT = 3_000_000
#: Causes of one trace's attribution kept (the most likely first).
MAX_CAUSES = 20

_PRICES: PriceTable | None = None


def _default_prices() -> PriceTable:
    global _PRICES
    if _PRICES is None:
        _PRICES = PriceTable()
    return _PRICES


def cut(text: str | None, limit: int) -> str:
    """`text` (None as empty) cut to `limit` characters, saying how many were dropped."""
    text = text or ""
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [{len(text) - limit} more characters]"


def trace_entry(
    trace_id: str,
    trace: MultiAgentTrace,
    lines: Sequence[Mapping[str, Any]],
    *,
    max_text: int = MAX_TEXT,
    with_calls: bool = True,
    verdict: TraceVerdict | None = None,
    prices: PriceTable | None = None,
    max_steps: int = MAX_STEPS,
    max_call_text: int = MAX_CALL_TEXT,
    attribution: Attribution | None = None,
) -> dict[str, Any]:
    """One trace's data for the viewer (see the module docstring).

    `lines`: the trace's result lines. `verdict`: the trace's `TraceVerdict` when the
    caller holds its responses (else it is read back from `lines`, the same way).
    `prices`: what model calls cost (the shipped `PriceTable` by default).
    `with_calls=False` leaves every call's messages out. `attribution`: the trace's
    causes, shown when it failed (see the module docstring).
    """
    tree = _Tree(trace)
    verdict = verdict if verdict is not None else verdict_of_lines(lines)
    budget = _Budget(text=max_text, steps=max_steps, call_text=max_call_text if with_calls else -1)
    timing = _Timing.of(tree)
    priced = _Prices(prices or _default_prices())
    agents = [_agent(tree, k, timing, budget, priced) for k in range(len(tree))]
    entry: dict[str, Any] = {
        "id": trace_id,
        "worst": verdict.worst_score,
        "failing": verdict.failed,
        "status": verdict.status,
        "start": timing.origin,
        "totals": _totals(agents, timing),
        "verdict": _verdict(verdict, lines, tree, max_text),
        "results": _results(lines, tree, max_text),
        "agents": agents,
    }
    if attribution is not None and attribution.failed:
        entry["attribution"] = _attribution(attribution, tree, max_text)
    judge_usage = _judge_usage(lines)
    if judge_usage is not None:
        entry["usage"] = judge_usage  # the judge's calls, tokens and dollars on this trace
    if budget.steps_dropped:
        entry["steps_left_out"] = budget.steps_dropped
    source = next((line.get("source") for line in lines if line.get("source")), None)
    if source:
        entry["source"] = source
    return entry


def verdict_of_lines(lines: Sequence[Mapping[str, Any]]) -> TraceVerdict:
    """The `TraceVerdict` of a trace's result lines (lines read back from a file count the
    same as fresh answers)."""
    return TraceVerdict.of(responses_of_lines(lines))


def responses_of_lines(lines: Sequence[Mapping[str, Any]]) -> list[MultiAgentTraceResponse]:
    """The answers a trace's result lines hold, as the evaluation gave them: each agent's
    score, explanation, steps and reason for not being evaluated, and each criterion's
    bar (what the verdict and the deterministic attribution read)."""
    return [_response_of_line(line) for line in lines]


def _response_of_line(line: Mapping[str, Any]) -> MultiAgentTraceResponse:
    by_name: dict[str, AgentTraceResult] = {}
    for instance_id, agent in (line.get("agents") or {}).items():
        name = str(agent.get("name"))
        result = by_name.setdefault(
            name, AgentTraceResult(agent_name=name, results_by_agent_instance_id={})
        )
        result.results_by_agent_instance_id[instance_id] = ScoreResponse(
            score=agent.get("score"),
            explanation=str(agent.get("explanation") or ""),
            steps=[Step.model_validate(s) for s in agent.get("steps") or ()] or None,
            not_evaluated=agent.get("not_evaluated"),
        )
    return MultiAgentTraceResponse(
        request_id="",
        results_by_agent_name=by_name,
        criterion=str(line.get("criterion", "")),
        fail_under=line_bar(line),
    )


class _Tree:
    """The trace's agents in tree order, with parent and depth, read once (the trace's own
    `parent_of` scans every agent: too slow for thousands of them)."""

    def __init__(self, trace: MultiAgentTrace) -> None:
        self.agents: list[AgentInstance] = list(trace.iter_agents())
        self.index: dict[str, int] = {a.id: k for k, a in enumerate(self.agents)}
        self.parent: list[int | None] = [None] * len(self.agents)
        for k, agent in enumerate(self.agents):
            for child in agent.child_ids:
                at = self.index.get(child)
                if at is not None and self.parent[at] is None and at != k:
                    self.parent[at] = k
        self.depth: list[int] = [0] * len(self.agents)
        for k in range(len(self.agents)):  # tree order: a parent comes before its children
            parent = self.parent[k]
            self.depth[k] = self.depth[parent] + 1 if parent is not None else 0

    def __len__(self) -> int:
        return len(self.agents)


@dataclass
class _Timing:
    """Each agent's span (the first start and last end of its calls and its children's),
    and the trace's origin: its first recorded time, in Unix seconds."""

    origin: float | None
    spans: list[tuple[float | None, float | None]]

    @classmethod
    def of(cls, tree: _Tree) -> _Timing:
        spans: list[tuple[float | None, float | None]] = [(None, None)] * len(tree)
        # Children come after their parent in tree order: walk backwards, children first.
        for k in reversed(range(len(tree))):
            starts = [c.start_time for c in tree.agents[k].llm_interactions]
            ends = [c.end_time for c in tree.agents[k].llm_interactions]
            for child in tree.agents[k].child_ids:
                at = tree.index.get(child)
                if at is not None and tree.parent[at] == k:
                    starts.append(spans[at][0])
                    ends.append(spans[at][1])
            known_starts = [s for s in starts if s is not None]
            known_ends = [e for e in ends if e is not None]
            spans[k] = (
                min(known_starts) if known_starts else None,
                max(known_ends) if known_ends else None,
            )
        origins = [s for s, _ in spans if s is not None]
        return cls(min(origins) if origins else None, spans)

    def ms(self, moment: float | None) -> float | None:
        """`moment` in milliseconds from the origin, or None when not recorded."""
        if moment is None or self.origin is None:
            return None
        return round((moment - self.origin) * 1000, 3)


class _Prices:
    """A price table's lookups kept per model name: a trace of 20,000 calls names a few
    models, and each lookup normalises the name."""

    def __init__(self, table: PriceTable) -> None:
        self.table = table
        self.found: dict[str | None, Price | None] = {}

    def cost(self, model: str | None, input_tokens: int, output_tokens: int) -> float | None:
        if model not in self.found:
            self.found[model] = self.table.get(model)
        price = self.found[model]
        return None if price is None else price.cost(input_tokens, output_tokens)


@dataclass
class _Budget:
    text: int
    steps: int
    call_text: int  # characters of messages left; below 0: no more messages
    steps_dropped: int = field(default=0)

    def take_steps(self, wanted: int) -> int:
        """How many of `wanted` more model calls get a timeline row."""
        given = min(wanted, self.steps)
        self.steps -= given
        self.steps_dropped += wanted - given
        return given


def _agent(
    tree: _Tree, k: int, timing: _Timing, budget: _Budget, prices: _Prices
) -> dict[str, Any]:
    agent = tree.agents[k]
    calls = agent.llm_interactions
    node: dict[str, Any] = {
        "name": agent.name,
        "parent": tree.parent[k],
        "depth": tree.depth[k],
        "n": len(calls),
        "children": _children(tree, k),
    }
    start, end = timing.spans[k]
    if start is not None:
        node["t0"] = timing.ms(start)
    if end is not None:
        node["t1"] = timing.ms(end)
    skips = _repeated_inputs(calls)
    runs = _tool_runs(calls, skips)
    drawn = budget.take_steps(len(calls))
    node["steps"] = [_step(calls, i, runs[i], timing, prices) for i in range(drawn)]
    node["calls"] = _contents(calls, skips, budget)
    return node


def _children(tree: _Tree, k: int) -> list[list[int]]:
    """`[calls before it, child index]` for each child agent, in the order it ran."""
    found, calls = [], 0
    for item in tree.agents[k].interactions:
        if isinstance(item, LLMInteraction):
            calls += 1
            continue
        at = tree.index.get(item)
        if at is not None and tree.parent[at] == k:
            found.append([calls, at])
    return found


def _repeated_inputs(calls: Sequence[LLMInteraction]) -> list[int]:
    """For each call, how many of its first input messages repeat the previous call's
    input (chat agents resend the conversation): the viewer shows only the rest.

    Checked at the first, middle and last message of the previous input, not all of them,
    so that an agent of thousands of calls costs linear time; a stored trace read back
    shares the repeated messages (`server.store.stored.read_trace`), so they are the same
    objects and no field is compared."""
    skips = []
    previous: list[LLMInput] = []
    for call in calls:
        current = call.input_messages
        n = len(previous)
        same = (
            0 < n <= len(current)
            and _same(current[0], previous[0])
            and _same(current[n // 2], previous[n // 2])
            and _same(current[n - 1], previous[n - 1])
        )
        skips.append(n if same else 0)
        previous = current
    return skips


def _same(one: LLMInput, other: LLMInput) -> bool:
    return one is other or one == other


@dataclass
class _ToolRun:
    """A tool call and where its result is: `at`, the index of the model call whose input
    carries it (the tool ran between the two calls), or the call itself when the tool's
    own span recorded it (`tool_results`: no time), or None when no result was recorded."""

    name: str
    call_id: str
    at: int | None


def _tool_runs(calls: Sequence[LLMInteraction], skips: Sequence[int]) -> list[list[_ToolRun]]:
    runs: list[list[_ToolRun]] = [[] for _ in calls]
    waiting: dict[str, _ToolRun] = {}
    for j, call in enumerate(calls):
        for message in call.input_messages[skips[j] :]:
            content = message.content
            if isinstance(content, LLMToolResponse) and content.id in waiting:
                waiting.pop(content.id).at = j
        recorded = {r.id for r in call.tool_results or ()}
        for tool_call in call.tool_calls:
            run = _ToolRun(tool_call.name, tool_call.id, j if tool_call.id in recorded else None)
            runs[j].append(run)
            if run.at is None:
                waiting[tool_call.id] = run
    return runs


def _step(
    calls: Sequence[LLMInteraction],
    i: int,
    runs: Sequence[_ToolRun],
    timing: _Timing,
    prices: _Prices,
) -> dict[str, Any]:
    """The timeline's record of model call `i`: times, model, tokens and cost when known,
    and its tool runs."""
    call = calls[i]
    step: dict[str, Any] = {}
    t0, t1 = timing.ms(call.start_time), timing.ms(call.end_time)
    if t0 is not None:
        step["t0"] = t0
    if t1 is not None:
        step["t1"] = t1
    if call.model:
        step["model"] = call.model
    if call.usage is not None:
        usage = call.usage
        step["tokens"] = [usage.input_tokens, usage.output_tokens]
        cost = prices.cost(call.model, usage.input_tokens, usage.output_tokens)
        if cost is not None:
            step["cost"] = cost
    if call.error:
        step["error"] = True
    step["tools"] = [_tool_run(run, calls, i, timing) for run in runs]
    return step


def _tool_run(run: _ToolRun, calls: Sequence[LLMInteraction], i: int, timing: _Timing) -> list[Any]:
    """`[tool name, call id, where its result is, t0, t1]`: the tool ran between the end of
    the call that made it and the start of the later call that carries its result. With
    no such call (or no times) its times are None: not recorded, never guessed."""
    t0 = t1 = None
    if run.at is not None and run.at > i:
        t0, t1 = timing.ms(calls[i].end_time), timing.ms(calls[run.at].start_time)
        if t0 is None or t1 is None or t1 < t0:
            t0 = t1 = None
    return [run.name, run.call_id, run.at, t0, t1]


def _contents(
    calls: Sequence[LLMInteraction], skips: Sequence[int], budget: _Budget
) -> list[dict[str, Any] | None] | None:
    """Each call's messages (new inputs, reasoning, outputs, the tool spans' results,
    error, refusal and finish reason), None for those past the budget."""
    if budget.call_text < 0:
        return None
    found: list[dict[str, Any] | None] = []
    for call, skip in zip(calls, skips, strict=True):
        if budget.call_text < 0:
            found.append(None)
            continue
        content: dict[str, Any] = {
            "in": [_message(m.role, m.content, budget) for m in call.input_messages[skip:]],
            "out": [_message("assistant", m.content, budget) for m in call.output_messages],
        }
        if skip:
            content["skip"] = skip
        for key in ("reasoning", "error", "refusal", "finish_reason"):
            value = getattr(call, key)
            if value:
                content[key] = _text(str(value), budget)
        if call.tool_results:
            content["results"] = [_message("tool", r, budget) for r in call.tool_results]
        found.append(content)
    return found


def _text(text: str, budget: _Budget) -> str:
    kept = cut(text, budget.text)
    budget.call_text -= len(kept)
    return kept


def _message(role: str, content: Any, budget: _Budget) -> list[Any]:
    """A message as `[role, kind, text]`; a tool call or result also names its call id
    and tool: `[role, "call" | "result", text, call id, tool name]`."""
    if isinstance(content, LLMToolCall):
        return [role, "call", _text(content.parameters, budget), content.id, content.name]
    if isinstance(content, LLMToolResponse):
        return [role, "result", _text(content.response, budget), content.id, content.name or ""]
    return [role, "text", _text(str(content), budget)]


def _totals(agents: Sequence[Mapping[str, Any]], timing: _Timing) -> dict[str, Any]:
    """Model calls, tokens in and out, the cost of the priced calls and how many calls
    used tokens at no known price, and the trace's duration in milliseconds."""
    calls = input_tokens = output_tokens = unpriced = 0
    cost = 0.0
    for agent in agents:
        calls += agent["n"]
        for step in agent["steps"]:
            tokens = step.get("tokens")
            if tokens is None:
                continue
            input_tokens += tokens[0]
            output_tokens += tokens[1]
            if "cost" in step:
                cost += step["cost"]
            else:
                unpriced += 1
    ends = [t for _, t in timing.spans if t is not None]
    totals: dict[str, Any] = {
        "calls": calls,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": cost,
        "unpriced": unpriced,
    }
    if ends and timing.origin is not None:
        totals["ms"] = timing.ms(max(ends))
    return totals


def _verdict(
    verdict: TraceVerdict, lines: Sequence[Mapping[str, Any]], tree: _Tree, max_text: int
) -> dict[str, Any]:
    """The failing (agent, criterion) pairs, worst first, each with the steps it points to
    (`[agent index, interaction, tool call id, tool name]`), and the pairs that could not
    be evaluated, with their reason."""
    failures = []
    for failure in verdict.failures:
        k = tree.index.get(failure.agent_instance_id)
        if k is None:
            continue
        failures.append(
            {
                "criterion": failure.criterion,
                "agent": k,
                "score": failure.score,
                "bar": failure.fail_under,
                "explanation": cut(failure.explanation, max_text),
                "steps": [
                    [k, s.interaction, s.tool_call_id, s.tool_name]
                    for s in failure.steps
                    if s.interaction < len(tree.agents[k].llm_interactions)
                ],
            }
        )
    not_evaluated = [
        {"criterion": line["criterion"], "agent": tree.index[i], "reason": cut(why, max_text)}
        for line in lines
        for i, agent in (line.get("agents") or {}).items()
        if (why := agent.get("not_evaluated")) is not None and i in tree.index
    ]
    return {
        "failures": failures,
        "not_evaluated": not_evaluated,
        "scored": verdict.scored,
        "not_applicable": verdict.not_applicable,
    }


def _results(
    lines: Sequence[Mapping[str, Any]], tree: _Tree, max_text: int
) -> list[dict[str, Any]]:
    """Per criterion: its overall score, bar and explanation, and each agent's score
    (None: not applicable) or the reason it was not evaluated."""
    results = []
    for line in lines:
        agents = []
        for instance_id, agent in (line.get("agents") or {}).items():
            if instance_id not in tree.index:
                continue
            row: dict[str, Any] = {
                "agent": tree.index[instance_id],
                "score": agent.get("score"),
                "explanation": cut(agent.get("explanation"), max_text),
            }
            if agent.get("not_evaluated") is not None:
                row["not_evaluated"] = cut(agent["not_evaluated"], max_text)
            agents.append(row)
        result: dict[str, Any] = {
            "criterion": line["criterion"],
            "overall": line.get("overall_score"),
            "bar": line_bar(line),
            "explanation": cut(line.get("explanation"), max_text),
            "agents": agents,
        }
        usage = usage_of(line)
        if usage is not None:
            result["usage"] = line_usage(usage)
        results.append(result)
    return results


def _judge_usage(lines: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What the judge used on the trace, all criteria together (None: nothing judged)."""
    spent: JudgeUsage | None = None
    for line in lines:
        usage = usage_of(line)
        if usage is not None:
            spent = usage if spent is None else spent + usage
    return line_usage(spent) if spent is not None else None


def _attribution(attribution: Attribution, tree: _Tree, max_text: int) -> dict[str, Any]:
    """The causes, most likely first, each with its agent's index and its step as a
    finding's (`[agent index, interaction, tool call id, tool name]`, None for the agent
    as a whole), what found it and how sure it is."""
    causes: list[dict[str, Any]] = []
    known = [c for c in attribution.causes if c.agent_instance_id in tree.index]
    for cause in known[:MAX_CAUSES]:
        k = tree.index[cause.agent_instance_id]
        step = cause.step
        item: dict[str, Any] = {
            "rank": cause.rank,
            "agent": k,
            "step": (
                [k, step.interaction, step.tool_call_id, step.tool_name]
                if step is not None and step.interaction < len(tree.agents[k].llm_interactions)
                else None
            ),
            "index": cause.index,
            "method": cause.method,
            "criteria": list(cause.criteria),
            "evidence": cut(cause.evidence, max_text),
            "confidence": cause.confidence,
        }
        if cause.consequence_of is not None:
            item["consequence_of"] = cause.consequence_of
        if cause.fix:
            item["fix"] = cut(cause.fix, max_text)
            item["outcome_changes"] = cause.outcome_changes
        causes.append(item)
    shown: dict[str, Any] = {
        "methods": list(attribution.methods),
        "notes": [cut(note, max_text) for note in attribution.notes[:10]],
        "causes": causes,
    }
    if attribution.outcome:
        shown["outcome"] = cut(attribution.outcome, max_text)  # what went wrong, in words
    if len(known) > len(causes):
        shown["left_out"] = len(known) - len(causes)
    if attribution.usage.calls:
        shown["usage"] = line_usage(attribution.usage)
    return shown
