"""The Osmosis-compatible rubric API, judged by a scripted model over a real socket."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from tracejudge import (
    MissingAPIKeyError,
    ModelNotFoundError,
    ProviderRequestError,
    evaluate_rubric,
    osmosis_reward,
    osmosis_rubric,
    rewards,
)
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer


def _verdict(
    score: int,
    explanation: str = "Clear and correct.",
    applicable: bool = True,
    delay: float = 0.0,
) -> Reply:
    return Reply.text(
        json.dumps({"explanation": explanation, "applicable": applicable, "score": score}),
        delay=delay,
    )


def _close_cached_clients() -> None:
    with rewards._SERVICES_LOCK:
        entries = list(rewards._SERVICES.values())
        rewards._SERVICES.clear()
    rewards._close_quietly([entry.service for entry in entries])


@pytest.fixture(autouse=True)
def _fresh_client_cache() -> Iterator[None]:
    """Each test starts with no cached judge client, and leaves none open."""
    _close_cached_clients()
    yield
    _close_cached_clients()


@pytest.fixture()
def judge_server():
    with ScriptedLLMServer() as server:
        yield server


def _model_info(server: ScriptedLLMServer) -> dict:
    return {"provider": "openai", "model": "judge-model", "base_url": server.base_url}


def test_rubric_score_is_scaled_to_the_requested_range(judge_server) -> None:
    judge_server.add(_verdict(10), _verdict(1), _verdict(7))
    info = _model_info(judge_server)
    assert evaluate_rubric("Evaluate helpfulness", "Click reset.", info) == 1.0
    assert evaluate_rubric("Evaluate helpfulness", "No.", info, score_min=-1, score_max=1) == -1
    score = evaluate_rubric("Evaluate helpfulness", "Maybe.", info, score_min=0, score_max=10)
    assert score == pytest.approx(20 / 3)


def test_rubric_details_and_what_the_judge_sees(judge_server) -> None:
    judge_server.add(_verdict(8, "Mentions the reset link."))
    details = evaluate_rubric(
        rubric="Evaluate how helpful the response is.",
        solution_str="Click 'Forgot Password' to reset.",
        model_info=_model_info(judge_server),
        ground_truth="Use the Forgot Password link",
        original_input="How do I reset my password?",
        metadata={"locale": "en-GB"},
        return_details=True,
    )
    assert details["score"] == pytest.approx(7 / 9)
    assert details["explanation"] == "Mentions the reset link."
    assert details["raw_payload"]["applicable"] is True
    prompt = json.dumps(judge_server.requests[0].json["messages"])
    for seen in (
        "Evaluate how helpful the response is.",
        "Forgot Password",
        "How do I reset my password?",
        "Use the Forgot Password link",
        "en-GB",
    ):
        assert seen in prompt


def test_not_applicable_scores_the_minimum(judge_server) -> None:
    judge_server.add(_verdict(5, "No question was asked.", applicable=False))
    details = evaluate_rubric(
        "Evaluate accuracy", "Hi", _model_info(judge_server), score_min=0.2, return_details=True
    )
    assert details["score"] == 0.2
    assert details["raw_payload"]["applicable"] is False


def test_missing_api_key_is_reported_before_any_request(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        evaluate_rubric("Evaluate x", "y", {"provider": "openai", "model": "gpt-5"})
    with pytest.raises(MissingAPIKeyError, match="MY_KEY"):
        evaluate_rubric(
            "Evaluate x", "y", {"provider": "anthropic", "model": "c", "api_key_env": "MY_KEY"}
        )


def test_unknown_model_and_failing_provider_raise_osmosis_errors(judge_server) -> None:
    judge_server.add(Reply.error(404, message="The model 'nope' does not exist"))
    info = {"provider": "openai", "model": "nope", "base_url": judge_server.base_url}
    with pytest.raises(ModelNotFoundError) as not_found:
        evaluate_rubric("Evaluate x", "y", info)
    assert isinstance(not_found.value, ProviderRequestError)
    assert not_found.value.model == "nope"

    judge_server.add(Reply.error(500), Reply.error(500), Reply.error(500))
    info = {**_model_info(judge_server), "timeout": 5}
    with pytest.raises(ProviderRequestError) as failed:
        evaluate_rubric("Evaluate x", "y", info)
    assert not isinstance(failed.value, ModelNotFoundError)


def test_bad_model_info_names_the_key() -> None:
    with pytest.raises(ValueError, match="model_info\\['model'\\]"):
        evaluate_rubric("Evaluate x", "y", {"provider": "openai"})


def test_seed_complete_example_with_a_scripted_judge(judge_server) -> None:
    """The osmosis reference's complete example, with only the import line and model_info
    changed."""
    judge_server.add(_verdict(10, "Same meaning."))
    model_info = _model_info(judge_server)

    @osmosis_reward
    def exact_match(
        solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs
    ) -> float:  # noqa: E501, RUF013
        return 1.0 if solution_str.strip() == ground_truth.strip() else 0.0

    @osmosis_rubric
    def semantic_eval(
        solution_str: str, ground_truth: str | None, extra_info: dict, **kwargs
    ) -> float:
        return evaluate_rubric(
            rubric="Compare semantic similarity (0-1 scale)",
            solution_str=solution_str,
            ground_truth=ground_truth,
            model_info=model_info,
        )

    solution = "The capital of France is Paris"
    truth = "Paris is France's capital"
    assert exact_match(solution, truth) == 0.0
    assert semantic_eval(solution, truth, {}) == 1.0


def test_osmosis_rubric_checks_the_signature() -> None:
    with pytest.raises(TypeError, match="@osmosis_rubric .*kwargs"):

        @osmosis_rubric
        def no_kwargs(solution_str: str, ground_truth: str | None, extra_info: dict) -> float:
            return 0.0

    with pytest.raises(TypeError, match="must return a float"):

        @osmosis_rubric
        def returns_text(
            solution_str: str, ground_truth: str | None, extra_info: dict, **kwargs
        ) -> float:
            return "high"  # type: ignore[return-value]

        returns_text("a", None, {})


def test_unknown_provider_names_the_valid_ones() -> None:
    with pytest.raises(ProviderRequestError, match="valid providers: anthropic, openai") as error:
        evaluate_rubric("Evaluate x", "y", {"provider": "gemini", "model": "gemini-2.5-pro"})
    assert error.value.provider == "gemini"


def test_a_local_provider_needs_no_key(judge_server, monkeypatch) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    judge_server.add(_verdict(10))
    info = {"provider": "vllm", "model": "judge-model", "base_url": judge_server.base_url}
    assert evaluate_rubric("Evaluate x", "y", info) == 1.0


def test_concurrent_first_calls_leave_one_client_open(judge_server, monkeypatch) -> None:
    judge_server.default = _verdict(8)
    made: list[OpenAICompatibleJudge] = []
    closed: list[OpenAICompatibleJudge] = []
    make, release = OpenAICompatibleJudge.__init__, OpenAICompatibleJudge.aclose

    def counted_init(self: OpenAICompatibleJudge, *args, **kwargs) -> None:
        made.append(self)
        time.sleep(0.05)  # a slow start (a cold import, a busy machine): every caller misses
        make(self, *args, **kwargs)

    async def counted_aclose(self: OpenAICompatibleJudge) -> None:
        closed.append(self)
        await release(self)

    monkeypatch.setattr(OpenAICompatibleJudge, "__init__", counted_init)
    monkeypatch.setattr(OpenAICompatibleJudge, "aclose", counted_aclose)
    start = threading.Barrier(16)
    scores: list[float] = []

    def call() -> None:
        start.wait()
        scores.append(evaluate_rubric("Evaluate x", "y", _model_info(judge_server)))

    callers = [threading.Thread(target=call) for _ in range(16)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=10)
    assert scores == [pytest.approx(7 / 9)] * 16
    still_open = [judge for judge in made if not any(judge is c for c in closed)]
    assert len(still_open) == 1  # the cached one; every spare was closed


def test_a_client_in_use_is_not_closed_to_make_room(judge_server) -> None:
    def answer(request: RecordedRequest) -> Reply:
        return _verdict(8, delay=1.0 if request.json["model"] == "slow" else 0.0)

    judge_server.default = answer
    info = _model_info(judge_server)
    outcome: dict[str, float] = {}

    def slow_call() -> None:
        outcome["score"] = evaluate_rubric("Evaluate x", "y", {**info, "model": "slow"})

    caller = threading.Thread(target=slow_call, daemon=True)
    caller.start()
    deadline = time.monotonic() + 5
    while not judge_server.requests:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    # As many other configurations as the cache holds: "slow" is the least recently used.
    for index in range(rewards._MAX_SERVICES):
        evaluate_rubric("Evaluate x", "y", {**info, "model": f"m{index}"})
    caller.join(timeout=5)
    assert not caller.is_alive(), "the call in flight hangs on a closed judge"
    assert outcome["score"] == pytest.approx(7 / 9)


def test_an_evicted_judge_is_closed(judge_server, monkeypatch) -> None:
    judge_server.default = _verdict(8)
    closed: list[str] = []
    release = OpenAICompatibleJudge.aclose

    async def counted_aclose(self: OpenAICompatibleJudge) -> None:
        closed.append(self.model)
        await release(self)

    monkeypatch.setattr(OpenAICompatibleJudge, "aclose", counted_aclose)
    info = _model_info(judge_server)
    for index in range(rewards._MAX_SERVICES + 1):
        evaluate_rubric("Evaluate x", "y", {**info, "model": f"m{index}"})
    assert closed == ["m0"]
