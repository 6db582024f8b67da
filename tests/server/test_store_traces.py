"""The traces repository on SQLite and PostgreSQL: spans in, traces completed and queued,
the span limit, text neither database stores, earlier schemas, retention."""

from __future__ import annotations

import json
import time
import uuid

from tests.server.stored import agent_trace
from tracejudge.server.store import (
    SCHEMA_VERSION,
    AttributionRow,
    EvaluationRow,
    LabelRow,
    SpanBatch,
    TaskRow,
    TraceFilter,
    TraceRow,
    open_store,
)
from tracejudge.server.store.traces import SIDE_TABLES


def _task(kind: str = "reward") -> TaskRow:
    return TaskRow(id=str(uuid.uuid4()), kind=kind, payload="{}")


def _ingest_task(trace_id: str) -> TaskRow:
    payload = json.dumps({"trace_id": trace_id, "source": "ingest"})
    return TaskRow(id=f"score-{trace_id}", kind="score_trace", payload=payload)


def test_traces_complete_after_quiet_period_and_late_spans_reopen(db_url: str) -> None:
    store = open_store(db_url)
    store.traces.add_spans(
        [SpanBatch("t1", "json", b'{"resourceSpans": []}', 2, False, {"env": "prod"})]
    )
    store.traces.add_spans([SpanBatch("t2", "json", b"{}", 1, True)])

    def make(trace_id: str) -> TaskRow:
        return TaskRow(id=f"score-{trace_id}", kind="score_trace", payload=json.dumps(trace_id))

    assert store.traces.queue_complete(60, 600, 10, make) == []  # not quiet yet
    time.sleep(0.05)
    assert store.traces.queue_complete(0.01, 600, 10, make) == ["t2"]  # t1 has no root
    assert store.tasks.get("score-t2") is not None
    store.traces.add_spans([SpanBatch("t1", "protobuf", b"\x0a\x00", 1, True)])
    time.sleep(0.05)
    assert store.traces.queue_complete(0.01, 600, 10, make) == ["t1"]
    batches, count = store.traces.span_batches("t1")
    assert batches == [("json", b'{"resourceSpans": []}'), ("protobuf", b"\x0a\x00")]
    assert count == 3
    trace = store.traces.get("t1")
    assert trace and trace.status == "queued" and trace.tags == {"env": "prod"}
    # Both wait to be scored: the intake's backlog (#32 item 6).
    assert store.traces.backlog_size() == 2
    store.traces.add_spans([SpanBatch("t3", "json", b"{}", 9, True)], max_trace_spans=5)
    assert store.traces.backlog_size() == 2  # too_large: never to be scored
    store.traces.add_spans([SpanBatch("t4", "json", b"{}", 1, False)])
    assert store.traces.backlog_size() == 3  # open: it will be
    store.close()


def test_a_trace_past_the_span_limit_is_kept_too_large_without_its_spans(db_url: str) -> None:
    store = open_store(db_url)
    kept = store.traces.add_spans(
        [SpanBatch("big", "protobuf", b"\x0a\x00", 3, True)], max_trace_spans=5
    )
    assert kept == {}  # every span kept
    store.traces.add_spans([SpanBatch("small", "json", b"{}", 5, True)], max_trace_spans=5)
    assert store.traces.span_batches("big") == ([("protobuf", b"\x0a\x00")], 3)
    not_kept = store.traces.add_spans(
        [
            SpanBatch("big", "protobuf", b"\x0a\x01", 3, False),
            SpanBatch("other", "json", b"{}", 2, False),
        ],
        max_trace_spans=5,
    )
    assert not_kept == {"big": 3}  # per trace: the spans of this call not kept
    row = store.traces.get("big")
    assert row and row.status == "too_large" and row.span_count == 6
    assert row.verdict == "unscored"  # never to be scored: not pending
    assert "more than 5 spans" in str(row.error) and "--max-trace-spans" in str(row.error)
    assert store.traces.span_batches("big") == ([], 6)  # what came before is deleted
    not_kept = store.traces.add_spans(
        [SpanBatch("big", "json", b"{}", 2, False), SpanBatch("big", "json", b"{}", 1, False)],
        max_trace_spans=5,
    )
    assert not_kept == {"big": 3}
    row = store.traces.get("big")
    assert row and row.status == "too_large" and row.span_count == 9  # counted, not kept
    assert store.traces.span_batches("big") == ([], 9)
    time.sleep(0.05)
    # Never queued for scoring; a trace at the limit is.
    assert store.traces.queue_complete(0.01, 0.01, 10, _ingest_task) == ["other", "small"]
    assert [
        t.trace_id for t in store.lists.page(TraceFilter(status="too_large"), 10, None).traces
    ] == ["big"]
    # Listed among the unscored, also once digested again (as a newer version does).
    with store.core.transaction() as cursor:
        store.core.run(cursor, "UPDATE traces SET digested = 0")
    assert store.traces.digest_pending() == 3
    unscored = store.lists.page(TraceFilter(verdict="unscored"), 10, None).traces
    assert [t.trace_id for t in unscored] == ["big"]
    store.close()


