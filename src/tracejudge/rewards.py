"""Osmosis-compatible reward API: `@osmosis_reward`, `@osmosis_rubric`, `evaluate_rubric`.

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

`evaluate_rubric` scores a text against a natural-language rubric with a judge
model (`model_info={"provider": "openai", "model": "gpt-4.1-mini"}`) through the
same judges and evaluator as `Composo.evaluate`, and raises the Osmosis errors:
`MissingAPIKeyError`, `ProviderRequestError`, `ModelNotFoundError`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import threading
import types
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Union

from tracejudge import _env, _sync
from tracejudge.errors import (
    ComposoError,
    ConfigurationError,
    MissingAPIKeyError,
    ModelNotFoundError,
    ProviderRequestError,
)

if TYPE_CHECKING:
    from tracejudge.evaluation.service import EvaluationService

__all__ = [
    "ModelInfo",
    "RewardRubricRunResult",
    "evaluate_rubric",
    "osmosis_reward",
    "osmosis_rubric",
]

F = TypeVar("F", bound=Callable[..., float])

logger = logging.getLogger("tracejudge")

_SIGNATURES = {
    "osmosis_reward": (
        "(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float"
    ),
    "osmosis_rubric": (
        "(solution_str: str, ground_truth: str | None, extra_info: dict, **kwargs) -> float"
    ),
}
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


def _check_signature(func: Callable[..., Any], decorator: str) -> None:
    name = getattr(func, "__name__", repr(func))

    def fail(problem: str) -> typing.NoReturn:
        raise TypeError(
            f"@{decorator} function {name!r}: {problem}; expected {_SIGNATURES[decorator]}"
        )

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
    if decorator == "osmosis_reward" and extra.default is extra.empty:
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


def _scoring_function(func: F, decorator: str) -> F:
    _check_signature(func, decorator)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> float:
        kwargs.pop("data_source", None)
        result = func(*args, **kwargs)
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            raise TypeError(
                f"@{decorator} function {func.__name__!r} must return a float, got "
                f"{type(result).__name__}"
            )
        return float(result)

    def evaluate(trace: Any) -> dict[str, Any]:
        # Imported here so that `tracejudge.rewards` stays light to import.
        from tracejudge.evaluation import from_reward

        return from_reward(wrapper).evaluate(trace)

    wrapper.__osmosis_reward__ = True  # type: ignore[attr-defined]
    wrapper.name = func.__name__  # type: ignore[attr-defined]
    wrapper.evaluate = evaluate  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def osmosis_reward(func: F) -> F:
    """Mark a local reward function `(solution_str: str, ground_truth: str, extra_info: dict =
    None, **kwargs) -> float`, checking that signature now (TypeError naming the problem).

    The result is called exactly like the function; it drops a `data_source` keyword (as
    osmosis-ai does) and raises TypeError when the function returns something other than a
    float (an int is accepted as its float). It is also a trace check (`name`,
    `evaluate(trace)`), so it can be placed in `criteria=[...]`: see `checks.from_reward`.
    """
    return _scoring_function(func, "osmosis_reward")


def osmosis_rubric(func: F) -> F:
    """Mark an LLM-judged reward function `(solution_str: str, ground_truth: str | None,
    extra_info: dict, **kwargs) -> float`, usually one that returns `evaluate_rubric(...)`.

    The signature is checked now (TypeError naming the problem); calls behave as with
    `osmosis_reward`, and the function is a trace check in the same way.
    """
    return _scoring_function(func, "osmosis_rubric")


# --------------------------------------------------------------------------- rubrics


class ModelInfo(TypedDict, total=False):
    """Which judge model `evaluate_rubric` asks. `provider` and `model` are required.

    `base_url` (a tracejudge addition) points an OpenAI-compatible provider at any server,
    such as vLLM, Ollama or llama.cpp, which then needs no API key.
    """

    provider: str
    model: str
    api_key: str
    api_key_env: str
    timeout: float
    base_url: str


class RewardRubricRunResult(TypedDict):
    """What `evaluate_rubric(..., return_details=True)` returns."""

    score: float
    explanation: str
    raw_payload: dict[str, Any]


class _Entry:
    """A cached judge service and the number of calls using it now (under _SERVICES_LOCK)."""

    def __init__(self, service: EvaluationService) -> None:
        self.service = service
        self.users = 0


# One judge per configuration, kept between calls: an RL loop calls evaluate_rubric
# thousands of times and should reuse connections and the verdict cache. At most
# _MAX_SERVICES are kept; the least recently used one that no call is using is closed
# when another is needed (a judge in use is never closed under its caller).
_SERVICES: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
_SERVICES_LOCK = threading.Lock()
_MAX_SERVICES = 8


def _api_key(provider: str, model: str, model_info: Mapping[str, Any]) -> str | None:
    from tracejudge.judges import key_env_for, needs_api_key

    try:
        key_env = model_info.get("api_key_env") or key_env_for(provider)
        if model_info.get("api_key"):
            return str(model_info["api_key"])
        key = _env.read(key_env) or ""
        if key or not needs_api_key(provider, model_info.get("base_url") or None):
            return key or None
    except ConfigurationError as error:  # an unknown provider: the message lists the valid ones
        raise ProviderRequestError(provider, model, str(error)) from None
    raise MissingAPIKeyError(
        f"no API key for provider {provider!r}: set {key_env or 'an API key variable'} or put "
        "'api_key' / 'api_key_env' in model_info"
    )


def _configuration(model_info: Mapping[str, Any], timeout: float | None) -> tuple[Any, ...]:
    for key in ("provider", "model"):
        if not isinstance(model_info.get(key), str) or not model_info[key].strip():
            raise ValueError(
                f"model_info[{key!r}] is required, e.g. "
                "{'provider': 'openai', 'model': 'gpt-4.1-mini'}"
            )
    provider = model_info["provider"].strip().lower()
    model = model_info["model"].strip()
    base_url = model_info.get("base_url") or None
    api_key = _api_key(provider, model, model_info)
    seconds = float(timeout or model_info.get("timeout") or 60.0)
    return (provider, model, api_key, base_url, seconds)


def _new_service(config: tuple[Any, ...]) -> EvaluationService:
    # Imported here so that `tracejudge.rewards` stays light to import.
    from tracejudge.evaluation.service import EvaluationService
    from tracejudge.judges import judge_from_spec

    provider, model, api_key, base_url, seconds = config
    options: dict[str, Any] = {"api_key": api_key, "timeout": seconds}
    if base_url:
        options["base_url"] = base_url
    try:
        judge = judge_from_spec(f"{provider}:{model}", **options)
    except ConfigurationError as error:
        raise ProviderRequestError(provider, model, str(error)) from error
    return EvaluationService(judge)


def _evict_idle() -> list[EvaluationService]:
    """Take out the least recently used idle services beyond _MAX_SERVICES (lock held)."""
    evicted: list[EvaluationService] = []
    for config in list(_SERVICES):
        if len(_SERVICES) <= _MAX_SERVICES:
            break
        if _SERVICES[config].users == 0:
            evicted.append(_SERVICES.pop(config).service)
    return evicted


@contextlib.contextmanager
def _service(config: tuple[Any, ...]) -> Iterator[EvaluationService]:
    """The cached judge service for this configuration, marked in use for the block."""
    with _SERVICES_LOCK:
        entry = _SERVICES.get(config)
        if entry is not None:
            _SERVICES.move_to_end(config)
            entry.users += 1
    if entry is None:
        built = _new_service(config)  # outside the lock: building may be slow
        with _SERVICES_LOCK:
            spare: list[EvaluationService] = []
            entry = _SERVICES.get(config)
            if entry is None:  # still missing: ours goes in
                entry = _SERVICES[config] = _Entry(built)
            else:  # another call put one in first: use that one, close ours
                _SERVICES.move_to_end(config)
                spare.append(built)
            entry.users += 1
            spare.extend(_evict_idle())
        _close_quietly(spare)
    try:
        yield entry.service
    finally:
        with _SERVICES_LOCK:
            entry.users -= 1
            evicted = _evict_idle()
        _close_quietly(evicted)  # outside the lock, and only services nobody uses


def _close_quietly(services: list[EvaluationService]) -> None:
    # A failure to release a spare judge is not the caller's evaluation failing.
    for service in services:
        try:
            _sync.run(service.aclose())
        except Exception:  # noqa: BLE001
            logger.debug("closing a cached judge failed", exc_info=True)


def evaluate_rubric(
    rubric: str,
    solution_str: str,
    model_info: ModelInfo | dict[str, Any],
    ground_truth: str | None = None,
    original_input: str | None = None,
    metadata: dict[str, Any] | None = None,
    score_min: float = 0.0,
    score_max: float = 1.0,
    timeout: int | None = None,
    return_details: bool = False,
) -> float | RewardRubricRunResult:
    """Score `solution_str` against `rubric` with the judge model `model_info` names.

    The judge sees the original input, the reference answer and the metadata as context
    and the solution as the answer to grade; its 0..1 score is scaled to
    [score_min, score_max]. A rubric the judge finds not applicable scores `score_min`
    (with `"applicable": false` in the details). Returns the score, or with
    `return_details=True` a dict with `score`, `explanation` and `raw_payload`.

    Raises MissingAPIKeyError when no key is found for a hosted provider,
    ModelNotFoundError when the provider does not know the model, and
    ProviderRequestError for any other failure of the request.
    """
    if not isinstance(rubric, str) or not rubric.strip():
        raise ValueError("rubric must be a non-empty string describing what to reward")
    if score_max <= score_min:
        raise ValueError(f"score_max ({score_max}) must be greater than score_min ({score_min})")
    config = _configuration(model_info, timeout)
    provider, model = config[0], config[1]
    context = [f"Reference answer (ground truth): {ground_truth}"] if ground_truth else []
    if metadata:
        context.append(f"Metadata: {json.dumps(metadata, ensure_ascii=False, default=str)}")
    messages = [
        {"role": "user", "content": original_input or "(no original input was given)"},
        {"role": "assistant", "content": solution_str},
    ]
    from tracejudge.evaluation.service import ConversationRequest

    request = ConversationRequest(
        messages=messages, criteria=[rubric], system="\n".join(context) or None
    )
    try:
        with _service(config) as service:
            (result,) = _sync.run(service.evaluate_conversation(request))
    except ComposoError as error:
        failure = ModelNotFoundError if error.status_code == 404 else ProviderRequestError
        raise failure(provider, model, str(error)) from error
    fraction = 0.0 if result.score is None else result.score
    score = score_min + fraction * (score_max - score_min)
    if not return_details:
        return score
    payload = result.model_dump(mode="json")
    payload["applicable"] = result.score is not None
    return {"score": score, "explanation": result.explanation, "raw_payload": payload}
