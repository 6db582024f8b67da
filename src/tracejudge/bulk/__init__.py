"""Scoring archives of OTLP files on a Ray cluster (`pip install 'tracejudge[ray]'`).

`score_archive(inputs, criteria, out, address=...)` is `tracejudge score` for months of
Collector files: it lists the inputs (local paths, directories, globs, `file://`,
`s3://`, `gs://` and fsspec URIs), indexes every file's trace ids on the cluster (a trace
may be split over several files), deals the traces into shards by a hash of their id,
and scores each shard on a worker with the same evaluation service as everywhere else.
Results are Parquet under `out`, partitioned by the trace's day and the criterion
(`date=2026-11-03/criterion_key=final_answer/shard-00012-0.parquet`: DuckDB, pandas and
Spark read it as it is). One Ray actor holds the judge's calls in flight and the run's
budget for the whole cluster. A run that stopped resumes: the shards it finished are
skipped, never paid for twice.

The judge's key is read from each worker's environment (as `OPENAI_API_KEY` is
everywhere): it is never sent through Ray. Nothing outside this package imports Ray.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.bulk._files import list_files, listed, read_text, write_text
from tracejudge.bulk._gate import Gate
from tracejudge.bulk._plan import index_file, plan_shards
from tracejudge.bulk._shard import STATE, ShardResult, criterion_key, score_shard
from tracejudge.errors import ConfigurationError, MissingDependencyError

__all__ = ["BulkResult", "criterion_key", "score_archive"]

logger = logging.getLogger("tracejudge.bulk")


@dataclass
class BulkResult:
    """What a bulk run did."""

    out: str
    files: int = 0
    traces: int = 0
    shards: int = 0
    resumed_shards: int = 0
    scored: int = 0
    without_calls: int = 0
    rows: int = 0
    failed: list[str] = field(default_factory=list)
    judge_failures: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    #: criterion -> (result lines, mean overall score or None, traces with a failing agent)
    criteria: dict[str, tuple[int, float | None, int]] = field(default_factory=dict)
    #: (trace id, its files) of every trace whose spans were split over several files
    shared: list[tuple[str, list[str]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The most judge calls the gate saw in flight at once, over the whole cluster.
    most_in_flight: int = 0
    #: The largest peak resident memory of a worker process, in KiB.
    worker_peak_rss_kib: int = 0
    seconds: float = 0.0
    #: Of `seconds`, those spent scoring the shards (after listing and indexing).
    scoring_seconds: float = 0.0


def _criteria_fingerprint(criteria: Sequence[Any]) -> list[str]:
    return [
        c if isinstance(c, str) else str(getattr(c, "name", type(c).__name__)) for c in criteria
    ]


def score_archive(
    inputs: Sequence[str],
    criteria: Sequence[Any],
    out: str,
    *,
    address: str | None = None,
    settings: Any = None,
    traces_per_shard: int = 200,
    traces_at_once: int = 8,
    progress: Callable[[int, int], None] | None = None,
) -> BulkResult:
    """Score every trace of `inputs` with `criteria` on a Ray cluster; write Parquet under
    `out` (a directory path or URI). See the module's docstring.

    - `address`: the cluster (`"127.0.0.1:6379"`, `"ray://host:10001"`, `"auto"`); None:
      `RAY_ADDRESS`, else a cluster started for this run on this machine.
    - `settings`: an `EvaluationSettings` (the judge, its timeout and concurrency,
      `max_judge_cost` / `max_judge_tokens` for the whole run, prices); None: checks and
      the environment's judge. `settings.http.max_concurrency` bounds the judge's calls in
      flight across the cluster.
    - `traces_per_shard`: the traces a worker holds and scores as one unit (its memory is
      that many traces, never the input); `traces_at_once`: traces a worker scores at once.
    - `progress(scored, found)` is called as traces are scored.

    Raises `ConfigurationError` for a bad input, a judge key given in `settings` (give it
    in the workers' environment), or an `out` that holds a different run.
    """
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("ray", "ray", "scoring on a Ray cluster") from None
    from tracejudge.errors import BadRequestError
    from tracejudge.evaluation import EvaluationSettings, validate_criteria

    started = time.monotonic()
    settings = settings if settings is not None else EvaluationSettings()
    if settings.api_key is not None:
        raise ConfigurationError(
            "settings.api_key: a judge key is never sent through Ray; set the provider's "
            "variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...) in the workers' environment"
        )
    try:
        checked = validate_criteria(list(criteria))[0]
    except BadRequestError as error:
        raise ConfigurationError(f"criteria: {error}") from None
    try:
        files = list_files(inputs)
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    if not ray.is_initialized():
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    index = ray.remote(num_cpus=1)(index_file)
    plan = plan_shards(ray.get([index.remote(uri) for uri in files]), traces_per_shard)
    result = BulkResult(out, files=len(files), traces=plan.traces, shards=len(plan.shards))
    result.shared, result.warnings = plan.shared, plan.warnings
    fingerprint = plan.fingerprint(_criteria_fingerprint(checked))
    manifest = read_text(out, f"{STATE}/run.json")
    if manifest is not None and manifest.strip() != fingerprint:
        raise ConfigurationError(
            f"{out} holds the results of another run (other inputs or criteria): give a new "
            "directory, or the same inputs and criteria to resume it"
        )
    write_text(out, f"{STATE}/run.json", fingerprint)
    finished = [
        ShardResult.from_json(read_text(out, f"{STATE}/done/{name}") or "{}")
        for name in listed(out, f"{STATE}/done")
    ]
    done = {r.number for r in finished}
    result.resumed_shards = len(done)
    gate: Any = (
        ray.remote(Gate)
        .options(num_cpus=0, max_concurrency=10_000)
        .remote(
            settings.http.max_concurrency,
            settings.max_judge_cost,
            settings.max_judge_tokens,
            spent_usd=sum(r.cost_usd for r in finished),
            spent_tokens=sum(r.tokens for r in finished),
        )
    )
    # each worker's own caps are the gate's: the run's budget is counted once, there
    shipped = dataclasses.replace(settings, max_judge_cost=None, max_judge_tokens=None)
    task = ray.remote(num_cpus=1, max_retries=2)(score_shard)
    pending = {
        task.remote(shard, checked, shipped, gate, out, traces_at_once): shard.number
        for shard in plan.shards
        if shard.number not in done
    }
    already = sum(r.scored + r.without_calls for r in finished)
    scoring_started = time.monotonic()
    results = list(finished)
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
        for ref in ready:
            number = pending.pop(ref)
            try:
                results.append(ray.get(ref))
            except Exception as error:  # a shard that failed for good: the rest go on
                result.failed.append(f"shard {number}: {_first_line(error)}")
        if progress is not None:
            state: dict[str, Any] = ray.get(gate.state.remote())
            progress(already + int(state["scored"]), plan.traces)
    result.scoring_seconds = time.monotonic() - scoring_started
    final: dict[str, Any] = ray.get(gate.state.remote())
    result.most_in_flight = int(final["most_in_flight"])
    _sum(result, results)
    result.seconds = time.monotonic() - started
    return result


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[-1] if text else type(error).__name__


def _sum(result: BulkResult, shards: Sequence[ShardResult]) -> None:
    tallies: dict[str, list[float]] = {}
    for shard in shards:
        result.scored += shard.scored
        result.without_calls += shard.without_calls
        result.rows += shard.rows
        result.failed.extend(shard.failed)
        result.judge_failures += shard.judge_failures
        result.cost_usd += shard.cost_usd
        result.tokens += shard.tokens
        result.worker_peak_rss_kib = max(result.worker_peak_rss_kib, shard.peak_rss_kib)
        for criterion, (lines, total, with_score, failing) in shard.criteria.items():
            tally = tallies.setdefault(criterion, [0, 0.0, 0, 0])
            for i, value in enumerate((lines, total, with_score, failing)):
                tally[i] += value
    result.criteria = {
        c: (int(t[0]), (t[1] / t[2]) if t[2] else None, int(t[3])) for c, t in tallies.items()
    }
