"""A stored trace scored on the checks and one judged criterion, for the labels tests:
the researcher's tool call breaks its schema (a planted fault, recorded on the real openai
client), and a scripted judge passes the orchestrator and fails the researcher on
`POLITE`."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence

from tests.checks import faults
from tracejudge import checks
from tracejudge._sync import run
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.server.store import EvaluationRow, TraceRow, open_store
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

POLITE = "Passes if the agent is polite"


def polite(request: RecordedRequest) -> Reply:
    """The judge's verdict: the orchestrator (told to coordinate) passes, others fail."""
    prompt = "\n".join(str(m["content"]) for m in request.json["messages"])
    passed = "You coordinate a researcher" in prompt
    return Reply.text(json.dumps({"explanation": "judged", "applicable": True, "passed": passed}))


def record_faulty_trace() -> MultiAgentTrace:
    with ScriptedLLMServer() as llm:
        return faults.run(faults.bad_arguments(1), llm)


def store_scored(db: str, trace: MultiAgentTrace, criteria: Sequence[object]) -> str:
    """Save `trace` scored on `criteria` (texts judged by `polite`), as the server saves a
    posted trace; returns its id."""
    with ScriptedLLMServer() as model:
        model.default = polite
        judge = OpenAICompatibleJudge("judge", base_url=model.base_url, api_key="k")
        try:
            responses = run(EvaluationService(judge).score_trace(trace, list(criteria)))
        finally:
            run(judge.aclose())
    return save_scored(db, trace, responses)


def save_scored(
    db: str, trace: MultiAgentTrace, responses: Sequence[MultiAgentTraceResponse]
) -> str:
    """Save `trace` with its `responses` under a new id, as the server saves a posted
    trace; returns the id."""
    trace_id, now = uuid.uuid4().hex, time.time()
    trace = trace.model_copy(update={"trace_id": trace_id})
    store = open_store(db)
    try:
        store.traces.save(
            TraceRow(
                trace_id=trace_id,
                source="api",
                status="scored",
                first_seen=now,
                last_span_at=now,
                root_agent=trace.root.name,
                agents=[a.name for a in trace.iter_agents()],
                trace_json=trace.to_json(),
            ),
            [
                EvaluationRow(
                    id=str(uuid.uuid4()),
                    kind="trace",
                    criterion=r.criterion,
                    response=r.model_dump_json(),
                    overall_score=r.overall_score,
                    created_at=now,
                    trace_id=trace_id,
                    source="api",
                )
                for r in responses
            ],
        )
    finally:
        store.close()
    return trace_id


DEFAULT_CRITERIA: tuple[object, ...] = (*checks.ALL, POLITE)
