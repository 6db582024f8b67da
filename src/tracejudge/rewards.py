"""Osmosis-compatible reward API: `@osmosis_reward` local reward functions.

Code written against the `osmosis-ai` SDK ports by changing its import line::

    from tracejudge import osmosis_reward

    @osmosis_reward
    def exact_match(
        solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs
    ) -> float:
        return 1.0 if solution_str.strip() == ground_truth.strip() else 0.0

    exact_match("Paris", "Paris")  # 1.0, as with osmosis-ai

A decorated function is also a deterministic trace check: put it in
`criteria=[...]` of `Composo.evaluate_trace` (it then scores each agent's final
output, with no ground truth), or wrap it with
`tracejudge.checks.from_reward(exact_match, ground_truth="Paris")`.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, Union

__all__ = ["osmosis_reward"]

F = TypeVar("F", bound=Callable[..., float])

_SIGNATURE = "(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float"
_UNION_ORIGINS: tuple[Any, ...] = (Union, types.UnionType)


def _hints(func: Callable[..., Any]) -> dict[str, Any]:
    # Resolves string annotations (`from __future__ import annotations`); on failure the
    # raw annotations, which `_is` also understands as strings.
    try:
        return typing.get_type_hints(func)
    except Exception:
        return dict(getattr(func, "__annotations__", {}))


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    """`X | None` -> (X, True); anything else -> (annotation, False)."""
    if typing.get_origin(annotation) in _UNION_ORIGINS:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    if isinstance(annotation, str):
        parts = [p.strip() for p in annotation.replace("Optional[", "").rstrip("]").split("|")]
        parts = [p for p in parts if p != "None"]
        if len(parts) == 1 and (annotation.startswith("Optional[") or "|" in annotation):
            return parts[0], True
    return annotation, False


def _is(annotation: Any, expected: type) -> bool:
    annotation, _ = _strip_optional(annotation)
    if annotation is expected:
        return True
    if isinstance(annotation, str):
        base = annotation.split("[", 1)[0].strip()
        names = {expected.__name__, f"builtins.{expected.__name__}"}
        if expected is dict:
            names |= {"Dict", "typing.Dict", "Mapping", "typing.Mapping"}
        return base in names
    origin = typing.get_origin(annotation)
    if expected is dict and origin in (dict, Mapping):
        return True
    return False


def _check_signature(func: Callable[..., Any]) -> None:
    name = getattr(func, "__name__", repr(func))

    def fail(problem: str) -> typing.NoReturn:
        raise TypeError(f"@osmosis_reward function {name!r}: {problem}; expected {_SIGNATURE}")

    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        fail(f"its signature cannot be read ({exc})")
    params = list(signature.parameters.values())
    hints = _hints(func)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 3:
        got = ", ".join(p.name for p in positional) or "none"
        fail(f"it needs 3 positional parameters, got {len(positional)} ({got})")
    for param, expected in zip(
        positional[:3], ("solution_str", "ground_truth", "extra_info"), strict=False
    ):
        if param.name != expected:
            fail(
                f"parameter {positional.index(param) + 1} must be named {expected!r}, got "
                f"{param.name!r}"
            )
    solution, truth, extra = positional[:3]
    for param in (solution, truth):
        if param.default is not param.empty:
            fail(f"{param.name!r} must not have a default value")
        annotation = hints.get(param.name, param.annotation)
        if annotation is param.empty:
            fail(f"{param.name!r} must be annotated as str")
        if not _is(annotation, str):
            fail(f"{param.name!r} must be annotated as str, got {annotation!r}")
    annotation = hints.get(extra.name, extra.annotation)
    if annotation is extra.empty:
        fail("'extra_info' must be annotated as dict")
    if not _is(annotation, dict):
        fail(f"'extra_info' must be annotated as dict, got {annotation!r}")
    if extra.default is extra.empty:
        fail("'extra_info' must have a default value (None)")
    for param in positional[3:]:
        if param.default is param.empty:
            fail(f"extra parameter {param.name!r} must have a default value")
    for param in params:
        if param.kind is param.KEYWORD_ONLY and param.default is param.empty:
            fail(f"keyword-only parameter {param.name!r} must have a default value")
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        fail("it must accept **kwargs (callers may pass more keyword arguments in future)")
    returns = hints.get("return", signature.return_annotation)
    if returns is not signature.empty and not _is(returns, float):
        fail(f"it must be annotated to return float, got {returns!r}")


def osmosis_reward(func: F) -> F:
    """Mark a local reward function `(solution_str: str, ground_truth: str, extra_info: dict =
    None, **kwargs) -> float`, checking that signature now (TypeError naming the problem).

    The result is called exactly like the function; it drops a `data_source` keyword (as
    osmosis-ai does) and raises TypeError when the function returns something other than a
    float (an int is accepted as its float). It is also a trace check (`name`,
    `evaluate(trace)`), so it can be placed in `criteria=[...]`: see `checks.from_reward`.
    """
    _check_signature(func)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> float:
        kwargs.pop("data_source", None)
        result = func(*args, **kwargs)
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            raise TypeError(
                f"@osmosis_reward function {func.__name__!r} must return a float, got "
                f"{type(result).__name__}"
            )
        return float(result)

    def evaluate(trace: Any) -> dict[str, Any]:
        # Imported here so that `tracejudge.rewards` stays light to import.
        from tracejudge.evaluation.checks import from_reward

        return from_reward(wrapper).evaluate(trace)

    wrapper.__osmosis_reward__ = True  # type: ignore[attr-defined]
    wrapper.name = func.__name__  # type: ignore[attr-defined]
    wrapper.evaluate = evaluate  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
