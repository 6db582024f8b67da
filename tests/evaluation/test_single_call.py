"""The opt-in single-call mode: every text criterion of a request judged in ONE judge call
per agent, through the service, the Composo client and `tracejudge score`, against the
scripted model over real sockets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evaluation.test_trace import multi_agent_trace
from tracejudge import Composo, checks
from tracejudge.errors import ConfigurationError
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import JudgeRequest, OpenAICompatibleJudge, Verdict
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

CRITERIA = ["Reward focus", "Passes if it cites a source", "Penalize verbosity"]
#: Judged agents of `multi_agent_trace()` (t1 never called a model).
JUDGED = {"o1", "r1", "r2", "w1"}


def one_reply_per_criterion(request: RecordedRequest) -> Reply:
    """A reply for several criteria: criterion k graded k + 2 (a pass for pass/fail)."""
    schema = request.json["response_format"]["json_schema"]["schema"]
    reply = {}
    for number, key in enumerate(schema["properties"]):
        # One schema for every kind: both verdict fields, each criterion reads its kind's.
        reply[key] = {
            "explanation": f"{key} ok",
            "applicable": True,
            "score": number + 2,
            "passed": True,
        }
    usage = {"prompt_tokens": 900, "completion_tokens": 90}
    return Reply.text(json.dumps(reply), usage=usage)


def _judge(server: ScriptedLLMServer) -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge(
        "judge-model", base_url=server.base_url, api_key="k", cache=False, logprobs=False
    )


def _scores(response, agent_id: str):
    for result in response.results_by_agent_name.values():
        if agent_id in result.results_by_agent_instance_id:
            return result.results_by_agent_instance_id[agent_id]
    raise AssertionError(agent_id)


async def test_each_agent_is_judged_once_for_all_criteria() -> None:
    with ScriptedLLMServer(default=one_reply_per_criterion) as server:
        service = EvaluationService(_judge(server), single_call=True)
        responses = await service.score_trace(multi_agent_trace(), [*CRITERIA, checks.tool_results])
        requests = server.requests
    assert len(requests) == len(JUDGED)  # one call per agent, not one per criterion
    for request in requests:
        asked = request.json["messages"][-1]["content"]
        assert all(criterion in asked for criterion in CRITERIA)
    focus, cites, verbosity, tool_results = responses
    assert [r.criterion for r in responses[:3]] == CRITERIA
    for agent in JUDGED:
        assert _scores(focus, agent).score == pytest.approx(1 / 9)  # graded 2
        assert _scores(cites, agent).score == 1.0
        assert _scores(verbosity, agent).score == pytest.approx(3 / 9)  # graded 4
        assert _scores(focus, agent).explanation == "criterion_1 ok"
    # the call's usage is shared out: the criteria's usage adds up to the calls made
    calls = sum(r.usage.calls for r in responses[:3] if r.usage is not None)
    tokens = sum(r.usage.input_tokens for r in responses[:3] if r.usage is not None)
    assert calls == len(JUDGED) and tokens == 900 * len(JUDGED)
    assert tool_results.usage is None  # the check ran as always


async def test_off_by_default_one_call_per_criterion_and_agent() -> None:
    with ScriptedLLMServer(
        default=Reply.text(json.dumps({"explanation": "x", "applicable": True, "score": 5}))
    ) as server:
        service = EvaluationService(_judge(server))
        await service.score_trace(multi_agent_trace(), ["Reward focus", "Reward clarity"])
        assert len(server.requests) == 2 * len(JUDGED)


async def test_a_spend_cap_refuses_the_one_call_and_all_its_criteria() -> None:
    with ScriptedLLMServer(default=one_reply_per_criterion) as server:
        service = EvaluationService(
            _judge(server),
            single_call=True,
            max_concurrency=1,
            prices={"judge-model": {"input": 10.0, "output": 0.0}},
            max_judge_cost=0.015,  # one call costs $0.009
        )
        responses = await service.score_trace(multi_agent_trace(), CRITERIA)
        assert len(server.requests) == 2
    statuses = {(r.criterion, a): _scores(r, a).status for r in responses for a in JUDGED}
    assert sorted(statuses.values()).count("not_evaluated") == 2 * len(CRITERIA)
    for agent in JUDGED:  # an agent's criteria are scored together or refused together
        assert len({_scores(r, agent).status for r in responses}) == 1


def test_the_client_and_a_conversation_take_the_option() -> None:
    with ScriptedLLMServer(default=one_reply_per_criterion) as server:
        with Composo(judge=_judge(server), single_call=True) as client:
            results = client.evaluate(
                messages=[
                    {"role": "user", "content": "What is the capital of France?"},
                    {"role": "assistant", "content": "Paris."},
                ],
                criteria=CRITERIA,
            )
        assert len(server.requests) == 1
    assert [r.criterion for r in results] == CRITERIA
    assert [r.score for r in results] == [pytest.approx(1 / 9), 1.0, pytest.approx(3 / 9)]


class _OneAtATime:
    """A judge of the user's own, without judge_batch."""

    name = "mine"

    async def judge(self, request: JudgeRequest) -> Verdict:
        return Verdict(score=1.0, explanation="fine")

    async def aclose(self) -> None:
        return None


def test_a_judge_without_judge_batch_is_refused_saying_why() -> None:
    with pytest.raises(ConfigurationError, match="single_call needs a judge that judges"):
        EvaluationService(_OneAtATime(), single_call=True)
    EvaluationService(_OneAtATime())  # without the mode, any judge


def test_score_single_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from tracejudge.cli import main

    inputs = tmp_path / "trace.json"
    inputs.write_text(multi_agent_trace().to_json())
    out = tmp_path / "out.jsonl"
    with ScriptedLLMServer(default=one_reply_per_criterion) as server:
        for name in ("TRACEJUDGE_JUDGE", "COMPOSO_API_KEY", "TRACEJUDGE_JUDGE_PRICES"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "judge-key")
        arguments = ["score", str(inputs), "--judge", "openai:judge-model", "--out", str(out)]
        for criterion in CRITERIA:
            arguments += ["--criterion", criterion]
        assert main([*arguments, "--single-call"]) == 0
        assert len(server.requests) == len(JUDGED)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["criterion"] for line in lines] == CRITERIA
    assert lines[0]["agents"]["o1"]["score"] == pytest.approx(1 / 9)
    capsys.readouterr()
