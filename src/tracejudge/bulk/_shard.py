"""One shard of a bulk run, scored on one worker: its traces read from their files,
converted and scored through the evaluation service, and written as Parquet.

Memory holds one shard's traces (`traces_per_shard`), never the input. The shard's
files are written under deterministic names and its marker last, so a shard that died
half-way is scored again from the start and overwrites what it left, and a finished one
is never paid for twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tracejudge.bulk._plan import Shard, document_key

__all__ = ["ShardResult", "criterion_key", "score_shard"]

#: Where a run keeps its manifest and the markers of its finished shards, under `out`.
STATE = "_tracejudge"


@dataclass
class ShardResult:
    """What one shard did, summed up by the driver."""

    number: int
    traces: int = 0
    scored: int = 0
    without_calls: int = 0
    rows: int = 0
    failed: list[str] = field(default_factory=list)
    judge_failures: int = 0
    cost_usd: float = 0.0
    tokens: int = 0
    #: The worker process's peak resident memory so far, in KiB (Linux's ru_maxrss).
    peak_rss_kib: int = 0
    #: criterion -> [lines, sum of overall scores, lines with a score, traces failing]
    criteria: dict[str, list[float]] = field(default_factory=dict)

    def as_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ShardResult:
        return cls(**json.loads(text))


def criterion_key(criterion: str) -> str:
    """A criterion as a partition directory name: a check's name as it is, a sentence as
    its first words and a short hash (`reward-agents-that-stay-on-task-3fa2b1c0`)."""
    if re.fullmatch(r"[a-z_][a-z0-9_]*", criterion):
        return criterion
    words = re.sub(r"[^a-z0-9]+", "-", criterion.lower()).strip("-")[:48].strip("-")
    return f"{words}-{hashlib.sha1(criterion.encode()).hexdigest()[:8]}"


def _day(start_ns: int | None) -> str:
    if start_ns is None:
        return "unknown"
    return datetime.fromtimestamp(start_ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d")


def _row(line: dict[str, Any], day: str) -> dict[str, Any]:
    usage = line.get("usage") or {}
    worst = line.get("worst_agent") or {}
    return {
        "trace_id": str(line["trace_id"]),
        "source": line.get("source"),
        "criterion": line["criterion"],
        "overall_score": line.get("overall_score"),
        "fail_under": line.get("fail_under"),
        "failing_agents": int(line.get("failing_agents") or 0),
        "worst_agent": worst.get("agent_name") or worst.get("name"),
        "worst_score": worst.get("score"),
        "explanation": line.get("explanation"),
        "cost_usd": usage.get("cost_usd"),
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "agents": json.dumps(line.get("agents") or {}),
        "date": day,
        "criterion_key": criterion_key(line["criterion"]),
    }


def _collect(shard: Shard) -> dict[str, tuple[list[Any], list[Any], Any]]:
    """key -> (span records, log-record events, MultiAgentTrace document or None)."""
    from tracejudge.bulk._files import open_file
    from tracejudge.convert import read_otlp_batches

    found: dict[str, tuple[list[Any], list[Any], Any]] = {}
    for uri, wanted_ids in shard.files.items():
        wanted = set(wanted_ids)
        with open_file(uri) as stream:
            for batch in read_otlp_batches(stream):
                for span in batch.spans:
                    if span.trace_id in wanted:
                        found.setdefault(shard.keys[span.trace_id], ([], [], None))[0].append(span)
                for event in batch.events:
                    if event[0] in wanted:
                        found.setdefault(shard.keys[event[0]], ([], [], None))[1].append(event)
                for where, document in batch.documents:
                    key = document_key(uri, where)
                    if key in shard.traces:
                        found[key] = ([], [], document)
    return found


def score_shard(
    shard: Shard,
    criteria: list[Any],
    settings: Any,
    gate: Any,
    out: str,
    traces_at_once: int,
) -> ShardResult:
    """Score `shard` (see the module's docstring); returns what it did."""
    result = asyncio.run(_score(shard, criteria, settings, gate, traces_at_once))
    rows, shard_result = result
    _write(out, shard.number, rows)
    _write_marker(out, shard_result)
    return shard_result


async def _score(
    shard: Shard, criteria: list[Any], settings: Any, gate: Any, traces_at_once: int
) -> tuple[list[dict[str, Any]], ShardResult]:
    from tracejudge.bulk._gate import ClusterBudget, GatedJudge
    from tracejudge.convert import ConversionMemo, traces_from_records
    from tracejudge.errors import ComposoError
    from tracejudge.evaluation import build_judge, build_service
    from tracejudge.models import MultiAgentTrace
    from tracejudge.report import result_lines

    judge = build_judge(settings) if settings.judge is not None else None
    service = build_service(
        settings,
        judge=GatedJudge(judge, gate) if judge is not None else None,
        spend_limits=[ClusterBudget(gate)],
        keep_judge_failures=True,
    )
    memo = ConversionMemo()
    result = ShardResult(shard.number, traces=len(shard.traces))
    rows: list[dict[str, Any]] = []
    slots = asyncio.Semaphore(max(1, traces_at_once))

    async def one(key: str, spans: list[Any], events: list[Any], document: Any) -> None:
        source, start_ns = shard.traces[key]
        if document is not None:
            traces = [MultiAgentTrace.model_validate(document)]
        else:
            traces = traces_from_records(spans, events, memo=memo)
        for trace in traces:
            if not trace.has_llm_interactions:
                result.without_calls += 1
                continue
            async with slots:
                try:
                    responses = await service.score_trace(trace, criteria)
                except ComposoError as error:
                    result.failed.append(f"trace {key}: {error}")
                    continue
            for line in result_lines(key, trace, responses, source=source):
                rows.append(_row(line, _day(start_ns)))
                _count(result, line)
            result.scored += 1
        await gate.traces_scored.remote(1)

    try:
        found = _collect(shard)
        await asyncio.gather(*(one(key, *parts) for key, parts in found.items()))
    finally:
        await service.aclose()
    result.judge_failures = service.judge_failures
    result.cost_usd = service.spend.total.cost_usd or 0.0
    result.tokens = service.spend.total.total_tokens
    result.rows = len(rows)
    result.peak_rss_kib = _peak_rss_kib()
    rows.sort(key=lambda row: (row["trace_id"], row["criterion"]))
    return rows, result


def _peak_rss_kib() -> int:
    try:
        import resource
    except ImportError:  # not on Windows
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _count(result: ShardResult, line: dict[str, Any]) -> None:
    tally = result.criteria.setdefault(line["criterion"], [0, 0.0, 0, 0])
    tally[0] += 1
    if isinstance(line.get("overall_score"), (int, float)):
        tally[1] += float(line["overall_score"])
        tally[2] += 1
    if line.get("failing_agents"):
        tally[3] += 1


def _write(out: str, number: int, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tracejudge.bulk._files import filesystem

    fs, root = filesystem(out)
    table = pa.Table.from_pylist(rows, schema=SCHEMA())
    pq.write_to_dataset(
        table,
        root_path=root,
        filesystem=fs,
        partition_cols=["date", "criterion_key"],
        basename_template=f"shard-{number:05d}-{{i}}.parquet",
        existing_data_behavior="overwrite_or_ignore",
    )


def _write_marker(out: str, result: ShardResult) -> None:
    from tracejudge.bulk._files import write_text

    write_text(out, f"{STATE}/done/shard-{result.number:05d}.json", result.as_json())


def SCHEMA() -> Any:  # noqa: N802 - a constant built on first use (pyarrow is imported late)
    import pyarrow as pa

    return pa.schema(
        [
            ("trace_id", pa.string()),
            ("source", pa.string()),
            ("criterion", pa.string()),
            ("overall_score", pa.float64()),
            ("fail_under", pa.float64()),
            ("failing_agents", pa.int64()),
            ("worst_agent", pa.string()),
            ("worst_score", pa.float64()),
            ("explanation", pa.string()),
            ("cost_usd", pa.float64()),
            ("input_tokens", pa.int64()),
            ("output_tokens", pa.int64()),
            ("agents", pa.string()),
            ("date", pa.string()),
            ("criterion_key", pa.string()),
        ]
    )
