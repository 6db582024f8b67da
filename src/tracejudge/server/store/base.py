"""The store's interface and its records: what the server keeps, whatever the database.

Two implementations share one SQL core (`_sql.SQLStore`): SQLite (the default, one
server process) and PostgreSQL (several replicas sharing one queue). Every method is
synchronous and runs one transaction; the server calls them from worker threads.
Times are Unix seconds (floats); JSON columns hold text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = [
    "JudgeSpendRow",
    "TaskRow",
    "SpanBatch",
    "SpanEncoding",
    "TraceRow",
    "EvaluationRow",
    "too_large_reason",
    "TraceFilter",
    "TracePage",
    "Store",
    "TaskKind",
    "TaskState",
]

#: What a task does: score a chat (`reward`), a posted trace (`trace`), a stored trace
#: (`score_trace`: convert the ingested spans when needed, then score).
TaskKind = Literal["reward", "trace", "score_trace"]
#: A task's state, as `GET /api/v1/tasks/{id}` reports it.
TaskState = Literal["queued", "running", "done", "failed"]


@dataclass
class TaskRow:
    """One background task. `payload`/`result` are JSON text; `attempts` counts claims."""

    id: str
    kind: str
    payload: str
    status: str = "queued"
    result: str | None = None
    error: str | None = None
    attempts: int = 0
    worker: str | None = None
    lease_until: float | None = None
    created_at: float = 0.0
    updated_at: float = 0.0


#: How a span batch's bytes are encoded: a protobuf `ExportTraceServiceRequest`, or
#: OTLP/JSON (UTF-8).
SpanEncoding = Literal["protobuf", "json"]


@dataclass
class SpanBatch:
    """The spans of one trace from one OTLP request, as an OTLP request of their own in
    the request's encoding (what the converter reads back)."""

    trace_id: str
    encoding: SpanEncoding
    payload: bytes
    span_count: int
    has_root: bool
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class EvaluationRow:
    """One criterion's answer: a `ScoreResponse` (kind `reward`) or a
    `MultiAgentTraceResponse` (kind `trace`) as JSON text."""

    id: str
    kind: str
    criterion: str
    response: str
    overall_score: float | None
    created_at: float
    trace_id: str | None = None
    source: str = "api"
    tags: dict[str, str] = field(default_factory=dict)
    #: What the judge's calls for this answer cost (None: checks only, or no price).
    judge_cost_usd: float | None = None


@dataclass
class JudgeSpendRow:
    """What the judge spent on one day (UTC), in all or on one criterion."""

    cost_usd: float = 0.0
    tokens: int = 0
    calls: int = 0


#: What a stored trace's `status` can be (see `TraceRow`).
TRACE_STATUSES = ("open", "queued", "scored", "unscorable", "failed", "too_large")


def too_large_reason(max_trace_spans: int) -> str:
    """The `error` of a too_large trace."""
    return (
        f"not scored: the trace has more than {max_trace_spans:,} spans, the most this "
        "server takes in one trace (--max-trace-spans); its spans are not kept. Raise the "
        "limit to score traces this large, or send the work as several traces"
    )


@dataclass
class TraceRow:
    """A stored trace. `status`: open (spans arriving), queued (complete, to be scored),
    scored, unscorable (no model call in it), failed (converted, but scoring failed:
    `error` says why; re-score it), too_large (more spans than the server takes in one
    trace: its spans are not kept and it is not scored; `error` says so)."""

    trace_id: str
    source: str
    status: str
    first_seen: float
    last_span_at: float
    span_count: int = 0
    root_ended: bool = False
    start_time: float | None = None
    root_agent: str | None = None
    agents: list[str] = field(default_factory=list)
    trace_json: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    #: criterion -> overall score of its latest evaluation (filled by list/get).
    scores: dict[str, float | None] = field(default_factory=dict)
    #: What the judge's calls cost for every stored evaluation of the trace, summed
    #: (filled by list/get; None when none has a cost: checks only, or no price).
    judge_cost_usd: float | None = None


@dataclass
class TraceFilter:
    """What `list_traces` keeps: all given conditions hold."""

    tag: tuple[str, str] | None = None
    agent: str | None = None
    score_below: float | None = None
    status: str | None = None
    since: float | None = None
    until: float | None = None


@dataclass
class TracePage:
    """One page of traces, newest first; `cursor` reads the next page (None: last page)."""

    traces: list[TraceRow]
    cursor: str | None


