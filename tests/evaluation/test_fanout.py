"""The first judgement of each agent runs before that agent's other criteria fan out."""

from __future__ import annotations

import time

from tests.evaluation.conftest import verdict
from tracejudge.evaluation import EvaluationService
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
