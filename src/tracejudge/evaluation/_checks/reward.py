"""Reward functions (`@osmosis_reward`) as checks, and `as_check`: what `criteria=[...]`
accepts as a check (a check, or a reward function, which becomes one).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tracejudge.evaluation._checks.base import Scope, TraceCheck, is_check
from tracejudge.evaluation._checks.text import short
from tracejudge.models import AgentInstance, MultiAgentTrace, ScoreResponse

__all__ = ["RewardCheck", "GroundTruth", "from_reward", "as_check"]


GroundTruth = str | None | Callable[[AgentInstance], str | None]


class RewardCheck:
    """A reward function (`@osmosis_reward`) used as a check (see `from_reward`)."""

    def __init__(
        self,
        fn: Callable[..., float],
        ground_truth: GroundTruth = None,
        *,
        name: str | None = None,
        scope: Scope = "agent",
    ) -> None:
        if scope not in ("agent", "trace"):
            raise ValueError(f"scope must be 'agent' or 'trace', got {scope!r}")
        if not callable(fn):
            raise TypeError(f"from_reward needs a reward function, got {type(fn).__name__}")
        self.fn = fn
        self.ground_truth = ground_truth
        self.scope = scope
        named: str = getattr(fn, "__name__", "reward")
        self.name: str = name or named

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        """Score keyed by agent instance id: the reward of each agent's final output."""
        agents = [trace.root] if self.scope == "trace" else list(trace.iter_agents())
        return {agent.id: self._score(agent, trace) for agent in agents}

    def _score(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        solution = agent.final_output
        if solution is None:
            return None  # no answer to reward
        truth = self.ground_truth(agent) if callable(self.ground_truth) else self.ground_truth
        extra_info = {"agent": agent, "trace": trace}
        where = f"agent {agent.name} ({agent.id})"
        try:
            value = self.fn(solution, truth, extra_info)
        except Exception as exc:
            hint = (
                "; no ground truth was given: use checks.from_reward(fn, ground_truth=...)"
                if truth is None
                else ""
            )
            raise RuntimeError(
                f"reward {self.name!r} raised {type(exc).__name__} on {where}: {exc}{hint}"
            ) from exc
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(
                f"reward {self.name!r} returned {type(value).__name__} on {where}; expected a float"
            )
        reward = float(value)
        if math.isnan(reward):
            return ScoreResponse(score=None, explanation=f"reward {self.name} returned NaN")
        score = min(1.0, max(0.0, reward))
        clipped = f", clipped to {score:g}" if score != reward else ""
        truth_text = "" if truth is None else f" against ground truth {short(truth, 60)!r}"
        return ScoreResponse(
            score=score,
            explanation=f"reward {self.name} = {reward:g}{clipped} for {agent.name}'s final "
            f"output{truth_text}.",
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<reward check {self.name}>"


def from_reward(
    fn: Callable[..., float],
    ground_truth: GroundTruth = None,
    *,
    name: str | None = None,
    scope: Scope = "agent",
) -> RewardCheck:
    """Use a reward function `fn(solution_str, ground_truth, extra_info=None, **kwargs) ->
    float` (such as an `@osmosis_reward` one) as a check.

    Each agent instance (scope="agent") or the root only (scope="trace") is scored with
    `solution_str` = its final output (`AgentInstance.final_output`; None - not scored -
    when it has none), `ground_truth` = the given string, or `ground_truth(agent)` when a
    function is given, and `extra_info` = `{"agent": agent, "trace": trace}`. Rewards are
    clipped to 0..1. An `@osmosis_reward` function placed directly in `criteria` is the
    same as `from_reward(fn)`, with no ground truth (None).
    """
    return RewardCheck(fn, ground_truth, name=name, scope=scope)


def as_check(obj: object) -> TraceCheck:
    """`obj` as a TraceCheck: checks and `@osmosis_reward` functions; TypeError otherwise."""
    if getattr(obj, "__osmosis_reward__", False) and callable(obj):
        return from_reward(obj)
    if is_check(obj):
        return obj
    if callable(obj):
        raise TypeError(
            f"{getattr(obj, '__name__', obj)!r} is a plain function, not a check: decorate it "
            "with @checks.check (fn(agent) -> score) or @osmosis_reward"
        )
    raise TypeError(f"{type(obj).__name__} is not a check (needs a name and evaluate(trace))")
