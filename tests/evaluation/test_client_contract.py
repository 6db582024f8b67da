"""The client's contract beyond the seed's examples: where it evaluates, one concurrency
limit per client, the judge cache seen from the client, usage, AsyncComposo parity, and
judge calls that never show up among the user's traced spans."""

from __future__ import annotations

import asyncio
import inspect
import json
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.evaluation.conftest import verdict
from tests.evaluation.test_client import CAPITAL
from tests.evaluation.test_trace import multi_agent_trace
from tracejudge import AgentTracer, AsyncComposo, Composo, ConfigurationError, criteria
from tracejudge.judges import JudgeRequest, OpenAICompatibleJudge, Verdict
from tracejudge.testing import Reply, ScriptedLLMServer

MakeJudge = Callable[..., OpenAICompatibleJudge]


class CountingJudge:
    """A judge of the user's own (no HTTP, no limit of its own) that counts calls in flight."""

    name = "counting"

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = 0

    async def judge(self, request: JudgeRequest) -> Verdict:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        return Verdict(score=0.5, explanation="Half way.")

    async def aclose(self) -> None:
        pass


def many_criteria(n: int) -> list[str]:
    return [f"Reward quality number {i}" for i in range(n)]


# --------------------------------------------------------------------------- where it runs


@pytest.mark.parametrize(
    ("environment", "arguments", "where"),
    [
        ({}, {"judge": "ollama:m"}, "judge"),
        ({"COMPOSO_API_KEY": "ck"}, {"judge": "ollama:m"}, "judge"),
        ({"TRACEJUDGE_JUDGE": "ollama:m"}, {}, "judge"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, {}, "judge"),
        ({"OPENAI_API_KEY": "sk"}, {}, "judge"),
        ({"COMPOSO_API_KEY": "ck"}, {}, "remote"),
        ({"COMPOSO_API_KEY": "ck", "TRACEJUDGE_JUDGE": "ollama:m"}, {}, "judge"),
        ({}, {"base_url": "http://127.0.0.1:9"}, "remote"),
        ({}, {"api_key": "ck"}, "remote"),
        ({}, {}, "nothing"),
    ],
)
def test_where_evaluation_happens(
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    arguments: dict[str, str],
    where: str,
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with Composo(**arguments) as client:
        engine = client._engine
        assert (engine.judge is not None) == (where == "judge")
        assert (engine.remote is not None) == (where == "remote")
        if where == "nothing":
            with pytest.raises(ConfigurationError, match="TRACEJUDGE_JUDGE"):
                client.evaluate(messages=CAPITAL, criteria="Reward accuracy")


# --------------------------------------------------------------------------- concurrency


def test_one_limit_of_sixteen_by_default_whatever_the_judge() -> None:
    judge = CountingJudge()
    with Composo(judge=judge) as client:
        assert client.max_concurrency == 16
        results = client.evaluate(messages=CAPITAL, criteria=many_criteria(40))
    assert len(results) == 40 and judge.calls == 40
    assert judge.max_in_flight == 16


def test_a_judge_built_by_the_client_gets_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with Composo(judge="openai:m") as client:
        assert client.judge.max_concurrency == 16  # type: ignore[union-attr]
    with Composo(judge="openai:m", max_concurrency=3) as client:
        assert client.judge.max_concurrency == 3  # type: ignore[union-attr]
    client = AsyncComposo(judge="openai:m", max_concurrent_requests=5)
    assert client.judge.max_concurrency == 5  # type: ignore[union-attr]
    client.close()


async def test_the_limit_is_shared_by_every_call_of_a_client() -> None:
    judge = CountingJudge()
    async with AsyncComposo(judge=judge, max_concurrency=3) as client:
        await asyncio.gather(
            client.evaluate(messages=CAPITAL, criteria=many_criteria(6)),
            client.evaluate(messages=CAPITAL, criteria=many_criteria(6)),
            client.evaluate_trace(multi_agent_trace(), criteria=many_criteria(2)),
        )
    assert judge.calls == 6 + 6 + 2 * 4
    assert judge.max_in_flight == 3


def test_threads_calling_one_sync_client_share_its_limit() -> None:
    judge = CountingJudge()
    with Composo(judge=judge, max_concurrency=4) as client:
        with ThreadPoolExecutor(3) as pool:
            futures = [
                pool.submit(client.evaluate, messages=CAPITAL, criteria=many_criteria(5))
                for _ in range(3)
            ]
            assert all(len(f.result()) == 5 for f in futures)
    assert judge.calls == 15
    assert judge.max_in_flight == 4


def test_max_concurrent_requests_is_the_composo_name_for_the_limit() -> None:
    judge = CountingJudge()
    with Composo(judge=judge, max_concurrent_requests=2) as client:
        assert client.max_concurrency == 2
        client.evaluate(messages=CAPITAL, criteria=many_criteria(6))
    assert judge.max_in_flight == 2
    with pytest.raises(ConfigurationError, match="at least 1"):
        Composo(judge=judge, max_concurrency=0)


# --------------------------------------------------------------------------- the cache


def test_rescoring_an_unchanged_trace_makes_no_judge_call(
    judge_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    with Composo(judge="openai:scripted-model") as client:  # the default: an in-memory cache
        first = client.evaluate_trace(multi_agent_trace(), criteria=criteria.agent_goal_pursuit)
        calls = len(judge_server.requests)
        assert calls == 4
        second = client.evaluate_trace(multi_agent_trace(), criteria=criteria.agent_goal_pursuit)
        assert len(judge_server.requests) == calls  # not one request more
        assert second.agent_scores == first.agent_scores
        assert second.usage is not None
        assert (second.usage.calls, second.usage.cached_calls) == (0, 4)
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
        assert len(judge_server.requests) == calls + 1


def test_a_named_sqlite_cache_outlives_the_client(
    judge_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    path = tmp_path / "judge-cache.sqlite"
    with Composo(judge="openai:scripted-model", cache=str(path)) as client:
        first = client.evaluate_trace(multi_agent_trace(), criteria="Reward clear reports")
    assert len(judge_server.requests) == 4 and path.exists()
    with Composo(judge="openai:scripted-model", cache=path) as client:
        second = client.evaluate_trace(multi_agent_trace(), criteria="Reward clear reports")
    assert len(judge_server.requests) == 4
    assert second.agent_scores == first.agent_scores


# --------------------------------------------------------------------------- usage


def test_trace_results_expose_tokens_and_latency(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    judge_server.default = Reply.text(
        json.dumps({"explanation": "ok", "applicable": True, "score": 7}),
        usage={"prompt_tokens": 100, "completion_tokens": 10},
    )
    with Composo(judge=make_judge(judge_server)) as client:
        result = client.evaluate_trace(multi_agent_trace(), criteria="Reward clear reports")
    assert result.usage is not None
    assert (result.usage.calls, result.usage.input_tokens, result.usage.output_tokens) == (
        4,
        400,
        40,
    )
    assert result.usage.total_tokens == 440 and result.usage.latency_seconds > 0
    for agent in result.results_by_agent_name.values():
        for score in agent.results_by_agent_instance_id.values():
            if score is not None:
                assert score.usage is not None and score.usage.latency_seconds > 0


# --------------------------------------------------------------------------- AsyncComposo


@pytest.mark.parametrize("method", ["__init__", "evaluate", "evaluate_trace", "get_task"])
def test_async_client_has_the_same_signatures(method: str) -> None:
    sync = inspect.signature(getattr(Composo, method)).parameters
    asynchronous = inspect.signature(getattr(AsyncComposo, method)).parameters
    assert [(p.name, p.kind, p.default) for p in sync.values()] == [
        (p.name, p.kind, p.default) for p in asynchronous.values()
    ]
    if method != "__init__":
        assert inspect.iscoroutinefunction(getattr(AsyncComposo, method))


def test_async_client_close_works_outside_a_loop() -> None:
    client = AsyncComposo(judge=CountingJudge())
    assert asyncio.run(client.evaluate(messages=CAPITAL, criteria="Reward a")).score == 0.5
    assert client.close() is None
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(client.evaluate(messages=CAPITAL, criteria="Reward a"))


async def test_async_client_close_inside_a_loop_can_be_awaited() -> None:
    client = AsyncComposo(judge=CountingJudge(delay=5.0))
    submitted = await client.evaluate(messages=CAPITAL, criteria="Reward a", block=False)
    closing = client.close()
    assert closing is not None
    with pytest.raises(RuntimeError, match="closed"):
        await client.get_task(submitted["task_id"])
    await asyncio.wait_for(closing, 2.0)  # the background task is cancelled, not waited for


async def test_the_sync_client_works_and_closes_inside_a_running_loop() -> None:
    # As in a notebook: synchronous calls from code that runs inside an event loop.
    with Composo(judge=CountingJudge()) as client:
        assert client.evaluate(messages=CAPITAL, criteria="Reward a").score == 0.5
    with pytest.raises(RuntimeError, match="closed"):
        client.evaluate(messages=CAPITAL, criteria="Reward a")


# --------------------------------------------------------------------------- tracing


async def test_judge_calls_never_appear_in_the_users_traced_spans(
    composo_tracing: TracerProvider,
    llm_server: ScriptedLLMServer,
    judge_server: ScriptedLLMServer,
    make_judge: MakeJudge,
) -> None:
    llm_server.add(Reply.text("Paris."))
    async with AsyncComposo(judge=make_judge(judge_server)) as client:
        async with openai.AsyncOpenAI(
            base_url=llm_server.base_url, api_key="k", max_retries=0
        ) as oai:
            with AgentTracer(name="asker") as tracer:
                await oai.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "Capital of France?"}]
                )
                # Evaluated inside the agent's span, in the same context: the judge's HTTP
                # call must not be recorded as one of the agent's LLM calls.
                result = await client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
                again = await client.evaluate_trace(tracer, criteria="Reward brevity")
                with Composo(judge=make_judge(judge_server)) as sync_client:
                    sync_client.evaluate(messages=CAPITAL, criteria="Reward clarity")
    assert result.score is not None and again.overall_score is not None
    assert len(judge_server.requests) == 3
    llm_spans = [s for s in tracer.spans if s.name.startswith("openai.")]
    assert len(llm_spans) == 1
    (agent,) = tracer.trace.agent_instance_by_id.values()
    assert len(agent.llm_interactions) == 1


def test_the_judges_do_not_import_the_openai_package() -> None:
    code = (
        "import sys, tracejudge.judges, tracejudge.client\n"
        "assert 'openai' not in sys.modules and 'anthropic' not in sys.modules, "
        "sorted(m for m in sys.modules if m.startswith(('openai', 'anthropic')))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_verdict_is_read_for_every_kind_through_the_client(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    judge_server.add(
        verdict(10),
        verdict(10),
        Reply.text(json.dumps({"explanation": "x", "applicable": True, "passed": False})),
        Reply.text(json.dumps({"explanation": "x", "applicable": True, "passed": False})),
    )
    with Composo(judge=make_judge(judge_server, max_concurrency=1)) as client:
        scores = [
            client.evaluate(messages=CAPITAL, criteria=c).score
            for c in (
                "Reward accuracy",
                "penalize rudeness",
                "passes if it names Paris",
                "Fails if it is rude",
            )
        ]
    assert scores == [1.0, 1.0, 0.0, 0.0]


# --------------------------------------------------------------------------- criteria, tags

RAG = ("rag_faithfulness", "rag_completeness", "rag_precision", "rag_relevance")
AGENT = (
    "agent_exploration",
    "agent_exploitation",
    "agent_tool_use",
    "agent_goal_pursuit",
    "agent_faithfulness",
)


def test_ready_made_criteria() -> None:
    import tracejudge
    from tracejudge import criteria as imported

    assert imported is tracejudge.criteria
    assert tracejudge.criteria.rag == [getattr(imported, name) for name in RAG]
    assert tracejudge.criteria.agent == [getattr(imported, name) for name in AGENT]
    for name in RAG + AGENT:
        text = getattr(tracejudge.criteria, name)
        assert isinstance(text, str) and text.startswith("Reward ") and len(text) <= 4096
    assert len(set(imported.rag + imported.agent)) == 9


def test_limits_are_inclusive(client: Composo) -> None:
    longest = "Reward " + "x" * (4096 - len("Reward "))
    tags = {"k" * 64: "v" * 64, "ratio": 0.25, "on": False}
    assert client.evaluate(messages=CAPITAL, criteria=longest, tags=tags).score is not None


@pytest.mark.parametrize("nested", [(1, 2), {1, 2}, frozenset({1}), [1], {"a": 1}])
def test_nested_tag_values_are_refused(client: Composo, nested: object) -> None:
    with pytest.raises(ValueError, match="nested"):
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy", tags={"env": nested})
    with pytest.raises(ValueError, match="nested"):
        client.evaluate_trace(multi_agent_trace(), criteria="Reward a", tags={"env": nested})
