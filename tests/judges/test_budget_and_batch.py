"""The input budget (counted before sending), the exploring loop, and several criteria in
one call, against the scripted server."""

from __future__ import annotations

import json

from tests.judges.helpers import graded
from tracejudge.judges import (
    Exploration,
    ExplorationLimits,
    ExplorationTool,
    JudgeRequest,
)
from tracejudge.judges._budget import body_bytes
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer, ToolCall

BIG = "step output " * 20_000  # about 80k tokens by the estimate


def _steps_tool(reads: list[dict]) -> ExplorationTool:
    def run(arguments: dict, max_tokens: int) -> str:
        reads.append(arguments)
        return f"step {arguments['step']}: the tool returned ERROR 500. " + "x" * 50_000

    return ExplorationTool(
        name="read_step",
        description="Read one step",
        parameters={"type": "object", "properties": {"step": {"type": "integer"}}},
        run=run,
    )


async def test_over_budget_without_exploration_is_not_evaluated(
    server: ScriptedLLMServer, make_judge
) -> None:
    verdict = await make_judge(max_input_tokens=4_000).judge(JudgeRequest.of("Reward x", BIG))
    assert verdict.score is None and verdict.not_evaluated is not None
    assert "exploration is off" in verdict.not_evaluated
    assert server.requests == []  # nothing was sent


async def test_an_exploring_judge_reads_within_the_budget_and_scores(
    server: ScriptedLLMServer, make_judge
) -> None:
    reads: list[dict] = []
    server.add(
        Reply.tool_calls([ToolCall("read_step", {"step": 180})]),
        graded(2, "Step 180 ignored an error."),
    )
    exploration = Exploration(
        digest="180 steps; step 180 holds an error", tools=(_steps_tool(reads),)
    )
    request = JudgeRequest.of("Reward agents that handle errors", BIG, exploration=exploration)
    verdict = await make_judge(max_input_tokens=4_000).judge(request)
    assert verdict.score == 1 / 9
    assert reads == [{"step": 180}]
    record = verdict.raw["exploration"]
    assert record["rounds"] == 2 and record["reads"][0]["tool"] == "read_step"
    for sent in server.requests:
        assert body_bytes(sent.json) / 3 <= 4_000  # every request within the budget
    assert "tools" in server.requests[0].json


async def test_a_judge_that_keeps_reading_is_not_evaluated_at_the_round_cap(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.default = Reply.tool_calls([ToolCall("read_step", {"step": 1})])
    exploration = Exploration(
        digest="d", tools=(_steps_tool([]),), limits=ExplorationLimits(max_rounds=3)
    )
    request = JudgeRequest.of("Reward x", BIG, exploration=exploration)
    verdict = await make_judge(max_input_tokens=4_000).judge(request)
    assert verdict.score is None and "max_rounds" in (verdict.not_evaluated or "")
    assert len(server.requests) == 3


async def test_the_spend_check_stops_exploration(server: ScriptedLLMServer, make_judge) -> None:
    server.default = Reply.tool_calls([ToolCall("read_step", {"step": 1})])
    limits = ExplorationLimits(spend=lambda usage: "the run's budget is spent")
    exploration = Exploration(digest="d", tools=(_steps_tool([]),), limits=limits)
    verdict = await make_judge(max_input_tokens=4_000).judge(
        JudgeRequest.of("Reward x", BIG, exploration=exploration)
    )
    assert verdict.not_evaluated == "the run's budget is spent"
    assert len(server.requests) == 1


def _batch_reply(request: RecordedRequest) -> Reply:
    # One reply schema for every kind: what each criterion's object holds is in the
    # question ('"score" is null' for a pass/fail criterion).
    schema = request.json["response_format"]["json_schema"]["schema"]
    question = request.json["messages"][-1]["content"]
    if not isinstance(question, str):
        question = "".join(part["text"] for part in question)
    blocks = question.split("criterion_")
    reply = {}
    for index, key in enumerate(schema["properties"], start=1):
        block = blocks[index]
        binary = '"score" is null' in block
        reply[key] = {
            "explanation": "ok",
            "applicable": True,
            "score": None if binary else 10,
            "passed": True if binary else None,
        }
    return Reply.text(json.dumps(reply), usage={"prompt_tokens": 101, "completion_tokens": 9})


async def test_several_criteria_are_judged_in_one_call(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(_batch_reply)
    criteria = ["Reward accuracy", "Passes if it is polite", "Penalize verbosity"]
    requests = [JudgeRequest.of(c, "user: hi\nassistant: hello") for c in criteria]
    verdicts = await make_judge().judge_batch(requests)
    assert [v.score for v in verdicts] == [1.0, 1.0, 1.0]
    assert len(server.requests) == 1
    asked = server.requests[0].json["messages"][-1]["content"]
    assert all(c in asked for c in criteria)
    assert sum(v.usage.input_tokens for v in verdicts) == 101
    assert [v.raw["batch"]["index"] for v in verdicts] == [0, 1, 2]
