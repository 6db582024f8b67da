"""The sessions repository: which session and user each stored trace belongs to, the
sessions with their users and times, and their session-level answers (migration 8's
`trace_sessions`, `sessions`, `session_evaluations`).

A trace is linked once it is converted (its spans' `session.id` or
`gen_ai.conversation.id`, `user.id` or `enduser.id`; see `tracejudge.server.work.sessions`).
A session's traces are read in start order, with the list's columns; its worst verdict
is computed from them when read. One session-level judgement waits at a time
(`claim_judging`): a burst of turns is judged once, with every turn stored by then.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracejudge.server.store._core import SQLCore, where_clause
from tracejudge.server.store._query import InvalidCursorError
from tracejudge.server.store.base import TraceRow
from tracejudge.server.store.traces import LISTED_COLUMNS, decorate, trace_row

__all__ = ["SessionEvaluationRow", "SessionPage", "SessionRow", "Sessions", "worst_verdict"]

#: Worst first: what a session's verdict is when its traces disagree.
_VERDICT_RANK = ("failed", "pending", "passed", "unscored")


@dataclass
class SessionRow:
    """A session: its user, its traces' first and last start, how many, its worst
    verdict over them (filled when read)."""

    session_id: str
    user_id: str | None
    first_start: float | None
    last_start: float | None
    traces: int
    verdict: str = "pending"


@dataclass(frozen=True)
class SessionEvaluationRow:
    """One session-level answer (a `MultiAgentTraceResponse` as JSON) over `turns` traces."""

    id: str
    session_id: str
    criterion: str
    response: str
    overall_score: float | None
    turns: int
    judge_cost_usd: float | None
    created_at: float


@dataclass
class SessionPage:
    """Sessions, the latest activity first; `cursor` reads the next page (None: last)."""

    sessions: list[SessionRow]
    cursor: str | None


def _encode(last_start: float | None, session_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([last_start, session_id]).encode()).decode()


def _decode(cursor: str) -> tuple[float, str]:
    try:
        last, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(last), str(session_id)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise InvalidCursorError(
            "cursor is not one this server handed out: pass the `next_cursor` of a page"
        ) from exc


def worst_verdict(verdicts: Sequence[str]) -> str:
    """The worst of traces' verdicts (failed, then pending, passed, unscored)."""
    ranked = [v for v in _VERDICT_RANK if v in verdicts]
    return ranked[0] if ranked else "pending"


