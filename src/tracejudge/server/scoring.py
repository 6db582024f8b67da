"""Post-hoc scoring of stored traces: ingested ones once complete, any one on request.

A sweeper looks for ingested traces that are complete (root span ended and quiet for
`trace_quiet_seconds`, or quiet for `trace_timeout_seconds` without a root) and
queues a `score_trace` task for each in the same transaction (so replicas never
queue one twice). The task converts the trace's spans with the shared converter and
scores it against the server's criteria: deterministic checks always, text criteria
when a judge is configured; with `--evaluation-events-endpoint` the scores are then
written back onto the trace (see `writeback`). Re-scoring a stored trace with other
criteria queues the same kind of task.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from tracejudge import checks
from tracejudge.convert import traces_from_otlp
from tracejudge.errors import BadRequestError
from tracejudge.evaluation import TraceCheck, validate_criteria
from tracejudge.models import MultiAgentTrace
from tracejudge.server.context import ServerContext, in_thread
from tracejudge.server.store import EvaluationRow, TaskRow, TraceRow
from tracejudge.server.tasks import Handler, Outcome, describe_error

__all__ = ["TraceSweeper", "handlers", "resolve_criteria", "INGEST", "RESCORE"]

logger = logging.getLogger("tracejudge.server")

#: The `source` of evaluations made when an ingested trace completed (replaced when it is
#: scored again after late spans), and of those asked for later.
INGEST = "ingest"
RESCORE = "rescore"


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


def _converted(trace_id: str, payloads: list[str]) -> tuple[MultiAgentTrace | None, str | None]:
    """The trace from its span batches (one OTLP/JSON request per line), or why not."""
    traces = traces_from_otlp("\n".join(payloads))
    scorable = [t for t in traces if t.has_llm_interactions]
    if not scorable:
        reason = "; ".join(traces.warnings[:3]) or "no agent or model call in its spans"
        return None, f"not scored: no LLM interactions in this trace ({reason})"
    # One trace id gives one trace; keep the largest should the converter split it.
    return max(scorable, key=lambda t: len(t.agent_instance_by_id)), None


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
        trace_json=trace.to_json(),
    )


def handlers(context: ServerContext) -> dict[str, Handler]:
    async def score_trace(payload: dict[str, Any]) -> Outcome:
        trace_id = str(payload["trace_id"])
        source = str(payload.get("source", INGEST))
        row = await in_thread(context.store.get_trace, trace_id)
        if row is None:
            raise BadRequestError(f"trace {trace_id!r} is not stored here")
        summary: TraceRow | None = None
        if source == INGEST and row.source == "otlp":
            payloads, spans = await in_thread(context.store.span_payloads, trace_id)
            trace, error = _converted(trace_id, payloads)
            summary = _summary(row, trace, error, spans)
            if trace is None:
                return Outcome(
                    {"trace_id": trace_id, "evaluations": [], "error": error}, trace=summary
                )
        elif row.trace_json is not None:
            trace = MultiAgentTrace.from_json(row.trace_json)
        else:
            raise BadRequestError(
                f"trace {trace_id!r} has no converted trace to score ({row.error or row.status})"
            )
        if "criteria" in payload or "checks" in payload:
            criteria = resolve_criteria(payload.get("criteria", []), payload.get("checks", []))
        else:
            criteria = list(context.criteria)
        try:
            responses = await context.service.score_trace(trace, criteria)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if summary is None:
                raise
            # The trace was converted: keep it, readable and re-scorable, and say why it
            # has no scores, rather than leave it queued with nothing to show.
            failed = describe_error(error)
            summary.status, summary.error = "failed", failed
            return Outcome(None, trace=summary, failed=failed)
        if context.writeback is not None:
            await in_thread(context.writeback.emit, trace, responses)
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
            )
            for r in responses
        ]
        return Outcome(
            {"trace_id": trace_id, "evaluations": [r.model_dump(mode="json") for r in responses]},
            evaluations=rows,
            trace=summary,
            replace_source=INGEST if source == INGEST else None,
        )

    return {"score_trace": score_trace}


class TraceSweeper:
    """Queues the ingested traces that are complete, every `poll_seconds`."""

    def __init__(self, context: ServerContext) -> None:
        self.context = context
        self._loop: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._loop = asyncio.create_task(self._sweep_forever())

    async def stop(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)

    async def sweep(self) -> list[str]:
        config = self.context.config
        queued = await in_thread(
            self.context.store.queue_complete_traces,
            config.trace_quiet_seconds,
            config.trace_timeout_seconds,
            100,
            lambda trace_id: score_task(trace_id, INGEST, None),
        )
        if queued:
            self.context.runner.wake()
        return queued

    async def _sweep_forever(self) -> None:
        while True:
            try:
                while len(await self.sweep()) == 100:
                    pass
            except Exception:
                logger.exception("tracejudge: could not queue complete traces")
            await asyncio.sleep(self.context.config.poll_seconds)
