"""Trends end to end: planted-fault traffic (the real `openai` client, traced, sent by the
standard OTLP exporter) from two versions of one service into a real server (checks only),
read back through `GET /api/v1/trends` and compared with what the traces' own answers
say; bad input; the trends page with its inline SVG charts in headless Chromium (a
screenshot kept as a test artifact)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.cdp import Browser
from tests.chromium import keep, needs_chromium
from tests.server.fault_traffic import FAULTS
from tests.server.harness import QUIET_SECONDS, InProcessServer, server_env, wait_for
from tests.server.stored import agent_trace, answer, stored
from tracejudge.models import MultiAgentTraceResponse
from tracejudge.server.store import open_store

pytestmark = pytest.mark.xdist_group("trends")

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("1.0", "1.1")
FINAL = "final_answer"


@dataclass
class Site:
    server: InProcessServer
    runs: int

    def get(self, path: str, **params: object) -> httpx.Response:
        return httpx.get(f"{self.server.url}{path}", params=params, timeout=30)  # type: ignore[arg-type]

    def trends(self, **params: object) -> dict:
        answer = self.get("/api/v1/trends", **params)
        assert answer.status_code == 200, answer.text
        return answer.json()  # type: ignore[no-any-return]


def _send(server: InProcessServer, version: str, runs: int) -> None:
    env = server_env()
    env["PYTHONPATH"] = f"{ROOT}:{env['PYTHONPATH']}"
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{server.url}/v1/traces"
    env["OTEL_SERVICE_NAME"] = "trip-planner"
    env["OTEL_RESOURCE_ATTRIBUTES"] = f"service.version={version}"
    subprocess.run(
        [sys.executable, "-m", "tests.server.fault_traffic", "--runs", str(runs)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=180,
        check=True,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("trends")
    server = InProcessServer(
        str(folder / "trends.db"),
        args=["--trace-quiet-seconds", QUIET_SECONDS],
        api_key=None,  # loopback, no key: the browser needs no sign-in
        log=folder / "log",
    )
    server.start()
    try:
        # version 1.0 runs every fault once; 1.1 runs the clean run and the writer's cutoff
        _send(server, VERSIONS[0], len(FAULTS))
        _send(server, VERSIONS[1], 2)
        runs = len(FAULTS) + 2
        site = Site(server, runs)

        def scored() -> bool:
            listed = site.get("/api/v1/traces", status="scored", limit=500).json()
            return bool(listed["total"] == runs)

        wait_for(scored, timeout=90)
        yield site
    finally:
        server.stop()


def _writer_counts(site: Site) -> dict[str, tuple[int, int]]:
    """Per version: (writer instances failing final_answer, writer instances scored on it),
    from each trace's latest answers."""
    found: dict[str, tuple[int, int]] = {}
    for listed in site.get("/api/v1/traces", limit=500).json()["traces"]:
        trace = site.get(f"/api/v1/traces/{listed['trace_id']}").json()
        version = trace["resource"]["service.version"]
        latest = {e["criterion"]: e["response"] for e in trace["evaluations"]}
        response = MultiAgentTraceResponse.model_validate(latest[FINAL])
        failing, scored = found.get(version, (0, 0))
        for result in response.results_by_agent_name.values():
            if result.agent_name != "writer":  # as named ("Writer" is another agent)
                continue
            for given in result.results_by_agent_instance_id.values():
                if given is not None and given.score is not None:
                    scored += 1
                    failing += int(given.score < response.bar())
        found[version] = (failing, scored)
    return found


def test_failure_rate_per_version_matches_the_traces_answers(site: Site) -> None:
    expected = _writer_counts(site)
    assert expected["1.0"][0] >= 1 and expected["1.1"][0] >= 1  # the cutoffs fail
    body = site.trends(agent="writer", criterion=FINAL, grain="day", by="version")
    assert [s["group"] for s in body["series"]] == list(VERSIONS)
    for series in body["series"]:
        failing = sum(series["counts"]["failing"])
        scored = sum(series["counts"]["scored"])
        assert (failing, scored) == expected[series["group"]]
        rates = [
            rate
            for rate, n in zip(
                series["metrics"]["failure_rate"], series["counts"]["scored"], strict=True
            )
            if n
        ]
        assert rates and all(0.0 < r <= 1.0 for r in rates)
        # a bucket with nothing scored has no rate (null), not a zero
        assert all(
            rate is None
            for rate, n in zip(
                series["metrics"]["failure_rate"], series["counts"]["scored"], strict=True
            )
            if not n
        )