class Sessions:
    """Sessions through `core`."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core

    def link(
        self, trace_id: str, session_id: str | None, user_id: str | None, start: float | None
    ) -> None:
        """Record the session and user of a trace (linking it again changes nothing but
        what was unknown), and count it in its session."""
        with self.core.transaction() as cursor:
            # Inserted or not in one statement: two replicas scoring the trace at once
            # (late spans) link it once, and count it once.
            added = self.core.run(
                cursor,
                "INSERT INTO trace_sessions (trace_id, session_id, user_id, started) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (trace_id) DO NOTHING RETURNING trace_id",
                [trace_id, session_id, user_id, start],
            ).fetchall()
            if not added or session_id is None:
                return
            self.core.run(
                cursor,
                "INSERT INTO sessions (session_id, user_id, first_start, last_start, traces) "
                "VALUES (?, ?, ?, ?, 1) ON CONFLICT (session_id) DO UPDATE SET "
                "user_id = COALESCE(sessions.user_id, excluded.user_id), "
                "first_start = CASE WHEN sessions.first_start IS NULL OR "
                "excluded.first_start < sessions.first_start THEN excluded.first_start "
                "ELSE sessions.first_start END, "
                "last_start = CASE WHEN sessions.last_start IS NULL OR "
                "excluded.last_start > sessions.last_start THEN excluded.last_start "
                "ELSE sessions.last_start END, traces = sessions.traces + 1",
                [session_id, user_id, start, start],
            )

    def of_trace(self, trace_id: str) -> tuple[str | None, str | None]:
        """(session id, user id) of a trace; (None, None) when it has neither."""
        with self.core.transaction() as cursor:
            row = self.core.run(
                cursor,
                "SELECT session_id, user_id FROM trace_sessions WHERE trace_id = ?",
                [trace_id],
            ).fetchone()
        return (None, None) if row is None else (row[0], row[1])

    def get(self, session_id: str) -> tuple[SessionRow, list[TraceRow]] | None:
        """A session and its traces in start order (None: no such session)."""
        with self.core.transaction() as cursor:
            row = self.core.run(
                cursor,
                "SELECT session_id, user_id, first_start, last_start, traces FROM sessions "
                "WHERE session_id = ?",
                [session_id],
            ).fetchone()
            if row is None:
                return None
            found = self.core.run(
                cursor,
                f"SELECT {LISTED_COLUMNS} FROM traces JOIN trace_sessions s "
                "ON s.trace_id = traces.trace_id WHERE s.session_id = ? "
                "ORDER BY traces.start_time, traces.trace_id",
                [session_id],
            ).fetchall()
            traces = [trace_row(r) for r in found]
            decorate(self.core, cursor, traces)
        session = SessionRow(*row)
        session.traces = len(traces)
        session.verdict = worst_verdict([t.verdict for t in traces])
        return session, traces

    def turns(self, session_id: str) -> list[str]:
        """The JSON of a session's converted traces, in start order (its turns)."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                "SELECT traces.trace_json FROM traces JOIN trace_sessions s "
                "ON s.trace_id = traces.trace_id WHERE s.session_id = ? "
                "AND traces.trace_json IS NOT NULL ORDER BY traces.start_time, traces.trace_id",
                [session_id],
            ).fetchall()
        return [str(r[0]) for r in rows]

    def page(self, user_id: str | None, limit: int, cursor: str | None) -> SessionPage:
        """Sessions (of one user when `user_id` is given), the latest activity first."""
        conditions: list[str] = []
        params: list[Any] = []
        if user_id is not None:
            conditions.append("user_id = ?")
            params.append(user_id)
        if cursor is not None:
            after, session_id = _decode(cursor)
            conditions.append("(last_start < ? OR (last_start = ? AND session_id < ?))")
            params.extend([after, after, session_id])
        with self.core.transaction() as db:
            rows = self.core.run(
                db,
                "SELECT session_id, user_id, first_start, last_start, traces FROM sessions"
                f"{where_clause(conditions)} ORDER BY last_start DESC, session_id DESC LIMIT ?",
                [*params, limit + 1],
            ).fetchall()
            sessions = [SessionRow(*r) for r in rows[:limit]]
            if sessions:
                marks = ", ".join("?" for _ in sessions)
                verdicts: dict[str, list[str]] = {}
                for session_id, verdict in self.core.run(
                    db,
                    "SELECT s.session_id, traces.verdict FROM trace_sessions s JOIN traces "
                    f"ON traces.trace_id = s.trace_id WHERE s.session_id IN ({marks})",
                    [s.session_id for s in sessions],
                ).fetchall():
                    verdicts.setdefault(session_id, []).append(verdict)
                for session in sessions:
                    session.verdict = worst_verdict(verdicts.get(session.session_id, []))
        next_cursor = None
        if len(rows) > limit and sessions:
            last = sessions[-1]
            next_cursor = _encode(last.last_start, last.session_id)
        return SessionPage(sessions=sessions, cursor=next_cursor)

    def prune(self, cutoff: float, batch: int = 500) -> int:
        """Delete up to `batch` sessions last active before `cutoff` with no stored trace
        left (retention took them), with their answers; how many. Call again while any."""
        with self.core.transaction() as cursor:
            gone = [
                r[0]
                for r in self.core.run(
                    cursor,
                    "SELECT session_id FROM sessions WHERE last_start < ? AND NOT EXISTS "
                    "(SELECT 1 FROM trace_sessions s WHERE s.session_id = sessions.session_id) "
                    "ORDER BY last_start LIMIT ?",
                    [cutoff, batch],
                ).fetchall()
            ]
            if gone:
                marks = ", ".join("?" for _ in gone)
                for table in ("session_evaluations", "sessions"):
                    self.core.run(
                        cursor, f"DELETE FROM {table} WHERE session_id IN ({marks})", gone
                    )
        return len(gone)

    # ------------------------------------------------------------------ session judgements

    def claim_judging(self, session_id: str) -> bool:
        """Mark a session-level judgement as waiting; False when one already waits."""
        with self.core.transaction() as cursor:
            claimed = self.core.run(
                cursor,
                "UPDATE sessions SET judge_queued = 1 WHERE session_id = ? AND judge_queued = 0",
                [session_id],
            ).rowcount
        return int(claimed) == 1

    def judging_started(self, session_id: str) -> None:
        """The waiting judgement started: turns stored from now on queue another."""
        with self.core.transaction() as cursor:
            self.core.run(
                cursor, "UPDATE sessions SET judge_queued = 0 WHERE session_id = ?", [session_id]
            )

    def save_evaluations(self, rows: Sequence[SessionEvaluationRow]) -> None:
        with self.core.transaction() as cursor:
            self.core.run_many(
                cursor,
                "INSERT INTO session_evaluations (id, session_id, criterion, response, "
                "overall_score, turns, judge_cost_usd, created_at) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        r.id,
                        r.session_id,
                        r.criterion,
                        r.response,
                        r.overall_score,
                        r.turns,
                        r.judge_cost_usd,
                        r.created_at,
                    )
                    for r in rows
                ],
            )

    def evaluations(self, session_id: str) -> list[SessionEvaluationRow]:
        """A session's answers, oldest first."""
        with self.core.transaction() as cursor:
            rows = self.core.run(
                cursor,
                "SELECT id, session_id, criterion, response, overall_score, turns, "
                "judge_cost_usd, created_at FROM session_evaluations WHERE session_id = ? "
                "ORDER BY created_at, id",
                [session_id],
            ).fetchall()
        return [SessionEvaluationRow(*r) for r in rows]
