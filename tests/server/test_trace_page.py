"""The server's page of one trace (/ui/traces/{id}), served by a real server (uvicorn in a
thread, SQLite) and driven in headless Chromium over the DevTools protocol: the verdict and
the first finding on the first screen, every agent and model call on the timeline with its
duration, a finding's link unfolding its step, fragments that cannot break the script, and
a huge trace that stays fast. The traces are recorded by running the checks' scripted
agents on the real openai client (planted faults), scored as the server scores them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.cdp import HEIGHT, Browser
from tests.checks import faults
from tests.chromium import ARTIFACTS, keep, needs_chromium
from tests.server.labelled import save_scored
from tracejudge import checks
from tracejudge._sync import run
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import AgentInstance, Attribution, MultiAgentTrace
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig
from tracejudge.server.store.stored import read_trace
from tracejudge.testing import ScriptedLLMServer

# the module's site (a trace of hundreds of steps) is built once, on one worker
pytestmark = pytest.mark.xdist_group("trace-page")
#: The huge trace's agents (benchmarks/trace_page.py times 150): ten pages of rows and more.
HUGE_AGENTS = 40


def _store(db: str, trace: MultiAgentTrace, criteria: list[object]) -> str:
    """Save `trace` with its scores on `criteria`, as the server does for a posted trace."""
    return save_scored(db, trace, run(EvaluationService().score_trace(trace, criteria)))


def _wide_trace(agents: int, rounds: int) -> MultiAgentTrace:
    """A root agent that ran `agents` children of `rounds` tool calls each (5,000 spans
    at 150 x 32: each child's span and its calls)."""
    children = []
    for n in range(agents):
        child = faults.long_agent(rounds)
        children.append(child.model_copy(update={"id": f"child-{n}", "name": f"worker-{n}"}))
    root = AgentInstance(id="root", name="root", interactions=[c.id for c in children])
    return MultiAgentTrace(
        root_agent_instance_id="root",
        agent_instance_by_id={"root": root, **{c.id: c for c in children}},
    )


@dataclass
class Site:
    url: str
    faulty: str  # the researcher's tool call breaks its schema
    faulty_trace: MultiAgentTrace
    huge: str  # HUGE_AGENTS agents of 32 model calls each


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, composo_tracing: TracerProvider
) -> Iterator[Site]:
    db = str(tmp_path_factory.mktemp("viewer") / "viewer.db")
    with ScriptedLLMServer() as llm:
        faulty_trace = faults.run(faults.bad_arguments(1), llm)
    # a budget of 60 tokens: the orchestrator and the researcher (two calls of 50 tokens
    # each) fail it too, findings that point at no step
    faulty = _store(db, faulty_trace, [*checks.ALL, checks.budgets(max_tokens=60)])
    huge = _store(db, _wide_trace(HUGE_AGENTS, 31), list(checks.ALL))
    config = ServerConfig(port=0, db=db, log_level="warning")
    with BackgroundServer(config, checks_only=True) as server:
        yield Site(server.url, faulty, faulty_trace, huge)


def _rows(tab: Browser) -> list[dict[str, str]]:
    return tab.evaluate(
        "Array.from(document.querySelectorAll('.tl-row:not(.head)'),r=>({kind:r.className,"
        "label:r.querySelector('.tl-label').textContent,"
        "figs:r.querySelector('.tl-figs').textContent}))"
    )


@needs_chromium
def test_the_verdict_and_the_first_finding_are_on_the_first_screen(
    site: Site, tmp_path: Path
) -> None:
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.faulty}")
        assert tab.console == []  # the page's own script ran under its policy, nothing else
        assert tab.evaluate("document.querySelector('.status').textContent") == (
            "FAILED: 3 failing findings in 2 agents"
        )
        first = tab.evaluate(
            "(function(){var r=document.querySelector('.finding').getBoundingClientRect();"
            "return [r.top, r.bottom];})()"
        )
        assert 0 < first[0] < first[1] <= HEIGHT
        finding = tab.evaluate("document.querySelector('.finding').textContent")
        assert finding.startswith("0.00tool_arguments · agent researcher · below its bar 1.00")
        assert "researcher, call 1 · tool get_weather [call_bad]" in finding
        shot = tab.screenshot(tmp_path / "ui-trace-viewer.png")
        keep(shot)
        keep(tab.screenshot(tmp_path / "ui-trace-viewer-full.png", full_page=True))
    assert shot.stat().st_size > 20_000
    assert (ARTIFACTS / shot.name).stat().st_size == shot.stat().st_size


