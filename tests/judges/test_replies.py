"""Replies that are not clean JSON, the corrective re-ask, and response_format fallback."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from tests.judges.helpers import graded
from tracejudge.errors import BadRequestError, MalformedError
from tracejudge.judges import JudgeRequest
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")
GOOD = json.dumps({"explanation": "Correct: 2+2 is 4.", "applicable": True, "score": 9})


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{GOOD}\n```",
        f"```\n{GOOD}\n```",
        f"Here is my judgement:\n{GOOD}\nI hope this helps.",
        f'<think>The user asks 2+2. {{"score": 2}} would be wrong. Score 3?</think>\n{GOOD}',
        f"Reasoning done.</think>{GOOD}",
        '{"explanation": "Correct: 2+2 is 4, {so} fine,", "applicable": true, "score": 9,}',
        f"Note {{ about braces.\n{GOOD}",
    ],
    ids=["fenced", "bare-fence", "prose", "think", "unopened-think", "trailing-comma", "stray"],
)
async def test_wrapped_replies_are_parsed_without_a_reask(
    server: ScriptedLLMServer, make_judge, text: str
) -> None:
    server.add(Reply.text(text))
    verdict = await make_judge().judge(REQUEST)
    assert verdict.score == pytest.approx(8 / 9)
    assert verdict.usage.calls == 1
    assert len(server.requests) == 1


async def test_an_unusable_reply_gets_one_corrective_reask(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.text("I would rate this an 8 out of 10."), graded(8))
    verdict = await make_judge().judge(REQUEST)
    assert verdict.score == pytest.approx(7 / 9)
    assert verdict.usage.calls == 2
    first, second = (r.json["messages"] for r in server.requests)
    assert second[: len(first)] == first
    assert second[-2] == {"role": "assistant", "content": "I would rate this an 8 out of 10."}
    assert second[-1]["role"] == "user"
    assert "no JSON object" in second[-1]["content"]
    assert "only the JSON object" in second[-1]["content"]


async def test_a_reply_breaking_the_contract_says_what_was_wrong_in_the_reask(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(
        Reply.text(json.dumps({"explanation": "fine", "applicable": True, "score": 11})),
        graded(10),
    )
    verdict = await make_judge().judge(REQUEST)
    assert verdict.score == 1.0
    assert "integer from 1 to 10, got 11" in server.requests[1].json["messages"][-1]["content"]


@pytest.mark.parametrize(
    "bad",
    ["Definitely a 7.", '{"explanation": "cut off mid-sen', "", '{"score": "high"}'],
    ids=["prose", "truncated", "empty", "wrong-type"],
)
async def test_two_unusable_replies_raise_malformed_error_after_exactly_two_requests(
    server: ScriptedLLMServer, make_judge, bad: str
) -> None:
    server.add(Reply.text(bad), Reply.text(bad), graded(9))
    with pytest.raises(MalformedError) as caught:
        await make_judge().judge(REQUEST)
    assert len(server.requests) == 2
    assert "judge-model" in str(caught.value)


async def test_json_schema_rejected_falls_back_to_json_object_and_remembers(
    server: ScriptedLLMServer, make_judge, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(
        Reply.error(400, message="Invalid parameter: 'response_format' of type 'json_schema'"),
        graded(8),
        graded(6),
    )
    judge = make_judge()
    with caplog.at_level(logging.INFO, logger="tracejudge.judges"):
        first = await judge.judge(REQUEST)
        second = await judge.judge(REQUEST)
    assert (first.score, second.score) == pytest.approx((7 / 9, 5 / 9))
    formats = [r.json.get("response_format", {}).get("type") for r in server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert judge.response_format == "json_object"
    assert first.usage.calls == 2 and second.usage.calls == 1
    assert any("json_schema" in r.getMessage() for r in caplog.records)


async def test_json_object_rejected_too_falls_back_to_the_prompt_alone(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(
        Reply.error(400, message="response_format json_schema is not supported"),
        Reply.error(422, message="response_format is not supported by this server"),
        graded(5),
    )
    judge = make_judge()
    assert (await judge.judge(REQUEST)).score == pytest.approx(4 / 9)
    assert "response_format" not in server.requests[-1].json
    assert judge.response_format == "none"


async def test_an_unrelated_400_is_a_bad_request_error_without_retry(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(Reply.error(400, message="messages: too long for the context window"))
    with pytest.raises(BadRequestError) as caught:
        await make_judge().judge(REQUEST)
    assert "too long" in str(caught.value)
    assert caught.value.status_code == 400
    assert len(server.requests) == 1


async def test_concurrent_rejections_step_the_format_down_only_once(
    server: ScriptedLLMServer, make_judge
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        kind = (request.json.get("response_format") or {}).get("type")
        if kind == "json_schema":
            return Reply.error(400, message="json_schema is not supported", delay=0.1)
        return Reply.text(GOOD)

    server.default = answer
    judge = make_judge()
    verdicts = await asyncio.gather(*(judge.judge(REQUEST) for _ in range(4)))
    assert all(v.score == pytest.approx(8 / 9) for v in verdicts)
    assert judge.response_format == "json_object"
    assert all(r.json.get("response_format") for r in server.requests)
