"""The check protocol and the bases checks build on.

A check is any object with a `name` and an `evaluate(trace)` method that scores agent
instances without a judge model (`TraceCheck`). The evaluator treats its answer exactly
like the per-instance answers of a judged criterion: summary statistics per agent name,
`overall_score`, explanation.

- `AgentCheck`: the base of the built-in checks, one score per agent instance.
- `FunctionCheck` (made by `@check`): a user's plain function as a check.
- `is_check`: what `criteria=[...]` scores as a check rather than sends to a judge.
"""

from __future__ import annotations

import functools
import inspect
import math
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TypeGuard, overload, runtime_checkable

from tracejudge.models import AgentInstance, MultiAgentTrace, ScoreResponse

__all__ = [
    "TraceCheck",
    "AgentCheck",
    "FunctionCheck",
    "Score",
    "Scope",
    "check",
    "is_check",
]


@runtime_checkable
class TraceCheck(Protocol):
    """A criterion computed from the trace itself."""

    #: Shown as the `criterion` of the evaluation result.
    name: str

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        """Score keyed by agent instance id; None (or a missing id) means not applicable."""
        ...


class AgentCheck(ABC):
    """Base of the built-in checks: a TraceCheck that scores each agent instance on its own.

    Subclass it and implement `score_agent`; `evaluate` calls it for every agent
    instance of the trace.
    """

    name: str = "check"

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        """Score keyed by agent instance id; None where the check does not apply."""
        return {agent.id: self.score_agent(agent, trace) for agent in trace.iter_agents()}

    @abstractmethod
    def score_agent(self, agent: AgentInstance, trace: MultiAgentTrace) -> ScoreResponse | None:
        """Score one agent instance, or None when the check does not apply to it."""

    def __repr__(self) -> str:
        return f"<check {self.name}>"


#: What a check function may return for one agent instance.
Score = float | bool | tuple[float | bool | None, str] | ScoreResponse | None
Scope = Literal["agent", "trace"]


def _to_score(value: Any, name: str, where: str) -> ScoreResponse | None:
    """What a user's check returned, as a ScoreResponse."""
    if value is None or isinstance(value, ScoreResponse):
        return value
    explanation = None
    if isinstance(value, tuple):
        if len(value) != 2 or not isinstance(value[1], str):
            raise TypeError(
                f"check {name!r} returned a tuple for {where}; expected (score, explanation)"
            )
        value, explanation = value
        if value is None:
            return ScoreResponse(score=None, explanation=explanation)
    if isinstance(value, bool):
        score = 1.0 if value else 0.0
    elif isinstance(value, (int, float)):
        score = float(value)
    else:
        raise TypeError(
            f"check {name!r} returned {type(value).__name__} for {where}; expected a float in "
            "0..1, a bool, (score, explanation), a ScoreResponse or None"
        )
    if math.isnan(score):
        # Most often a division by zero in the check: an error, not "does not apply".
        raise ValueError(
            f"check {name!r} returned NaN for {where}; return None when the check does not "
            "apply, or a score in 0..1"
        )
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"check {name!r} returned {score} for {where}; scores must be in 0..1")
    return ScoreResponse(score=score, explanation=explanation or f"{name}: {score:g} ({where})")


def _required_positional(fn: Callable[..., Any]) -> list[inspect.Parameter] | None:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]


def _is_trace_parameter(fn: Callable[..., Any], parameter: inspect.Parameter) -> bool:
    annotation: Any = parameter.annotation
    if isinstance(annotation, str) or annotation is parameter.empty:
        try:
            annotation = typing.get_type_hints(fn).get(parameter.name, annotation)
        except Exception:  # an annotation that cannot be resolved: judge by its text
            pass
    if annotation is MultiAgentTrace:
        return True
    if isinstance(annotation, str):
        return annotation.rsplit(".", 1)[-1] == "MultiAgentTrace"
    return annotation is parameter.empty and parameter.name == "trace"


def _infer_scope(fn: Callable[..., Any]) -> Scope:
    """ "trace" for `fn(trace)` (a first parameter named `trace` or annotated
    MultiAgentTrace), else "agent"."""
    positional = _required_positional(fn)
    if positional and _is_trace_parameter(fn, positional[0]):
        return "trace"
    return "agent"


