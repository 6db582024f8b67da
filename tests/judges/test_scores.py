"""Scores from replies, per criterion kind, with and without logprobs; over a real socket."""

from __future__ import annotations

import json
import logging
import math

import pytest

from tests.judges.helpers import binary, graded, reply
from tracejudge.judges import CriterionKind, JudgeRequest
from tracejudge.testing import Reply, ScriptedLLMServer, token_logprobs

CONTENT = "user: What is 2+2?\nassistant: 4"


def request(criterion: str, **options: object) -> JudgeRequest:
    return JudgeRequest.of(criterion, CONTENT, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("criterion", "kind"),
    [
        ("Reward accurate answers", CriterionKind.REWARD),
        ("reward accurate answers", CriterionKind.REWARD),
        ("Penalize rude answers", CriterionKind.PENALIZE),
        ("penalize rude answers", CriterionKind.PENALIZE),
        ("Passes if the answer is 4", CriterionKind.PASSES_IF),
        ("passes if the answer is 4", CriterionKind.PASSES_IF),
        ("Fails if the answer is wrong", CriterionKind.FAILS_IF),
        ("fails if the answer is wrong", CriterionKind.FAILS_IF),
        ("Answers are accurate", CriterionKind.REWARD),
    ],
)
def test_criterion_kind_is_read_from_the_prefix(criterion: str, kind: CriterionKind) -> None:
    assert CriterionKind.of(criterion) is kind


@pytest.mark.parametrize(("reported", "expected"), [(10, 1.0), (1, 0.0), (7, 6 / 9)])
async def test_reward_score_maps_one_to_ten_onto_zero_to_one(
    server: ScriptedLLMServer, make_judge, reported: int, expected: float
) -> None:
    server.add(graded(reported, explanation="The answer is correct."))
    verdict = await make_judge().judge(request("Reward accurate answers"))
    assert verdict.score == pytest.approx(expected)
    assert round(verdict.score, 3) == round(expected, 3)
    assert verdict.explanation == "The answer is correct."
    assert verdict.cleaned_explanation is None
    assert verdict.raw["score_source"] == "reported"


