"""The list of stored traces end to end: planted-fault traffic (tests/server/fault_traffic.py:
the real `openai` client, traced, sent by the standard OTLP exporter) into a real server
(`python -m tracejudge.server` under uvicorn, checks only) on SQLite and on PostgreSQL, read
back through `GET /api/v1/traces` and `GET /ui`; escaping and bad input; the page in
headless Chromium, with a search for a phrase of one trace's tool result and a screenshot."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest

from tests.chromium import ARTIFACTS, chromium, keep, needs_chromium
from tests.server.fault_traffic import FAULTS, UNIQUE_PHRASE
from tests.server.harness import ServerProcess, server_env, wait_for
from tests.server.postgres import Cluster
from tests.server.stored import agent_trace, answer, stored
from tracejudge.models import MultiAgentTraceResponse, TraceVerdict
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig
from tracejudge.server.store import open_store

ROOT = Path(__file__).resolve().parents[2]
RUNS = 2 * len(FAULTS)
_ROW = re.compile(r'<tr class="(failed|ok)"><td><a href="/ui/traces/([0-9a-f]+)">')


@dataclass
class Planted:
    server: ServerProcess
    runs: list[dict[str, str]]  # in the order they ran: trace_id, fault, writer

    def ids(self, *faults: str) -> set[str]:
        return {r["trace_id"] for r in self.runs if r["fault"] in faults}

    def api(self, **params: object) -> dict:
        answer = httpx.get(
            f"{self.server.url}/api/v1/traces",
            params={"limit": 500, **params},  # type: ignore[arg-type]
            headers=self.server.headers,
        )
        assert answer.status_code == 200, answer.text
        return answer.json()  # type: ignore[no-any-return]

    def listed(self, **params: object) -> set[str]:
        body = self.api(**params)
        assert body["total"] == len(body["traces"])
        return {t["trace_id"] for t in body["traces"]}

    def page(self, **params: object) -> str:
        answer = httpx.get(
            f"{self.server.url}/ui",
            params={"limit": 500, **params},  # type: ignore[arg-type]
            headers=self.server.headers,
        )
        assert answer.status_code == 200, answer.text
        return answer.text

    def rows(self, **params: object) -> list[tuple[str, str]]:
        return [(m.group(2), m.group(1)) for m in _ROW.finditer(self.page(**params))]


def _send_traffic(server: ServerProcess) -> list[dict[str, str]]:
    env = server_env()
    env["PYTHONPATH"] = f"{ROOT}:{env['PYTHONPATH']}"
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{server.url}/v1/traces"
    env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
    env["OTEL_SERVICE_NAME"] = "trip-planner"
    env["OTEL_RESOURCE_ATTRIBUTES"] = "tracejudge.tags.batch=e2e,deployment.environment=test"
    done = subprocess.run(
        [sys.executable, "-m", "tests.server.fault_traffic", "--runs", str(RUNS)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def planted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Planted]:
    folder = tmp_path_factory.mktemp("list")
    if request.param == "sqlite":
        db = str(folder / "list.db")
    else:
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        db = cluster.database()
    # no API key: on loopback the API and the pages are open (the browser needs no sign-in)
    server = ServerProcess(
        db, args=["--trace-quiet-seconds", "0.5"], api_key=None, log=folder / "log"
    )
    server.start()
    try:
        runs = _send_traffic(server)
        site = Planted(server, runs)
        wait_for(lambda: site.api(status="scored")["total"] == RUNS, timeout=90)
        yield site
    finally:
        server.stop()


def _latest_answers(site: Planted, trace_id: str) -> list[MultiAgentTraceResponse]:
    stored = httpx.get(
        f"{site.server.url}/api/v1/traces/{trace_id}", headers=site.server.headers
    ).json()
    latest = {e["criterion"]: e["response"] for e in stored["evaluations"]}
    return [MultiAgentTraceResponse.model_validate(r) for r in latest.values()]


def test_every_trace_with_a_failing_agent_shows_as_failing(planted: Planted) -> None:
    listed = {t["trace_id"]: t for t in planted.api()["traces"]}
    assert set(listed) == {r["trace_id"] for r in planted.runs}
    for run in planted.runs:
        verdict = TraceVerdict.of(_latest_answers(planted, run["trace_id"]))
        shown = listed[run["trace_id"]]
        assert (
            shown["verdict"]
            == verdict.status
            == ("passed" if run["fault"] == "clean" else "failed")
        )
        assert shown["failing_agents"] == verdict.failing_agents
        assert shown["worst_score"] == verdict.worst_score
    failing = planted.ids(*(f for f in FAULTS if f != "clean"))
    rows = planted.rows()
    assert {trace_id for trace_id, kind in rows if kind == "failed"} == failing
    assert {trace_id for trace_id, kind in rows if kind == "ok"} == planted.ids("clean")
    # one failing agent among three: red, counted, with the writer named as the worst
    cut = planted.ids("writer_cutoff").pop()
    assert listed[cut]["worst_agent"] == "writer" and listed[cut]["worst_score"] == 0.0
    assert (listed[cut]["failing_agents"], listed[cut]["agent_count"]) == (1, 3)
    row = planted.page().split(f'href="/ui/traces/{cut}"', 1)[1].split("</tr>", 1)[0]
    assert '<td class="n bad" title="writer on final_answer">0.00 writer</td>' in row
    assert '<td class="n bad" title="1 pair">1 of 3</td>' in row


def test_a_trace_s_api_answer_carries_its_verdict_in_full(planted: Planted) -> None:
    for run in planted.runs:
        stored = httpx.get(
            f"{planted.server.url}/api/v1/traces/{run['trace_id']}", headers=planted.server.headers
        ).json()
        verdict = TraceVerdict.of(_latest_answers(planted, run["trace_id"]))
        assert stored["failures"] == [f.model_dump(mode="json") for f in verdict.failures]
        assert stored["worst"] == (verdict.worst.model_dump(mode="json") if verdict.worst else None)
        assert len(stored["failures"]) == stored["failing_pairs"]
    # the cut-off writer: one failing pair naming the instance, its score and the step
    cut = planted.ids("writer_cutoff").pop()
    stored = httpx.get(
        f"{planted.server.url}/api/v1/traces/{cut}", headers=planted.server.headers
    ).json()
    agents = stored["trace"]["agent_instance_by_id"]
    (writer,) = [key for key, agent in agents.items() if agent["name"] == "writer"]
    (failure,) = stored["failures"]
    assert (failure["agent_name"], failure["criterion"], failure["score"]) == (
        "writer",
        "final_answer",
        0.0,
    )
    assert failure["agent_instance_id"] == stored["worst"]["agent_instance_id"] == writer
    assert "cut off" in failure["explanation"] and failure["steps"] == [{"interaction": 0}]


def test_agent_and_score_below_return_exactly_the_traces_whose_writer_scored_below(
    planted: Planted,
) -> None:
    expected = set()
    for run in planted.runs:
        for response in _latest_answers(planted, run["trace_id"]):
            for result in response.results_by_agent_name.values():
                if result.agent_name.lower() != "writer":
                    continue
                scores = [a.score for a in result.results_by_agent_instance_id.values() if a]
                if any(s is not None and s < 0.5 for s in scores):
                    expected.add(run["trace_id"])
    assert expected == planted.ids("writer_cutoff", "Writer_cutoff") and len(expected) == 4
    assert planted.listed(agent="writer", score_below=0.5) == expected
    assert {i for i, _ in planted.rows(agent="writer", score_below=0.5)} == expected
    # case-blind prefix
    assert planted.listed(agent="WRI", score_below="0.5") == expected
    assert planted.listed(agent="Writer") == {r["trace_id"] for r in planted.runs}
    assert planted.listed(agent="writers") == set()
    # the researcher's 0.67 fails its check's bar but is not below 0.5
    assert planted.listed(agent="researcher", score_below=0.5) == set()
    assert planted.listed(agent="researcher", score_below=1) == planted.ids("researcher_bad_args")
    # without agent=: the worst agent score
    assert planted.listed(score_below=0.5) == expected
    assert planted.listed(score_above=1) == planted.ids("clean")


def test_the_criterion_filter_reads_that_criterion_s_agent_scores(planted: Planted) -> None:
    assert planted.listed(criterion="tool_arguments", score_below=1) == planted.ids(
        "researcher_bad_args"
    )
    assert planted.listed(criterion="grounded_numbers", score_below=1) == planted.ids(
        "writer_ungrounded"
    )
    assert planted.listed(criterion="final_answer", agent="w", score_below=0.5) == planted.ids(
        "writer_cutoff", "Writer_cutoff"
    )
    assert planted.listed(criterion="no such criterion") == set()
    assert planted.listed(verdict="failed", criterion="final_answer", score_above=1) == planted.ids(
        "researcher_bad_args", "writer_ungrounded"
    )


def test_a_tag_the_list_shows_filters_when_pasted(planted: Planted) -> None:
    cut = planted.ids("researcher_bad_args")
    trace_id = sorted(cut)[0]
    page = planted.page()
    row = page.split(f'href="/ui/traces/{trace_id}"', 1)[1].split("</tr>", 1)[0]
    shown = re.findall(r'<a class="tag" href="([^"]+)">([^<]+)</a>', row)
    assert [text for _, text in shown] == ["batch:e2e", "fault:researcher_bad_args"]
    for text in ("fault:researcher_bad_args", "fault=researcher_bad_args"):
        assert planted.listed(tag=text) == cut
        assert {i for i, _ in planted.rows(tag=text)} == cut
    # the tag's own link filters by it too
    href = dict((t, h) for h, t in shown)["fault:researcher_bad_args"].replace("&amp;", "&")
    assert "tag=fault%3Aresearcher_bad_args" in href
    followed = httpx.get(planted.server.url + href, headers=planted.server.headers).text
    assert {m.group(2) for m in _ROW.finditer(followed)} == cut
    both = planted.listed(tag=["batch:e2e", "fault:clean"])  # every tag given must hold
    assert both == planted.ids("clean")
    # resource attributes are apart: the service is shown as such, the SDK's are not tags
    assert "telemetry.sdk" not in page and "<td>trip-planner</td>" in page
    assert planted.listed(service="trip-planner") == {r["trace_id"] for r in planted.runs}
    assert planted.listed(tag="service.name:trip-planner") == set()


def test_sorting_and_pages_with_the_total(planted: Planted) -> None:
    in_order = [r["trace_id"] for r in planted.runs]  # they ran one after the other
    seen, cursor, pages = [], None, []
    while True:
        body = planted.api(
            sort="start_time", order="asc", limit=3, **({"cursor": cursor} if cursor else {})
        )
        assert body["total"] == RUNS and body["offset"] == len(seen)
        pages.append(body)
        seen += [t["trace_id"] for t in body["traces"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == in_order and len(pages) == 4
    back = planted.api(sort="start_time", order="asc", limit=3, cursor=pages[-1]["previous_cursor"])
    assert [t["trace_id"] for t in back["traces"]] == in_order[6:9] and back["offset"] == 6
    newest = planted.api()["traces"]
    assert [t["trace_id"] for t in newest] == in_order[::-1]  # start time, newest first
    by_tokens = planted.api(sort="tokens", order="desc")["traces"]
    tokens = [t["tokens"] for t in by_tokens]
    assert tokens == sorted(tokens, reverse=True) and tokens[0] > tokens[-1]
    # the page: a header sorts, the next page continues, the count says where we are
    page = planted.page(limit=4)
    assert "1–4 of <b>10</b> traces" in page
    (tokens_link,) = re.findall(r'<a href="(/ui\?[^"]*sort=tokens[^"]*)"', page)
    sorted_page = httpx.get(
        planted.server.url + tokens_link.replace("&amp;", "&"), headers=planted.server.headers
    ).text
    assert [m.group(2) for m in _ROW.finditer(sorted_page)] == [
        t["trace_id"] for t in by_tokens[:4]
    ]
    (following,) = re.findall(r'<a href="([^"]+)" rel="next">', sorted_page)
    second = httpx.get(
        planted.server.url + following.replace("&amp;", "&"), headers=planted.server.headers
    ).text
    assert [m.group(2) for m in _ROW.finditer(second)] == [t["trace_id"] for t in by_tokens[4:8]]
    assert "5–8 of <b>10</b> traces" in second and 'rel="prev"' in second
    assert "sort=tokens" in unquote(following)


def test_time_range_filters_on_start_time(planted: Planted) -> None:
    traces = {t["trace_id"]: t for t in planted.api()["traces"]}
    ordered = [traces[r["trace_id"]] for r in planted.runs]
    assert all(t["start_time"] < t["first_seen"] for t in ordered)  # not received time
    fourth = ordered[4]["start_time"]
    later = planted.listed(since=fourth)
    assert later == {t["trace_id"] for t in ordered[4:]}
    assert planted.listed(until=fourth) == {t["trace_id"] for t in ordered[:4]}
    between = (ordered[3]["start_time"] + fourth) / 2
    moment = datetime.fromtimestamp(between, tz=timezone.utc)
    assert planted.listed(since=moment.isoformat().replace("+00:00", "Z")) == later
    assert planted.listed(since=str(between)) == later


def test_status_and_search_filter_through_the_api(planted: Planted) -> None:
    everything = {r["trace_id"] for r in planted.runs}
    assert planted.listed(status="scored") == everything
    assert planted.listed(status="open") == set()
    first = planted.runs[0]["trace_id"]
    assert planted.listed(q=f'"{UNIQUE_PHRASE}"') == {first}  # a tool result's phrase
    assert planted.listed(q="marmalade alfama") == {first}  # its words, any order
    assert planted.listed(q="marmal*") == {first}
    assert planted.listed(q=f'"{UNIQUE_PHRASE}"', verdict="failed") == set()  # run 0: clean
    assert planted.listed(q="Lisbon") == everything  # in every run's messages
    # a tool call's argument: max_price "cheap", only where the researcher got it wrong
    assert planted.listed(q="cheap") == planted.ids("researcher_bad_args")
    # an explanation: tool_results' note on the call tool_arguments failed
    phrase = '"the call itself is invalid"'
    assert planted.listed(q=phrase) == planted.ids("researcher_bad_args")


def test_the_overview_counts_failing_writers(planted: Planted) -> None:
    body = httpx.get(f"{planted.server.url}/api/v1/overview", headers=planted.server.headers).json()
    assert body["traces"] == RUNS
    rows = {(r["agent_name"], r["criterion"]): r for r in body["rows"]}
    assert rows[("writer", "final_answer")]["failing"] == 2
    assert rows[("writer", "final_answer")]["scored"] == 8
    assert rows[("writer", "final_answer")]["min"] == 0.0
    assert rows[("Writer", "final_answer")]["failing"] == 2
    assert rows[("researcher", "tool_arguments")]["failing"] == 2
    page = planted.page()
    assert (
        '<td>writer</td><td title="final_answer">final_answer</td><td class="n bad">2 of 8</td>'
        in page
    )


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"score_below": "2"}, "score_below"),
        ({"score_above": "low"}, "score_above"),
        ({"sort": "size"}, "sort"),
        ({"order": "up"}, "order"),
        ({"since": "yesterday"}, "since"),
        ({"tag": "novalue"}, "tag"),
        ({"verdict": "bad"}, "verdict"),
        ({"limit": "0"}, "limit"),
        ({"agnet": "writer"}, "agnet"),
        ({"agent": ["a", "b"]}, "agent"),
        ({"q": '"  "'}, "q"),
        ({"cursor": "nope"}, "cursor"),
        ({"agent": "wri\x00ter"}, "agent"),
    ],
)
def test_bad_input_is_a_422_naming_the_parameter(
    planted: Planted, params: dict, named: str
) -> None:
    url, headers = planted.server.url, planted.server.headers
    api = httpx.get(f"{url}/api/v1/traces", params=params, headers=headers)
    assert api.status_code == 422, api.text
    assert api.json()["detail"].startswith(f"query parameter {named}: ")
    assert api.json()["errors"][0]["loc"] == ["query", named]
    page = httpx.get(f"{url}/ui", params=params, headers=headers)
    assert page.status_code == 422 and f"query parameter {named}: " in page.text
    assert '<form class="filters"' in page.text  # the form, to fix it


def test_a_cursor_of_another_order_is_refused(planted: Planted) -> None:
    cursor = planted.api(limit=2)["next_cursor"]
    answer = httpx.get(
        f"{planted.server.url}/api/v1/traces",
        params={"cursor": cursor, "sort": "cost"},
        headers=planted.server.headers,
    )
    assert answer.status_code == 422 and "sort=start_time, order=desc" in answer.text


def test_the_root_leads_to_the_list(tmp_path: Path) -> None:
    key = "list-test-key"
    config = ServerConfig(port=0, db=str(tmp_path / "k.db"), api_keys=(key,), log_level="warning")
    with BackgroundServer(config, checks_only=True) as server:
        answer = httpx.get(f"{server.url}/", follow_redirects=False)  # no key needed to be led
        assert answer.status_code == 307 and answer.headers["location"] == "/ui"
        assert httpx.get(f"{server.url}/ui").status_code == 401  # the list still wants one
        followed = httpx.get(f"{server.url}/", headers={"API-Key": key}, follow_redirects=True)
        assert followed.status_code == 200 and "tracejudge: stored traces" in followed.text


# --------------------------------------------------------------------------- markup, Chromium

HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server (in a thread) holding a trace whose names, tags and criteria hold markup."""
    db = str(tmp_path_factory.mktemp("hostile") / "h.db")
    trace = agent_trace(["orchestrator", f"{HOSTILE}writer"])
    store = open_store(db)
    store.traces.save(
        *stored(
            "a" * 32,
            trace,
            [answer(trace, f"Reward {HOSTILE}", {f"{HOSTILE}writer": 0.1})],
            tags={"team": "<b>search</b>", "x": '"quoted"'},
        )
    )
    store.close()
    config = ServerConfig(port=0, db=db, log_level="warning")
    with BackgroundServer(config, checks_only=True) as server:
        yield server.url


