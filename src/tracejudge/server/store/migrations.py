"""Versioned schema migrations, shared by SQLite and PostgreSQL.

Each migration is a version number and its statements; `{serial}` stands for an
auto-numbered primary key, `{blob}` for a bytes column, `{key}` for the collation of a
column compared by code point (agent-name keys: nothing on SQLite, whose text compares
by code point already; `COLLATE "C"` on PostgreSQL) and `{clustered}` for a table
stored in its primary key's order (SQLite's `WITHOUT ROWID`; nothing on PostgreSQL),
spelled per dialect. A
migration may add statements for one dialect only (`sqlite`, `postgres`: the full-text
index is FTS5 on one, a tsvector with a GIN index on the other). A migration is applied
once, in a transaction with the row that records it in `schema_migrations`. Never edit a
released migration: add the next version.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Migration", "MIGRATIONS", "SCHEMA_VERSION", "TREND_COUNTS"]


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]
    sqlite: tuple[str, ...] = ()
    postgres: tuple[str, ...] = ()

    def for_dialect(self, dialect: str) -> tuple[str, ...]:
        """The statements to run on `dialect` ("sqlite" or "postgres"), in order."""
        return self.statements + (self.sqlite if dialect == "sqlite" else self.postgres)


def _columns(table: str, *columns: str) -> tuple[str, ...]:
    return tuple(f"ALTER TABLE {table} ADD COLUMN {column}" for column in columns)


#: One row per (trace, criterion, agent instance): the latest answer. `{clustered}` is
#: SQLite's WITHOUT ROWID (the rows of a trace lie together, as its primary key orders
#: them).
_AGENT_SCORES = """CREATE TABLE agent_scores (
                trace_id TEXT NOT NULL,
                criterion TEXT NOT NULL,
                agent_instance_id TEXT NOT NULL,
                agent_name TEXT NOT NULL,
                agent_key TEXT{key} NOT NULL,
                score DOUBLE PRECISION,
                fail_under DOUBLE PRECISION NOT NULL,
                failing INTEGER NOT NULL DEFAULT 0,
                state TEXT NOT NULL,
                PRIMARY KEY (trace_id, criterion, agent_instance_id)
            ){clustered}"""

#: The columns a trace is sorted by (each with the trace id, the order's tie-breaker).
#: SQLite's index read backwards gives a descending order with empty values last;
#: PostgreSQL sorts empty values as the greatest, so it has a descending index for each
#: column that may be empty (`_MAY_BE_EMPTY`).
_SORTED = (
    "start_time",
    "duration",
    "root_agent",
    "agent_count",
    "model_calls",
    "tokens",
    "cost",
    "worst_score",
    "failing_agents",
)
_MAY_BE_EMPTY = ("duration", "root_agent", "cost", "worst_score")


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
    Migration(
        4,
        "the list's columns per trace (start, duration, calls, tokens, cost, verdict), the "
        "latest score per criterion and agent instance, resource attributes apart from "
        "tags, full-text search",
        (
            *_columns(
                "traces",
                "end_time DOUBLE PRECISION",
                "duration DOUBLE PRECISION",
                "agent_count INTEGER NOT NULL DEFAULT 0",
                "model_calls INTEGER NOT NULL DEFAULT 0",
                "input_tokens INTEGER NOT NULL DEFAULT 0",
                "output_tokens INTEGER NOT NULL DEFAULT 0",
                "tokens INTEGER NOT NULL DEFAULT 0",
                "cost DOUBLE PRECISION",
                "models TEXT NOT NULL DEFAULT '[]'",
                "worst_score DOUBLE PRECISION",
                "worst_agent TEXT",
                "worst_criterion TEXT",
                "failing_agents INTEGER NOT NULL DEFAULT 0",
                "failing_pairs INTEGER NOT NULL DEFAULT 0",
                "verdict TEXT NOT NULL DEFAULT 'pending'",
                "service TEXT",
                # the digest version a trace's columns were computed with (0: never)
                "digested INTEGER NOT NULL DEFAULT 0",
            ),
            # the list sorts and filters on start time: received time until spans say
            "UPDATE traces SET start_time = first_seen WHERE start_time IS NULL",
            *(f"CREATE INDEX traces_by_{c} ON traces ({c}, trace_id)" for c in _SORTED),
            "CREATE INDEX traces_by_verdict ON traces (verdict, start_time)",
            "CREATE INDEX traces_by_service ON traces (service, start_time)",
            "CREATE INDEX traces_to_digest ON traces (digested)",
            # the agents of a trace by case-folded name (the filter is case-blind), with
            # each name's worst score there; filled by the digest, as every converted
            # trace is digested again. It replaces trace_agents (names as written).
            "DROP TABLE trace_agents",
            """CREATE TABLE trace_agent_keys (
                trace_id TEXT NOT NULL,
                agent_key TEXT{key} NOT NULL,
                worst_score DOUBLE PRECISION,
                PRIMARY KEY (trace_id, agent_key)
            ){clustered}""",
            "CREATE INDEX trace_agent_keys_by_score ON trace_agent_keys "
            "(agent_key, worst_score, trace_id)",
            # the distinct names, to find the names a prefix starts
            "CREATE TABLE agent_names (agent_key TEXT{key} PRIMARY KEY)",
            _AGENT_SCORES,
            # a criterion's scores of a name, by trace: read whole as a set (the score
            # checked in the index), or sought per trace by a probe (both planners would
            # rather walk an index led by the score than the primary key, for a probe)
            "CREATE INDEX agent_scores_by_criterion ON agent_scores "
            "(criterion, agent_key, trace_id, score)",
            # per (trace, criterion): the worst agent score and how many agents failed
            """CREATE TABLE trace_criteria (
                trace_id TEXT NOT NULL,
                criterion TEXT NOT NULL,
                worst_score DOUBLE PRECISION,
                failing INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (trace_id, criterion)
            ){clustered}""",
            "CREATE INDEX trace_criteria_by_score ON trace_criteria "
            "(criterion, worst_score, trace_id)",
            """CREATE TABLE trace_resource (
                trace_id TEXT NOT NULL,
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (trace_id, key)
            )""",
            # an ingested trace's tags were its resource attributes: they are resource
            # attributes now, and its tags what the user set (tracejudge.tags.*)
            "INSERT INTO trace_resource (trace_id, key, value) SELECT g.trace_id, g.key, "
            "g.value FROM trace_tags g JOIN traces t ON t.trace_id = g.trace_id "
            "WHERE t.source = 'otlp'",
            "DELETE FROM trace_tags WHERE trace_id IN "
            "(SELECT trace_id FROM traces WHERE source = 'otlp')",
            "UPDATE traces SET service = (SELECT r.value FROM trace_resource r "
            "WHERE r.trace_id = traces.trace_id AND r.key = 'service.name')",
        ),
        sqlite=(
            """CREATE TABLE trace_docs (
                id INTEGER PRIMARY KEY,
                trace_id TEXT NOT NULL UNIQUE,
                body TEXT NOT NULL
            )""",
            "CREATE VIRTUAL TABLE trace_search USING fts5(body, content='trace_docs', "
            "content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
        ),
        postgres=(
            """CREATE TABLE trace_docs (
                trace_id TEXT PRIMARY KEY,
                document TSVECTOR NOT NULL
            )""",
            "CREATE INDEX trace_docs_search ON trace_docs USING GIN (document)",
            *(
                f"CREATE INDEX traces_by_{c}_desc ON traces ({c} DESC NULLS LAST, trace_id DESC)"
                for c in _MAY_BE_EMPTY
            ),
            # the planner's estimates of a filter on a criterion, a name and a score: the
            # columns go together (a criterion's scores are not everyone's)
            "CREATE STATISTICS agent_scores_together (mcv) ON criterion, agent_key, score "
            "FROM agent_scores",
            "CREATE STATISTICS trace_criteria_together (mcv) ON criterion, worst_score "
            "FROM trace_criteria",
            "CREATE STATISTICS trace_agent_keys_together (mcv) ON agent_key, worst_score "
            "FROM trace_agent_keys",
        ),
    ),
    # People's labels and stored attributions (#23). It creates its own tables and reads
    # none another migration makes, so it applies in any order (the runner applies each
    # version not yet recorded, gaps allowed).
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
    # The intake's span batches (#22): the bytes as they came, read by the converter.
    Migration(
        6,
        "span batches kept as the OTLP bytes they came in (protobuf or OTLP/JSON), with "
        "their encoding",
        (
            # encoding: 'protobuf' or 'json', and `body` the bytes; NULL for the rows of
            # earlier versions, whose `payload` holds OTLP/JSON text (new rows: '').
            "ALTER TABLE span_batches ADD COLUMN encoding TEXT",
            "ALTER TABLE span_batches ADD COLUMN body {blob}",
        ),
    ),
    # Rules and sessions (#33 items 1 and 2): the rules (from a file or the API), what each
    # decided for each trace, what each rule's judge spent per day; which session and user
    # each trace belongs to, the sessions, and their session-level answers. Its own tables
    # only, so it applies in any order with the other features' migrations.
    Migration(
        8,
        "evaluation rules, their decision per trace and their spend per day; sessions and "
        "users, and session-level answers",
        (
            # body: the rule as JSON (`tracejudge.server.work.rules.RuleBody`); source: file or api
            """CREATE TABLE rules (
                name TEXT PRIMARY KEY,
                body TEXT NOT NULL,
                source TEXT NOT NULL,
                revision INTEGER NOT NULL DEFAULT 1,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL
            )""",
            # outcome: scored, sampled_out, over_budget, queued (by a backfill); reason: why
            """CREATE TABLE trace_rules (
                trace_id TEXT NOT NULL,
                rule TEXT NOT NULL,
                outcome TEXT NOT NULL,
                reason TEXT NOT NULL,
                revision INTEGER NOT NULL,
                decided_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (trace_id, rule)
            )""",
            "CREATE INDEX trace_rules_by_rule ON trace_rules (rule, outcome)",
            """CREATE TABLE rule_spend (
                day TEXT NOT NULL,
                rule TEXT NOT NULL,
                cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
                tokens BIGINT NOT NULL DEFAULT 0,
                PRIMARY KEY (day, rule)
            )""",
            """CREATE TABLE trace_sessions (
                trace_id TEXT PRIMARY KEY,
                session_id TEXT,
                user_id TEXT,
                started DOUBLE PRECISION
            )""",
            "CREATE INDEX trace_sessions_by_session ON trace_sessions (session_id, started)",
            "CREATE INDEX trace_sessions_by_user ON trace_sessions (user_id, started)",
            # judge_queued: a score_session task is queued and not started (one at a time)
            """CREATE TABLE sessions (
                session_id TEXT PRIMARY KEY,
                user_id TEXT,
                first_start DOUBLE PRECISION,
                last_start DOUBLE PRECISION,
                traces INTEGER NOT NULL DEFAULT 0,
                judge_queued INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE INDEX sessions_by_last ON sessions (last_start, session_id)",
            "CREATE INDEX sessions_by_user ON sessions (user_id, last_start)",
            """CREATE TABLE session_evaluations (
                id TEXT PRIMARY KEY,
                session_id TEXT NOT NULL,
                criterion TEXT NOT NULL,
                response TEXT NOT NULL,
                overall_score DOUBLE PRECISION,
                turns INTEGER NOT NULL,
                judge_cost_usd DOUBLE PRECISION,
                created_at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX session_evaluations_by_session ON session_evaluations "
            "(session_id, created_at)",
        ),
    ),
    # Experiment runs stored on the server (#34). Its own tables, read by no other
    # migration: it applies in any order (versions 7 and 8 are left to other areas).
    Migration(
        9,
        "experiment runs: each run's record and its row results (a row per row and repeat)",
        (
            # record: the run's record as JSON (name, git, models, params, times, cost)
            """CREATE TABLE runs (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                record TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX runs_by_time ON runs (created_at, id)",
            "CREATE INDEX runs_by_name ON runs (name, created_at)",
            # result: a row result as JSON (its input, output, seconds, scores, error)
            """CREATE TABLE run_results (
                run_id TEXT NOT NULL,
                row_id TEXT NOT NULL,
                repeat_index INTEGER NOT NULL,
                position INTEGER NOT NULL,
                trace_id TEXT,
                result TEXT NOT NULL,
                PRIMARY KEY (run_id, row_id, repeat_index)
            )""",
            "CREATE INDEX run_results_in_order ON run_results (run_id, position)",
        ),
    ),
)

