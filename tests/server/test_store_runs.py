"""Experiment runs in the store, on SQLite and PostgreSQL: a run and its results stored
again replaced (a retried upload stores each once), results read in the run's order,
runs paged newest first by cursor and found by name, migration 9 applied to a database
migrated before it."""

from __future__ import annotations

import json

import pytest

from tracejudge.server.store import (
    SCHEMA_VERSION,
    RunCursorError,
    RunResultRow,
    RunRow,
    open_store,
)


def _run(run_id: str, name: str = "nightly", at: float = 1000.0, **record: object) -> RunRow:
    return RunRow(run_id, name, json.dumps({"name": name, **record}), at)


def _result(run_id: str, row: str, repeat: int, position: int, passed: bool) -> RunResultRow:
    body = {"id": row, "repeat": repeat, "scores": [{"passed": passed}]}
    return RunResultRow(run_id, row, repeat, position, json.dumps(body), f"t-{row}-{repeat}")


def test_a_run_and_its_results_are_kept_replaced_and_read_in_order(db_url: str) -> None:
    store = open_store(db_url)
    try:
        store.runs.save(_run("r1", params={"model": "a"}))
        store.runs.add_results([_result("r1", f"row{n}", 0, 2 - n, True) for n in range(3)])
        # the upload retried: the same results again, one changed, and the record again
        store.runs.add_results([_result("r1", "row1", 0, 1, False)])
        store.runs.save(_run("r1", params={"model": "b"}, at=5000.0))
        store.runs.add_results([_result("r2", "row0", 0, 0, True)])
        run = store.runs.get("r1")
        assert run is not None
        assert run.results == 3
        assert json.loads(run.record)["params"] == {"model": "b"}
        assert run.created_at == 1000.0  # stored again: its time stays
        results = store.runs.results("r1")
        assert [(r.row_id, r.position) for r in results] == [
            ("row2", 0),
            ("row1", 1),
            ("row0", 2),
        ]
        assert json.loads(results[1].result)["scores"] == [{"passed": False}]
        assert results[1].trace_id == "t-row1-0"
        assert store.runs.get("unknown") is None
        assert store.runs.results("unknown") == []
        store.runs.add_results([])  # nothing to store: no transaction, no error
    finally:
        store.close()


def test_runs_page_newest_first_and_are_found_by_name(db_url: str) -> None:
    store = open_store(db_url)
    try:
        for n in range(5):
            store.runs.save(_run(f"r{n}", name="nightly" if n % 2 else "pr", at=1000.0 + n))
        store.runs.save(_run("r5", name="pr", at=1004.0))  # the same time as r4: by id
        first = store.runs.page(2, None)
        assert [r.id for r in first.runs] == ["r5", "r4"]
        second = store.runs.page(2, first.cursor)
        assert [r.id for r in second.runs] == ["r3", "r2"]
        third = store.runs.page(2, second.cursor)
        assert [r.id for r in third.runs] == ["r1", "r0"]
        assert third.cursor is None
        assert [r.id for r in store.runs.page(10, None, name="nightly").runs] == ["r3", "r1"]
        latest = store.runs.latest_named("pr")
        assert latest is not None and latest.id == "r5"
        assert store.runs.latest_named("nobody") is None
        with pytest.raises(RunCursorError, match="next_cursor"):
            store.runs.page(2, "not-a-cursor")
    finally:
        store.close()


def test_a_store_migrated_before_runs_gets_them(tmp_path: object) -> None:
    import sqlite3
    from pathlib import Path

    from tracejudge.server.store.migrations import MIGRATIONS

    path = Path(str(tmp_path)) / "old.db"
    store = open_store(str(path))
    store.close()
    connection = sqlite3.connect(path)  # as a version before runs left it
    connection.execute("DROP TABLE run_results")
    connection.execute("DROP TABLE runs")
    connection.execute("DELETE FROM schema_migrations WHERE version = 9")
    connection.commit()
    connection.close()
    store = open_store(str(path))
    try:
        assert store.migrate() == SCHEMA_VERSION == max(m.version for m in MIGRATIONS)
        store.runs.save(_run("r1"))
        assert store.runs.get("r1") is not None
    finally:
        store.close()


def test_a_rows_trace_and_answers_are_stored_with_it_once(db_url: str) -> None:
    from tracejudge.models import (
        AgentInstance,
        AgentTraceResult,
        LLMInput,
        LLMInteraction,
        LLMOutput,
        MultiAgentTrace,
        MultiAgentTraceResponse,
        ScoreResponse,
    )
    from tracejudge.server.store import RUN_SOURCE, EvaluationRow, TraceRow

    trace = MultiAgentTrace(
        root_agent_instance_id="a1",
        agent_instance_by_id={
            "a1": AgentInstance(
                id="a1",
                name="writer",
                interactions=[
                    LLMInteraction(
                        input_messages=[LLMInput(role="user", content="q")],
                        output_messages=[LLMOutput(content="a")],
                    )
                ],
            )
        },
    )
    answer = MultiAgentTraceResponse(
        request_id="x",
        criterion="exact",
        results_by_agent_name={
            "writer": AgentTraceResult(
                agent_name="writer",
                results_by_agent_instance_id={"a1": ScoreResponse(score=0.0, explanation="no")},
            )
        },
    )
    row = TraceRow(
        trace_id="t1",
        source=RUN_SOURCE,
        status="scored",
        first_seen=1.0,
        last_span_at=1.0,
        root_agent="writer",
        agents=["writer"],
        trace_json=trace.to_json(),
        tags={"run": "r1"},
    )

    def evaluation(n: int) -> EvaluationRow:
        return EvaluationRow(
            f"e{n}", "trace", "exact", answer.model_dump_json(), 0.0, 1.0, "t1", RUN_SOURCE
        )

    store = open_store(db_url)
    try:
        store.runs.save(_run("r1"))
        store.runs.add_results([_result("r1", "row0", 0, 0, False)], [(row, [evaluation(1)])])
        store.runs.add_results([_result("r1", "row0", 0, 0, False)], [(row, [evaluation(2)])])
        stored = store.traces.get("t1")
        assert stored is not None and stored.tags == {"run": "r1"}
        assert [e.id for e in store.evaluations.of_trace("t1")] == ["e2"]  # retried: replaced
        assert stored.verdict == "failed"  # the list's columns computed from the answer
    finally:
        store.close()
