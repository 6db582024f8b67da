"""The store's list on SQLite and PostgreSQL: each trace digested (times, calls, tokens, cost,
the verdict per agent), filters that read agent scores, sorting with keyset pages and a
total, full-text search, the batch overview, resource attributes apart from tags, and the
upgrade of a database written by the previous schema."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.server.stored import MODEL, agent_trace, answer, stored
from tracejudge.models import PriceTable
from tracejudge.server.store import (
    SCHEMA_VERSION,
    InvalidCursorError,
    SearchQuery,
    SearchQueryError,
    SpanBatch,
    Store,
    TraceFilter,
    TraceOrder,
    _core,
    open_store,
)
from tracejudge.server.store._query import conditions
from tracejudge.server.store.digest import PIECE_CHARS
from tracejudge.server.store.migrations import MIGRATIONS

NAMES = ["orchestrator", "researcher", "writer"]


@pytest.fixture
def store(db_url: str):
    opened = open_store(db_url)
    yield opened
    opened.close()


def _ids(store: Store, **where: object) -> set[str]:
    page = store.lists.page(TraceFilter(**where), 500, None)  # type: ignore[arg-type]
    assert page.total == len(page.traces)
    return {t.trace_id for t in page.traces}


def test_a_trace_is_digested_with_its_verdict_per_agent(store: Store) -> None:
    trace = agent_trace(NAMES, start=1_700_000_000.0)
    answers = [
        answer(trace, "final_answer", {"orchestrator": 1.0, "researcher": 1.0, "writer": 0.0}),
        answer(trace, "Reward accuracy", {"orchestrator": 0.9, "researcher": 0.8, "writer": 0.7}),
    ]
    store.traces.save(*stored("t1", trace, answers, seen=1_700_000_100.0))
    row = store.traces.get("t1")
    assert row is not None
    assert row.start_time == 1_700_000_000.0  # the first call's start, not received time
    assert row.duration == 3.0 and row.end_time == 1_700_000_003.0
    assert (row.agent_count, row.model_calls) == (3, 3)
    assert (row.input_tokens, row.output_tokens, row.tokens) == (300, 60, 360)
    assert row.models == [MODEL]
    assert row.cost == pytest.approx(3 * PriceTable().cost(MODEL, 100, 20))
    # the mean of final_answer is 0.67; the list shows the writer's 0.00, and fails it
    assert row.scores["final_answer"] == pytest.approx(2 / 3)
    assert (row.worst_score, row.worst_agent, row.worst_criterion) == (
        0.0,
        "writer",
        "final_answer",
    )
    assert (row.verdict, row.failing_agents, row.failing_pairs) == ("failed", 1, 1)


def test_unknown_models_have_tokens_and_no_cost(store: Store) -> None:
    trace = agent_trace(["solo"], model="my-finetune")
    store.traces.save(*stored("t1", trace, [answer(trace, "c", {"solo": 1.0})]))
    row = store.traces.get("t1")
    assert row is not None and row.cost is None and row.tokens == 120
    assert (row.verdict, row.worst_score, row.failing_agents) == ("passed", 1.0, 0)


def test_not_applicable_and_not_evaluated_are_neither_pass_nor_fail(store: Store) -> None:
    trace = agent_trace(["solo", "helper"])
    response = answer(trace, "c", {"solo": None, "helper": None})
    helper = response.results_by_agent_name["helper"].results_by_agent_instance_id["helper-1"]
    helper.not_evaluated, helper.score = "the budget ran out", None
    store.traces.save(*stored("t1", trace, [response]))
    row = store.traces.get("t1")
    assert row is not None and (row.verdict, row.worst_score) == ("unscored", None)
    assert _ids(store, verdict="unscored") == {"t1"}
    assert _ids(store, agent="helper", score_below=1.01) == set()
    assert _ids(store, agent="helper", score_above=0.0) == set()


@pytest.fixture
def scored(store: Store) -> Store:
    """Four traces: a's writer failed, b's researcher failed (its writer passed), c has no
    writer, d's writer failed one criterion and passed the other."""
    t = agent_trace(NAMES)
    solo = agent_trace(["orchestrator", "researcher"])
    items = [
        stored("a", t, [answer(t, "x", {"orchestrator": 1.0, "researcher": 0.9, "writer": 0.2})]),
        stored("b", t, [answer(t, "x", {"orchestrator": 1.0, "researcher": 0.1, "writer": 0.9})]),
        stored("c", solo, [answer(solo, "x", {"orchestrator": 0.6, "researcher": 0.7})]),
        stored(
            "d",
            t,
            [
                answer(t, "x", {"orchestrator": 1.0, "researcher": 1.0, "writer": 0.2}),
                answer(t, "y", {"orchestrator": 1.0, "researcher": 1.0, "writer": 0.9}),
            ],
        ),
    ]
    store.traces.save_many(items)
    return store


