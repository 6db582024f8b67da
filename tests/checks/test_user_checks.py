"""Users' own checks: @checks.check, @osmosis_reward and checks.from_reward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.checks import faults
from tracejudge import checks
from tracejudge.evaluation import TraceCheck
from tracejudge.models import AgentInstance, MultiAgentTrace, ScoreResponse
from tracejudge.rewards import osmosis_reward

Record = Callable[[faults.Scenario], MultiAgentTrace]


@pytest.fixture
def trace(record: Record) -> MultiAgentTrace:
    return record(faults.clean("Paris", 18, "sunny"))


def _ids(trace: MultiAgentTrace) -> dict[str, str]:
    return {a.name: a.id for a in trace.iter_agents()}


# --------------------------------------------------------------------------- @check


def test_check_decorator_scores_every_agent_and_stays_callable(trace: MultiAgentTrace) -> None:
    @checks.check
    def few_calls(agent: AgentInstance) -> float:
        return 1.0 if len(agent.llm_interactions) <= 2 else 0.5

    assert isinstance(few_calls, TraceCheck)
    assert few_calls.name == "few_calls"
    assert few_calls.__name__ == "few_calls"
    ids = _ids(trace)
    results = few_calls.evaluate(trace)
    assert set(results) == set(ids.values())
    assert all(r is not None and r.score == 1.0 for r in results.values())
    assert few_calls(trace.root) == 1.0  # still the function


def test_check_accepts_every_return_form(trace: MultiAgentTrace) -> None:
    ids = _ids(trace)
    returns: dict[str, Any] = {
        "orchestrator": True,
        "researcher": (0.25, "a quarter"),
    }

    @checks.check(name="forms")
    def forms(agent: AgentInstance) -> Any:
        return returns[agent.name]

    results = forms.evaluate(trace)
    assert forms.name == "forms"
    assert results[ids["orchestrator"]].score == 1.0
    assert results[ids["researcher"]] == ScoreResponse(score=0.25, explanation="a quarter")

    returns.update(orchestrator=None, researcher=ScoreResponse(score=0.0, explanation="no"))
    results = forms.evaluate(trace)
    assert results[ids["orchestrator"]] is None
    assert results[ids["researcher"]].explanation == "no"

    returns.update(orchestrator=False, researcher=1)
    results = forms.evaluate(trace)
    assert results[ids["orchestrator"]].score == 0.0
    assert results[ids["researcher"]].score == 1.0


def test_check_can_take_the_trace_too(trace: MultiAgentTrace) -> None:
    @checks.check
    def is_root(agent: AgentInstance, trace: MultiAgentTrace) -> bool:
        return agent.id == trace.root_agent_instance_id

    results = is_root.evaluate(trace)
    assert results[trace.root_agent_instance_id].score == 1.0
    assert results[_ids(trace)["researcher"]].score == 0.0


def test_trace_scope_scores_the_root_only(trace: MultiAgentTrace) -> None:
    @checks.check(scope="trace")
    def two_agents(trace: MultiAgentTrace) -> tuple[float, str]:
        count = len(trace.agent_instance_by_id)
        return (1.0 if count == 2 else 0.0, f"{count} agents")

    results = two_agents.evaluate(trace)
    assert results == {
        trace.root_agent_instance_id: ScoreResponse(score=1.0, explanation="2 agents")
    }


def test_check_rejects_bad_scores_clearly(trace: MultiAgentTrace) -> None:
    @checks.check
    def too_big(agent: AgentInstance) -> float:
        return 2.0

    @checks.check
    def wrong_type(agent: AgentInstance) -> Any:
        return "good"

    @checks.check
    def broken(agent: AgentInstance) -> float:
        raise KeyError("missing")

    with pytest.raises(ValueError, match="'too_big' returned 2.0 .* 0..1"):
        too_big.evaluate(trace)
    with pytest.raises(TypeError, match="'wrong_type' returned str"):
        wrong_type.evaluate(trace)
    with pytest.raises(RuntimeError, match="'broken' raised KeyError on agent orchestrator"):
        broken.evaluate(trace)
    with pytest.raises(ValueError, match="scope"):
        checks.check(scope="everything")(lambda agent: 1.0)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- @osmosis_reward


@osmosis_reward
def mentions_paris(
    solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs
) -> float:
    return 1.0 if "Paris" in solution_str else 0.0


@osmosis_reward
def exact_match(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
    return 1.0 if solution_str.strip() == ground_truth.strip() else 0.0


def test_osmosis_reward_is_called_as_in_the_seed() -> None:
    assert exact_match("Paris", "Paris") == 1.0
    assert exact_match("The capital of France is Paris", "Paris is France's capital") == 0.0
    assert exact_match("a", "a", {"k": 1}) == 1.0
    assert exact_match(solution_str="a", ground_truth="b", extra_info=None) == 0.0
    assert exact_match("a", "a", data_source="gsm8k") == 1.0  # dropped, as osmosis-ai does
    assert exact_match.__name__ == "exact_match"


def test_osmosis_reward_must_return_a_float() -> None:
    @osmosis_reward
    def text(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
        return "1.0"  # type: ignore[return-value]

    with pytest.raises(TypeError, match="must return a float, got str"):
        text("a", "b")


def _no_kwargs(solution_str: str, ground_truth: str, extra_info: dict = None) -> float:
    return 0.0


def _renamed(answer: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
    return 0.0


def _untyped(solution_str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
    return 0.0


def _int_truth(solution_str: str, ground_truth: int, extra_info: dict = None, **kwargs) -> float:
    return 0.0


def _required_extra(solution_str: str, ground_truth: str, extra_info: dict, **kwargs) -> float:
    return 0.0


def _two(solution_str: str, ground_truth: str) -> float:
    return 0.0


def _returns_str(solution_str: str, ground_truth: str, extra_info: dict = None, **kw) -> str:
    return ""


@pytest.mark.parametrize(
    ("fn", "problem"),
    [
        (_no_kwargs, "must accept \\*\\*kwargs"),
        (_renamed, "parameter 1 must be named 'solution_str', got 'answer'"),
        (_untyped, "'solution_str' must be annotated as str"),
        (_int_truth, "'ground_truth' must be annotated as str, got <class 'int'>"),
        (_required_extra, "'extra_info' must have a default value"),
        (_two, "needs 3 positional parameters, got 2"),
        (_returns_str, "must be annotated to return float"),
    ],
)
def test_osmosis_reward_rejects_other_signatures_naming_the_problem(
    fn: Callable[..., Any], problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        osmosis_reward(fn)


def test_osmosis_reward_accepts_optional_annotations() -> None:
    @osmosis_reward
    def lenient(
        solution_str: str, ground_truth: str | None, extra_info: dict[str, Any] | None = None, **kw
    ) -> float:
        return 0.5

    assert lenient("a", None) == 0.5


# --------------------------------------------------------------------------- rewards as checks


def test_from_reward_scores_each_agents_final_output(trace: MultiAgentTrace) -> None:
    seen: list[dict[str, Any]] = []

    @osmosis_reward
    def spy(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
        seen.append({"solution": solution_str, "truth": ground_truth, **(extra_info or {})})
        return 1.0 if ground_truth in solution_str else 0.0

    results = checks.from_reward(spy, ground_truth="18 °C").evaluate(trace)
    ids = _ids(trace)
    assert results[ids["orchestrator"]].score == 1.0  # "It is 18 °C and sunny in Paris today."
    assert results[ids["researcher"]].score == 0.0  # "Findings: it is 18°C and sunny ..."
    assert "spy = 0" in results[ids["researcher"]].explanation
    first = seen[0]
    assert first["truth"] == "18 °C"
    assert isinstance(first["agent"], AgentInstance) and first["trace"] is trace
    assert first["solution"] == first["agent"].final_output


def test_from_reward_takes_a_ground_truth_per_agent_and_a_trace_scope(
    trace: MultiAgentTrace,
) -> None:
    truths = {"orchestrator": "It is 18 °C and sunny in Paris today.", "researcher": "x"}
    per_agent = checks.from_reward(exact_match, ground_truth=lambda a: truths[a.name])
    ids = _ids(trace)
    results = per_agent.evaluate(trace)
    assert results[ids["orchestrator"]].score == 1.0
    assert results[ids["researcher"]].score == 0.0
    root_only = checks.from_reward(exact_match, ground_truth="x", scope="trace", name="em")
    assert root_only.name == "em"
    assert set(root_only.evaluate(trace)) == {trace.root_agent_instance_id}


def test_rewards_outside_zero_one_are_clipped(trace: MultiAgentTrace) -> None:
    @osmosis_reward
    def signed(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
        return -1.0

    result = checks.from_reward(signed).evaluate(trace)[trace.root_agent_instance_id]
    assert result.score == 0.0 and "clipped to 0" in result.explanation


def test_a_decorated_reward_is_itself_a_check(trace: MultiAgentTrace) -> None:
    assert isinstance(mentions_paris, TraceCheck)
    assert checks.is_check(mentions_paris)
    assert mentions_paris.name == "mentions_paris"
    results = mentions_paris.evaluate(trace)
    assert all(r.score == 1.0 for r in results.values())
    assert isinstance(checks.as_check(mentions_paris), checks.RewardCheck)


def test_a_reward_needing_ground_truth_says_how_to_give_one(trace: MultiAgentTrace) -> None:
    with pytest.raises(RuntimeError, match="no ground truth was given.*from_reward"):
        exact_match.evaluate(trace)


def test_as_check_explains_what_is_not_a_check() -> None:
    assert checks.as_check(checks.loops) is checks.loops
    with pytest.raises(TypeError, match="@checks.check"):
        checks.as_check(lambda agent: 1.0)
    with pytest.raises(TypeError, match="not a check"):
        checks.as_check(42)
    assert not checks.is_check("Reward accurate answers")


# --------------------------------------------------------------------------- whole-trace checks


def test_a_function_of_the_trace_is_a_trace_check_without_saying_so(
    trace: MultiAgentTrace,
) -> None:
    @checks.check
    def has_a_researcher(trace: MultiAgentTrace) -> bool:
        return any(a.name == "researcher" for a in trace.iter_agents())

    @checks.check
    def unannotated(trace):  # type: ignore[no-untyped-def]
        return 0.5

    assert has_a_researcher.scope == "trace" and unannotated.scope == "trace"
    assert has_a_researcher.evaluate(trace) == {
        trace.root_agent_instance_id: ScoreResponse(
            score=1.0, explanation="has_a_researcher: 1 (the trace (root agent orchestrator))"
        )
    }
    assert unannotated.evaluate(trace)[trace.root_agent_instance_id].score == 0.5
    assert has_a_researcher(trace) is True  # still the function


def test_a_trace_check_may_score_agents_by_id_or_name(trace: MultiAgentTrace) -> None:
    ids = _ids(trace)

    @checks.check
    def per_agent(trace: MultiAgentTrace) -> dict[str, Any]:
        return {"researcher": (0.5, "half"), ids["orchestrator"]: True}

    results = per_agent.evaluate(trace)
    assert results[ids["researcher"]] == ScoreResponse(score=0.5, explanation="half")
    assert results[ids["orchestrator"]].score == 1.0

    @checks.check
    def typo(trace: MultiAgentTrace) -> dict[str, float]:
        return {"reseacher": 1.0}

    with pytest.raises(KeyError, match="'reseacher'.*neither an agent instance id nor"):
        typo.evaluate(trace)


def test_an_agent_check_may_name_its_first_parameter_anything(trace: MultiAgentTrace) -> None:
    @checks.check
    def short_answers(a: AgentInstance, trace: MultiAgentTrace | None = None) -> bool:
        return len(a.final_output or "") < 200 and trace is not None

    assert short_answers.scope == "agent"
    assert all(r.score == 1.0 for r in short_answers.evaluate(trace).values())