#: A trend rollup row's counts (see `tracejudge.server.store.rollups`): the fixed-bucket
#: latency histogram is `lat_0` .. `lat_15`.
TREND_COUNTS = (
    "traces",
    "units",
    "scored",
    "failing",
    "not_evaluated",
    "score_sum",
    "judge_cost",
    "timed",
    "duration_sum",
    *(f"lat_{i}" for i in range(16)),
)

# Trends and monitors (#33 items 3 and 4). They create their own tables and read none
# another migration makes, so they apply in any order beside the rules' migrations.
MIGRATIONS += (
    Migration(
        10,
        "trend rollups per hour and day (agent, criterion, rule, service, version), and "
        "what each trace added to them",
        (
            # series_key: a digest of the dimensions ('' = all agents / all criteria / none)
            """CREATE TABLE trend_series (
                series_key TEXT PRIMARY KEY,
                service TEXT NOT NULL,
                version TEXT NOT NULL,
                rule TEXT NOT NULL,
                agent TEXT NOT NULL,
                criterion TEXT NOT NULL
            )""",
            # grain: 'hour' or 'day'; bucket: its start (Unix seconds, UTC)
            f"""CREATE TABLE trend_rollups (
                grain TEXT NOT NULL,
                series_key TEXT NOT NULL,
                bucket BIGINT NOT NULL,
                {", ".join(f"{c} DOUBLE PRECISION NOT NULL DEFAULT 0" for c in TREND_COUNTS)},
                PRIMARY KEY (grain, series_key, bucket)
            ){{clustered}}""",
            # what a trace added (JSON), taken back when its digest changes
            """CREATE TABLE trend_marks (
                trace_id TEXT PRIMARY KEY,
                body TEXT NOT NULL
            )""",
        ),
    ),
    Migration(
        11,
        "monitors on the trends, their state (firing once per crossing), and the webhook "
        "deliveries with their log",
        (
            """CREATE TABLE monitors (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                body TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL
            )""",
            # state: 'ok' or 'firing'; crossings: how many times it fired
            """CREATE TABLE monitor_states (
                monitor_id TEXT PRIMARY KEY,
                state TEXT NOT NULL,
                value DOUBLE PRECISION,
                count DOUBLE PRECISION,
                crossings INTEGER NOT NULL DEFAULT 0,
                checked_at DOUBLE PRECISION,
                changed_at DOUBLE PRECISION
            )""",
            # id: the delivery key (monitor, crossing, event): one row per event whatever
            # the number of replicas that saw it
            """CREATE TABLE alert_deliveries (
                id TEXT PRIMARY KEY,
                monitor_id TEXT NOT NULL,
                event TEXT NOT NULL,
                body TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at DOUBLE PRECISION NOT NULL,
                lease_until DOUBLE PRECISION,
                last_error TEXT,
                log TEXT NOT NULL DEFAULT '[]',
                created_at DOUBLE PRECISION NOT NULL,
                delivered_at DOUBLE PRECISION
            )""",
            "CREATE INDEX alert_deliveries_due ON alert_deliveries (status, next_attempt_at)",
            "CREATE INDEX alert_deliveries_by_monitor ON alert_deliveries (monitor_id, created_at)",
        ),
    ),
)

#: The schema version this code expects (the highest: versions may land out of order).
SCHEMA_VERSION = max(m.version for m in MIGRATIONS)
# Two areas that took the same number would leave one of them never applied.
assert len({m.version for m in MIGRATIONS}) == len(MIGRATIONS), "two migrations share a version"