def test_every_text_is_escaped_and_no_script_runs(hostile: str) -> None:
    answer = httpx.get(f"{hostile}/ui", params={"agent": '"><script>'})
    assert answer.status_code == 200
    policy = answer.headers["content-security-policy"]
    assert "script-src" not in policy and "default-src 'none'" in policy
    assert "No stored trace matches." in answer.text
    assert 'value="&quot;&gt;&lt;script&gt;"' in answer.text
    page = httpx.get(f"{hostile}/ui").text
    assert "<script" not in page and HOSTILE not in page and "<b>search</b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;writer" in page
    assert ">team:&lt;b&gt;search&lt;/b&gt;</a>" in page and "x:&quot;quoted&quot;" in page
    assert re.search(r'title="Reward &lt;img src=x onerror=alert\(1\)&gt;"', page)


@needs_chromium
def test_the_list_in_chromium_finds_a_phrase_of_one_tool_result(
    planted: Planted, tmp_path: Path
) -> None:
    # on both stores: the search is FTS5 on one and a tsvector on the other
    server = planted.server
    kind = "postgres" if server.db.startswith("postgresql://") else "sqlite"
    dom, console = chromium(f"{server.url}/ui", tmp_path / "profile", "--dump-dom")
    assert console == ""
    assert len(_ROW.findall(dom)) == RUNS and "Per agent and criterion" in dom
    search = f'{server.url}/ui?q="{UNIQUE_PHRASE}"'
    dom, console = chromium(search, tmp_path / "profile", "--dump-dom")
    assert console == ""
    (first,) = [r["trace_id"] for r in planted.runs[:1]]
    assert [m.group(2) for m in _ROW.finditer(dom)] == [first]
    assert f'value="&quot;{UNIQUE_PHRASE}&quot;"' in dom  # the search box keeps it
    for name, url in (
        (f"list-page-{kind}.png", f"{server.url}/ui"),
        (f"list-writer-below-half-{kind}.png", f"{server.url}/ui?agent=writer&score_below=0.5"),
    ):
        shot = tmp_path / name
        chromium(url, tmp_path / "profile", f"--screenshot={shot}")
        assert shot.stat().st_size > 20_000  # a page with content, not a blank one
        keep(shot)
        assert (ARTIFACTS / name).stat().st_size == shot.stat().st_size