@needs_chromium
def test_the_timeline_shows_every_agent_and_model_call_with_its_duration(
    site: Site, tmp_path: Path
) -> None:
    duration = re.compile(r"^\d+(\.\d+)? (ms|s) · ")
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.faulty}")
        rows = _rows(tab)
    agents = [r for r in rows if "agent-row" in r["kind"]]
    assert [r["label"] for r in agents] == [a.name for a in site.faulty_trace.iter_agents()]
    calls = [r for r in rows if "call-row" in r["kind"]]
    assert len(calls) == sum(len(a.llm_interactions) for a in site.faulty_trace.iter_agents())
    for row in agents + calls:
        assert duration.match(row["figs"]), row
    assert all(
        "scripted-model" in r["figs"] and "40 in / 10 out tokens" in r["figs"] for r in calls
    )
    # the researcher's bad call and its tool run are marked failing, and as the most
    # likely cause of the failure (◆1)
    failing = [r["label"] for r in rows if "failing" in r["kind"]]
    assert failing == ["◆1✕call 1", "◆1✕tool get_weather [call_bad]"]
    (tool,) = [r for r in rows if "tool-row" in r["kind"]]
    assert re.match(r"within \d+(\.\d+)? ms, between call 1 and call 2$", tool["figs"])


@needs_chromium
def test_a_finding_s_link_unfolds_its_step(site: Site, tmp_path: Path) -> None:
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.faulty}")
        assert tab.evaluate("document.querySelectorAll('.step').length") == 0  # built lazily
        tab.click(".finding .where a")
        assert tab.evaluate("location.hash") == "#step-1-0"
        step = "document.getElementById('step-1-0')"
        assert tab.evaluate(f"{step}.open") is True
        top = tab.evaluate(f"{step}.getBoundingClientRect().top")
        assert -1 < top < HEIGHT  # scrolled to its start (to a fraction of a pixel)
        flagged = tab.evaluate(f"{step}.querySelector('.msg.flagged').textContent")
        assert flagged.startswith("assistant → tool call get_weather [call_bad]")
        # the tool call's result is one link away
        tab.click("#step-1-0 .note a")
        assert tab.evaluate("document.getElementById('step-1-1').open") is True
        keep(tab.screenshot(tmp_path / "ui-trace-viewer-step.png"))
        # opened from the address bar, the step unfolds as well
        tab.load(f"{site.url}/ui/traces/{site.faulty}#step-1-0")
        assert tab.evaluate(f"{step}.open") is True
        assert tab.console == []


@needs_chromium
@pytest.mark.parametrize("fragment", ["%E0%A4%A", "step-99-0", "step-1-99", "agent-", "%"])
def test_a_malformed_fragment_never_breaks_the_page(
    site: Site, tmp_path: Path, fragment: str
) -> None:
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.faulty}#{fragment}")
        assert tab.console == []
        assert tab.evaluate("document.querySelectorAll('.finding').length") == 3


@needs_chromium
def test_a_huge_trace_is_paged_and_any_step_is_one_link_away(site: Site, tmp_path: Path) -> None:
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.huge}")  # its speed: benchmarks/trace_page.py
        assert tab.console == []
        assert tab.evaluate("document.querySelectorAll('.tl-row:not(.head)').length") == 200
        # a row per agent (and the orchestrator), model call (x 32) and tool run (x 31)
        rows = (HUGE_AGENTS + 1) + HUGE_AGENTS * 32 + HUGE_AGENTS * 31
        assert tab.evaluate("document.querySelector('.tl .pager span').textContent") == (
            f"rows 1–200 of {rows} (200 a page, to keep the page fast)"
        )
        assert tab.evaluate("document.querySelectorAll('.step').length") == 0
        assert tab.evaluate("document.querySelectorAll('.agent').length") == HUGE_AGENTS + 1
        tab.load(f"{site.url}/ui/traces/{site.huge}#step-{HUGE_AGENTS}-31")
        step = f"document.getElementById('step-{HUGE_AGENTS}-31')"
        assert tab.evaluate(f"{step}.open") is True
        assert "62 earlier messages as in call 31" in tab.evaluate(f"{step}.textContent")
        top = tab.evaluate(f"{step}.getBoundingClientRect().top")
        assert -1 < top < HEIGHT  # scrolled to its start (to a fraction of a pixel)
        assert tab.console == []