def _wants_trace(fn: Callable[..., Any]) -> bool:
    """Whether a per-agent check function takes the trace as a second argument."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.name == "trace" for p in parameters[1:]):
        return True
    positional = _required_positional(fn) or []
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


class FunctionCheck:
    """A check made from a plain function by `@check`; calling it calls the function.

    scope="agent": `fn(agent)` (or `fn(agent, trace)`) is called for every agent instance.
    scope="trace": `fn(trace)` is called once; a score it returns goes to the root agent
    instance, a dict of scores keyed by agent instance id (or agent name: every instance of
    it) goes to those instances.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        scope: Scope | None = None,
    ) -> None:
        if scope not in (None, "agent", "trace"):
            raise ValueError(f"scope must be 'agent' or 'trace', got {scope!r}")
        if not callable(fn):
            raise TypeError(f"@check needs a function, got {type(fn).__name__}")
        # First, so that attributes copied from the function cannot replace ours.
        functools.update_wrapper(self, fn)
        self.fn = fn
        named: str = getattr(fn, "__name__", type(fn).__name__)
        self.name: str = name or named
        self.scope: Scope = scope or _infer_scope(fn)
        self._pass_trace = self.scope == "agent" and _wants_trace(fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def evaluate(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        """Score keyed by agent instance id (for scope="trace", those the function scored)."""
        if self.scope == "trace":
            return self._evaluate_trace(trace)
        results: dict[str, ScoreResponse | None] = {}
        for agent in trace.iter_agents():
            where = f"agent {agent.name} ({agent.id})"
            args = (agent, trace) if self._pass_trace else (agent,)
            results[agent.id] = _to_score(self._call(where, *args), self.name, where)
        return results

    def _evaluate_trace(self, trace: MultiAgentTrace) -> dict[str, ScoreResponse | None]:
        where = f"the trace (root agent {trace.root.name})"
        value = self._call(where, trace)
        if not isinstance(value, Mapping):
            return {trace.root_agent_instance_id: _to_score(value, self.name, where)}
        by_name: dict[str, list[str]] = {}
        for agent in trace.iter_agents():
            by_name.setdefault(agent.name, []).append(agent.id)
        results: dict[str, ScoreResponse | None] = {}
        for key, item in value.items():
            if key in trace.agent_instance_by_id:
                ids = [key]
            elif key in by_name:
                ids = by_name[key]
            else:
                raise KeyError(
                    f"check {self.name!r} scored {key!r}, which is neither an agent instance "
                    f"id nor an agent name of the trace (agents: {', '.join(by_name)})"
                )
            for agent_id in ids:
                agent = trace.agent_instance_by_id[agent_id]
                results[agent_id] = _to_score(item, self.name, f"agent {agent.name} ({agent_id})")
        return results

    def _call(self, where: str, *args: Any) -> Any:
        try:
            return self.fn(*args)
        except Exception as exc:
            raise RuntimeError(
                f"check {self.name!r} raised {type(exc).__name__} on {where}: {exc}"
            ) from exc

    def __repr__(self) -> str:
        return f"<check {self.name} (scope={self.scope})>"


@overload
def check(fn: Callable[..., Any], /) -> FunctionCheck: ...


@overload
def check(
    *, name: str | None = None, scope: Scope | None = None
) -> Callable[[Callable[..., Any]], FunctionCheck]: ...


def check(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    scope: Scope | None = None,
) -> FunctionCheck | Callable[[Callable[..., Any]], FunctionCheck]:
    """Turn a function into a check usable in `criteria=[...]`; it stays callable as before.

    `fn(agent: AgentInstance)` (optionally `fn(agent, trace)`) scores each agent instance;
    `fn(trace: MultiAgentTrace)` - a first parameter annotated MultiAgentTrace or named
    `trace`, or `scope="trace"` - scores the whole trace once: its score is reported on the
    root agent instance, or it returns a dict of scores keyed by agent instance id or agent
    name. A score is a float in 0..1, a bool (1.0/0.0), `(score, explanation)`, a
    `ScoreResponse`, or None (does not apply). An exception the function raises is
    re-raised as RuntimeError naming the check and the agent.

    Use as `@check`, `@check(name="...")` or `@check(scope="trace")`.
    """
    if fn is not None:
        return FunctionCheck(fn, name=name, scope=scope)

    def decorate(function: Callable[..., Any]) -> FunctionCheck:
        return FunctionCheck(function, name=name, scope=scope)

    return decorate


def is_check(obj: object) -> TypeGuard[TraceCheck]:
    """Whether `obj` is scored as a check (rather than sent to a judge) in `criteria`."""
    return not isinstance(obj, str) and isinstance(obj, TraceCheck)