async def test_penalize_score_of_ten_means_the_behaviour_is_absent(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(graded(10), graded(1))
    judge = make_judge()
    absent = await judge.judge(request("Penalize rude answers"))
    present = await judge.judge(request("Penalize rude answers"))
    assert absent.score == 1.0
    assert present.score == 0.0
    asked = server.requests[0].json["messages"][-1]["content"]
    assert "10 is BEST" in asked and "entirely absent" in asked


@pytest.mark.parametrize(("criterion"), ["Passes if the answer is 4", "Fails if it is wrong"])
async def test_binary_kinds_score_one_when_passed_and_zero_when_not(
    server: ScriptedLLMServer, make_judge, criterion: str
) -> None:
    server.add(binary(True), binary(False))
    judge = make_judge()
    assert (await judge.judge(request(criterion))).score == 1.0
    failed = await judge.judge(request(criterion))
    assert failed.score == 0.0
    assert failed.raw["score_source"] == "passed"
    # Binary verdicts ask for "passed" and no logprobs.
    body = server.requests[0].json
    assert "logprobs" not in body
    schema = body["response_format"]["json_schema"]["schema"]
    # A local server: a schema by kind; the question (the same words for every server)
    # names both verdict fields, the other one null.
    assert list(schema["properties"]) == ["explanation", "applicable", "passed"]
    asked = body["messages"][-1]["content"]
    assert '"score": null, "passed": true or false' in asked


async def test_fails_if_prompt_says_passed_means_the_failing_condition_does_not_hold(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(binary(True))
    await make_judge().judge(request("Fails if the answer is wrong"))
    asked = server.requests[0].json["messages"][-1]["content"]
    assert "failing condition does NOT hold" in asked


@pytest.mark.parametrize("criterion", ["Reward tool use", "Passes if the tool was called"])
async def test_not_applicable_gives_no_score(
    server: ScriptedLLMServer, make_judge, criterion: str
) -> None:
    server.add(reply(explanation="No tool was available.", applicable=False, score=1, passed=False))
    verdict = await make_judge().judge(request(criterion))
    assert verdict.score is None
    assert verdict.explanation == "No tool was available."
    assert verdict.raw["score_source"] == "not_applicable"


async def test_cleaned_explanation_is_asked_for_and_returned(
    server: ScriptedLLMServer, make_judge
) -> None:
    server.add(graded(9, cleaned_explanation="The reply gave the right sum."))
    verdict = await make_judge().judge(request("Reward accuracy", clean_explanation=True))
    assert verdict.cleaned_explanation == "The reply gave the right sum."
    body = server.requests[0].json
    assert "cleaned_explanation" in body["response_format"]["json_schema"]["schema"]["required"]
    assert "cleaned_explanation" in body["messages"][-1]["content"]


async def test_usage_records_tokens_and_latency(server: ScriptedLLMServer, make_judge) -> None:
    server.add(
        Reply.text(
            json.dumps({"explanation": "ok", "applicable": True, "score": 8}),
            usage={"prompt_tokens": 120, "completion_tokens": 30},
        )
    )
    verdict = await make_judge().judge(request("Reward accuracy"))
    assert verdict.usage.calls == 1
    assert verdict.usage.cached_calls == 0
    assert (verdict.usage.input_tokens, verdict.usage.output_tokens) == (120, 30)
    assert verdict.usage.total_tokens == 150
    assert verdict.usage.latency_seconds > 0


# --------------------------------------------------------------------------- logprobs


def weighted(top: dict[str, float]) -> float:
    weights = {int(k): math.exp(v) for k, v in top.items()}
    mean = sum(k * w for k, w in weights.items()) / sum(weights.values())
    return (mean - 1) / 9


async def test_logprobs_weight_the_score_between_the_likely_grades(
    server: ScriptedLLMServer, make_judge
) -> None:
    content = json.dumps({"explanation": "Mostly right.", "applicable": True, "score": 8})
    top = {"8": -0.1, "9": -2.5}
    server.add(Reply.text(content, logprobs=token_logprobs(content, "8", top)))
    verdict = await make_judge().judge(request("Reward accuracy"))
    assert 7 / 9 < verdict.score < 8 / 9
    assert verdict.score == pytest.approx(weighted(top))
    assert verdict.raw["score_source"] == "logprobs"
    body = server.requests[0].json
    assert body["logprobs"] is True and body["top_logprobs"] == 20


async def test_logprobs_ignore_digits_in_the_explanation(
    server: ScriptedLLMServer, make_judge
) -> None:
    content = json.dumps(
        {
            "explanation": 'Step 2 of 3 is wrong; I\'d say "score": 2 at first, then 9.',
            "applicable": True,
            "score": 9,
        }
    )
    logprobs = token_logprobs(content, "9", {"9": -0.3, "10": -1.4, "non-digit": -3.0})
    # Make the explanation's digits look like confident scores too: they must not count.
    for entry in logprobs:
        if entry["token"] in ("2", "3"):
            entry["top_logprobs"] = [
                {"token": "2", "logprob": -0.01, "bytes": [50]},
                {"token": "1", "logprob": -5.0, "bytes": [49]},
            ]
    server.add(Reply.text(content, logprobs=logprobs))
    verdict = await make_judge().judge(request("Reward accuracy"))
    assert verdict.score == pytest.approx(weighted({"9": -0.3, "10": -1.4}))


async def test_ten_split_into_two_tokens_falls_back_to_the_reported_value(
    server: ScriptedLLMServer, make_judge, caplog: pytest.LogCaptureFixture
) -> None:
    content = json.dumps({"explanation": "Perfect.", "applicable": True, "score": 10})
    logprobs = token_logprobs(content, "10", {"10": -0.1, "9": -2.0})
    index = next(i for i, e in enumerate(logprobs) if e["token"] == "10")
    # A tokeniser writing digits one by one: "1" then "0", alternatives at the "1".
    one = {"token": "1", "logprob": -0.1, "bytes": [49]}
    one["top_logprobs"] = [dict(one), {"token": "9", "logprob": -2.0, "bytes": [57]}]
    zero = {"token": "0", "logprob": 0.0, "bytes": [48], "top_logprobs": []}
    logprobs[index : index + 1] = [one, zero]
    server.add(Reply.text(content, logprobs=logprobs), Reply.text(content, logprobs=logprobs))
    judge = make_judge()
    with caplog.at_level(logging.INFO, logger="tracejudge.judges"):
        verdict = await judge.judge(request("Reward accuracy"))
        await judge.judge(request("Reward accuracy"))
    assert verdict.score == 1.0
    assert verdict.raw["score_source"] == "reported"
    # Not silently: said once.
    notices = [r for r in caplog.records if "using the reported score" in r.getMessage()]
    assert len(notices) == 1


async def test_missing_logprobs_are_logged_once_per_judge(
    server: ScriptedLLMServer, make_judge, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(graded(8), graded(6), graded(4))
    judge = make_judge()
    with caplog.at_level(logging.INFO, logger="tracejudge.judges"):
        scores = [(await judge.judge(request("Reward accuracy"))).score for _ in range(3)]
    assert scores == pytest.approx([7 / 9, 5 / 9, 3 / 9])
    notices = [r for r in caplog.records if "logprobs not returned" in r.getMessage()]
    assert len(notices) == 1
    assert notices[0].levelno == logging.INFO
    assert server.base_url in notices[0].getMessage()
    assert "using the reported score" in notices[0].getMessage()


async def test_logprobs_rejected_are_dropped_and_remembered(
    server: ScriptedLLMServer, make_judge, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(
        Reply.error(400, message="logprobs are not supported with this model"),
        graded(8),
        graded(8),
    )
    judge = make_judge()
    with caplog.at_level(logging.INFO, logger="tracejudge.judges"):
        first = await judge.judge(request("Reward accuracy"))
        second = await judge.judge(request("Reward accuracy"))
    assert first.score == second.score == pytest.approx(7 / 9)
    assert first.usage.calls == 2 and second.usage.calls == 1
    bodies = [r.json for r in server.requests]
    assert "logprobs" in bodies[0]
    assert "logprobs" not in bodies[1] and "logprobs" not in bodies[2]
    assert bodies[1]["response_format"]["type"] == "json_schema"
    assert not judge.logprobs


async def test_every_kind_asks_with_one_schema_so_an_agents_judgements_share_a_prefix(
    server: ScriptedLLMServer, make_judge
) -> None:
    # OpenAI puts the response_format schema before the system prompt: a schema per kind
    # left a graded and a pass/fail judgement of one agent with no common prefix.
    server.add(graded(8), binary(True), graded(3), binary(False))
    judge = make_judge()
    assert judge.one_reply_schema_for_all_kinds is False  # loopback: a schema by kind
    judge.one_reply_schema_for_all_kinds = True  # what a judge of api.openai.com does
    kinds = ["Reward accuracy", "Passes if it is polite", "Penalize verbosity", "Fails if rude"]
    verdicts = [await judge.judge(request(criterion)) for criterion in kinds]
    assert [v.score for v in verdicts] == [pytest.approx(7 / 9), 1.0, pytest.approx(2 / 9), 0.0]
    bodies = [r.json for r in server.requests]
    assert len({json.dumps(b["response_format"], sort_keys=True) for b in bodies}) == 1
    data = {b["messages"][-1]["content"].split("What is judged")[0] for b in bodies}
    assert len({json.dumps(b["messages"][:-1]) for b in bodies}) == 1  # the system prompt
    assert len(data) == 1 and "assistant: 4" in data.pop()  # the data: the same bytes


def test_only_openai_and_azure_get_one_schema_for_every_kind() -> None:
    from tracejudge.judges import OpenAICompatibleJudge

    def one_schema(base_url: str) -> bool:
        judge = OpenAICompatibleJudge("m", base_url=base_url, api_key="k", cache=False)
        return judge.one_reply_schema_for_all_kinds

    assert one_schema("https://api.openai.com/v1")
    assert one_schema("https://my-resource.openai.azure.com/openai/deployments/gpt-4.1")
    assert not one_schema("http://127.0.0.1:8080/v1")  # llama.cpp, vLLM, Ollama: by kind
