"""Post-hoc scoring of stored traces: ingested ones once complete, any one on request.

A sweeper looks for ingested traces that are complete (root span ended and quiet for
`trace_quiet_seconds`, or quiet for `trace_timeout_seconds` without a root) and
queues a `score_trace` task for each in the same transaction (so replicas never
queue one twice). The task reads the trace's stored span batches (OTLP as it came, in
protobuf or OTLP/JSON) with the converter's reader, in a worker thread, and scores it
against the server's criteria: deterministic checks always, text criteria
when a judge is configured; with `--evaluation-events-endpoint` the scores are then
written back onto the trace (see `writeback`). Re-scoring a stored trace with other
criteria queues the same kind of task. A trace with more spans than `--max-trace-spans`
is not read at all: it is kept as too_large, with the reason.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from tracejudge import checks
from tracejudge.convert import read_otlp_batches, traces_from_records
from tracejudge.errors import BadRequestError
from tracejudge.evaluation import TraceCheck, validate_criteria
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.server.store import (
    EvaluationRow,
    SpanEncoding,
    StoreOutageError,
    TaskRow,
    TraceRow,
    too_large_reason,
)
from tracejudge.server.store.trace_text import read_trace, stored_text
from tracejudge.server.work.context import ServerContext, in_thread
from tracejudge.server.work.rules.apply import (
    BACKFILL,
    RULE_TAG,
    active_rules,
    charge,
    facts_of,
    held_to_bars,
    rule_plan,
    stored_decisions,
)
from tracejudge.server.work.rules.plan import ScoringPlan
from tracejudge.server.work.sessions.judging import queue_for_rules
from tracejudge.server.work.sessions.keys import SessionKeys, session_keys
from tracejudge.server.work.supervise import Beat, retry
from tracejudge.server.work.tasks import Handler, Outcome, describe_error

__all__ = ["TraceSweeper", "handlers", "resolve_criteria", "INGEST", "RESCORE"]

logger = logging.getLogger("tracejudge.server")

#: The `source` of evaluations made when an ingested trace completed (replaced when it is
#: scored again after late spans), and of those asked for later.
INGEST = "ingest"
RESCORE = "rescore"
#: Traces queued per sweep transaction.
_SWEEP_BATCH = 100


def resolve_criteria(texts: Sequence[str], check_names: Sequence[str]) -> list[str | TraceCheck]:
    """Criteria texts and built-in checks by name, validated; BadRequestError names the
    unknown check and lists the known ones."""
    known = {c.name: c for c in checks.ALL}
    resolved: list[str | TraceCheck] = []
    if texts:
        validated, _ = validate_criteria(list(texts))
        resolved.extend(validated)
    for name in check_names:
        if name not in known:
            raise BadRequestError(
                f"checks: unknown check {name!r}; the checks are {', '.join(known)}"
            )
        resolved.append(known[name])
    if not resolved:
        raise BadRequestError("give at least one criterion or check to score the trace with")
    return resolved


def _criteria_payload(criteria: Sequence[str | TraceCheck]) -> dict[str, list[str]]:
    return {
        "criteria": [c for c in criteria if isinstance(c, str)],
        "checks": [c.name for c in criteria if not isinstance(c, str)],
    }


def score_task(trace_id: str, source: str, criteria: Sequence[str | TraceCheck] | None) -> TaskRow:
    payload: dict[str, Any] = {"trace_id": trace_id, "source": source}
    if criteria is not None:
        payload.update(_criteria_payload(criteria))
    return TaskRow(id=str(uuid.uuid4()), kind="score_trace", payload=json.dumps(payload))


def _converted(
    batches: list[tuple[SpanEncoding, bytes]],
) -> tuple[MultiAgentTrace | None, str | None, SessionKeys]:
    """The trace from its span batches, or why not, and the session and user its spans
    name. The protobuf batches, one after the other, are one protobuf request (repeated
    fields concatenate); the OTLP/JSON ones, one per line, are OTLP/JSON lines: the
    converter reads each as it reads any OTLP."""
    records: list[Any] = []
    events: list[Any] = []
    warnings: list[str] = []
    for encoding, separator in (("protobuf", b""), ("json", b"\n")):
        data = separator.join(payload for kind, payload in batches if kind == encoding)
        if not data:
            continue
        for batch in read_otlp_batches(io.BytesIO(data)):
            records.extend(batch.spans)
            events.extend(batch.events)
            warnings.extend(batch.warnings)
    keys = session_keys(r.attributes for r in records)
    traces = traces_from_records(records, events, warnings=warnings)
    scorable = [t for t in traces if t.has_llm_interactions]
    if not scorable:
        reason = "; ".join(traces.warnings[:3]) or "no agent or model call in its spans"
        return None, f"not scored: no LLM interactions in this trace ({reason})", keys
    # One trace id gives one trace; keep the largest should the converter split it.
    return max(scorable, key=lambda t: len(t.agent_instance_by_id)), None, keys


def _summary(
    row: TraceRow, trace: MultiAgentTrace | None, error: str | None, spans: int
) -> TraceRow:
    if trace is None:
        return TraceRow(
            trace_id=row.trace_id,
            source=row.source,
            status="unscorable",
            first_seen=row.first_seen,
            last_span_at=row.last_span_at,
            span_count=spans,
            error=error,
        )
    starts = [
        i.start_time
        for agent in trace.iter_agents()
        for i in agent.llm_interactions
        if i.start_time is not None
    ]
    return TraceRow(
        trace_id=row.trace_id,
        source=row.source,
        status="scored",
        first_seen=row.first_seen,
        last_span_at=row.last_span_at,
        span_count=spans,
        start_time=min(starts) if starts else None,
        root_agent=trace.root.name,
        agents=[a.name for a in trace.iter_agents()],
        trace_json=stored_text(trace),
    )


def _read_stored(
    row: TraceRow, batches: list[tuple[SpanEncoding, bytes]], spans: int
) -> tuple[MultiAgentTrace | None, TraceRow, SessionKeys]:
    """The converted trace (None when it holds no model call), its summary row and its
    session, made in a worker thread (converting and encoding a large trace takes
    seconds)."""
    trace, error, keys = _converted(batches)
    if not keys:
        keys = session_keys((), row.resource)
    return trace, _summary(row, trace, error, spans), keys


def _too_large(row: TraceRow, max_trace_spans: int) -> TraceRow:
    return TraceRow(
        trace_id=row.trace_id,
        source=row.source,
        status="too_large",
        first_seen=row.first_seen,
        last_span_at=row.last_span_at,
        span_count=row.span_count,
        error=too_large_reason(max_trace_spans),
    )


def handlers(context: ServerContext) -> dict[str, Handler]:
    async def score_trace(payload: dict[str, Any]) -> Outcome:
        trace_id = str(payload["trace_id"])
        source = str(payload.get("source", INGEST))
        row = await in_thread(context.store.traces.get, trace_id)
        if row is None:
            raise BadRequestError(f"trace {trace_id!r} is not stored here")
        summary: TraceRow | None = None
        limit = context.config.max_trace_spans
        trace: MultiAgentTrace | None
        if source == INGEST and row.source == "otlp":
            if row.span_count > limit:  # the limit was lowered since its spans came
                summary = _too_large(row, limit)
                return Outcome(
                    {"trace_id": trace_id, "evaluations": [], "error": summary.error},
                    trace=summary,
                )
            batches, spans = await in_thread(context.store.traces.span_batches, trace_id)
            trace, read, keys = await context.offload.run(_read_stored, row, batches, spans)
            summary = read
            if keys:
                await in_thread(
                    context.store.sessions.link,
                    trace_id,
                    keys.session_id,
                    keys.user_id,
                    read.start_time if read.start_time is not None else row.start_time,
                )
            if trace is None:
                return Outcome(
                    {"trace_id": trace_id, "evaluations": [], "error": read.error}, trace=read
                )
        elif row.trace_json is not None:
            trace = await context.offload.run(read_trace, row.trace_json)
        else:
            raise BadRequestError(
                f"trace {trace_id!r} has no converted trace to score ({row.error or row.status})"
            )
        plan: ScoringPlan | None = None
        if "criteria" in payload or "checks" in payload:
            criteria = resolve_criteria(payload.get("criteria", []), payload.get("checks", []))
        elif source in (INGEST, BACKFILL):
            only = str(payload["rule"]) if source == BACKFILL else None
            plan = await in_thread(rule_plan, context.store, row, trace, only)
            criteria = list(context.criteria) if plan is None else plan.criteria
        else:
            criteria = list(context.criteria)
        try:
            # a rule's plan may hold nothing to score (a backfill whose rule is gone)
            responses = await context.service.score_trace(trace, criteria) if criteria else []
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if summary is None or isinstance(error, StoreOutageError):
                raise  # a store outage: the task is queued again, its trace not failed
            # The trace was converted: keep it, readable and re-scorable, and say why it
            # has no scores, rather than leave it queued with nothing to show.
            failed = describe_error(error)
            summary.status, summary.error = "failed", failed
            return Outcome(None, trace=summary, failed=failed)
        after = None
        if plan is not None:
            responses = held_to_bars(responses, plan.bars)
            after = await _record_rules(context, row, trace, plan, responses)
        if context.writeback is not None:
            await in_thread(context.writeback.emit, trace, responses)
        owners = plan.owners if plan is not None else {}
        rows, result = await context.offload.run(
            _evaluation_rows, trace_id, source, responses, owners
        )
        return Outcome(
            result,
            evaluations=rows,
            trace=summary,
            replace_source=INGEST if source == INGEST else None,
            after=after,
        )

    return {"score_trace": score_trace}


async def _record_rules(
    context: ServerContext,
    row: TraceRow,
    trace: MultiAgentTrace,
    plan: ScoringPlan,
    responses: Sequence[MultiAgentTraceResponse],
) -> Callable[[], Awaitable[None]] | None:
    """Store what each rule decided and what its judge spent; the follow-up that queues
    the session criteria of the rules that keep the trace (see `sessions.judging`), run
    once the trace is stored so that the session's judgement reads it."""
    store = context.store
    await in_thread(store.decisions.decide, stored_decisions(row.trace_id, plan.decisions))
    await in_thread(charge, store, plan, responses)
    session_id, _ = await in_thread(store.sessions.of_trace, row.trace_id)
    if session_id is None:
        return None
    facts = facts_of(row, trace)

    async def judge_session() -> None:
        rules = await in_thread(active_rules, store)
        await queue_for_rules(context, facts, session_id, rules)

    return judge_session