class Store(Protocol):
    """What the server needs from a database. Each call is one transaction."""

    #: True when only one server process uses the database (SQLite): at start, tasks left
    #: running by a killed process can be taken back at once instead of after their lease.
    single_process: bool

    def migrate(self) -> int:
        """Apply the schema migrations not applied yet; return the schema version."""
        ...

    def close(self) -> None: ...

    def is_transient(self, error: BaseException) -> bool:
        """Whether `error` means the database is busy or unreachable for now (a retry may
        succeed), rather than that it refused what it was given."""
        ...

    # tasks
    def enqueue(self, task: TaskRow) -> None: ...

    def claim_tasks(self, worker: str, limit: int, lease_seconds: float) -> list[TaskRow]:
        """Take up to `limit` pending tasks, or running ones whose lease expired, oldest
        first; each becomes running, owned by `worker` until the lease ends."""
        ...

    def extend_leases(self, worker: str, task_ids: Sequence[str], lease_seconds: float) -> None: ...

    def release_orphans(self, max_attempts: int) -> int:
        """Give back every running task (its process is gone): pending again, or failed
        when it was already tried `max_attempts` times. Single-process stores only."""
        ...

    def finish_task(
        self,
        task_id: str,
        worker: str,
        *,
        status: str,
        result: str | None = None,
        error: str | None = None,
        evaluations: Sequence[EvaluationRow] = (),
        trace: TraceRow | None = None,
        replace_source: str | None = None,
    ) -> bool:
        """Record the outcome (and the evaluations, and the converted trace) if `worker`
        still owns the task; False when it does not (its lease was taken over). A failed
        ingest `score_trace` task fails its trace too, when the trace is still queued."""
        ...

    def get_task(self, task_id: str) -> TaskRow | None: ...

    def prune(self, older_than: float) -> int:
        """Delete finished tasks last updated before `older_than`."""
        ...

    def queue_stats(self) -> tuple[int, float | None]:
        """How many tasks are queued, and when the oldest of them was created."""
        ...

    def delete_before(self, cutoff: float) -> dict[str, int]:
        """Delete up to a batch of traces last active before `cutoff` (not those queued for
        scoring), with their span batches, tags and evaluations, and evaluations created
        before it. Returns the rows deleted per table; call again while any is non-zero."""
        ...

    # traces
    def add_spans(self, batches: Sequence[SpanBatch], max_trace_spans: int | None = None) -> None:
        """Store span batches; their traces are (re)opened and their quiet period restarts.
        A trace whose span count passes `max_trace_spans` becomes too_large: its batches
        are deleted, later ones are counted and not kept."""
        ...

    def queue_complete_traces(
        self, quiet_seconds: float, timeout_seconds: float, limit: int, make_task: Any
    ) -> list[str]:
        """Mark traces complete (root ended and quiet for `quiet_seconds`, or quiet for
        `timeout_seconds` without a root) and enqueue `make_task(trace_id)` for each, in the
        same transaction. Returns their ids."""
        ...

    def span_batches(self, trace_id: str) -> tuple[list[tuple[SpanEncoding, bytes]], int]:
        """The trace's span batches in arrival order, each (encoding, OTLP bytes), and its
        span count."""
        ...

    def save_trace(self, trace: TraceRow, evaluations: Sequence[EvaluationRow] = ()) -> None:
        """Insert or replace a trace posted for evaluation, with its evaluations."""
        ...

    def save_evaluations(self, evaluations: Sequence[EvaluationRow]) -> None: ...

    def get_trace(self, trace_id: str) -> TraceRow | None: ...

    def list_traces(self, where: TraceFilter, limit: int, cursor: str | None) -> TracePage: ...

    def evaluations_of(self, trace_id: str) -> list[EvaluationRow]: ...

    def counts(self) -> dict[str, Any]:
        """Rows per table and tasks per status (for /health and the benchmark)."""
        ...

    # the judge's spending (the daily budgets)
    def add_judge_spend(
        self, day: str, criterion: str, cost_usd: float, tokens: int, calls: int
    ) -> None:
        """Add one judgement's cost to the day's total and to its criterion's, at once."""
        ...

    def judge_spend(self, day: str, criterion: str) -> tuple[JudgeSpendRow, JudgeSpendRow]:
        """What the judge spent on `day`: in all, and on `criterion`."""
        ...