def test_volume_and_latency_count_every_scored_trace(site: Site) -> None:
    body = site.trends(grain="hour")
    (series,) = body["series"]
    assert series["group"] is None
    metrics, counts = series["metrics"], series["counts"]
    assert sum(metrics["volume"]) == sum(counts["traces"]) == site.runs
    busy = [i for i, n in enumerate(counts["traces"]) if n]
    assert busy and all(metrics["latency_p50"][i] is not None for i in busy)
    assert all(metrics["latency_p50"][i] <= metrics["latency_p95"][i] for i in busy)
    # the buckets follow each other by the hour, every column one value per bucket
    buckets = series["buckets"]
    assert all(b - a == 3600 for a, b in zip(buckets, buckets[1:], strict=False))
    assert {len(v) for v in [*metrics.values(), *counts.values()]} == {len(buckets)}


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"grain": "week"}, "grain"),
        ({"by": "colour"}, "by"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2020-01-01", "grain": "hour"}, "since"),
        ({"since": "2030-01-01", "until": "2029-01-01"}, "since"),
        ({"metric": "x"}, "metric"),
    ],
)
def test_bad_input_is_a_422_naming_the_parameter(
    site: Site, params: dict[str, str], named: str
) -> None:
    answer = site.get("/api/v1/trends", **params)
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith(f"query parameter {named}: ")


def test_the_page_draws_its_charts_inline(site: Site) -> None:
    answer = site.get("/ui/trends", agent="writer", criterion=FINAL, by="version", grain="day")
    assert answer.status_code == 200
    page = answer.text
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg"') == 7
    assert "<script" not in page and 'src="' not in page  # nothing fetched, nothing run
    assert "/ui?verdict=failed" in page  # the table links to the failed traces
    wrong = site.get("/ui/trends", grain="week")
    assert wrong.status_code == 422 and "query parameter grain" in wrong.text


def _seed_two_days(db: str, now: float) -> None:
    """Two days of scored traces, four an hour, through the store (real digests, real
    rollups): version 1.1, deployed a day ago, fails the writer more often, and slower."""
    store = open_store(db)
    try:
        start = now - now % 3600 - 48 * 3600
        items = []
        for hour in range(48):
            version = "1.0" if hour < 24 else "1.1"
            for i in range(4):
                failing = (hour * 4 + i) % (6 if version == "1.0" else 2) == 0
                names = ["planner", "writer"] + (["checker"] if version == "1.1" else [])
                trace = agent_trace(names, start=start + hour * 3600 + i * 600)
                row, evaluations = stored(
                    f"seed-{hour}-{i}",
                    trace,
                    [answer(trace, FINAL, {"planner": 0.9, "writer": 0.2 if failing else 0.8})],
                )
                row.resource = {"service.name": "trip-planner", "service.version": version}
                for evaluation in evaluations:
                    evaluation.judge_cost_usd = 0.002
                items.append((row, evaluations))
        store.traces.save_many(items)
    finally:
        store.close()


@needs_chromium
def test_the_trends_page_in_chromium(tmp_path: Path) -> None:
    db = str(tmp_path / "seeded.db")
    _seed_two_days(db, time.time())
    fast = ["--alert-interval-seconds", "0.2"]
    server = InProcessServer(db, args=fast, api_key=None, log=tmp_path / "log").start()
    try:
        watch = {
            "name": "writer fails on 1.1",
            "metric": "failure_rate",
            "agent": "writer",
            "version": "1.1",
            "window_hours": 24,
            "threshold": 0.3,
            "webhook_url": "http://127.0.0.1:9/hook",
        }
        created = httpx.post(f"{server.url}/api/v1/monitors", json=watch, timeout=30)
        assert created.status_code == 201, created.text
        monitor = f"{server.url}/api/v1/monitors/{created.json()['id']}"
        wait_for(lambda: httpx.get(monitor).json()["state"]["state"] == "firing")
        with Browser(tmp_path / "profile") as tab:
            tab.load(f"{server.url}/ui/trends?agent=writer&criterion={FINAL}&by=version")
            assert tab.console == []
            lines = tab.evaluate("document.querySelectorAll('svg.plot polyline').length")
            assert lines == 2 * 6  # a line per version on each chart but the cost (per agent)
            drawn = tab.evaluate(
                "document.querySelector('svg[data-metric=failure_rate]')"
                ".getBoundingClientRect().width"
            )
            assert drawn > 100
            firing = "[...document.querySelectorAll('td b.error')].map(b => b.textContent)"
            assert tab.evaluate(firing) == ["firing"]  # the monitor, on the page
            keep(tab.screenshot(tmp_path / "ui-trends.png", full_page=True))
    finally:
        server.stop()