def test_score_filters_read_the_agent_s_score_not_a_mean(scored: Store) -> None:
    assert _ids(scored, agent="writer", score_below=0.5) == {"a", "d"}
    assert _ids(scored, score_below=0.5) == {"a", "b", "d"}  # the worst agent's score
    assert _ids(scored, agent="researcher", score_below=0.5) == {"b"}
    assert _ids(scored, agent="writer", criterion="y", score_below=0.5) == set()
    assert _ids(scored, criterion="x", score_below=0.5) == {"a", "b", "d"}
    assert _ids(scored, criterion="y") == {"d"}
    # at or above: the worst score (of the agent) is; below and above split the scored
    assert _ids(scored, agent="writer", score_above=0.5) == {"b"}
    assert _ids(scored, score_above=0.5) == {"c"}
    assert _ids(scored, agent="writer", score_above=0.1, score_below=0.5) == {"a", "d"}
    assert _ids(scored, verdict="failed") == {"a", "b", "d"}
    assert _ids(scored, verdict="passed") == {"c"}


def test_the_agent_filter_is_a_case_blind_prefix(scored: Store) -> None:
    assert _ids(scored, agent="writer") == {"a", "b", "d"}
    assert _ids(scored, agent="WRI") == {"a", "b", "d"}
    assert _ids(scored, agent="r") == {"a", "b", "c", "d"}  # researcher
    assert _ids(scored, agent="writers") == set()
    assert _ids(scored, agent="Wri", score_below=0.5) == {"a", "d"}


def test_a_prefix_of_several_names_reads_the_least_of_their_scores(store: Store) -> None:
    """`wr` is the writer and the wrangler: a trace is above a score when both are."""
    names = ["orchestrator", "writer", "Wrangler"]
    cases = {"low-writer": (0.2, 0.9), "low-wrangler": (0.9, 0.2), "both-high": (0.8, 0.7)}
    items = []
    for n, (trace_id, (writer, wrangler)) in enumerate(cases.items()):
        trace = agent_trace(names, start=1_700_000_000.0 + n)
        scores = {"orchestrator": 1.0, "writer": writer, "Wrangler": wrangler}
        items.append(stored(trace_id, trace, [answer(trace, "x", scores)]))
    store.traces.save_many(items)
    for criterion in (None, "x"):  # the worst over criteria, or that criterion's
        assert _ids(store, agent="wr", criterion=criterion, score_above=0.5) == {"both-high"}
        below = _ids(store, agent="wr", criterion=criterion, score_below=0.5)
        assert below == {"low-writer", "low-wrangler"}
        assert _ids(store, agent="wri", criterion=criterion, score_above=0.5) == {
            "low-wrangler",
            "both-high",
        }
        assert _ids(store, agent="wr", criterion=criterion) == set(cases)


def test_scoring_again_replaces_that_criterion_s_scores(scored: Store) -> None:
    t = agent_trace(NAMES)
    again = answer(t, "x", {"orchestrator": 1.0, "researcher": 0.9, "writer": 0.95})
    _, (evaluation,) = stored("a", t, [again])
    evaluation.created_at = time.time()
    scored.evaluations.save([evaluation])
    assert _ids(scored, agent="writer", score_below=0.5) == {"d"}
    row = scored.traces.get("a")
    assert row is not None and row.verdict == "passed" and row.worst_score == 0.9


