"""The rules at work in the server: the plan for a complete trace (with the rules' own daily
budgets), the bars held on its answers, its decisions and spend stored; and backfills.

Rules are read from the store for every trace scored, so a rule changed through the API
(or a new `--rules` file at a restart) applies to the traces completed after it, on every
replica. Once any rule is stored, the rules decide what is judged; with none, the server
scores every trace with its criteria as before. A rule's budget is checked before its
criteria are judged and charged after, so replicas judging at once may pass it by the
judgements in flight.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from tracejudge import checks, semconv
from tracejudge.evaluation import summarize_trace_response
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.server.store import RuleDecisionRow, Store, TaskRow, TraceRow
from tracejudge.server.work.budget import utc_day
from tracejudge.server.work.rules.model import RuleBody, TraceFacts
from tracejudge.server.work.rules.plan import ActiveRule, Decision, ScoringPlan, plan_scoring
from tracejudge.server.work.rules.sampling import sampled

__all__ = [
    "BACKFILL",
    "RULE_TAG",
    "Backfilled",
    "active_rules",
    "backfill",
    "charge",
    "facts_of",
    "held_to_bars",
    "rule_plan",
    "stored_decisions",
]

logger = logging.getLogger("tracejudge.server")

#: The `source` of the evaluations a backfill makes.
BACKFILL = "backfill"
#: The tag naming the rule that asked for a judged criterion, on its stored answer (what
#: the trends count per rule: `store.rollups.RULE_TAG` reads the same name).
RULE_TAG = "tracejudge.rule"
#: Stored traces read per statement while a backfill looks for the rule's traces.
_SCAN_BATCH = 500
#: A backfill looks at no more than this many stored traces per trace it may queue.
_SCAN_FACTOR = 100


def active_rules(store: Store) -> list[ActiveRule]:
    """The stored rules, parsed (one whose JSON no longer reads is left out, logged)."""
    found = []
    for row in store.rules.all():
        try:
            found.append(ActiveRule(RuleBody.model_validate_json(row.body), row.revision))
        except ValidationError as error:
            logger.warning("tracejudge: stored rule %r is not readable (%s)", row.name, error)
    return found


def facts_of(row: TraceRow, trace: MultiAgentTrace | None) -> TraceFacts:
    """What a rule's filter reads of a stored trace (its agents from the converted trace
    when at hand, else from its row)."""
    agents = [a.name for a in trace.iter_agents()] if trace is not None else row.agents
    return TraceFacts(
        trace_id=row.trace_id,
        service=row.service or row.resource.get(semconv.SERVICE_NAME),
        root_agent=trace.root.name if trace is not None else row.root_agent,
        agents=agents,
        tags=row.tags,
        resource=row.resource,
        span_count=row.span_count,
    )


def _over(rule: RuleBody, spent: tuple[float, int]) -> str | None:
    cost, tokens = spent
    if rule.max_judge_cost_per_day is not None and cost >= rule.max_judge_cost_per_day:
        return f"the rule's budget of ${rule.max_judge_cost_per_day:g} a day is spent"
    if rule.max_judge_tokens_per_day is not None and tokens >= rule.max_judge_tokens_per_day:
        return f"the rule's budget of {rule.max_judge_tokens_per_day:,} tokens a day is spent"
    return None


def rule_plan(
    store: Store, row: TraceRow, trace: MultiAgentTrace, only: str | None = None
) -> ScoringPlan | None:
    """The rules' plan for a trace (None: no rule is stored; score as without rules).
    `only`: the one rule a backfill runs (its judge criteria and check bars, not the
    checks, which ran when the trace completed). Blocking: run it in a worker thread."""
    rules = active_rules(store)
    if only is not None:
        rules = [r for r in rules if r.name == only]
        if not rules:
            return ScoringPlan()
    if not rules:
        return None
    plan = plan_scoring(facts_of(row, trace), rules, [] if only else checks.ALL)
    budgeted = [
        r
        for r in plan.scored
        if r.body.criteria
        and (r.body.max_judge_cost_per_day is not None or r.body.max_judge_tokens_per_day)
    ]
    if budgeted:
        spent = store.rules.spent(utc_day(time.time()))
        for rule in budgeted:
            reason = _over(rule.body, spent.get(rule.name, (0.0, 0)))
            if reason is not None:
                plan.drop_rule(rule.name, f"not judged: {reason} (UTC day)")
    return plan


def held_to_bars(
    responses: Sequence[MultiAgentTraceResponse], bars: dict[str, float]
) -> list[MultiAgentTraceResponse]:
    """The answers with each criterion's rule bar (its verdict, failing agents and
    summary computed again against it)."""
    held = []
    for response in responses:
        bar = bars.get(response.criterion)
        if bar is None or bar == response.fail_under:
            held.append(response)
            continue
        cleared = response.model_copy(
            update={"fail_under": None, "failing_agents": None, "explanation": ""}
        )
        held.append(summarize_trace_response(cleared, fail_under=bar))
    return held


def stored_decisions(trace_id: str, decisions: Sequence[Decision]) -> list[RuleDecisionRow]:
    now = time.time()
    return [
        RuleDecisionRow(trace_id, d.rule, d.outcome, d.reason, d.revision, now) for d in decisions
    ]


def charge(store: Store, plan: ScoringPlan, responses: Sequence[MultiAgentTraceResponse]) -> None:
    """Add each judged criterion's cost to the rule that asked for it first (blocking)."""
    day = utc_day(time.time())
    totals: dict[str, list[float]] = {}
    for response in responses:
        owner = plan.owners.get(response.criterion)
        usage = response.usage
        if owner is None or usage is None or not usage.calls:
            continue
        total = totals.setdefault(owner, [0.0, 0.0])
        total[0] += usage.cost_usd or 0.0
        total[1] += usage.total_tokens or usage.input_tokens + usage.output_tokens
    for rule, (cost, tokens) in sorted(totals.items()):
        store.rules.add_spend(day, rule, cost, int(tokens))


