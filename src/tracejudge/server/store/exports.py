"""The exports repository: every agent's latest score per criterion on the traces that
started in a time range, with its trace's facts, a page of traces at a time (in start
order), for `tracejudge export` and `GET /api/v1/export`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tracejudge import semconv
from tracejudge.server.store._core import SQLCore
from tracejudge.server.store.rollups import RULE_TAG

__all__ = ["ExportPage", "Exports", "ScoreExportRow"]


@dataclass(frozen=True)
class ScoreExportRow:
    """One agent instance's latest answer on one criterion, with its trace's facts.
    `verdict`: pass or fail when scored (against `bar`), None otherwise."""

    trace_id: str
    trace_start: float
    trace_duration_s: float | None
    service: str | None
    service_version: str | None
    root_agent: str | None
    trace_verdict: str
    criterion: str
    rule: str | None
    agent_name: str
    agent_instance_id: str
    state: str
    score: float | None
    bar: float
    verdict: str | None


@dataclass
class ExportPage:
    """One page of rows; `after` reads the next page (None: this was the last)."""

    rows: list[ScoreExportRow]
    after: tuple[float, str] | None


class Exports:
    """Score rows through `core`."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    def page(
        self,
        since: float,
        until: float,
        after: tuple[float, str] | None = None,
        traces: int = 500,
    ) -> ExportPage:
        """The rows of up to `traces` traces that started in [since, until), after the
        trace `after` (its start and id) in start order."""
        conditions = ["start_time >= ?", "start_time < ?"]
        params: list[Any] = [since, until]
        if after is not None:
            conditions.append("(start_time > ? OR (start_time = ? AND trace_id > ?))")
            params += [after[0], after[0], after[1]]
        with self.core.transaction() as cursor:
            found = self.core.run(
                cursor,
                "SELECT trace_id, start_time, duration, service, root_agent, verdict FROM "
                f"traces WHERE {' AND '.join(conditions)} ORDER BY start_time, trace_id "
                "LIMIT ?",
                [*params, traces],
            ).fetchall()
            if not found:
                return ExportPage([], None)
            ids = [r[0] for r in found]
            marks = ", ".join("?" for _ in ids)
            resource = {
                (trace_id, key): value
                for trace_id, key, value in self.core.run(
                    cursor,
                    f"SELECT trace_id, key, value FROM trace_resource WHERE trace_id IN ({marks}) "
                    "AND key IN (?, ?)",
                    [*ids, semconv.SERVICE_NAME, semconv.SERVICE_VERSION],
                ).fetchall()
            }
            rules: dict[tuple[str, str], str] = {}
            for trace_id, criterion, tags in self.core.run(
                cursor,
                f"SELECT trace_id, criterion, tags FROM evaluations WHERE trace_id IN ({marks}) "
                "AND kind = 'trace' ORDER BY created_at, id",
                ids,
            ).fetchall():
                rule = json.loads(tags or "{}").get(RULE_TAG)
                if rule:
                    rules[(trace_id, criterion)] = str(rule)
                else:
                    rules.pop((trace_id, criterion), None)
            scores: dict[str, list[tuple[Any, ...]]] = {}
            for row in self.core.run(
                cursor,
                "SELECT trace_id, criterion, agent_name, agent_instance_id, state, score, "
                f"fail_under FROM agent_scores WHERE trace_id IN ({marks}) "
                "ORDER BY trace_id, criterion, agent_instance_id",
                ids,
            ).fetchall():
                scores.setdefault(row[0], []).append(row)
        rows = []
        for trace_id, start, duration, service, root, trace_verdict in found:
            for _, criterion, name, instance, state, score, bar in scores.get(trace_id, []):
                scored = state == "scored" and score is not None
                rows.append(
                    ScoreExportRow(
                        trace_id=trace_id,
                        trace_start=float(start),
                        trace_duration_s=duration,
                        service=service or resource.get((trace_id, semconv.SERVICE_NAME)),
                        service_version=resource.get((trace_id, semconv.SERVICE_VERSION)),
                        root_agent=root,
                        trace_verdict=trace_verdict,
                        criterion=criterion,
                        rule=rules.get((trace_id, criterion)),
                        agent_name=name,
                        agent_instance_id=instance,
                        state=state,
                        score=score,
                        bar=float(bar),
                        verdict=("pass" if score >= bar else "fail") if scored else None,
                    )
                )
        last = found[-1]
        return ExportPage(rows, (float(last[1]), last[0]) if len(found) == traces else None)