def _page_ids(store: Store, order: TraceOrder, limit: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = store.lists.page(TraceFilter(), limit, cursor, order)
        assert page.total == 7 and page.offset == sum(len(p) for p in pages)
        pages.append([t.trace_id for t in page.traces])
        if page.cursor is None:
            return pages
        cursor = page.cursor


def test_sorting_by_each_column_pages_through_every_trace_once(store: Store) -> None:
    items = []
    for i, model in enumerate([MODEL, None, MODEL, "unknown", MODEL, None, MODEL]):
        trace = agent_trace(NAMES[: 1 + i % 3], start=1_700_000_000.0 + (i * 37) % 11, model=model)
        items.append(stored(f"t{i}", trace, [answer(trace, "x", {"orchestrator": i / 10})]))
    store.traces.save_many(items)
    rows = {t.trace_id: t for t in store.lists.page(TraceFilter(), 50, None).traces}
    for sort in (
        "start_time",
        "duration",
        "root_agent",
        "agents",
        "model_calls",
        "tokens",
        "cost",
        "worst_score",
        "failing",
        "status",
    ):
        for descending in (True, False):
            order = TraceOrder(sort, descending)
            whole = [t.trace_id for t in store.lists.page(TraceFilter(), 50, None, order).traces]
            pages = _page_ids(store, order, 3)
            assert [i for p in pages for i in p] == whole and len(set(whole)) == 7
            assert [len(p) for p in pages] == [3, 3, 1]
    by_cost = [
        t.trace_id
        for t in store.lists.page(TraceFilter(), 50, None, TraceOrder("cost", False)).traces
    ]
    costs = [rows[i].cost for i in by_cost]
    priced = [c for c in costs if c is not None]
    assert costs == priced + [None] * (7 - len(priced)) and priced == sorted(priced)
    by_cost_desc = store.lists.page(TraceFilter(), 50, None, TraceOrder("cost", True)).traces
    assert [t.cost for t in by_cost_desc] == sorted(priced, reverse=True) + [None] * 3
    newest = store.lists.page(TraceFilter(), 50, None).traces
    assert [t.start_time for t in newest] == sorted((t.start_time for t in newest), reverse=True)


def test_pages_go_back_and_cursors_keep_their_order(store: Store) -> None:
    store.traces.save_many(
        [stored(f"t{i}", agent_trace(["solo"], start=1_700_000_000.0 + i)) for i in range(7)]
    )
    first = store.lists.page(TraceFilter(), 3, None)
    assert [t.trace_id for t in first.traces] == ["t6", "t5", "t4"] and first.previous is None
    second = store.lists.page(TraceFilter(), 3, first.cursor)
    assert [t.trace_id for t in second.traces] == ["t3", "t2", "t1"] and second.offset == 3
    third = store.lists.page(TraceFilter(), 3, second.cursor)
    assert [t.trace_id for t in third.traces] == ["t0"] and third.cursor is None
    back = store.lists.page(TraceFilter(), 3, third.previous)
    assert [t.trace_id for t in back.traces] == ["t3", "t2", "t1"] and back.offset == 3
    start = store.lists.page(TraceFilter(), 3, back.previous)
    assert [t.trace_id for t in start.traces] == ["t6", "t5", "t4"]
    assert start.offset == 0 and start.previous is None and start.cursor is not None
    with pytest.raises(InvalidCursorError, match="sort=start_time, order=desc"):
        store.lists.page(TraceFilter(), 3, first.cursor, TraceOrder("cost", True))
    with pytest.raises(InvalidCursorError, match="handed out"):
        store.lists.page(TraceFilter(), 3, "not-a-cursor")


def test_time_range_reads_the_start_time(store: Store) -> None:
    store.traces.save_many(
        [
            stored(f"t{i}", agent_trace(["solo"], start=1_000.0 * i), seen=time.time())
            for i in range(1, 5)
        ]
    )
    assert _ids(store, since=2_000.0, until=4_000.0) == {"t2", "t3"}
    assert _ids(store, since=4_000.0) == {"t4"}


def test_full_text_search_finds_words_phrases_and_prefixes(store: Store) -> None:
    one = agent_trace(NAMES, tool_result="The lighthouse keeper_logbook says 3 ships sank")
    two = agent_trace(NAMES, tool_result="ships were seen near the lighthouse")
    failing = answer(two, "x", {"writer": 0.0}, explanation="Invented a discount of 15%")
    store.traces.save_many([stored("one", one), stored("two", two, [failing])])
    assert _ids(store, q="lighthouse") == {"one", "two"}
    assert _ids(store, q='"3 ships sank"') == {"one"}
    assert _ids(store, q='"ships sank 3"') == set()  # a phrase keeps its order
    assert _ids(store, q="LightHouse ships") == {"one", "two"}  # every word, any case
    assert _ids(store, q="keeper_logbook") == {"one"}  # one token typed, two words
    assert _ids(store, q="logb*") == {"one"}
    assert _ids(store, q='"invented a discount"') == {"two"}  # explanations too
    assert _ids(store, q="lighthouse", agent="writer", score_below=0.5) == {"two"}
    three = agent_trace(
        NAMES, tool_arguments='{"city": "Gdansk", "days": 3}', task="find a quiet harbour"
    )
    store.traces.save_many([stored("three", three)])
    assert _ids(store, q="gdansk") == {"three"}  # a tool call's arguments
    assert _ids(store, q='"quiet harbour"') == {"three"}  # a message
    assert _ids(store, q="weekend") == {"one", "two"}
    assert _ids(store, q='AND OR NOT "NEAR(x' + "'" + '"') == set()  # no syntax gets through
    with pytest.raises(SearchQueryError, match="no word"):
        store.lists.page(TraceFilter(q='" * "'), 10, None)


def test_a_search_reads_the_full_text_index_not_the_traces(store: Store) -> None:
    """The search's condition is answered by the FTS5 table or the GIN index: the plan
    names it (PostgreSQL told to avoid a sequential scan where it has a choice, as its
    planner picks one for a handful of rows)."""
    store.traces.save_many(
        [stored(f"t{i}", agent_trace(NAMES, tool_result=f"w{i}")) for i in range(5)]
    )
    side = store.core.search(SearchQuery.parse('lighthouse "3 ships"'))
    sql = f"SELECT {side.key} FROM {side.table} WHERE {side.where}"
    with store.core.transaction() as cursor:
        if store.core.dialect == "postgres":
            cursor.execute("SET LOCAL enable_seqscan = off")
            plan = store.core.run(cursor, f"EXPLAIN {sql}", side.params).fetchall()
            assert "trace_docs_search" in " ".join(r[0] for r in plan), plan
        else:
            plan = store.core.run(cursor, f"EXPLAIN QUERY PLAN {sql}", side.params).fetchall()
            text = " ".join(str(r[-1]) for r in plan)
            assert "VIRTUAL TABLE INDEX" in text and "trace_search" in text, plan


def test_a_probe_of_an_agent_s_criterion_score_seeks_that_trace(tmp_path) -> None:
    """Walking the list with a probe per trace reads that trace's rows, not every row of
    the criterion below the score (which took seconds at 100,000 traces)."""
    store = open_store(str(tmp_path / "plan.db"))
    try:
        where = TraceFilter(agent="writer", criterion="x", score_below=0.5, score_above=0.1)
        found = conditions(where, store.core.search, lambda low, high: ["writer"])
        sql, params = found.sql(probe=True)
        with store.core.transaction() as cursor:
            plan = store.core.run(
                cursor,
                f"EXPLAIN QUERY PLAN SELECT trace_id FROM traces WHERE {' AND '.join(sql)} "
                "ORDER BY start_time DESC, trace_id DESC LIMIT 5",
                params,
            ).fetchall()
        probes = [str(r[-1]) for r in plan if "agent_scores" in str(r[-1])]
        assert len(probes) == 3 and all("trace_id=?" in p for p in probes), plan  # <, >=, none <
    finally:
        store.close()


def test_a_huge_trace_is_indexed_only_up_to_its_bound(store: Store) -> None:
    huge = "alpha " + "filler " * 200_000 + "omega"
    trace = agent_trace(["solo"], tool_result=huge)
    store.traces.save(*stored("big", trace))
    assert _ids(store, q="alpha") == {"big"}
    assert _ids(store, q="omega") == set()  # past PIECE_CHARS of that result
    assert len(huge) > 100 * PIECE_CHARS


def test_the_overview_counts_failures_beside_mean_median_min_max(scored: Store) -> None:
    overview = scored.lists.overview(TraceFilter(), 1000)
    assert overview.traces == 4
    rows = {(r.agent_name, r.criterion): r for r in overview.rows}
    writer = rows[("writer", "x")]
    assert (writer.scored, writer.failing) == (3, 2)
    assert (writer.min, writer.max, writer.median) == (0.2, 0.9, 0.2)
    assert writer.mean == pytest.approx(1.3 / 3)
    researcher = rows[("researcher", "x")]
    assert researcher.median == pytest.approx(0.8)  # the mean of the middle two: 0.7, 0.9
    assert overview.rows[0].failing == 2  # the most failures first
    only = scored.lists.overview(TraceFilter(agent="writer", score_below=0.5), 1000)
    assert only.traces == 2
    assert {(r.criterion, r.failing) for r in only.rows if r.agent_name == "writer"} == {
        ("x", 2),
        ("y", 0),
    }
    latest = scored.lists.overview(TraceFilter(), 1)
    assert latest.traces == 1


def test_resource_attributes_are_kept_apart_from_tags(store: Store) -> None:
    resource = {"service.name": "checkout", "telemetry.sdk.name": "opentelemetry"}
    store.traces.add_spans(
        [
            SpanBatch(
                "t1",
                "json",
                b"{}",
                2,
                False,
                {"team": "search"},
                resource=resource,
                start=100.0,
                end=102.5,
            ),
            SpanBatch("t1", "json", b"{}", 1, True, {}, resource=resource, start=99.0, end=101.0),
        ]
    )
    row = store.traces.get("t1")
    assert row is not None
    assert row.tags == {"team": "search"} and row.resource == resource
    assert row.service == "checkout"
    assert (row.start_time, row.end_time, row.duration) == (99.0, 102.5, 3.5)
    assert row.verdict == "pending"
    assert _ids(store, service="checkout") == {"t1"}
    assert _ids(store, tags=(("team", "search"),)) == {"t1"}
    assert _ids(store, tags=(("service.name", "checkout"),)) == set()


def _previous_schema(db_url: str) -> Store:
    """A store of this code's class, to be migrated to an earlier version."""
    if db_url.startswith("postgresql://"):
        from tracejudge.server.store.postgres import PostgresCore

        return Store(PostgresCore(db_url))
    from tracejudge.server.store.sqlite import SQLiteCore

    return Store(SQLiteCore(db_url))


#: The versions before the list's migration: 2 (tasks' states), 3 (the judge's spending).
_LIST_MIGRATION = 4
_EARLIER = [m.version for m in MIGRATIONS if 2 <= m.version < _LIST_MIGRATION]


@pytest.mark.parametrize("version", _EARLIER)
def test_a_database_of_an_earlier_schema_is_upgraded_and_digested(
    db_url: str, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """A database that an earlier release's code left at `version` (its migrations are
    these, never edited) gets the list's migration and every trace digested; what it held
    (at 3: the judge's cost per evaluation and its spending per day) is kept."""
    assert [m.version for m in MIGRATIONS][:_LIST_MIGRATION] == list(range(1, _LIST_MIGRATION + 1))
    monkeypatch.setattr(_core, "MIGRATIONS", MIGRATIONS[:version])
    old = _previous_schema(db_url)
    assert old.migrate() == version
    judged = version >= 3  # evaluations.judge_cost_usd and judge_spend exist
    trace = agent_trace(NAMES, start=500.0)
    response = answer(trace, "x", {"writer": 0.1, "orchestrator": 1.0})
    with old.core.transaction() as cursor:
        for trace_id, source, trace_json in (
            ("ingested", "otlp", trace.to_json()),
            ("open", "otlp", None),
        ):
            old.core.run(
                cursor,
                "INSERT INTO traces (trace_id, source, status, first_seen, last_span_at, "
                "root_agent, agents, trace_json) VALUES (?, ?, 'scored', 900, 900, ?, ?, ?)",
                [trace_id, source, "orchestrator", json.dumps(NAMES), trace_json],
            )
            for key, value in (("service.name", "bot"), ("host.name", "box")):
                old.core.run(
                    cursor,
                    "INSERT INTO trace_tags (trace_id, key, value) VALUES (?, ?, ?)",
                    [trace_id, key, value],
                )
        old.core.run(
            cursor,
            "INSERT INTO evaluations (id, trace_id, kind, source, criterion, overall_score, "
            f"response, created_at{', judge_cost_usd' if judged else ''}) VALUES "
            f"(?, 'ingested', 'trace', 'ingest', 'x', ?, ?, 901{', 0.0125' if judged else ''})",
            [str(uuid.uuid4()), response.overall_score, response.model_dump_json()],
        )
    if judged:
        old.spend.add("2026-12-01", "x", 0.5, 1200, 3)
    old.close()
    monkeypatch.undo()
    store = open_store(db_url)
    try:
        assert store.migrate() == SCHEMA_VERSION
        row = store.traces.get("ingested")
        assert row is not None
        assert row.tags == {} and row.resource == {"service.name": "bot", "host.name": "box"}
        assert row.service == "bot" and row.start_time == 500.0 and row.model_calls == 3
        assert (row.verdict, row.worst_agent, row.worst_score) == ("failed", "writer", 0.1)
        assert _ids(store, agent="Writer", score_below=0.5) == {"ingested"}
        assert _ids(store, q="weekend") == {"ingested"}
        waiting = store.traces.get("open")
        assert waiting is not None and waiting.start_time == 900.0
        assert waiting.verdict == "pending"
        if judged:
            assert row.judge_cost_usd == pytest.approx(0.0125)
            (listed,) = store.lists.page(TraceFilter(agent="writer"), 10, None).traces
            assert listed.judge_cost_usd == pytest.approx(0.0125)
            day, criterion = store.spend.of_day("2026-12-01", "x")
            assert (day.cost_usd, day.tokens, day.calls) == (0.5, 1200, 3)
            assert (criterion.cost_usd, criterion.tokens, criterion.calls) == (0.5, 1200, 3)
        # the upgrade is recorded once per version, in order
        with store.core.transaction() as cursor:
            versions = [
                r[0]
                for r in store.core.run(
                    cursor, "SELECT version FROM schema_migrations ORDER BY version"
                ).fetchall()
            ]
        assert versions == [m.version for m in MIGRATIONS]
    finally:
        store.close()


def test_every_way_of_reading_a_filter_gives_the_same_traces(store: Store) -> None:
    """Sets, probes (a walk in the list's order, chosen when many traces match and a page
    is small) and a driving set with probes (several conditions) agree, page by page."""
    items = []
    for i in range(30):
        names = ["orchestrator", "researcher", "writer" if i % 3 else "Writer", "editor"][
            : 2 + i % 3
        ]
        trace = agent_trace(
            names,
            start=1_700_000_000.0 + i,
            tool_result=("rain in Porto" if i % 4 else "sun in Lisbon") + f" ref{i}",
        )
        scores = {n: ((i * 7 + k * 3) % 11) / 10 for k, n in enumerate(names)}
        answers = [answer(trace, "x", scores), answer(trace, "y", {names[-1]: (i % 5) / 4})]
        items.append(stored(f"t{i:02d}", trace, answers, tags={"team": "ab"[i % 2]}))
    store.traces.save_many(items)
    filters = [
        TraceFilter(agent="writer"),
        TraceFilter(agent="w", score_below=0.5),
        TraceFilter(agent="e", score_above=0.3),
        TraceFilter(criterion="x", score_below=0.6),
        TraceFilter(criterion="y", score_above=0.5),
        TraceFilter(criterion="x", agent="writer", score_above=0.2, score_below=0.9),
        TraceFilter(q="porto"),
        TraceFilter(q="porto", tags=(("team", "a"),)),
        TraceFilter(q="ref7", agent="wri"),
        TraceFilter(q="rain", criterion="x", agent="res", score_below=0.8),
        TraceFilter(tags=(("team", "b"),), verdict="failed", since=1_700_000_005.0),
    ]
    for where in filters:
        whole = store.lists.page(where, 500, None)
        assert whole.total == len(whole.traces)
        for order in (TraceOrder(), TraceOrder("start_time", False), TraceOrder("cost", False)):
            expected = [t.trace_id for t in store.lists.page(where, 500, None, order).traces]
            for limit in (1, 4):
                seen, cursor = [], None
                while True:
                    page = store.lists.page(where, limit, cursor, order)
                    assert page.total == whole.total, where
                    seen += [t.trace_id for t in page.traces]
                    if page.cursor is None:
                        break
                    cursor = page.cursor
                assert seen == expected, (where, order, limit)
        assert store.lists.overview(where, 1000).traces == whole.total
