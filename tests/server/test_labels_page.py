"""Labels recorded by clicking on the server's trace page (headless Chromium over the
DevTools protocol, a real server on loopback), exported, and fed to `tracejudge calibrate`
with a scripted judge: what people clicked is what calibrate compares the judge with."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.cdp import Browser
from tests.chromium import keep, needs_chromium
from tests.server.labelled import (
    DEFAULT_CRITERIA,
    POLITE,
    polite,
    record_faulty_trace,
    store_scored,
)
from tracejudge.cli import main
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig
from tracejudge.testing import ScriptedLLMServer


@dataclass
class Site:
    url: str
    trace_id: str
    trace: MultiAgentTrace


@pytest.fixture
def site(tmp_path: Path, composo_tracing: TracerProvider) -> Iterator[Site]:
    db = str(tmp_path / "labels.db")
    trace = record_faulty_trace()
    trace_id = store_scored(db, trace, DEFAULT_CRITERIA)
    with BackgroundServer(ServerConfig(port=0, db=db), checks_only=True) as server:
        yield Site(server.url, trace_id, trace.model_copy(update={"trace_id": trace_id}))


def _row(site: Site, agent: str, criterion: str) -> str:
    ids = {a.name: a.id for a in site.trace.iter_agents()}
    return f'.label-row[data-agent="{ids[agent]}"][data-criterion="{criterion}"]'


def _saved(tab: Browser, row: str) -> str:
    status = f"document.querySelector({json.dumps(row + ' .label-status')}).textContent"
    return str(tab.wait_until(f"{status} !== 'saving…' && {status}"))


@needs_chromium
def test_labels_clicked_on_the_page_round_trip_through_export_into_calibrate(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    answers = [
        MultiAgentTraceResponse.model_validate(e["response"])
        for e in httpx.get(f"{site.url}/api/v1/traces/{site.trace_id}").json()["evaluations"]
    ]
    results = sum(
        len(r.results_by_agent_instance_id)
        for a in answers
        for r in a.results_by_agent_name.values()
    )
    agree = _row(site, "orchestrator", POLITE)
    disagree = _row(site, "researcher", POLITE)
    own = _row(site, "researcher", "tool_arguments")
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.trace_id}")
        assert tab.console == []
        assert tab.evaluate("document.querySelectorAll('.label-row').length") == results
        # the judge passed the orchestrator and failed the researcher on POLITE
        verdict = f"document.querySelector({json.dumps(agree + ' .label-what .score')}).textContent"
        assert tab.evaluate(verdict) == "1.00 pass"
        tab.click(agree + " button.agree")  # no name yet: refused, nothing sent
        assert _saved(tab, agree) == "not saved: give your name above first"
        tab.type("#tj-who", "ana")
        tab.click(agree + " button.agree")
        assert _saved(tab, agree) == "saved"
        tab.type(disagree + " input.note-in", "it thanked the user")
        tab.click(disagree + " button.disagree")
        assert _saved(tab, disagree) == "saved"
        tab.type(own + " input.own", "0.25")
        tab.click(own + " button.save-score")
        assert _saved(tab, own) == "saved"
        keep(tab.screenshot(tmp_path / "ui-labels.png", full_page=True))
        # opened again, the page shows what was recorded, and remembers the name
        tab.load(f"{site.url}/ui/traces/{site.trace_id}")
        shown = f"document.querySelector({json.dumps(disagree + ' .label-saved')}).textContent"
        assert tab.evaluate(shown).startswith("ana: disagreed (pass) · it thanked the user · ")
        assert tab.evaluate("document.getElementById('tj-who').value") == "ana"
        assert tab.console == []

    labels = tmp_path / "labels.jsonl"
    labels.write_text(httpx.get(f"{site.url}/api/v1/labels/export").text)
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / f"{site.trace_id}.json").write_text(site.trace.to_json())
    out = tmp_path / "calibration.json"
    with ScriptedLLMServer() as judge:
        judge.default = polite  # the judge that scored the stored trace, asked again
        monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
        command = ["calibrate", str(labels), "--traces", str(traces), "--judge", "openai:judge"]
        assert main([*command, "--out", str(out), "--bootstrap", "50"]) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    rows = [(r["agent"], r["criterion"], r["who"], r["human"], r["judge"]) for r in report["rows"]]
    assert rows == [
        ("orchestrator", POLITE, "ana", "pass", "pass"),  # agreed
        ("researcher", POLITE, "ana", "pass", "fail"),  # disagreed with its fail
        ("researcher", "tool_arguments", "ana", "fail", "fail"),  # 0.25 below the check's 1.0
    ]
    assert report["items"] == 3 and report["agreement"]["value"] == pytest.approx(2 / 3)
    # straight from the server: its labels and its stored trace, no file in between
    with ScriptedLLMServer() as judge:
        judge.default = polite
        monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
        command = ["calibrate", "--server", site.url, "--judge", "openai:judge", "--json"]
        assert main([*command, "--bootstrap", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == report["rows"]


@needs_chromium
def test_signed_in_with_a_key_the_page_labels_as_the_key_s_name(
    tmp_path: Path, composo_tracing: TracerProvider
) -> None:
    """The browser signs in with HTTP Basic (the key as the password, here in the URL as a
    user would type it in the prompt), and sends the same credentials with the page's
    label: it is recorded under the key's name, with no name field on the page."""
    db = str(tmp_path / "keys.db")
    trace = record_faulty_trace()
    trace_id = store_scored(db, trace, DEFAULT_CRITERIA)
    orchestrator = trace.root.id
    config = ServerConfig(port=0, db=db, api_keys=("ana tj-secret-1",))
    with BackgroundServer(config, checks_only=True) as server, Browser(tmp_path / "p") as tab:
        tab.load(
            server.url.replace("http://", "http://anyone:tj-secret-1@") + f"/ui/traces/{trace_id}"
        )
        assert tab.console == []
        assert tab.evaluate("document.getElementById('tj-who')") is None
        assert tab.evaluate("document.querySelector('#labels .facts').textContent") == (
            "labelling as ana (your API key's name)"
        )
        row = f'.label-row[data-agent="{orchestrator}"][data-criterion="loops"]'
        tab.click(row + " button.agree")
        assert _saved(tab, row) == "saved"
        assert tab.console == []
        labels = httpx.get(
            f"{server.url}/api/v1/labels", headers={"API-Key": "tj-secret-1"}
        ).json()["labels"]
    assert [(x["who"], x["criterion"], x["verdict"]) for x in labels] == [("ana", "loops", "pass")]
