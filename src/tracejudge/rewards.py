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

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import json
import logging
import statistics
import threading
import types
import typing
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Union, cast

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
    from tracejudge.evaluation.settings import EvaluationSettings
    from tracejudge.models import EvaluationResponse

__all__ = [
    "BatchItem",
    "BatchResult",
    "ModelInfo",
    "RewardRubricRunResult",
    "abatch_rewards",
    "aevaluate_rubric",
    "aevaluate_rubric_batch",
    "batch_rewards",
    "evaluate_rubric",
    "evaluate_rubric_batch",
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

    # The marks the criteria and the osmosis API read, as the function's own attributes.
    wrapper.__dict__.update(__osmosis_reward__=True, name=func.__name__, evaluate=evaluate)
    return cast(F, wrapper)  # func's signature, by functools.wraps


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
_SERVICES: OrderedDict[EvaluationSettings, _Entry] = OrderedDict()
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


# Judge calls in flight per judge, unless a batch asks for more.
_JUDGE_CONCURRENCY = 16


def _configuration(
    model_info: Mapping[str, Any],
    timeout: float | None,
    *,
    cache: bool = True,
    concurrency: int = _JUDGE_CONCURRENCY,
) -> EvaluationSettings:
    """The settings of the judge `model_info` names (hashable: the key of its cached
    service). Raises ValueError without a provider or model, `MissingAPIKeyError` without
    the key a hosted provider needs."""
    from tracejudge._http import HTTPOptions
    from tracejudge.evaluation.settings import EvaluationSettings

    for key in ("provider", "model"):
        if not isinstance(model_info.get(key), str) or not model_info[key].strip():
            raise ValueError(
                f"model_info[{key!r}] is required, e.g. "
                "{'provider': 'openai', 'model': 'gpt-4.1-mini'}"
            )
    provider = model_info["provider"].strip().lower()
    model = model_info["model"].strip()
    seconds = float(timeout or model_info.get("timeout") or 60.0)
    return EvaluationSettings(
        judge=f"{provider}:{model}",
        base_url=model_info.get("base_url") or None,
        api_key=_api_key(provider, model, model_info),
        http=HTTPOptions(timeout=seconds, max_concurrency=concurrency),
        # Repeated judgements of one item must each ask the model.
        cache=None if cache else False,
    )


def _provider_model(settings: EvaluationSettings) -> tuple[str, str]:
    provider, _, model = str(settings.judge).partition(":")
    return provider, model


def _new_service(settings: EvaluationSettings) -> EvaluationService:
    # Imported here so that `tracejudge.rewards` stays light to import.
    from tracejudge.evaluation.settings import build_service

    try:
        return build_service(settings)
    except ConfigurationError as error:
        raise ProviderRequestError(*_provider_model(settings), str(error)) from error


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
def _service(config: EvaluationSettings) -> Iterator[EvaluationService]:
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
    ProviderRequestError for any other failure of the request. Safe to call from any
    thread, a forked or spawned worker process, and code running in an event loop (it
    then blocks that loop's thread: use `aevaluate_rubric` there).
    """
    return _sync.run(
        aevaluate_rubric(
            rubric,
            solution_str,
            model_info,
            ground_truth=ground_truth,
            original_input=original_input,
            metadata=metadata,
            score_min=score_min,
            score_max=score_max,
            timeout=timeout,
            return_details=return_details,
        )
    )


async def aevaluate_rubric(
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
    """`evaluate_rubric` for async code: the same arguments, result and errors, awaited
    on the caller's event loop."""
    _check_rubric(rubric, score_min, score_max)
    score, result = await _rubric(
        rubric,
        solution_str,
        _configuration(model_info, timeout),
        ground_truth=ground_truth,
        original_input=original_input,
        metadata=metadata,
        score_min=score_min,
        score_max=score_max,
    )
    if not return_details:
        return score
    payload = result.model_dump(mode="json")
    payload["applicable"] = result.score is not None
    return {"score": score, "explanation": result.explanation, "raw_payload": payload}


async def _rubric(
    rubric: str,
    solution_str: str,
    config: EvaluationSettings,
    *,
    ground_truth: str | None,
    original_input: str | None,
    metadata: Mapping[str, Any] | None,
    score_min: float,
    score_max: float,
) -> tuple[float, EvaluationResponse]:
    """The scaled score, and the judge's answer it was made from."""
    # The rubric and score range were checked by the caller, once (for a batch, once for
    # every item), before the configuration was resolved.
    if not isinstance(solution_str, str):
        raise TypeError(f"solution_str must be a string, got {type(solution_str).__name__}")
    provider, model = _provider_model(config)
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
            (result,) = await service.evaluate_conversation(request)
    except ComposoError as error:
        failure = ModelNotFoundError if error.status_code == 404 else ProviderRequestError
        raise failure(provider, model, str(error)) from error
    fraction = 0.0 if result.score is None else result.score
    return score_min + fraction * (score_max - score_min), result


def _check_rubric(rubric: Any, score_min: float, score_max: float) -> None:
    if not isinstance(rubric, str) or not rubric.strip():
        raise ValueError("rubric must be a non-empty string describing what to reward")
    if score_max <= score_min:
        raise ValueError(f"score_max ({score_max}) must be greater than score_min ({score_min})")


# --------------------------------------------------------------------------- batches

#: An item of a batch: ``(solution_str, ground_truth, extra_info)`` (shorter tuples and a
#: bare string are fine), or a mapping with ``solution_str`` and optionally
#: ``ground_truth``, ``extra_info``, ``original_input``, ``metadata``.
BatchItem = str | Sequence[Any] | Mapping[str, Any]


@dataclass(frozen=True)
class BatchResult:
    """One item's outcome in a batch: its score, or the error that item met.

    With `repeats` > 1, `scores` holds every judgement, `score` their mean and `std`
    their (population) standard deviation; an item is an error when any repeat failed.
    """

    score: float | None = None
    error: str | None = None
    #: The exception's class name (`ProviderRequestError`, `ValueError`, ...).
    error_type: str | None = None
    explanation: str | None = None
    scores: tuple[float, ...] = ()
    std: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class _Item:
    solution_str: str
    ground_truth: str | None
    extra_info: dict[str, Any]
    original_input: str | None
    metadata: dict[str, Any] | None


def _item(value: BatchItem) -> _Item:
    """Read a batch item; ValueError saying what shape is expected."""
    if isinstance(value, str):
        value = (value,)
    if isinstance(value, Mapping):
        if "solution_str" not in value:
            raise ValueError("the item has no 'solution_str'")
        solution, truth = value["solution_str"], value.get("ground_truth")
        extra = value.get("extra_info")
        original, metadata = value.get("original_input"), value.get("metadata")
    elif isinstance(value, Sequence) and 1 <= len(value) <= 3:
        solution, truth, extra = (*value, None, None)[:3]
        original = metadata = None
    else:
        raise ValueError(
            "expected (solution_str, ground_truth, extra_info) or a mapping with "
            f"'solution_str', got {type(value).__name__}"
        )
    if not isinstance(solution, str):
        raise ValueError(f"solution_str must be a string, got {type(solution).__name__}")
    if truth is not None and not isinstance(truth, str):
        truth = json.dumps(truth, ensure_ascii=False, default=str)
    if extra is not None and not isinstance(extra, Mapping):
        raise ValueError(f"extra_info must be a dict, got {type(extra).__name__}")
    extra = dict(extra or {})
    original = original if original is not None else extra.get("original_input")
    metadata = metadata if metadata is not None else extra.get("metadata")
    return _Item(solution, truth, extra, original, metadata)


def _failure(error: BaseException) -> BatchResult:
    return BatchResult(error=str(error) or type(error).__name__, error_type=type(error).__name__)


def _combined(scores: Sequence[float], explanation: str) -> BatchResult:
    """One item's result: the mean of its repeats' scores and their spread."""
    std = statistics.pstdev(scores) if len(scores) > 1 else 0.0
    return BatchResult(
        score=statistics.fmean(scores), scores=tuple(scores), std=std, explanation=explanation
    )


OnResult = Callable[[int, BatchResult], None]


async def _bounded(
    work: Callable[[int], Awaitable[BatchResult]],
    count: int,
    concurrency: int,
    on_result: OnResult | None = None,
) -> list[BatchResult]:
    """`work(i)` for i in range(count), at most `concurrency` at once, results in order.
    An exception of one item becomes that item's error; cancellation still cancels.
    `on_result(i, result)` is called as each item finishes."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    results: list[BatchResult] = [BatchResult()] * count
    indexes = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            try:
                results[index] = await work(index)
            except Exception as error:  # noqa: BLE001 - recorded for the item, never fatal
                results[index] = _failure(error)
            if on_result is not None:
                on_result(index, results[index])

    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
    return results


async def aevaluate_rubric_batch(
    items: Iterable[BatchItem],
    *,
    rubric: str,
    model_info: ModelInfo | dict[str, Any],
    score_min: float = 0.0,
    score_max: float = 1.0,
    timeout: int | None = None,
    concurrency: int = 8,
    repeats: int = 1,
    on_result: OnResult | None = None,
) -> list[BatchResult]:
    """Score every item against `rubric` (as `evaluate_rubric` does), at most
    `concurrency` judge calls at once; one `BatchResult` per item, in order.

    An item's failure (a malformed item, the provider's error, a reply the judge cannot
    read) is recorded in its result and never stops the batch. The rubric, the score
    range and `model_info` are checked first: a ValueError or MissingAPIKeyError there
    concerns every item and is raised. With `repeats` > 1 each item is judged that many
    times, without the verdict cache, for the mean and standard deviation.
    `on_result(index, result)`, when given, is called as each item finishes (progress,
    or writing results as they come).
    """
    _check_rubric(rubric, score_min, score_max)
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    # The judge must allow the batch's concurrency, or a batch of 64 runs 16 at a time.
    config = _configuration(
        model_info,
        timeout,
        cache=repeats == 1,
        concurrency=max(_JUDGE_CONCURRENCY, concurrency),
    )
    listed = list(items)

    async def one(index: int) -> BatchResult:
        item = _item(listed[index])
        scores: list[float] = []
        explanation = ""
        for _ in range(repeats):
            score, result = await _rubric(
                rubric,
                item.solution_str,
                config,
                ground_truth=item.ground_truth,
                original_input=item.original_input,
                metadata=item.metadata,
                score_min=score_min,
                score_max=score_max,
            )
            scores.append(score)
            explanation = result.explanation
        return _combined(scores, explanation)

    return await _bounded(one, len(listed), concurrency, on_result)


def evaluate_rubric_batch(
    items: Iterable[BatchItem],
    *,
    rubric: str,
    model_info: ModelInfo | dict[str, Any],
    score_min: float = 0.0,
    score_max: float = 1.0,
    timeout: int | None = None,
    concurrency: int = 8,
    repeats: int = 1,
    on_result: OnResult | None = None,
) -> list[BatchResult]:
    """`aevaluate_rubric_batch` for synchronous code (an RL framework's reward worker,
    forked or spawned, or code inside an event loop): same arguments and results."""
    return _sync.run(
        aevaluate_rubric_batch(
            items,
            rubric=rubric,
            model_info=model_info,
            score_min=score_min,
            score_max=score_max,
            timeout=timeout,
            concurrency=concurrency,
            repeats=repeats,
            on_result=on_result,
        )
    )


async def abatch_rewards(
    function: Callable[..., float],
    items: Iterable[BatchItem],
    *,
    concurrency: int = 8,
    **kwargs: Any,
) -> list[BatchResult]:
    """Apply an `@osmosis_reward` / `@osmosis_rubric` function (or any function of
    `(solution_str, ground_truth, extra_info, **kwargs) -> float`) to every item, at
    most `concurrency` calls at once, each in a worker thread (such functions are
    synchronous, and a rubric function blocks on its judge call); one `BatchResult` per
    item, in order, an exception recorded for its item. `kwargs` go to every call."""
    listed = list(items)
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    loop = asyncio.get_running_loop()
    with concurrent.futures.ThreadPoolExecutor(
        min(concurrency, max(1, len(listed))), thread_name_prefix="tracejudge-reward"
    ) as pool:

        async def one(index: int) -> BatchResult:
            item = _item(listed[index])
            call = functools.partial(
                function, item.solution_str, item.ground_truth, item.extra_info, **kwargs
            )
            value = await loop.run_in_executor(pool, call)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"the reward function returned {type(value).__name__}")
            return BatchResult(score=float(value), scores=(float(value),))

        return await _bounded(one, len(listed), concurrency)


def batch_rewards(
    function: Callable[..., float],
    items: Iterable[BatchItem],
    *,
    concurrency: int = 8,
    **kwargs: Any,
) -> list[BatchResult]:
    """`abatch_rewards` for synchronous code: same arguments and results."""
    return _sync.run(abatch_rewards(function, items, concurrency=concurrency, **kwargs))
