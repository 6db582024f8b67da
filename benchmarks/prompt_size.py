"""Judge prompt size per agent: tracejudge's rendering versus every call's full input.

A chat agent resends its whole history on every model call, so the inputs of an agent of
N calls hold about N^2/2 messages. tracejudge renders an agent for the judge once, each
message once (`tracejudge.evaluation.render_agent`); the naive alternative renders every
call's full input and output. Agents of 5, 20, 50 and 100 calls, each call adding an
assistant step and a tool-style result of about 300 characters.

    python benchmarks/prompt_size.py

Target: ours linear - characters per call at 100 calls within 1.25x of those at 5 calls
(the naive rendering grows with N).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tracejudge.evaluation.render import render_agent
from tracejudge.models import MultiAgentTrace

SIZES = (5, 20, 50, 100)
SYSTEM = "You are a research agent. Use the search results to answer; cite what you use."
QUESTION = "Summarise what is known about the history of the city of Lyon, with dates."


def _result(step: int) -> str:
    return f"Search result {step}: " + ("Lyon was an important Roman city, Lugdunum. " * 6)


def agent_trace(calls: int) -> MultiAgentTrace:
    """One agent of `calls` model calls, each resending the history before it."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    interactions = []
    for step in range(calls):
        answer = f"Step {step}: I will look for more about period {step} of Lyon's history."
        interactions.append(
            {
                "input_messages": list(history),
                "output_messages": [{"type": "text", "content": answer}],
            }
        )
        history += [
            {"role": "assistant", "content": answer},
            {"role": "user", "content": _result(step)},
        ]
    return MultiAgentTrace.model_validate(
        {
            "root_agent_instance_id": "a",
            "agent_instance_by_id": {
                "a": {"id": "a", "name": "researcher", "interactions": interactions}
            },
        }
    )


def naive_size(trace: MultiAgentTrace) -> int:
    """Characters of every call's full input and output, one `role: content` line each."""
    agent = trace.agent_instance_by_id[trace.root_agent_instance_id]
    total = 0
    for interaction in agent.interactions:
        for message in interaction.input_messages:  # type: ignore[union-attr]
            total += len(f"{message.role}: {message.content}\n")
        for output in interaction.output_messages:  # type: ignore[union-attr]
            total += len(f"assistant: {output.content}\n")
    return total


def main() -> int:
    rows = []
    for calls in SIZES:
        trace = agent_trace(calls)
        start = time.perf_counter()
        ours = len(render_agent(trace, "a").content)
        ms = 1000 * (time.perf_counter() - start)
        rows.append((calls, ours, naive_size(trace), ms))
    for calls, ours, naive, ms in rows:
        print(
            f"{calls} calls: tracejudge {ours:,} chars ({ours / calls:,.0f} per call, rendered "
            f"in {ms:.1f} ms), full inputs {naive:,} chars ({naive / calls:,.0f} per call), "
            f"{naive / ours:.1f}x ours"
        )
    first, last = rows[0], rows[-1]
    growth = (last[1] / last[0]) / (first[1] / first[0])
    naive_growth = (last[2] / last[0]) / (first[2] / first[0])
    verdict = "met" if growth <= 1.25 else "NOT met"
    print(
        f"chars per call, {last[0]} calls vs {first[0]}: tracejudge {growth:.2f}x "
        f"(target at most 1.25x, linear): {verdict}; full inputs {naive_growth:.1f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
