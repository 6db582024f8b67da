"""The first judgement of each agent runs before that agent's other criteria fan out."""

from __future__ import annotations

import time

from tests.evaluation.conftest import verdict
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import MultiAgentTrace
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

TRACE = MultiAgentTrace.model_validate(
    {
        "root_agent_instance_id": "a",
        "agent_instance_by_id": {
            "a": {
                "id": "a",
                "name": "solo",
                "interactions": [
                    {
                        "input_messages": [{"role": "user", "content": "2+2?"}],
                        "output_messages": [{"type": "text", "content": "4"}],
                    }
                ],
            }
        },
    }
)


async def test_the_first_criterion_of_an_agent_warms_the_cache_before_the_rest() -> None:
    answered: list[float] = []

    def slow(request: RecordedRequest) -> Reply:
        answered.append(time.perf_counter())
        return Reply.text(verdict(8).content or "", delay=0.3 if len(answered) == 1 else 0)

    criteria = [f"Reward quality {i}" for i in range(4)]
    with ScriptedLLMServer(default=slow) as server:
        judge = OpenAICompatibleJudge(
            "m", base_url=server.base_url, api_key="k", cache=False, max_concurrency=8
        )
        service = EvaluationService(judge)
        responses = await service.score_trace(TRACE, criteria)
        await judge.aclose()
        arrivals = [r.received_at for r in server.requests]
    assert [r.overall_score for r in responses] == [7 / 9] * 4
    # The other three arrived only after the first had been answered (0.3 s later).
    first = min(arrivals)
    assert all(later - first >= 0.25 for later in sorted(arrivals)[1:])


def _two_agents() -> MultiAgentTrace:
    data = TRACE.model_dump(mode="json")
    solo = data["agent_instance_by_id"]["a"]
    call = {
        "input_messages": [{"role": "user", "content": "3+3?"}],
        "output_messages": [{"type": "text", "content": "6"}],
    }
    data["agent_instance_by_id"]["b"] = {"id": "b", "name": "other", "interactions": [call]}
    solo["interactions"].append("b")
    return MultiAgentTrace.model_validate(data)


def _completion(content: str, timings: bool) -> dict[str, object]:
    body: dict[str, object] = {
        "id": "c",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    if timings:  # what llama.cpp's server adds to every answer
        body["timings"] = {"prompt_n": 10, "cache_n": 0, "predicted_n": 5}
    return body


async def _arrivals_by_agent(timings: bool) -> dict[str, list[float]]:
    def answer(request: RecordedRequest) -> Reply:
        return Reply.raw(200, _completion(verdict(8).content or "", timings), delay=0.3)

    criteria = [f"Reward quality {i}" for i in range(3)]
    with ScriptedLLMServer(default=answer) as server:
        judge = OpenAICompatibleJudge(
            "m", base_url=server.base_url, api_key="k", cache=False, max_concurrency=8
        )
        responses = await EvaluationService(judge).score_trace(_two_agents(), criteria)
        await judge.aclose()
        requests = list(server.requests)
    assert all(r.overall_score is not None for r in responses)
    by_agent: dict[str, list[float]] = {"solo": [], "other": []}
    for request in requests:
        by_agent["other" if "3+3?" in str(request.json) else "solo"].append(request.received_at)
    return {name: sorted(times) for name, times in by_agent.items()}


async def test_a_server_with_a_cache_per_slot_gets_an_agents_criteria_one_at_a_time() -> None:
    """llama.cpp (its answers carry `timings`) keeps a prompt cache per slot: after the
    first judgement of an agent, its others go one after another, each arriving once the
    last is answered (0.3 s), while the two agents still run side by side."""
    arrivals = await _arrivals_by_agent(timings=True)
    for times in arrivals.values():
        assert len(times) == 3
        assert all(b - a >= 0.25 for a, b in zip(times, times[1:], strict=False)), times
    assert abs(arrivals["solo"][0] - arrivals["other"][0]) < 0.2


async def test_a_server_wide_cache_gets_an_agents_other_criteria_at_once() -> None:
    arrivals = await _arrivals_by_agent(timings=False)
    for times in arrivals.values():
        assert times[1] - times[0] >= 0.25  # the first warms the cache
        assert times[2] - times[1] < 0.2, times  # the others fan out together
