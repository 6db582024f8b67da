"""A trace too long to judge whole: a researcher agent making hundreds of tool calls whose
results are long, one of them an error the agent ignores (the planted fault)."""

from __future__ import annotations

from tracejudge.models import (
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
    MultiAgentTrace,
)

#: What the failed call returned: the fault the judge has to find.
FAULT = '{"error": "ERROR 503 upstream unavailable", "region": "region-179"}'
FETCH = LLMToolDefinition(
    name="fetch_region",
    description="Fetch one region's quarterly sales ledger",
    parameters={"type": "object", "properties": {"region": {"type": "string"}}},
)


def ledger(region: int, chars: int) -> str:
    """A long, plausible tool result: `chars` characters of a region's ledger."""
    row = f"region-{region}; store {{n}}; revenue {{r}} USD; returns {{q}}; audited yes\n"
    lines: list[str] = []
    size = 0
    n = 0
    while size < chars:
        line = row.format(n=n, r=1000 + (n * 37 + region) % 9000, q=(n * 7) % 50)
        lines.append(line)
        size += len(line)
        n += 1
    return "".join(lines)[:chars]


def long_trace(
    calls: int = 200, fault_call: int = 179, result_chars: int = 9_000
) -> MultiAgentTrace:
    """orchestrator o1 (steps 0 and the last) -> researcher r1, whose model calls are steps
    1..calls+1: each calls fetch_region and is given the previous call's result (a chat
    agent resends its history; the lists share their messages, so the trace is linear in
    memory). The call of interaction `fault_call` (trace step `fault_call + 1`) gets
    `FAULT`; the researcher carries on and claims every region in its answer."""
    history = [
        LLMInput(role="system", content="You are a careful research agent."),
        LLMInput(role="user", content=f"Collect the quarterly revenue of all {calls} regions."),
    ]
    interactions: list[LLMInteraction | str] = []
    for i in range(calls):
        call = LLMToolCall(id=f"c{i}", name="fetch_region", parameters={"region": f"region-{i}"})
        interactions.append(
            LLMInteraction(
                input_messages=list(history),
                output_messages=[LLMOutput(content=call)],
                tools_available=[FETCH],
                finish_reason="tool_calls",
            )
        )
        result = FAULT if i == fault_call else ledger(i, result_chars)
        history += [
            LLMInput(role="assistant", content=call),
            LLMInput(
                role="tool",
                content=LLMToolResponse(id=call.id, name="fetch_region", response=result),
            ),
        ]
    interactions.append(
        LLMInteraction(
            input_messages=list(history),
            output_messages=[
                LLMOutput(content=f"All {calls} regions collected; the totals are complete.")
            ],
            tools_available=[FETCH],
            finish_reason="stop",
        )
    )
    researcher = AgentInstance(id="r1", name="researcher", interactions=interactions)
    delegate = LLMToolCall(id="d1", name="delegate", parameters={"to": "researcher"})
    orchestrator = AgentInstance(
        id="o1",
        name="orchestrator",
        interactions=[
            LLMInteraction(
                input_messages=[LLMInput(role="user", content="Report the quarterly revenue.")],
                output_messages=[LLMOutput(content=delegate)],
            ),
            "r1",
            LLMInteraction(
                input_messages=[
                    LLMInput(role="user", content="Report the quarterly revenue."),
                    LLMInput(role="assistant", content=delegate),
                    LLMInput(
                        role="tool",
                        content=LLMToolResponse(id="d1", response="researcher: all collected"),
                    ),
                ],
                output_messages=[LLMOutput(content="The quarterly revenue report is ready.")],
            ),
        ],
    )
    return MultiAgentTrace(
        root_agent_instance_id="o1", agent_instance_by_id={"o1": orchestrator, "r1": researcher}
    )