def test_a_stored_trace_reads_back_the_same_with_its_repeated_inputs_shared(site: Site) -> None:
    wide = _wide_trace(3, 5)
    data = json.loads(MultiAgentTrace.from_agent(faults.long_agent(4)).to_json())
    (agent,) = data["agent_instance_by_id"].values()
    agent["interactions"][2]["input_messages"][0]["content"] = "a summary of the start"
    rewritten = MultiAgentTrace.model_validate(data)
    for trace in (site.faulty_trace, wide, rewritten):
        text = trace.to_json()
        read = read_trace(text)
        assert read.to_json() == MultiAgentTrace.from_json(text).to_json()
    # the rewritten history was not shared: it differs from the call before it
    calls = read_trace(rewritten.to_json()).root.llm_interactions
    assert calls[2].input_messages[0].content == "a summary of the start"
    assert calls[1].input_messages[0].content != "a summary of the start"
    assert calls[1].input_messages[0] is calls[0].input_messages[0]  # shared, not copied


@needs_chromium
def test_the_most_likely_cause_is_marked_on_the_timeline_at_its_step(
    site: Site, tmp_path: Path
) -> None:
    """The page's causes are the API's deterministic attribution, and the mark sits on the
    row of the top cause's agent and model call: the researcher's call with bad arguments."""
    answer = httpx.get(f"{site.url}/api/v1/traces/{site.faulty}/attribution")
    assert answer.status_code == 200
    attribution = Attribution.model_validate(answer.json())
    top = attribution.top
    assert top is not None and top.step is not None
    agents = list(site.faulty_trace.iter_agents())
    at = next(k for k, a in enumerate(agents) if a.id == top.agent_instance_id)
    assert (agents[at].name, top.step.interaction) == ("researcher", 0)  # the planted fault
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{site.url}/ui/traces/{site.faulty}")
        assert tab.console == []
        headings = tab.evaluate("Array.from(document.querySelectorAll('h2'),h=>h.textContent)")
        assert headings[:2] == ["Verdict", "Attribution"]
        # one row of the timeline is the attributed call: the top cause's agent and call
        marked = tab.evaluate(
            "Array.from(document.querySelectorAll('.tl-row.call-row.attributed'),"
            "r=>[Number(r.dataset.agent),Number(r.dataset.call)])"
        )
        assert marked == [[at, top.step.interaction]]
        # its tool run too, the tool call the cause names
        tools = tab.evaluate(
            "Array.from(document.querySelectorAll('.tl-row.tool-row.attributed'),"
            "r=>r.querySelector('.tl-label').textContent)"
        )
        assert tools == [f"◆1✕tool {top.step.tool_name} [{top.step.tool_call_id}]"]
        # the list of causes is the API's, in its order
        causes = tab.evaluate(
            "Array.from(document.querySelectorAll('.cause'),c=>[Number(c.dataset.rank),"
            "c.querySelector('a').textContent])"
        )
        assert causes == [[c.rank, c.agent_name] for c in attribution.causes]
        line = tab.evaluate("document.querySelector('.cause-line').textContent")
        assert line == (
            "most likely cause: researcher, call 1 · tool get_weather [call_bad] · checks, "
            f"confidence {top.confidence:.2f}"
        )
        first = tab.evaluate("document.querySelector('.cause-line').getBoundingClientRect().bottom")
        assert 0 < first <= HEIGHT  # on the first screen, with the verdict
        # the cause's link unfolds its step
        tab.click(".cause-line a")
        assert tab.evaluate("location.hash") == f"#step-{at}-{top.step.interaction}"
        step = f"document.getElementById('step-{at}-{top.step.interaction}')"
        assert tab.evaluate(f"{step}.open") is True
        assert "cause 1 (most likely)" in tab.evaluate(
            f"{step}.querySelector('summary').textContent"
        )
        keep(tab.screenshot(tmp_path / "ui-trace-attribution.png", full_page=True))
        assert tab.console == []
