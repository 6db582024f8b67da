"""Session-level criteria: a whole conversation judged as one (`score_session` tasks).

A rule's `session_criteria` are queued after a trace it keeps completes, when its sample
picks the trace's session (decided from the session id, so every turn of a session is in
or out together); `POST /api/v1/sessions/{id}/score` queues any criteria. One rule-queued
judgement waits per session at a time: the turns that complete while it waits are read
when it runs. Each answer is stored with how many turns it read, the newest per criterion
being the session's verdict.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

from tracejudge.errors import BadRequestError
from tracejudge.models import MultiAgentTrace
from tracejudge.server.store import SessionEvaluationRow
from tracejudge.server.store.stored import read_trace
from tracejudge.server.work.context import ServerContext, in_thread
from tracejudge.server.work.rules.apply import held_to_bars
from tracejudge.server.work.rules.model import TraceFacts
from tracejudge.server.work.rules.plan import ActiveRule
from tracejudge.server.work.rules.sampling import sampled
from tracejudge.server.work.sessions.conversation import session_trace
from tracejudge.server.work.tasks import Handler, Outcome

__all__ = ["handlers", "queue_for_rules", "session_payload"]


def session_payload(
    session_id: str, criteria: Sequence[str], bars: dict[str, float], *, claimed: bool
) -> dict[str, Any]:
    return {"session_id": session_id, "criteria": list(criteria), "bars": bars, "claimed": claimed}


async def queue_for_rules(
    context: ServerContext, facts: TraceFacts, session_id: str, rules: Sequence[ActiveRule]
) -> str | None:
    """Queue the session criteria of the rules that keep the trace and pick its session
    (unless a judgement of the session already waits); the task id, or None."""
    criteria: list[str] = []
    bars: dict[str, float] = {}
    for rule in rules:
        body = rule.body
        if not (body.enabled and body.session_criteria and body.filter.matches(facts)):
            continue
        if not sampled(session_id, body.sample_rate):
            continue
        for criterion in body.session_criteria:
            if criterion.text not in criteria:
                criteria.append(criterion.text)
            if criterion.bar is not None:
                bars[criterion.text] = max(criterion.bar, bars.get(criterion.text, 0.0))
    if not criteria or context.judge_label is None:
        return None
    if not await in_thread(context.store.sessions.claim_judging, session_id):
        return None  # one waits already: it reads this turn too
    payload = session_payload(session_id, criteria, bars, claimed=True)
    return await context.runner.submit("score_session", payload)


def _turns(texts: Sequence[str]) -> list[MultiAgentTrace]:
    return [read_trace(text) for text in texts]


def handlers(context: ServerContext) -> dict[str, Handler]:
    async def score_session(payload: dict[str, Any]) -> Outcome:
        session_id = str(payload["session_id"])
        if payload.get("claimed"):
            await in_thread(context.store.sessions.judging_started, session_id)
        texts = await in_thread(context.store.sessions.turns, session_id)
        turns = await context.offload.run(_turns, texts)
        trace = session_trace(turns)
        if trace is None:
            raise BadRequestError(f"session {session_id!r} has no turn with a message to judge")
        criteria = [str(c) for c in payload.get("criteria", [])]
        responses = await context.service.score_trace(trace, criteria)
        bars = {str(k): float(v) for k, v in dict(payload.get("bars", {})).items()}
        responses = held_to_bars(responses, bars)
        now = time.time()
        saved = [
            SessionEvaluationRow(
                id=str(uuid.uuid4()),
                session_id=session_id,
                criterion=r.criterion,
                response=r.model_dump_json(),
                overall_score=r.overall_score,
                turns=len(trace.root.llm_interactions),
                judge_cost_usd=r.usage.cost_usd if r.usage is not None else None,
                created_at=now,
            )
            for r in responses
        ]
        await in_thread(context.store.sessions.save_evaluations, saved)
        return Outcome(
            {
                "session_id": session_id,
                "turns": len(trace.root.llm_interactions),
                "evaluations": [json.loads(r.response) for r in saved],
            }
        )

    return {"score_session": score_session}