def _evaluation_rows(
    trace_id: str,
    source: str,
    responses: Sequence[MultiAgentTraceResponse],
    owners: Mapping[str, str] | None = None,
) -> tuple[list[EvaluationRow], dict[str, Any]]:
    """The rows to store and the task's result (encoded off the event loop: the answer
    for a trace of thousands of agents is large). `owners`: the rule that asked for each
    judged criterion, kept as the answer's `RULE_TAG` tag (the trends count per rule)."""
    owners = owners or {}
    now = time.time()
    rows = [
        EvaluationRow(
            id=str(uuid.uuid4()),
            kind="trace",
            criterion=r.criterion,
            response=r.model_dump_json(),
            overall_score=r.overall_score,
            created_at=now,
            trace_id=trace_id,
            source=source,
            judge_cost_usd=r.usage.cost_usd if r.usage is not None else None,
            tags={RULE_TAG: owners[r.criterion]} if r.criterion in owners else {},
        )
        for r in responses
    ]
    result = {"trace_id": trace_id, "evaluations": [r.model_dump(mode="json") for r in responses]}
    return rows, result


class TraceSweeper:
    """Queues the ingested traces that are complete, every `poll_seconds` (run by the
    server's supervisor: a store that fails is retried with back-off)."""

    def __init__(self, context: ServerContext) -> None:
        self.context = context

    async def sweep(self) -> list[str]:
        config = self.context.config
        queued = await in_thread(
            self.context.store.traces.queue_complete,
            config.trace_quiet_seconds,
            config.trace_timeout_seconds,
            _SWEEP_BATCH,
            lambda trace_id: score_task(trace_id, INGEST, None),
        )
        if queued:
            self.context.runner.wake()
        return queued

    async def run(self, beat: Beat) -> None:
        while True:
            while len(await retry(beat, "queue complete traces", self.sweep)) == _SWEEP_BATCH:
                pass
            await beat.wait(self.context.config.poll_seconds)
