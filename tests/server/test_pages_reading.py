"""What a person reads on the pages (#35), in headless Chromium over the DevTools protocol
against a real server on loopback, screenshots kept as artifacts:

- the list: the "Per agent and criterion" table folded, the traces on the first screen;
- a trace: a search within it (each match a link to its call, the words around it
  marked); each tool run with its own input and output under the call that made it;
- labels: the failing results first; the stance chosen shown as chosen (also after a
  reload); a score out of range answered in words, by the page and by the API;
- the batch report's histograms: a count over each bar, ticks on both axes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.cdp import HEIGHT, Browser
from tests.chromium import ARTIFACTS, keep, needs_chromium
from tests.server.labelled import DEFAULT_CRITERIA, POLITE, record_faulty_trace, store_scored
from tracejudge.models import MultiAgentTrace
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig

pytestmark = pytest.mark.heavy("a server and Chromium, clicked through")


@dataclass
class Site:
    url: str
    trace_id: str
    trace: MultiAgentTrace


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, composo_tracing: TracerProvider
) -> Iterator[Site]:
    db = str(tmp_path_factory.mktemp("reading") / "reading.db")
    trace = record_faulty_trace()
    trace_id = store_scored(db, trace, DEFAULT_CRITERIA)
    for _ in range(3):  # a few more traces, so that the list has rows below the table
        store_scored(db, record_faulty_trace(), DEFAULT_CRITERIA)
    with BackgroundServer(ServerConfig(port=0, db=db), checks_only=True) as server:
        yield Site(server.url, trace_id, trace.model_copy(update={"trace_id": trace_id}))


def _kept(tab: Browser, path: Path, *, full_page: bool = False) -> None:
    shot = tab.screenshot(path, full_page=full_page)
    assert shot.stat().st_size > 10_000  # a page with content, not a blank one
    keep(shot)
    assert (ARTIFACTS / shot.name).stat().st_size == shot.stat().st_size


@needs_chromium
def test_the_list_folds_the_table_and_shows_the_traces_first(site: Site, tmp_path: Path) -> None:
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui")
        assert tab.console == []
        assert tab.evaluate("document.querySelector('details.overview').open") is False
        first_row = tab.top("table tbody tr a[href^='/ui/traces/']")
        assert first_row is not None and 0 < first_row < HEIGHT - 40  # on the first screen
        _kept(tab, tmp_path / "ui-list-first-screen.png")
        tab.click("details.overview summary")  # one click away
        assert tab.evaluate("document.querySelector('details.overview').open") is True


@needs_chromium
def test_a_search_within_a_trace_links_each_match_to_its_call(site: Site, tmp_path: Path) -> None:
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.trace_id}")
        assert tab.console == []
        tab.type("input.find-in", "WEATHER")
        tab.evaluate("document.querySelector('form.find').requestSubmit()")
        said = tab.wait_until(
            "document.querySelector('.found p') && document.querySelector('.found p').textContent"
        )
        assert " match" in said and "model call" in said, said
        marks = tab.evaluate(
            "Array.from(document.querySelectorAll('.found mark'),m=>m.textContent)"
        )
        assert marks and all(m.lower() == "weather" for m in marks)
        links = tab.evaluate(
            "Array.from(document.querySelectorAll('.found li a'),a=>a.textContent)"
        )
        assert all(", call " in link for link in links)  # "researcher, call 2"
        _kept(tab, tmp_path / "ui-trace-search.png")
        tab.click(".found li a")
        anchor = tab.evaluate("document.querySelector('.found li a').dataset.anchor")
        assert tab.wait_until(f"document.getElementById({json.dumps(anchor)}).open") is True
        tab.type("input.find-in", "zzqx")  # appended: "weatherzzqx", found nowhere
        tab.evaluate("document.querySelector('form.find').requestSubmit()")
        assert "no match" in tab.wait_until("document.querySelector('.found p').textContent")


@needs_chromium
def test_a_tool_run_shows_its_own_input_and_output(site: Site, tmp_path: Path) -> None:
    researcher = next(
        (k, a) for k, a in enumerate(site.trace.iter_agents()) if a.name == "researcher"
    )
    k, agent = researcher
    # the call that made a tool call whose result a later call carries
    i = next(n for n, call in enumerate(agent.llm_interactions) if call.tool_calls)
    call = agent.llm_interactions[i].tool_calls[0]
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.trace_id}#step-{k}-{i}")
        run = tab.wait_until(
            "document.querySelector('.tool-run') && document.querySelector('.tool-run').textContent"
        )
        assert f"tool run {call.name} [{call.id}]" in run
        assert f"input: {call.parameters}" in run  # what the tool was given
        assert "output: " in run and "(no result recorded)" not in run, run
        _kept(tab, tmp_path / "ui-trace-tool-run.png")


def _row(site: Site, agent: str, criterion: str) -> str:
    ids = {a.name: a.id for a in site.trace.iter_agents()}
    return f'.label-row[data-agent="{ids[agent]}"][data-criterion="{criterion}"]'


@needs_chromium
def test_labels_put_failing_rows_first_and_show_the_chosen_stance(
    site: Site, tmp_path: Path
) -> None:
    failing = _row(site, "researcher", "tool_arguments")
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.trace_id}")
        kinds = tab.evaluate(
            "Array.from(document.querySelectorAll('.label-row'),r=>r.classList.contains('failing'))"
        )
        assert any(kinds) and kinds == sorted(kinds, reverse=True), kinds  # failing first
        tab.type("#tj-who", "ana")
        tab.click(failing + " button.disagree")
        status = f"document.querySelector({json.dumps(failing + ' .label-status')}).textContent"
        assert tab.wait_until(f"{status} === 'saved' && {status}") == "saved"
        pressed = (
            f"Array.from(document.querySelectorAll({json.dumps(failing + ' button')}),"
            "b=>[b.className, b.getAttribute('aria-pressed')])"
        )
        assert tab.evaluate(pressed)[:2] == [["agree", "false"], ["disagree chosen", "true"]]
        _kept(tab, tmp_path / "ui-labels-chosen.png")
        # out of range: answered in words by the page, nothing sent
        own = _row(site, "orchestrator", POLITE)
        tab.type(own + " input.own", "2")
        tab.click(own + " button.save-score")
        said = f"document.querySelector({json.dumps(own + ' .label-status')}).textContent"
        assert tab.evaluate(said) == "not saved: give a score from 0 to 1 (2 is not one)"
        tab.load(f"{site.url}/ui/traces/{site.trace_id}")  # the name is remembered
        disagree = f"document.querySelector({json.dumps(failing + ' button.disagree')})"
        assert tab.wait_until(f"{disagree}.getAttribute('aria-pressed')") == "true"
    # and by the API, in the same words, not a validation dump
    answer = httpx.post(
        f"{site.url}/api/v1/labels",
        json={
            "trace_id": site.trace_id,
            "agent_instance_id": site.trace.root.id,
            "criterion": POLITE,
            "stance": "score",
            "score": 2,
            "who": "ana",
        },
    )
    assert answer.status_code == 422
    assert answer.json()["detail"] == "score: give a score from 0 to 1 (2 is not one)"


@needs_chromium
def test_a_search_of_the_list_shows_what_it_matched_in_each_trace(
    site: Site, tmp_path: Path
) -> None:
    with Browser(tmp_path / "profile") as tab:
        tab.load(f'{site.url}/ui?q="invalid arguments"')
        assert tab.console == []
        rows = tab.evaluate("document.querySelectorAll('tr.failed, tr.ok').length")
        snippets = tab.evaluate(
            "Array.from(document.querySelectorAll('tr.snippet'),r=>[r.querySelector('.where')"
            ".textContent, r.querySelector('mark').textContent, r.textContent])"
        )
        assert rows == len(snippets) == 4  # one under each trace the search found
        for where, marked, text in snippets:
            assert where == "researcher, call 2 · tool result"  # as the trace page names it
            assert marked == "invalid arguments"
            assert "ValueError: invalid arguments for get_weather" in text
        _kept(tab, tmp_path / "ui-list-search-snippets.png")


@needs_chromium
def test_a_trace_sent_as_spans_shows_each_span_s_own_attributes(tmp_path: Path) -> None:
    otlp = Path(__file__).resolve().parents[1] / "fixtures" / "openllmetry.pb"
    config = ServerConfig(port=0, db=str(tmp_path / "spans.db"), trace_quiet_seconds=0)
    with BackgroundServer(config, checks_only=True) as server, httpx.Client() as http:
        sent = http.post(
            f"{server.url}/v1/traces",
            content=otlp.read_bytes(),
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert sent.status_code == 200, sent.text

        def scored() -> str | None:
            found = http.get(f"{server.url}/api/v1/traces", params={"status": "scored"})
            traces = found.json()["traces"]
            return traces[0]["trace_id"] if traces else None

        trace_id = _poll(scored)
        with Browser(tmp_path / "profile") as tab:
            tab.load(f"{server.url}/ui/traces/{trace_id}")
            assert tab.console == []
            names = tab.evaluate(
                "Array.from(document.querySelectorAll('details.span summary'),s=>s.textContent)"
            )
            assert len(names) == 9  # every span of the file, each once
            assert sum(n.startswith("openai.chat") for n in names) == 6
            first_chat = next(i for i, n in enumerate(names) if n.startswith("openai.chat"))
            selector = f'details.span[data-n="{first_chat}"]'
            tab.click(selector + " summary")
            keys = tab.wait_until(
                f"Array.from(document.querySelectorAll({json.dumps(selector + ' th')}),"
                "t=>t.textContent)"
            )
            # its own input and output, as the span recorded them
            assert "gen_ai.input.messages" in keys and "gen_ai.request.model" in keys, keys
            _kept(tab, tmp_path / "ui-trace-spans.png")


def _poll(found: Callable[[], str | None]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        value = found()
        if value is not None:
            return value
        time.sleep(0.05)
    raise AssertionError("the trace was not scored")
