"""Experiments: a dataset, the user's task run on each row, and two runs compared.

`experiment(dataset, task, criteria, ...)` runs the task (the user's agent function,
sync or async) on every row, `repeats` times, traced and scored through the evaluation
service, and records the run in a directory (`record` describes its files);
`compare_runs(baseline, candidate)` says, per agent and criterion, what changed and
whether it is a regression (`compare`). The CLI (`tracejudge run`, `tracejudge compare`)
only presents them. This room reaches the judges only through `tracejudge.evaluation`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tracejudge.experiments.compare import Comparison, GatePolicy, compare_runs
from tracejudge.experiments.dataset import DatasetLike, Row, read_dataset
from tracejudge.experiments.record import AgentScore, RowResult, RunRecord, StoredRun, read_run
from tracejudge.experiments.remote import RunServer, read_any_run, run_address
from tracejudge.experiments.runner import (
    DEFAULT_RUNS,
    ExperimentCriterion,
    Progress,
    run_experiment,
)

__all__ = [
    "DEFAULT_RUNS",
    "AgentScore",
    "Comparison",
    "GatePolicy",
    "Row",
    "RowResult",
    "RunRecord",
    "RunServer",
    "StoredRun",
    "aexperiment",
    "compare_runs",
    "experiment",
    "read_any_run",
    "read_dataset",
    "read_run",
    "run_address",
]


async def aexperiment(
    dataset: DatasetLike,
    task: Callable[..., Any],
    criteria: Sequence[ExperimentCriterion] | ExperimentCriterion,
    *,
    name: str | None = None,
    repeats: int = 1,
    concurrency: int = 8,
    params: Mapping[str, Any] | None = None,
    directory: str | Path | None = None,
    to: str | None = None,
    judge: Any = None,
    settings: Any = None,
    service: Any = None,
    progress: Progress | None = None,
) -> StoredRun:
    """`experiment` for async code (see it)."""
    import dataclasses

    from tracejudge.evaluation import EvaluationSettings, build_service

    owned = service is None
    if service is None:
        chosen = settings if settings is not None else EvaluationSettings()
        if judge is not None:
            chosen = dataclasses.replace(chosen, judge=judge)
        service = build_service(chosen)
    try:
        return await run_experiment(
            dataset,
            task,
            criteria,
            service=service,
            name=name,
            repeats=repeats,
            concurrency=concurrency,
            params=params,
            directory=directory,
            to=to,
            progress=progress,
        )
    finally:
        if owned:
            await service.aclose()


def experiment(
    dataset: DatasetLike,
    task: Callable[..., Any],
    criteria: Sequence[ExperimentCriterion] | ExperimentCriterion,
    *,
    name: str | None = None,
    repeats: int = 1,
    concurrency: int = 8,
    params: Mapping[str, Any] | None = None,
    directory: str | Path | None = None,
    to: str | None = None,
    judge: Any = None,
    settings: Any = None,
    service: Any = None,
    progress: Progress | None = None,
) -> StoredRun:
    """Run `task` on every row of `dataset` and record the run.

    - `dataset`: a `.jsonl` or `.csv` file, or a list of dicts, each row an `input`
      and optionally `expected` (or `expected_output`), `id` and `metadata`.
    - `task`: your agent's function, sync or async, called with a row's input, `repeats`
      times per row, at most `concurrency` at once, each inside an `AgentTracer` named
      after it (initialise tracing for your model client first:
      `ComposoTracer.init(instruments=...)`).
    - `criteria`: checks, judged criteria (text; they need a judge), or functions
      `fn(output, expected)` returning a bool, a score in 0..1 or `(score, explanation)`.
    - `judge` (a spec such as "openai:gpt-4.1-mini", or a judge) or `settings` (an
      `EvaluationSettings`), or a ready `service`; none: the environment's judge.
    - `name`, `params`: recorded with the run, with its git commit and dirty flag, the
      models seen, start and end, and cost.
    - `directory`: where the run is written (default: a new one under `.tracejudge/runs`,
      unless it goes to a server).
    - `to`: a `tracejudge serve` address (`http://host:8000`; its key written into it, or
      TRACEJUDGE_API_KEY): the run is stored there too (only there, without `directory`),
      each row's trace with its scores, tagged `run:ID` in the server's trace list.

    Returns the `StoredRun` (its record, a `RowResult` per row and repeat, its directory,
    and with `to` its page on the server: `url`).
    """
    from tracejudge import _sync

    return _sync.run(
        aexperiment(
            dataset,
            task,
            criteria,
            name=name,
            repeats=repeats,
            concurrency=concurrency,
            params=params,
            directory=directory,
            to=to,
            judge=judge,
            settings=settings,
            service=service,
            progress=progress,
        )
    )
