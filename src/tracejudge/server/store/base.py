"""The store's records: what the server keeps, whatever the database.

The repositories (`tasks`, `traces`, `listing`, `evaluations`, `labels`, `spend`) read and
write these over one dialect core (`_core.SQLCore`): SQLite (the default, one server
process) or PostgreSQL (several replicas sharing one queue). Times are Unix seconds
(floats); JSON columns hold text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tracejudge.models import TaskStatus

__all__ = [
    "AttributionRow",
    "JudgeSpendRow",
    "LabelPage",
    "LabelRow",
    "TaskRow",
    "SpanBatch",
    "SpanEncoding",
    "TraceRow",
    "EvaluationRow",
    "too_large_reason",
    "TraceFilter",
    "TraceOrder",
    "TracePage",
    "OverviewRow",
    "Overview",
    "SORT_KEYS",
    "VERDICTS",
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
    status: TaskStatus = "queued"
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
    #: The resource attributes of the spans (telemetry.sdk.*, service.name, host.*, ...),
    #: kept apart from the tags (what the user set).
    resource: dict[str, str] = field(default_factory=dict)
    #: The earliest span start and the latest span end in the batch (Unix seconds).
    start: float | None = None
    end: float | None = None


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


#: What a stored trace's `verdict` can be: failed (an agent scored below a criterion's bar),
#: passed (something was scored, nothing failed), unscored (scored, but every answer was
#: not applicable or not evaluated; or never to be scored: too_large, unscorable), pending
#: (not scored yet).
VERDICTS = ("failed", "passed", "unscored", "pending")


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
    # What the list shows, computed by the store from the trace and its latest answer per
    # criterion (see `tracejudge.server.store.digest`); read-only for callers.
    end_time: float | None = None
    duration: float | None = None
    agent_count: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    #: Dollars of the agents' model calls whose model the price table knows; None when
    #: it knows none of them.
    cost: float | None = None
    models: list[str] = field(default_factory=list)
    #: The lowest agent score of any criterion (never a mean), whose agent and criterion.
    worst_score: float | None = None
    worst_agent: str | None = None
    worst_criterion: str | None = None
    #: Distinct agent instances below a bar, and (agent instance, criterion) pairs.
    failing_agents: int = 0
    failing_pairs: int = 0
    verdict: str = "pending"
    service: str | None = None
    resource: dict[str, str] = field(default_factory=dict)
    #: What the judge's calls cost for every stored evaluation of the trace, summed
    #: (filled by list/get; None when none has a cost: checks only, or no price).
    judge_cost_usd: float | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class TraceFilter:
    """What `list_traces` keeps: all given conditions hold.

    `agent` is a case-blind prefix of an agent name. `score_below` / `score_above` hold
    the worst score below (strictly) / at or above the number: the worst agent score of the
    trace; with `agent`, that agent's worst score; with `criterion`, that criterion's (both:
    that agent's on that criterion). `since` / `until` bound the start time (Unix
    seconds, until excluded). `q` is a full-text search (words, "quoted phrases",
    prefix*). `tags` are (key, value) pairs, all of which must hold.
    """

    tags: tuple[tuple[str, str], ...] = ()
    agent: str | None = None
    criterion: str | None = None
    score_below: float | None = None
    score_above: float | None = None
    status: str | None = None
    verdict: str | None = None
    service: str | None = None
    since: float | None = None
    until: float | None = None
    q: str | None = None
    #: The session (`session.id` / `gen_ai.conversation.id`) and the user (`user.id` /
    #: `enduser.id`) the trace belongs to.
    session: str | None = None
    user: str | None = None


#: What a list can be sorted by: the name a caller gives, the column it reads.
SORT_KEYS = (
    "start_time",
    "duration",
    "root_agent",
    "agents",
    "model_calls",
    "tokens",
    "cost",
    "worst_score",
    "failing",
    "status",
)


@dataclass(frozen=True)
class TraceOrder:
    """How a list is sorted: one of `SORT_KEYS`, ascending or descending; empty values
    (no cost, not scored) come last either way, and the trace id breaks ties."""

    sort: str = "start_time"
    descending: bool = True


@dataclass
class TracePage:
    """One page of traces in the order asked for; `cursor` reads the next page and
    `previous` the one before (None: there is none). `total` counts every trace the filter
    keeps; `offset` is how many of them come before this page."""

    traces: list[TraceRow]
    cursor: str | None
    total: int = 0
    previous: str | None = None
    offset: int = 0


@dataclass
class OverviewRow:
    """One agent name and criterion over the traces of an overview: how many of its
    instances got a score, how many failed, and the mean, median, min and max score."""

    agent_name: str
    criterion: str
    scored: int
    failing: int
    mean: float | None
    median: float | None
    min: float | None
    max: float | None


@dataclass
class Overview:
    """The batch overview of the traces a filter keeps (at most a limit of them, the latest
    by start time: `traces` says how many it covers)."""

    rows: list[OverviewRow]
    traces: int


@dataclass
class LabelRow:
    """One person's label on one agent instance of a stored trace against one criterion.

    `stance`: "agree" or "disagree" with the judge's (or check's) verdict, or "score" (the
    person's own score). `verdict` / `score`: what the person says (pass/fail from a
    stance, `score` in 0..1 for their own score). `judge_score` and `bar`: the judge's
    score and the bar it was held to when the label was recorded. `id` names the
    (trace, agent instance, criterion, who): recording it again replaces it."""

    id: str
    trace_id: str
    agent: str
    agent_instance_id: str
    criterion: str
    stance: str
    who: str
    created_at: float
    verdict: str | None = None
    score: float | None = None
    judge_score: float | None = None
    bar: float | None = None
    note: str | None = None


@dataclass
class LabelPage:
    """One page of labels, newest first; `cursor` reads the next page (None: last page)."""

    labels: list[LabelRow]
    cursor: str | None


@dataclass
class AttributionRow:
    """A trace's latest attribution made with a judge method (`body`: the
    `tracejudge.models.Attribution` as JSON text)."""

    trace_id: str
    methods: list[str]
    body: str
    created_at: float
