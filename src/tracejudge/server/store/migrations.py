"""Versioned schema migrations, shared by SQLite and PostgreSQL.

Each migration is a version number and its statements; `{serial}` stands for an
auto-numbered primary key, spelled per dialect. A migration is applied once, in a
transaction with the row that records it in `schema_migrations`. Never edit a
released migration: add the next version.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Migration", "MIGRATIONS", "SCHEMA_VERSION"]


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "tasks, traces, span batches, evaluations",
        (
            """CREATE TABLE tasks (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                status TEXT NOT NULL,
                result TEXT,
                error TEXT,
                attempts INTEGER NOT NULL DEFAULT 0,
                worker TEXT,
                lease_until DOUBLE PRECISION,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX tasks_by_status ON tasks (status, created_at)",
            """CREATE TABLE traces (
                trace_id TEXT PRIMARY KEY,
                source TEXT NOT NULL,
                status TEXT NOT NULL,
                first_seen DOUBLE PRECISION NOT NULL,
                last_span_at DOUBLE PRECISION NOT NULL,
                root_ended INTEGER NOT NULL DEFAULT 0,
                span_count INTEGER NOT NULL DEFAULT 0,
                start_time DOUBLE PRECISION,
                root_agent TEXT,
                agents TEXT NOT NULL DEFAULT '[]',
                trace_json TEXT,
                error TEXT
            )""",
            "CREATE INDEX traces_by_status ON traces (status, last_span_at)",
            "CREATE INDEX traces_by_time ON traces (first_seen, trace_id)",
            """CREATE TABLE span_batches (
                id {serial},
                trace_id TEXT NOT NULL,
                payload TEXT NOT NULL,
                received_at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX span_batches_by_trace ON span_batches (trace_id, id)",
            """CREATE TABLE trace_agents (
                trace_id TEXT NOT NULL,
                agent_name TEXT NOT NULL,
                PRIMARY KEY (trace_id, agent_name)
            )""",
            "CREATE INDEX trace_agents_by_name ON trace_agents (agent_name)",
            """CREATE TABLE trace_tags (
                trace_id TEXT NOT NULL,
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (trace_id, key)
            )""",
            "CREATE INDEX trace_tags_by_value ON trace_tags (key, value)",
            """CREATE TABLE evaluations (
                id TEXT PRIMARY KEY,
                trace_id TEXT,
                kind TEXT NOT NULL,
                source TEXT NOT NULL,
                criterion TEXT NOT NULL,
                overall_score DOUBLE PRECISION,
                response TEXT NOT NULL,
                tags TEXT NOT NULL DEFAULT '{}',
                created_at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX evaluations_by_trace ON evaluations (trace_id, created_at)",
        ),
    ),
    Migration(
        2,
        "task states named as the API names them: queued, running, done, failed",
        (
            "UPDATE tasks SET status = 'queued' WHERE status = 'pending'",
            "UPDATE tasks SET status = 'done' WHERE status = 'succeeded'",
        ),
    ),
    Migration(
        3,
        "the judge's spending per day and criterion (the daily budgets); judge cost per evaluation",
        (
            # criterion_key: '*' for the day's total, else a digest of the criterion (a
            # criterion may be longer than an index entry may be); day: YYYY-MM-DD, UTC.
            """CREATE TABLE judge_spend (
                day TEXT NOT NULL,
                criterion_key TEXT NOT NULL,
                criterion TEXT NOT NULL,
                cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
                tokens BIGINT NOT NULL DEFAULT 0,
                calls BIGINT NOT NULL DEFAULT 0,
                updated_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (day, criterion_key)
            )""",
            "ALTER TABLE evaluations ADD COLUMN judge_cost_usd DOUBLE PRECISION",
        ),
    ),
    # People's labels and stored attributions (#23). Version 5 while another branch adds
    # version 4: to renumber, change the number below only. It creates its own tables and
    # reads none another migration makes, so it applies in any order (the runner applies
    # each version not yet recorded, gaps allowed).
    Migration(
        5,
        "people's labels (a verdict per trace, agent and criterion, who and when) and each "
        "trace's latest attribution",
        (
            # id: a digest of (trace, agent instance, criterion, who): recording the same
            # label again replaces it (a criterion may be longer than an index entry may be)
            """CREATE TABLE human_labels (
                id TEXT PRIMARY KEY,
                trace_id TEXT NOT NULL,
                agent TEXT NOT NULL,
                agent_instance_id TEXT NOT NULL,
                criterion TEXT NOT NULL,
                stance TEXT NOT NULL,
                verdict TEXT,
                score DOUBLE PRECISION,
                judge_score DOUBLE PRECISION,
                bar DOUBLE PRECISION,
                note TEXT,
                who TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX human_labels_by_trace ON human_labels (trace_id, created_at, id)",
            "CREATE INDEX human_labels_by_time ON human_labels (created_at, id)",
            """CREATE TABLE attributions (
                trace_id TEXT PRIMARY KEY,
                methods TEXT NOT NULL,
                body TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL
            )""",
        ),
    ),
)

#: The schema version this code expects (the highest: versions may land out of order).
SCHEMA_VERSION = max(m.version for m in MIGRATIONS)