def test_span_batches_of_earlier_schemas_stay_readable(db_url: str, monkeypatch) -> None:
    """A database written before version 6 (span batches as OTLP/JSON text) migrates and
    its batches read back as OTLP/JSON, next to the batches written after."""
    from tracejudge.server.store import _core, migrations

    before = tuple(m for m in migrations.MIGRATIONS if m.version < 6)
    monkeypatch.setattr(_core, "MIGRATIONS", before)
    old = open_store(db_url)
    assert old.migrate() == before[-1].version
    old_text = '{"resourceSpans":[{"scopeSpans":[{"spans":[]}]}],"note":"caf\u00e9 é"}'
    with old.core.transaction() as cursor:  # what the intake of those versions wrote
        old.core.run(
            cursor,
            "INSERT INTO traces (trace_id, source, status, first_seen, last_span_at, "
            "root_ended, span_count) VALUES ('t', 'otlp', 'open', 1, 1, 1, 2)",
        )
        old.core.run(
            cursor,
            "INSERT INTO span_batches (trace_id, payload, received_at) VALUES ('t', ?, 1)",
            [old_text],
        )
    old.close()
    monkeypatch.undo()
    store = open_store(db_url)
    assert store.migrate() == SCHEMA_VERSION
    store.traces.add_spans([SpanBatch("t", "protobuf", b"\x0a\x00", 1, False)])
    batches, count = store.traces.span_batches("t")
    assert batches == [("json", old_text.encode("utf-8")), ("protobuf", b"\x0a\x00")]
    assert count == 3
    store.close()


def test_nul_and_lone_surrogates_are_stored_alike_on_both_stores(db_url: str) -> None:
    """PostgreSQL cannot hold NUL in text, neither store a lone surrogate: both keep U+FFFD
    in their place, in the columns, the agents list and the list's agent keys."""
    store = open_store(db_url)
    row = TraceRow(
        trace_id="t-odd",
        source="api",
        status="scored",
        first_seen=time.time(),
        last_span_at=time.time(),
        root_agent="ro\x00ot",
        agents=["ro\x00ot", "wri\ud800ter", "wri\x00ter"],
        tags={"te\x00am": "\udfffa"},
        # the list's agent keys come from the trace itself
        trace_json=agent_trace(["ro\x00ot", "wri\x00ter"]).to_json(),
    )
    store.traces.save(row)
    stored = store.traces.get("t-odd")
    assert stored is not None
    assert stored.root_agent == "ro\ufffdot"
    # the agents list read from the trace follows the same rule
    assert stored.agents == ["ro\ufffdot", "wri\ufffdter"]
    assert stored.tags == {"te\ufffdam": "\ufffda"}
    found = store.lists.page(TraceFilter(agent="wri\ufffdter"), 10, None).traces
    assert [t.trace_id for t in found] == ["t-odd"]
    assert store.traces.get("t\x00odd") is None and store.tasks.get("\ud800") is None
    store.close()


def test_retention_deletes_old_traces_with_their_rows(db_url: str) -> None:
    store = open_store(db_url)
    old, new = time.time() - 10 * 86400, time.time()
    for trace_id, when in (("old", old), ("new", new)):
        row = TraceRow(
            trace_id=trace_id,
            source="api",
            status="scored",
            first_seen=when,
            last_span_at=when,
            agents=["a"],
            tags={"k": "v"},
        )
        evaluation = EvaluationRow(
            id=f"e-{trace_id}",
            kind="trace",
            criterion="c",
            response="{}",
            overall_score=1.0,
            created_at=when,
            trace_id=trace_id,
        )
        store.traces.save(row, [evaluation])
    reward = EvaluationRow(
        id="e-reward", kind="reward", criterion="c", response="{}", overall_score=1, created_at=old
    )
    store.evaluations.save([reward])
    for trace_id, when in (("old", old), ("new", new)):
        store.labels.save(
            LabelRow(
                id=f"l-{trace_id}",
                trace_id=trace_id,
                agent="a",
                agent_instance_id="a-1",
                criterion="c",
                stance="agree",
                who="ann",
                created_at=when,
            )
        )
        store.attributions.save(AttributionRow(trace_id, ["checks"], "{}", when))
    deleted = store.traces.delete_before(time.time() - 86400)
    assert deleted == {"traces": 1, "span_batches": 0, "evaluations": 2}
    assert store.traces.delete_before(time.time() - 86400) == {
        "traces": 0,
        "span_batches": 0,
        "evaluations": 0,
    }
    assert store.traces.get("old") is None and store.traces.get("new") is not None
    assert [e.id for e in store.evaluations.of_trace("new")] == ["e-new"]
    assert [label.id for label in store.labels.all()] == ["l-new"]
    assert store.attributions.latest("old") is None and store.attributions.latest("new")
    assert store.lists.page(TraceFilter(tags=(("k", "v"),)), 10, None).traces[0].trace_id == "new"
    # what the list kept of the old trace went with it (a search for its agent finds none)
    assert [t.trace_id for t in store.lists.page(TraceFilter(), 10, None).traces] == ["new"]
    with store.core.transaction() as cursor:
        for table in (*SIDE_TABLES, "trace_docs"):
            left = store.core.run(
                cursor, f"SELECT COUNT(*) FROM {table} WHERE trace_id = ?", ["old"]
            ).fetchone()[0]
            assert left == 0, table
    assert store.tasks.queue_stats() == (0, None)
    store.tasks.enqueue(_task())
    depth, oldest = store.tasks.queue_stats()
    assert depth == 1 and oldest is not None and oldest <= time.time()
    store.close()