# ---------------------------------------------------------------------- backfill


@dataclass(frozen=True)
class Backfilled:
    """What a backfill did: traces queued for the rule's criteria, traces it decided
    were out of its sample, traces looked at, and whether it stopped at its cap with
    more to look at (`capped`)."""

    queued: list[str]
    sampled_out: int
    scanned: int
    capped: bool


def backfill_task(trace_id: str, rule: str) -> TaskRow:
    payload: dict[str, Any] = {"trace_id": trace_id, "source": BACKFILL, "rule": rule}
    return TaskRow(id=str(uuid.uuid4()), kind="score_trace", payload=json.dumps(payload))


def backfill(
    store: Store,
    rule: ActiveRule,
    limit: int,
    since: float | None = None,
    until: float | None = None,
) -> Backfilled:
    """Queue the rule's criteria for up to `limit` stored traces it never decided for
    (newest first, started in [since, until)), those its filter keeps and its sample picks;
    record `sampled_out` for those its sample leaves out. Looks at no more than
    `limit * 100` stored traces. Blocking: run it in a worker thread."""
    queued: list[str] = []
    out: list[str] = []
    scanned = 0
    before: tuple[float, str] | None = None
    most = limit * _SCAN_FACTOR
    more = True
    while len(queued) < limit and scanned < most:
        rows = store.decisions.undecided(rule.name, since, until, before, _SCAN_BATCH)
        for row in rows:
            scanned += 1
            before = (row.start_time or 0.0, row.trace_id)
            if rule.body.filter.matches(facts_of(row, None)):
                kept = sampled(row.trace_id, rule.body.sample_rate)
                (queued if kept else out).append(row.trace_id)
            if len(queued) >= limit or scanned >= most:
                break
        if len(rows) < _SCAN_BATCH and len(queued) < limit and scanned < most:
            more = False
            break
    now = time.time()
    rate = f"{rule.body.sample_rate * 100:.3g}%"
    store.decisions.decide(
        [
            RuleDecisionRow(
                trace_id,
                rule.name,
                "sampled_out",
                f"backfill: not in the rule's {rate} sample (decided from the trace id)",
                rule.revision,
                now,
            )
            for trace_id in out
        ]
        + [
            RuleDecisionRow(
                trace_id,
                rule.name,
                "queued",
                "backfill: queued for the rule's criteria",
                rule.revision,
                now,
            )
            for trace_id in queued
        ]
    )
    store.decisions.queue(queued, lambda trace_id: backfill_task(trace_id, rule.name))
    return Backfilled(queued=queued, sampled_out=len(out), scanned=scanned, capped=more)
