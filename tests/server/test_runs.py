"""Experiment runs stored on a real server (in process, on loopback, keyed) and compared
there: `experiment(..., to=URL)` with an agent traced through OpenAI's client against a
ScriptedLLMServer; the runs listed, their traces tagged and filtered on, the comparison
the server runs (the experiments' one), `tracejudge compare` reading runs from the server,
and the comparison page in headless Chromium (its screenshot kept as a test artifact)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

import tracejudge
from tests.cdp import Browser
from tests.chromium import keep, needs_chromium
from tests.experiments.conftest import adder_model, correct, make_task, rows
from tests.server.harness import API_KEY, InProcessServer
from tracejudge.cli import main
from tracejudge.testing import ScriptedLLMServer

#: Every third row of the candidate answers wrong: a regression of `correct` (10 of 30).
BROKEN = set(range(0, 30, 3))


@dataclass
class Runs:
    server: InProcessServer
    baseline: Any
    candidate: Any

    @property
    def keyed_url(self) -> str:
        return self.server.url.replace("http://", f"http://{API_KEY}@")

    def id_of(self, run: Any) -> str:
        return str(run.url).rsplit("/", 1)[-1]


@pytest.fixture
def two_runs(
    server: InProcessServer,
    composo_tracing: TracerProvider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Runs]:
    """A baseline and a candidate (broken on BROKEN) of the adder, stored on `server`; the
    candidate in a directory as well."""
    for name in ("TRACEJUDGE_API_KEY", "COMPOSO_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    to = server.url.replace("http://", f"http://{API_KEY}@")
    with ScriptedLLMServer(default=adder_model()) as model:
        task = make_task(model)
        baseline = tracejudge.experiment(
            rows(30), task, [correct], name="adder", params={"prompt": "v1"}, to=to
        )
        model.default = adder_model(broken=BROKEN)
        candidate = tracejudge.experiment(
            rows(30),
            task,
            [correct],
            name="adder",
            params={"prompt": "v2"},
            to=to,
            directory=tmp_path / "candidate",
        )
    yield Runs(server, baseline, candidate)


def test_runs_go_to_the_server_with_their_traces_tagged_and_compare_there(
    two_runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs, server = two_runs, two_runs.server
    base_id, cand_id = runs.id_of(runs.baseline), runs.id_of(runs.candidate)
    assert runs.baseline.directory is None  # only on the server, as asked
    assert runs.candidate.directory == tmp_path / "candidate"  # and both, as asked
    assert runs.baseline.url == f"{server.url}/ui/runs/{base_id}"
    with server.client() as client:
        listed = client.get("/api/v1/runs").json()["runs"]
        assert [r["id"] for r in listed] == [cand_id, base_id]  # newest first
        stored = client.get(f"/api/v1/runs/{cand_id}").json()
        # the record: what identifies the run
        record = stored["record"]
        assert record["name"] == "adder" and record["params"] == {"prompt": "v2"}
        assert set(record["git"]) == {"commit", "dirty"}
        assert record["models"] == ["scripted-model"]
        assert record["started_at"] <= record["ended_at"]
        assert record["cost"]["task_seconds"] > 0
        assert stored["run"]["results"] == 30 and stored["run"]["rows"] == 30
        # each row's result, in the run's order, with its scores and trace
        results = stored["results"]
        assert [r["id"] for r in results] == [f"q{i}" for i in range(30)]
        failed = {r["id"] for r in results for s in r["scores"] if s["passed"] is False}
        assert failed == {f"q{i}" for i in BROKEN}
        # its traces in the trace list, tagged with the run, with their scores
        page = client.get("/api/v1/traces", params={"tag": f"run:{cand_id}", "limit": 100})
        traces = page.json()["traces"]
        assert page.json()["total"] == 30
        assert {t["trace_id"] for t in traces} == {r["trace_id"] for r in results}
        assert sum(t["verdict"] == "failed" for t in traces) == len(BROKEN)
        assert all(t["tags"]["run_name"] == "adder" for t in traces)
        # the comparison the server runs: the regression, with its rows
        compared = client.get(
            "/api/v1/runs/compare", params={"baseline": base_id, "candidate": cand_id}
        ).json()
        (criterion,) = compared["criteria"]
        assert (criterion["agent"], criterion["criterion"]) == ("adder", "correct")
        assert criterion["verdict"] == "regressed" and compared["gate"]["result"] == "fail"
        assert set(criterion["regressed_rows"]) == {f"q{i}" for i in BROKEN}
        assert criterion["worse"] == len(BROKEN) and criterion["better"] == 0
        # an unknown run, a missing parameter: said, not failed on
        missing = client.get("/api/v1/runs/compare", params={"baseline": base_id})
        assert missing.status_code == 422 and "candidate" in missing.json()["detail"]
        assert client.get("/api/v1/runs/nope").status_code == 404

    # `tracejudge compare` on runs of the server: by address, and by --server with a name
    assert main(["compare", f"{runs.keyed_url}/runs/{base_id}", str(tmp_path / "candidate"),
                 "--fail-on-regression", "--json"]) == 1  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["gate"]["result"] == "fail"
    assert report["baseline"] == f"{server.url}/ui/runs/{base_id}"
    assert report["criteria"] == compared["criteria"]  # one implementation, the same figures
    code = main(["compare", "--server", runs.keyed_url, base_id, "adder", "--fail-on-regression"])
    out = capsys.readouterr()
    assert code == 1 and "REGRESSION" in out.out  # "adder": the newest run of that name
    assert API_KEY not in out.out + out.err
    # without the key: refused, saying how to give it, exit 2
    assert main(["compare", f"{server.url}/runs/{base_id}", f"{server.url}/runs/{cand_id}"]) == 2
    err = capsys.readouterr().err
    assert "API key" in err and "TRACEJUDGE_API_KEY" in err


def test_runs_api_says_what_is_wrong(server: InProcessServer) -> None:
    with server.client() as client:
        reserved = client.post("/api/v1/runs", json={"id": "compare", "name": "x"})
        assert reserved.status_code == 422 and "compare" in reserved.json()["detail"]
        no_name = client.post("/api/v1/runs", json={"id": "r1"})
        assert no_name.status_code == 422 and "name" in no_name.json()["detail"]
        assert client.post("/api/v1/runs", json={"id": "r1", "name": "x"}).status_code == 201
        unknown = client.post("/api/v1/runs/r2/rows", json={"rows": [{"result": {"id": "a"}}]})
        assert unknown.status_code == 404
        twice = client.post(
            "/api/v1/runs/r1/rows",
            json={"rows": [{"result": {"id": "a"}}, {"result": {"id": "a"}}]},
        )
        assert twice.status_code == 422 and "same id and repeat" in twice.json()["detail"]
        bad_score = client.post(
            "/api/v1/runs/r1/rows",
            json={"rows": [{"result": {"id": "a", "scores": [{"agent": "x", "criterion": "c",
                                                              "score": 2}]}}]},
        )  # fmt: skip
        assert bad_score.status_code == 422 and "score" in bad_score.json()["detail"]
        assert client.get("/api/v1/runs", params={"cursor": "x"}).status_code == 422
        # numbers JSON cannot carry (Python's json reads NaN): stored as null, answered
        nan = b'{"id": "r3", "name": "x", "params": {"t": NaN}}'
        headers = {"Content-Type": "application/json"}
        assert client.post("/api/v1/runs", content=nan, headers=headers).status_code == 201
        row = b'{"rows": [{"result": {"id": "a", "output": [Infinity]}}]}'
        assert client.post("/api/v1/runs/r3/rows", content=row, headers=headers).status_code == 200
        stored = client.get("/api/v1/runs/r3").json()
        assert stored["record"]["params"] == {"t": None}
        assert stored["results"][0]["output"] == [None]
        policy = client.get(
            "/api/v1/runs/compare", params={"baseline": "r1", "candidate": "r1", "level": "2"}
        )
        assert policy.status_code == 422 and "level" in policy.json()["detail"]


@needs_chromium
def test_the_comparison_page_shows_regressions_first_with_both_traces(
    two_runs: Runs, tmp_path: Path
) -> None:
    runs = two_runs
    base_id, cand_id = runs.id_of(runs.baseline), runs.id_of(runs.candidate)
    signed_in = runs.server.url.replace("http://", f"http://anyone:{API_KEY}@")
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{signed_in}/ui/runs")
        assert tab.console == []
        assert tab.evaluate("document.querySelectorAll('table tr').length") == 3  # head + 2
        keep(tab.screenshot(tmp_path / "ui-runs.png"))
        # the form picks the previous run as the baseline and the newest as the candidate
        tab.click("form.pick button")
        tab.wait_until(
            "location.pathname === '/ui/runs/compare' && document.readyState === 'complete' "
            "&& document.querySelector('.gate') !== null",
            timeout=60,
        )
        assert tab.evaluate("new URLSearchParams(location.search).get('baseline')") == base_id
        assert tab.console == []
        gate = tab.evaluate("document.querySelector('.gate').textContent")
        assert gate.startswith("REGRESSION")
        first = tab.evaluate("document.querySelector('table tr:nth-child(2)').className")
        assert first == "regressed"
        links = tab.evaluate(
            "[...document.querySelectorAll('a')].map(a => a.getAttribute('href'))"
            ".filter(h => h.startsWith('/ui/traces/')).length"
        )
        assert links == 2 * len(BROKEN)  # each changed row: its trace in both runs
        keep(tab.screenshot(tmp_path / "ui-run-comparison.png", full_page=True))
        # a trace link opens that trace's page on the server
        tab.click("a[href^='/ui/traces/']")
        tab.wait_until(
            "location.pathname.startsWith('/ui/traces/') && document.readyState === 'complete'",
            timeout=60,
        )
        assert tab.console == []
        tab.load(f"{signed_in}/ui/runs/{cand_id}")
        assert "20/30" in tab.evaluate("document.body.textContent")  # its pass rate
        keep(tab.screenshot(tmp_path / "ui-run.png"))
        assert tab.console == []


def test_the_pages_answer_without_a_browser(two_runs: Runs) -> None:
    runs = two_runs
    base_id, cand_id = runs.id_of(runs.baseline), runs.id_of(runs.candidate)
    with runs.server.client() as client:
        page = client.get("/ui/runs/compare", params={"baseline": base_id, "candidate": cand_id})
        assert page.status_code == 200
        assert "script-src" not in page.headers["content-security-policy"]
        assert page.text.index("regressed") < page.text.index("Rows that changed")
        assert client.get("/ui/runs/nope").status_code == 404
        missing = client.get("/ui/runs/compare", params={"baseline": "x", "candidate": cand_id})
        assert missing.status_code == 404 and "no run" in missing.text
        assert httpx.get(f"{runs.server.url}/ui/runs").status_code == 401  # keyed, as the API


EXPERIMENT = """
dataset = [{"id": f"q{i}", "input": i, "expected": i + 1} for i in range(12)]
name = "adder-cli"


