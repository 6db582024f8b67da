"""The record formats the benchmark reads, each to `BenchItem`s.

- **Who&When** (one JSON object per file; `history`, `question`, `ground_truth`,
  `mistake_agent`, `mistake_step`: an integer or its text, the index into `history`).
- **MP-Bench**, normalised (one JSON object per file; `history` entries carry
  `fail_annotation` "1" on each plausible decisive step, so several may be labelled).
- **tracejudge's labelled traces**: a MultiAgentTrace JSON object with `labels`, a list
  of `{"agent": name or instance id, "step": that agent's model call index (optional),
  "tool_call_id": optional}`, and optionally `outcome` (what went wrong), `split` and
  `id`; one per `.json` file or one per line of a `.jsonl` file.

`parse(value, where, split)` tells them apart by their keys. Problems raise
`BadRequestError` naming the file, the field and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tracejudge.bench._history import history_trace, speaker
from tracejudge.bench._items import BenchItem
from tracejudge.errors import BadRequestError
from tracejudge.models import MultiAgentTrace

__all__ = ["parse"]


def _step(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 3.0: a JSON writer's integer
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _history(value: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    history = value.get("history")
    if (
        not isinstance(history, list)
        or not history
        or not all(isinstance(h, Mapping) for h in history)
    ):
        raise BadRequestError(
            f"{where}: field 'history' must be a non-empty list of entries "
            "({'content': ..., 'role': ..., 'name'?: ...})"
        )
    return history


def _outcome(value: Mapping[str, Any], ground_truth: bool) -> str:
    question = str(value.get("question") or "").strip()
    said = "The agents did not solve the task."
    if question:
        said += f" The task: {question}"
    answer = value.get("ground_truth")
    if ground_truth and answer not in (None, ""):
        said += f" The correct answer is: {answer}."
    return said


def whowhen(value: Mapping[str, Any], where: str, split: str, ground_truth: bool) -> BenchItem:
    history = _history(value, where)
    step = _step(value.get("mistake_step"))
    if step is None or not 0 <= step < len(history):
        raise BadRequestError(
            f"{where}: field 'mistake_step' must be an index into 'history' (0 to "
            f"{len(history) - 1}), got {value.get('mistake_step')!r}"
        )
    agent = value.get("mistake_agent")
    if not isinstance(agent, str) or not agent.strip():
        raise BadRequestError(f"{where}: field 'mistake_agent' must name the agent at fault")
    item_id = str(value.get("question_ID") or where)
    return BenchItem(
        id=where,
        split=split,
        trace=history_trace(history, trace_id=item_id),
        agents=(agent.strip(),),
        steps=(step,),
        outcome=_outcome(value, ground_truth),
        source=where,
    )


def _annotated(entry: Mapping[str, Any]) -> bool:
    flag = entry.get("fail_annotation")
    return flag is True or (isinstance(flag, (int, str)) and str(flag).strip() == "1")


def mpbench(value: Mapping[str, Any], where: str, split: str, ground_truth: bool) -> BenchItem:
    history = _history(value, where)
    steps = [i for i, entry in enumerate(history) if _annotated(entry)]
    if not steps:
        raise BadRequestError(
            f'{where}: no history entry has fail_annotation "1"; label at least one decisive step'
        )
    agents = tuple(dict.fromkeys(speaker(history[i]) for i in steps))
    return BenchItem(
        id=where,
        split=split,
        trace=history_trace(history, trace_id=str(value.get("question_ID") or where)),
        agents=agents,
        steps=tuple(steps),
        outcome=_outcome(value, ground_truth),
        source=where,
    )


def labelled(value: Mapping[str, Any], where: str, split: str, ground_truth: bool) -> BenchItem:
    from tracejudge.evaluation.attribution import trace_steps

    data = dict(value)
    labels = data.pop("labels")
    outcome = data.pop("outcome", None)
    split = str(data.pop("split", None) or split)
    item_id = str(data.pop("id", None) or where)
    try:
        trace = MultiAgentTrace.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        field = ".".join(str(p) for p in first["loc"]) or "document"
        raise BadRequestError(
            f"{where}: not a valid MultiAgentTrace: {field}: {first['msg']}"
        ) from None
    if not isinstance(labels, list) or not labels:
        raise BadRequestError(
            f"{where}: field 'labels' must be a non-empty list of {{agent, step}}"
        )
    steps = trace_steps(trace)
    agents: list[str] = []
    indexes: list[int] = []
    for number, label in enumerate(labels):
        here = f"{where}, labels[{number}]"
        if not isinstance(label, Mapping) or not isinstance(label.get("agent"), str):
            raise BadRequestError(f"{here}: needs 'agent' (an agent name or instance id)")
        name = label["agent"]
        instances = [
            a for a in trace.iter_agents() if a.id == name or a.name.casefold() == name.casefold()
        ]
        if not instances:
            known = ", ".join(sorted({a.name for a in trace.iter_agents()}))
            raise BadRequestError(f"{here}: no agent {name!r} in the trace (agents: {known})")
        agents.append(instances[0].name)
        if label.get("step") is None:
            continue
        step = _step(label["step"])
        found = [ref for a in instances if step is not None and (ref := steps.at(a.id, step))]
        if not found:
            count = len(instances[0].llm_interactions)
            raise BadRequestError(
                f"{here}: agent {name!r} has no model call {label['step']!r} (it has {count}: "
                f"0 to {count - 1}); 'step' is the agent's own model call index"
            )
        indexes.append(found[0].index)
    if isinstance(outcome, str) and outcome.strip():
        said: str | None = outcome.strip()
    else:
        said = None
    return BenchItem(
        id=item_id,
        split=split,
        trace=trace,
        agents=tuple(dict.fromkeys(agents)),
        steps=tuple(dict.fromkeys(indexes)),
        outcome=said,
        source=where,
    )


def parse(value: Any, where: str, split: str, *, ground_truth: bool = True) -> BenchItem:
    """The item a record holds, its format told by its keys."""
    if not isinstance(value, Mapping):
        raise BadRequestError(f"{where}: a record must be a JSON object")
    if "agent_instance_by_id" in value:
        if "labels" not in value:
            raise BadRequestError(
                f"{where}: a MultiAgentTrace without 'labels'; add \"labels\": "
                '[{"agent": ..., "step": ...}] naming where the fault is'
            )
        return labelled(value, where, split, ground_truth)
    if "mistake_step" in value or "mistake_agent" in value:
        return whowhen(value, where, split, ground_truth)
    history = value.get("history")
    if isinstance(history, list) and any(
        isinstance(h, Mapping) and "fail_annotation" in h for h in history
    ):
        return mpbench(value, where, split, ground_truth)
    raise BadRequestError(
        f"{where}: neither Who&When (mistake_agent, mistake_step), MP-Bench (history with "
        "fail_annotation) nor a labelled MultiAgentTrace (agent_instance_by_id, labels)"
    )
