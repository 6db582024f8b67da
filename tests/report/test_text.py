"""The text report reads the data model only: a trace and its responses in, a table out."""

from __future__ import annotations

import subprocess
import sys

from tracejudge.models import (
    AgentInstance,
    AgentTraceResult,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    MultiAgentTrace,
    MultiAgentTraceResponse,
    ScoreResponse,
)
from tracejudge.report import format_agent_tree, format_results


def _call(text: str, *tool_calls: LLMToolCall) -> LLMInteraction:
    outputs = [LLMOutput(content=text)] if text else []
    return LLMInteraction(
        input_messages=[LLMInput(role="user", content="go")],
        output_messages=outputs + [LLMOutput(type="tool_call", content=c) for c in tool_calls],
    )


def _trace() -> MultiAgentTrace:
    search = LLMToolCall(id="c1", name="search", parameters='{"q": "x"}')
    return MultiAgentTrace(
        root_agent_instance_id="p",
        agent_instance_by_id={
            "p": AgentInstance(id="p", name="planner", interactions=[_call("plan"), "r"]),
            "r": AgentInstance(
                id="r", name="researcher", interactions=[_call("", search), _call("done")]
            ),
        },
    )


def _response(criterion: str, scores: dict[str, tuple[str, float | None, str]]):
    """A response of one criterion: agent id -> (agent name, score, explanation)."""
    by_name = {
        name: AgentTraceResult(
            agent_name=name,
            results_by_agent_instance_id={
                agent_id: ScoreResponse(score=score, explanation=explanation)
            },
        )
        for agent_id, (name, score, explanation) in scores.items()
    }
    agent_scores = {agent_id: score for agent_id, (_, score, _) in scores.items()}
    given = [s for s in agent_scores.values() if s is not None]
    return MultiAgentTraceResponse(
        request_id="req",
        results_by_agent_name=by_name,
        agent_scores=agent_scores,
        overall_score=sum(given) / len(given) if given else None,
        criterion=criterion,
    )


def test_table_labels_legend_and_findings() -> None:
    responses = [
        _response("loops", {"p": ("planner", 1.0, "fine"), "r": ("researcher", 0.5, "repeats")}),
        _response(
            "budgets(max_tokens=10)",
            {"p": ("planner", None, "n/a"), "r": ("researcher", 1.0, "within")},
        ),
        _response(
            "Reward agents that verify tool results",
            {
                "p": ("planner", 0.25, "planner: trusted\nthe tool blindly"),
                "r": ("researcher", 1.0, "ok"),
            },
        ),
    ]
    assert format_results(_trace(), responses).splitlines() == [
        "            loops  budgets  criterion1",
        "planner      1.00      n/a        0.25",
        "researcher   0.50     1.00        1.00",
        "overall      0.75     1.00        0.62",
        "",
        "budgets: budgets(max_tokens=10)",
        "criterion1: Reward agents that verify tool results",
        "",
        "Findings:",
        "- [loops] researcher: repeats",
        "- [criterion1] planner: trusted",
        "    the tool blindly",
    ]


def test_a_clean_trace_has_no_legend_and_no_findings() -> None:
    responses = [_response("loops", {"p": ("planner", 1.0, "ok"), "r": ("researcher", 1.0, "")})]
    text = format_results(_trace(), responses)
    assert text.splitlines()[-1].startswith("overall")
    assert "Findings" not in text


def test_agent_tree_counts_calls_and_names_parents() -> None:
    assert format_agent_tree(_trace()).splitlines() == [
        "  planner     1 LLM call, 0 tool calls",
        "  researcher  2 LLM calls, 1 tool call, child of planner",
    ]


def test_importing_the_report_loads_only_models_and_errors() -> None:
    code = (
        "import sys, tracejudge.report; "
        "print(sorted(m for m in sys.modules if m.startswith('tracejudge')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = eval(out)  # a list literal of module names
    assert all(
        name in ("tracejudge", "tracejudge.errors")
        or name.startswith(("tracejudge.models", "tracejudge.report"))
        for name in loaded
    ), loaded
