"""What the list reads of a trace, written beside it whenever it is converted or scored.

`Digests.refresh` computes a trace's digest (`tracejudge.server.store.digest`) from its JSON and
its latest answer per criterion and writes it in the caller's transaction: the list's
columns on `traces`, its latest score per criterion and agent instance (`agent_scores`),
each criterion's worst score (`trace_criteria`), its agents' case-folded names with their
worst scores (`trace_agent_keys`, `agent_names`), its full-text document, and what it adds
to the trend rollups (`rollups`). Listing reads only those (see `_query`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from tracejudge import semconv
from tracejudge.models import PriceTable
from tracejudge.server.store._core import SQLCore, storable
from tracejudge.server.store._query import agent_key
from tracejudge.server.store._search import index_words
from tracejudge.server.store.base import EvaluationRow, TraceRow
from tracejudge.server.store.digest import DIGEST_VERSION, TraceDigest, digest, settled_verdict
from tracejudge.server.store.rollups import (
    TRACE_COLUMNS,
    TRACE_PARAMS,
    Rollups,
    TraceContext,
    answers_context,
)

__all__ = ["Digests"]

logger = logging.getLogger("tracejudge.server")


class Digests:
    """Writes traces' digests through `core`; `prices` prices the agents' model calls
    (None: the shipped table)."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core
        self.prices: PriceTable | None = None
        self.rollups = Rollups(core)

    def refresh_all(self, cursor: Any, trace_ids: Iterable[str]) -> None:
        """`refresh` each trace, in id order (one lock order for every writer)."""
        for trace_id in sorted(trace_ids):
            self.refresh(cursor, trace_id)

    def refresh(self, cursor: Any, trace_id: str) -> None:
        """Compute and write the digest of a stored trace from what is stored of it."""
        row = self.core.run(
            cursor,
            f"SELECT trace_json, start_time, end_time, status, {TRACE_COLUMNS} FROM traces "
            "WHERE trace_id = ?",
            [*TRACE_PARAMS, trace_id],
        ).fetchone()
        if row is None:
            return  # evaluations of a trace that is not stored (a chat's trace_id)
        trace_json, start_time, end_time, status, service, first_seen, version, mark = row
        latest: dict[str, str] = {}
        answers = []
        for criterion, response, tags, cost in self.core.run(
            cursor,
            "SELECT criterion, response, tags, judge_cost_usd FROM evaluations "
            "WHERE trace_id = ? AND kind = 'trace' ORDER BY created_at, id",
            [trace_id],
        ).fetchall():
            latest.pop(criterion, None)  # kept in the order of each one's latest answer
            latest[criterion] = response
            answers.append((criterion, tags, cost))
        found = self._digested(trace_id, trace_json, list(latest.values()))
        found.verdict = settled_verdict(found.verdict, status)
        costs, rules = answers_context(answers)
        context = TraceContext(
            status, service or "", version or "", float(first_seen), costs, rules, mark
        )
        self._write(cursor, trace_id, found, start_time, end_time, context)

    def write_new(self, cursor: Any, trace: TraceRow, evaluations: Sequence[EvaluationRow]) -> None:
        """The digest of a trace stored in this transaction, from what is at hand (no read)."""
        latest: dict[str, str] = {}
        answers = []
        for e in sorted(evaluations, key=lambda e: (e.created_at, e.id)):
            if e.kind == "trace" and e.trace_id == trace.trace_id:
                latest.pop(e.criterion, None)  # in the order of each one's latest answer
                latest[e.criterion] = e.response
                answers.append((e.criterion, e.tags, e.judge_cost_usd))
        start = trace.start_time if trace.start_time is not None else trace.first_seen
        found = self._digested(trace.trace_id, trace.trace_json, list(latest.values()))
        found.verdict = settled_verdict(found.verdict, trace.status)
        costs, rules = answers_context(answers)
        context = TraceContext(
            trace.status,
            trace.service or trace.resource.get(semconv.SERVICE_NAME, ""),
            trace.resource.get(semconv.SERVICE_VERSION, ""),
            trace.first_seen,
            costs,
            rules,
        )
        self._write(cursor, trace.trace_id, found, start, None, context, new=True)

    def pending(self, batch: int = 200) -> int:
        """Digest the traces stored before this version (or whose digest is older), a batch
        per transaction; returns how many were done."""
        done = 0
        while True:
            with self.core.transaction() as cursor:
                ids = [
                    r[0]
                    for r in self.core.run(
                        cursor,
                        "SELECT trace_id FROM traces WHERE digested < ? ORDER BY trace_id "
                        f"LIMIT ?{self.core.lock_rows}",
                        [DIGEST_VERSION, batch],
                    ).fetchall()
                ]
                self.refresh_all(cursor, ids)
            done += len(ids)
            if len(ids) < batch:
                return done

    def _digested(self, trace_id: str, trace_json: str | None, responses: list[str]) -> TraceDigest:
        try:
            return digest(trace_json, responses, self.prices)
        except ValueError:
            # Not a trace or answers this server wrote: keep it listed, with nothing computed.
            logger.warning("tracejudge: trace %s cannot be digested", trace_id, exc_info=True)
            return TraceDigest()

    def _write(
        self,
        cursor: Any,
        trace_id: str,
        found: TraceDigest,
        start_time: float | None,
        end_time: float | None,
        context: TraceContext,
        *,
        new: bool = False,
    ) -> None:
        """Write a digest; `new`: the trace was stored in this transaction, so it has no
        agents, scores or document to take out first; `context`: what the rollups need
        beside it."""
        self._write_columns(cursor, trace_id, found, start_time, end_time)
        if found.agents:
            self._write_agent_keys(cursor, trace_id, found, new=new)
        self._write_scores(cursor, trace_id, found, new=new)
        self.core.index(cursor, trace_id, index_words(found.text), new=new)
        self.rollups.record(cursor, trace_id, found, start_time, end_time, context)

    def _write_columns(
        self,
        cursor: Any,
        trace_id: str,
        found: TraceDigest,
        start_time: float | None,
        end_time: float | None,
    ) -> None:
        """The list's columns on `traces`; the span times stored widen the digest's."""
        starts = [t for t in (start_time, found.start_time) if t is not None]
        ends = [t for t in (end_time, found.end_time) if t is not None]
        start = min(starts) if starts else None
        end = max(ends) if ends else None
        self.core.run(
            cursor,
            "UPDATE traces SET start_time = ?, end_time = ?, duration = ?, agent_count = ?, "
            "model_calls = ?, input_tokens = ?, output_tokens = ?, tokens = ?, cost = ?, "
            "models = ?, worst_score = ?, worst_agent = ?, worst_criterion = ?, "
            "failing_agents = ?, failing_pairs = ?, verdict = ?, digested = ?, "
            "agents = COALESCE(?, agents) WHERE trace_id = ?",
            [
                start,
                end,
                max(0.0, end - start) if start is not None and end is not None else None,
                len(found.agents),
                found.model_calls,
                found.input_tokens,
                found.output_tokens,
                found.input_tokens + found.output_tokens,
                found.cost,
                json.dumps(found.models),
                found.worst_score,
                found.worst_agent,
                found.worst_criterion,
                found.failing_agents,
                found.failing_pairs,
                found.verdict,
                DIGEST_VERSION,
                json.dumps([storable(a) for a in found.agents]) if found.agents else None,
                trace_id,
            ],
        )

    def _write_agent_keys(
        self, cursor: Any, trace_id: str, found: TraceDigest, *, new: bool
    ) -> None:
        """Each agent's case-folded name with its worst scored score (the agent filter)."""
        if not new:
            self.core.run(cursor, "DELETE FROM trace_agent_keys WHERE trace_id = ?", [trace_id])
        worst: dict[str, float | None] = {agent_key(name): None for name in found.agents}
        for score in found.scores:
            if score.score is not None and score.state == "scored":
                key = agent_key(score.agent_name)
                known = worst.get(key)
                worst[key] = score.score if known is None else min(known, score.score)
        self.core.run_many(
            cursor,
            "INSERT INTO trace_agent_keys (trace_id, agent_key, worst_score) VALUES (?, ?, ?)",
            [(trace_id, key, value) for key, value in sorted(worst.items())],
        )
        self.core.run_many(
            cursor,
            "INSERT INTO agent_names (agent_key) VALUES (?) ON CONFLICT DO NOTHING",
            [(key,) for key in sorted(worst)],
        )

    def _write_scores(self, cursor: Any, trace_id: str, found: TraceDigest, *, new: bool) -> None:
        """Each criterion's worst score and failing count, and every agent instance's score."""
        if not new:
            self.core.run(cursor, "DELETE FROM agent_scores WHERE trace_id = ?", [trace_id])
            self.core.run(cursor, "DELETE FROM trace_criteria WHERE trace_id = ?", [trace_id])
        by_criterion: dict[str, list[float]] = {}
        failing: dict[str, int] = {}
        for score in found.scores:
            by_criterion.setdefault(score.criterion, [])
            failing[score.criterion] = failing.get(score.criterion, 0) + int(score.failing)
            if score.score is not None and score.state == "scored":
                by_criterion[score.criterion].append(score.score)
        self.core.run_many(
            cursor,
            "INSERT INTO trace_criteria (trace_id, criterion, worst_score, failing) "
            "VALUES (?, ?, ?, ?)",
            [
                (trace_id, criterion, min(given) if given else None, failing[criterion])
                for criterion, given in sorted(by_criterion.items())
            ],
        )
        self.core.run_many(
            cursor,
            "INSERT INTO agent_scores (trace_id, criterion, agent_instance_id, agent_name, "
            "agent_key, score, fail_under, failing, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    trace_id,
                    score.criterion,
                    score.agent_instance_id,
                    score.agent_name,
                    agent_key(score.agent_name),
                    score.score,
                    score.fail_under,
                    int(score.failing),
                    score.state,
                )
                for score in found.scores
            ],
        )