def task(number):
    return number + 1


def correct(output, expected):
    return output == expected


criteria = [correct]
"""


def test_tracejudge_run_to_a_server_and_a_run_kept_when_the_server_is_away(
    server: InProcessServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("TRACEJUDGE_API_KEY", "COMPOSO_API_KEY", "TRACEJUDGE_JUDGE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    experiment = tmp_path / "adder.py"
    experiment.write_text(EXPERIMENT)
    keyed = server.url.replace("http://", f"http://{API_KEY}@")
    assert main(["run", str(experiment), "--to", keyed, "--param", "prompt=v3"]) == 0
    out = capsys.readouterr()
    page = out.out.strip().splitlines()[-1]
    assert page.startswith(f"{server.url}/ui/runs/")  # its page, last
    assert API_KEY not in out.out + out.err
    assert not (tmp_path / ".tracejudge").exists()  # only on the server, as asked
    with server.client() as client:
        stored = client.get("/api/v1/runs/" + page.rsplit("/", 1)[-1]).json()
    assert stored["record"]["name"] == "adder-cli"
    assert stored["record"]["params"] == {"prompt": "v3"}
    assert stored["run"]["results"] == 12
    # a wrong key: refused, the key not shown, and the run not lost
    wrong = server.url.replace("http://", "http://wrong-key-4321@")
    assert main(["run", str(experiment), "--to", wrong]) == 1
    err = capsys.readouterr().err
    assert "wrong-key-4321" not in err
    assert "wants a valid API key" in err and "the run is kept in" in err
    (kept,) = (tmp_path / ".tracejudge" / "runs").iterdir()
    assert (kept / "run.json").is_file() and len(
        (kept / "rows.jsonl").read_text().splitlines()
    ) == 12
