"""Stored traces made to order, for the store's and the list's tests and the list benchmark:
a trace of named agents (one model call each, with tokens, times and a tool result), and
answers that give each agent the score a test wants."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from tracejudge.models import (
    AgentInstance,
    AgentTraceResult,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    LLMToolResponse,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    ScoreResponse,
    SummaryStatistics,
    TokenUsage,
)
from tracejudge.server.store import EvaluationRow, TraceRow

MODEL = "gpt-4.1-mini"


def agent_trace(
    names: Sequence[str],
    *,
    start: float = 1_700_000_000.0,
    tool_result: str = "Lisbon: 24 C and sunny",
    tool_arguments: str = '{"city": "Lisbon"}',
    task: str = "plan a weekend",
    model: str | None = MODEL,
    tokens: tuple[int, int] = (100, 20),
) -> MultiAgentTrace:
    """The first name is the root; every other name is its child. Each agent makes one model
    call of one second, one after the other, the root's calling a tool."""
    ids = [f"{name}-{i}" for i, name in enumerate(names)]
    agents: dict[str, AgentInstance] = {}
    for i, (instance_id, name) in enumerate(zip(ids, names, strict=True)):
        call = LLMInteraction(
            input_messages=[
                LLMInput(role="user", content=f"Task for {name}: {task}"),
                *(
                    [
                        LLMInput(
                            role="tool",
                            content=LLMToolResponse(id="c1", name="weather", response=tool_result),
                        )
                    ]
                    if i == 0
                    else []
                ),
            ],
            output_messages=[
                LLMOutput(content=f"{name} answers"),
                *(
                    [
                        LLMOutput(
                            content=LLMToolCall(id="c1", name="weather", parameters=tool_arguments)
                        )
                    ]
                    if i == 0
                    else []
                ),
            ],
            model=model,
            usage=TokenUsage(
                input_tokens=tokens[0], output_tokens=tokens[1], total_tokens=sum(tokens)
            ),
            start_time=start + i,
            end_time=start + i + 1,
        )
        children: list[LLMInteraction | str] = [call]
        if i == 0:
            children += ids[1:]
        agents[instance_id] = AgentInstance(id=instance_id, name=name, interactions=children)
    return MultiAgentTrace(root_agent_instance_id=ids[0], agent_instance_by_id=agents)


def answer(
    trace: MultiAgentTrace,
    criterion: str,
    scores: Mapping[str, float | None],
    *,
    fail_under: float = 0.5,
    explanation: str = "Checked.",
) -> MultiAgentTraceResponse:
    """`criterion`'s answer giving each agent named in `scores` that score (None: not
    applicable); agents not named are not applicable too."""
    by_name: dict[str, AgentTraceResult] = {}
    for agent in trace.iter_agents():
        score = scores.get(agent.name)
        result = by_name.setdefault(
            agent.name,
            AgentTraceResult(agent_name=agent.name, results_by_agent_instance_id={}),
        )
        result.results_by_agent_instance_id[agent.id] = ScoreResponse(
            score=score, explanation=f"{explanation} ({agent.name})"
        )
    for result in by_name.values():
        result.summary_statistics = SummaryStatistics.of(
            [r.score for r in result.results_by_agent_instance_id.values() if r is not None]
        )
    given = [s for s in scores.values() if s is not None]
    return MultiAgentTraceResponse(
        request_id=str(uuid.uuid4()),
        results_by_agent_name=by_name,
        overall_score=sum(given) / len(given) if given else None,
        criterion=criterion,
        fail_under=fail_under,
    )


def stored(
    trace_id: str,
    trace: MultiAgentTrace,
    answers: Sequence[MultiAgentTraceResponse] = (),
    *,
    seen: float | None = None,
    tags: Mapping[str, str] | None = None,
    source: str = "api",
) -> tuple[TraceRow, list[EvaluationRow]]:
    """A trace and its answers as the server saves a posted trace."""
    when = seen if seen is not None else (trace.root.llm_interactions[0].start_time or 0) + 60
    row = TraceRow(
        trace_id=trace_id,
        source=source,
        status="scored" if answers else "queued",
        first_seen=when,
        last_span_at=when,
        root_agent=trace.root.name,
        agents=[a.name for a in trace.iter_agents()],
        trace_json=trace.to_json(),
        tags=dict(tags or {}),
    )
    rows = [
        EvaluationRow(
            id=str(uuid.uuid4()),
            kind="trace",
            criterion=a.criterion,
            response=a.model_dump_json(),
            overall_score=a.overall_score,
            created_at=when + i * 1e-3,
            trace_id=trace_id,
            source=source,
        )
        for i, a in enumerate(answers)
    ]
    return row, rows
