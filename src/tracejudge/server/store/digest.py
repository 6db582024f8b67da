"""What the list shows of a stored trace, computed once when it is converted or scored.

`digest(trace_json, responses)` reads the converted trace and its latest answer per
criterion and gives the columns the store keeps beside them (so that listing, sorting
and filtering read columns, never trace JSON): times, agents, model calls, tokens, cost,
models, the verdict (`tracejudge.models.TraceVerdict`: the worst agent score, never a
mean; failing agents and pairs), one score row per (criterion, agent instance), and the
text the full-text index holds.

The indexed text is bounded: each piece (a message, tool arguments, a tool result, an
explanation) is cut to `PIECE_CHARS` and the trace's text to `TRACE_CHARS`, repeated
pieces (the conversation history every call carries again) counted once, so that a huge
trace cannot blow up the index. Explanations come first, then the agents' messages in
tree order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from tracejudge.models import (
    LLMInteraction,
    LLMToolCall,
    LLMToolResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    PriceTable,
    TraceVerdict,
)
from tracejudge.server.store.trace_text import read_trace

__all__ = [
    "AgentScore",
    "TraceDigest",
    "digest",
    "settled_verdict",
    "DIGEST_VERSION",
    "NEVER_SCORED",
    "PIECE_CHARS",
    "TRACE_CHARS",
]

#: Bumped when what a digest holds changes: stored traces with an older one are digested
#: again when the store opens. 2: a trace that will never be scored is not "pending".
#: 3: what the trace adds to the trend rollups (traces stored before are rolled up once).
DIGEST_VERSION = 3
#: Trace statuses that are final without a score: too_large (over --max-trace-spans) and
#: unscorable (no model call in it).
NEVER_SCORED = frozenset({"too_large", "unscorable"})
#: The indexed text: at most this many characters per piece, and per trace.
PIECE_CHARS = 2_000
TRACE_CHARS = 64_000

_DEFAULT_PRICES = PriceTable()


@dataclass(frozen=True)
class AgentScore:
    """One agent instance's latest answer on one criterion. `state`: scored,
    not_applicable or not_evaluated; `failing`: scored below `fail_under`."""

    criterion: str
    agent_instance_id: str
    agent_name: str
    score: float | None
    fail_under: float
    failing: bool
    state: str


@dataclass
class TraceDigest:
    """The list's columns of one trace (see the module's docstring)."""

    start_time: float | None = None
    end_time: float | None = None
    agents: list[str] = field(default_factory=list)
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    models: list[str] = field(default_factory=list)
    verdict: str = "pending"
    worst_score: float | None = None
    worst_agent: str | None = None
    worst_criterion: str | None = None
    failing_agents: int = 0
    failing_pairs: int = 0
    scores: list[AgentScore] = field(default_factory=list)
    text: str = ""


def _calls(trace: MultiAgentTrace) -> Iterator[LLMInteraction]:
    for agent in trace.iter_agents():
        yield from agent.llm_interactions


def _cost(calls: Sequence[LLMInteraction], prices: PriceTable) -> float | None:
    """Dollars of the calls whose model is priced; None when none of them is."""
    total: float | None = None
    for call in calls:
        usage = call.usage
        if usage is None:
            continue
        dollars = prices.cost(call.model, usage.input_tokens, usage.output_tokens)
        if dollars is not None:
            total = (total or 0.0) + dollars
    return total


def _scores(responses: Sequence[MultiAgentTraceResponse]) -> list[AgentScore]:
    rows = []
    for response in responses:
        bar = response.bar()
        for result in response.results_by_agent_name.values():
            for instance_id, answer in result.results_by_agent_instance_id.items():
                score = None if answer is None else answer.score
                state = "not_applicable" if answer is None else answer.status
                rows.append(
                    AgentScore(
                        criterion=response.criterion,
                        agent_instance_id=instance_id,
                        agent_name=result.agent_name,
                        score=score,
                        fail_under=bar,
                        failing=state == "scored" and score is not None and score < bar,
                        state=state,
                    )
                )
    return rows


def _message_texts(call: LLMInteraction) -> Iterator[str]:
    contents = [m.content for m in call.input_messages]
    contents += [m.content for m in call.output_messages]
    contents += list(call.tool_results or ())
    for content in contents:
        if isinstance(content, str):
            yield content
        elif isinstance(content, LLMToolCall):
            yield f"{content.name} {content.parameters}"
        elif isinstance(content, LLMToolResponse):
            yield content.response if content.name is None else f"{content.name} {content.response}"
    for text in (call.refusal, call.error):
        if text:
            yield text


def _explanations(responses: Sequence[MultiAgentTraceResponse]) -> Iterator[str]:
    for response in responses:
        if response.explanation:
            yield response.explanation
        for result in response.results_by_agent_name.values():
            for answer in result.results_by_agent_instance_id.values():
                if answer is not None and answer.explanation:
                    yield answer.explanation


def _pieces(
    trace: MultiAgentTrace | None, responses: Sequence[MultiAgentTraceResponse]
) -> Iterator[str]:
    yield from _explanations(responses)
    if trace is None:
        return
    for agent in trace.iter_agents():
        yield agent.name
        for call in agent.llm_interactions:
            yield from _message_texts(call)


def search_text(trace: MultiAgentTrace | None, responses: Sequence[MultiAgentTraceResponse]) -> str:
    """The trace's text for the full-text index, bounded (see the module's docstring)."""
    seen: set[str] = set()
    kept: list[str] = []
    left = TRACE_CHARS
    for piece in _pieces(trace, responses):
        piece = piece.strip()[:PIECE_CHARS]
        if not piece or piece in seen:
            continue
        seen.add(piece)
        piece = piece[:left]
        kept.append(piece)
        left -= len(piece) + 1
        if left <= 0:
            break
    return "\n".join(kept)


def settled_verdict(verdict: str, status: str) -> str:
    """A trace's verdict given its status: "pending" means it will be scored, so a trace
    that never will be (`NEVER_SCORED`) and has no answers is "unscored"."""
    return "unscored" if verdict == "pending" and status in NEVER_SCORED else verdict


def digest(
    trace_json: str | None,
    responses_json: Sequence[str],
    prices: PriceTable | None = None,
) -> TraceDigest:
    """The digest of a trace (None: not converted) and its latest answer per criterion
    (`MultiAgentTraceResponse` JSON texts; one that is not such an answer is left out),
    costs from `prices` (the shipped table by default). ValueError when `trace_json` is
    not a trace."""
    trace = read_trace(trace_json) if trace_json else None
    responses = []
    for text in responses_json:
        try:
            responses.append(MultiAgentTraceResponse.model_validate_json(text))
        except ValueError:
            continue  # not an answer this server wrote: it counts for nothing
    # One answer per criterion, the latest (the answers come oldest first): a trace posted
    # with a check and scored with it again stores two rows whose criterion column differs
    # (the posted evaluator's name, the check's) for answers on the same criterion.
    responses = list({r.criterion: r for r in responses}.values())
    found = TraceDigest(text=search_text(trace, responses))
    if trace is not None:
        calls = list(_calls(trace))
        starts = [c.start_time for c in calls if c.start_time is not None]
        ends = [c.end_time for c in calls if c.end_time is not None]
        found.start_time = min(starts) if starts else None
        found.end_time = max(ends) if ends else None
        found.agents = [agent.name for agent in trace.iter_agents()]
        found.model_calls = len(calls)
        found.input_tokens = sum(c.usage.input_tokens for c in calls if c.usage)
        found.output_tokens = sum(c.usage.output_tokens for c in calls if c.usage)
        found.cost = _cost(calls, prices or _DEFAULT_PRICES)
        found.models = sorted({c.model for c in calls if c.model})
    if responses:
        verdict = TraceVerdict.of(responses)
        found.verdict = verdict.status
        found.worst_score = verdict.worst_score
        found.worst_agent = verdict.worst.agent_name if verdict.worst else None
        found.worst_criterion = verdict.worst_criterion
        found.failing_agents = verdict.failing_agents
        found.failing_pairs = len(verdict.failures)
        found.scores = _scores(responses)
    return found
