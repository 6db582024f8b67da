"""The server's web pages: /ui/traces/{id} (the trace viewer), served by a real server
(uvicorn in a thread, SQLite) with traces that came in over OTLP and traces whose names hold
markup; their auth; and both pages in headless Chromium. The list itself (/ui) is tested in
test_list_page.py."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.chromium import chromium, keep, needs_chromium
from tests.server.harness import wait_for
from tracejudge import checks
from tracejudge._sync import run
from tracejudge.convert import traces_from_otlp
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import MultiAgentTrace
from tracejudge.report import content_security_policy
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig
from tracejudge.server.store import EvaluationRow, TraceRow, open_store

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openllmetry.jsonl"
HOSTILE = "<img src=x onerror=alert(1)>"
KEY = "ui-test-key"


def _hostile_trace() -> MultiAgentTrace:
    """The fixture's trace with markup in an agent's name and a message."""
    (trace,) = traces_from_otlp(FIXTURE.read_text())
    data = trace.to_json().replace('"writer"', f'"{HOSTILE}writer"')
    data = data.replace("weather", "weather</script><script>alert(2)</script>", 1)
    return MultiAgentTrace.from_json(data)


def _store_trace(db: str, trace: MultiAgentTrace, *, tags: dict[str, str], seen: float) -> str:
    """Save `trace` with its checks' scores, as the server does for a posted trace; a
    budget of 10 tokens makes it fail."""
    criteria = [*checks.ALL, checks.budgets(max_tokens=10)]
    responses = run(EvaluationService().score_trace(trace, criteria))
    trace_id = uuid.uuid4().hex
    store = open_store(db)
    try:
        store.traces.save(
            TraceRow(
                trace_id=trace_id,
                source="api",
                status="scored",
                first_seen=seen,
                last_span_at=seen,
                root_agent=trace.root.name,
                agents=[a.name for a in trace.iter_agents()],
                trace_json=trace.to_json(),
                tags=tags,
            ),
            [
                EvaluationRow(
                    id=str(uuid.uuid4()),
                    kind="trace",
                    criterion=r.criterion,
                    response=r.model_dump_json(),
                    overall_score=r.overall_score,
                    created_at=seen,
                    trace_id=trace_id,
                    source="api",
                )
                for r in responses
            ],
        )
    finally:
        store.close()
    return trace_id


@dataclass
class Site:
    url: str
    ingested: str  # came in over OTLP/HTTP, scored by the server
    hostile: str  # markup in names, tags and messages
    open_trace: str  # spans stored, not converted yet


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    db = str(tmp_path_factory.mktemp("ui") / "ui.db")
    now = time.time()
    hostile = _store_trace(
        db, _hostile_trace(), tags={"team": "<b>search</b>", "service.name": "bot"}, seen=now - 60
    )
    config = ServerConfig(
        port=0, db=db, trace_quiet_seconds=0.1, poll_seconds=0.05, log_level="warning"
    )
    with (
        BackgroundServer(config, checks_only=True) as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
    ):
        for line in FIXTURE.read_text().splitlines():
            sent = http.post(
                "/v1/traces", content=line, headers={"Content-Type": "application/json"}
            )
            assert sent.status_code == 200, sent.text

        def scored() -> list[str]:
            found = http.get("/api/v1/traces", params={"status": "scored"}).json()["traces"]
            return [t["trace_id"] for t in found if t["source"] == "otlp"]

        (ingested,) = wait_for(scored)
        # a trace whose root span has not ended: stored, not converted
        span = {
            "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": "b7ad6b7169203331",
            "parentSpanId": "00f067aa0ba902b7",
            "name": "chat",
            "startTimeUnixNano": str(int(now * 1e9)),
            "endTimeUnixNano": str(int(now * 1e9) + 1000),
        }
        body = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
        assert http.post("/v1/traces", json=body).status_code == 200
        yield Site(server.url, ingested, hostile, "0af7651916cd43dd8448eb211c80319c")


def test_the_trace_page_is_the_viewer_under_its_policy(site: Site) -> None:
    answer = httpx.get(f"{site.url}/ui/traces/{site.ingested}")
    assert answer.status_code == 200
    assert answer.headers["content-security-policy"] == content_security_policy(connect_self=True)
    assert answer.headers["cache-control"] == "no-store"
    page = answer.text
    assert f"<title>tracejudge: trace {site.ingested}</title>" in page
    assert '<nav><a href="/ui">&larr; all traces</a></nav>' in page
    assert '"criterion":"tool_arguments"' in page  # the embedded scores
    missing = httpx.get(f"{site.url}/ui/traces/{'f' * 32}")
    assert missing.status_code == 404 and "No trace" in missing.text
    waiting = httpx.get(f"{site.url}/ui/traces/{site.open_trace}")
    assert waiting.status_code == 200 and "Status open, 1 span; not converted yet" in waiting.text


def test_with_keys_a_browser_signs_in_with_basic_and_nothing_else(tmp_path: Path) -> None:
    config = ServerConfig(port=0, db=str(tmp_path / "k.db"), api_keys=(KEY,), log_level="warning")
    basic = "Basic " + base64.b64encode(f"anyone:{KEY}".encode()).decode()
    with BackgroundServer(config, checks_only=True) as server:
        bare = httpx.get(f"{server.url}/ui")
        assert bare.status_code == 401
        assert bare.headers["www-authenticate"] == 'Basic realm="tracejudge", charset="UTF-8"'
        assert "password of the browser's sign-in prompt" in bare.json()["detail"]
        assert httpx.get(f"{server.url}/ui", headers={"Authorization": basic}).status_code == 200
        assert httpx.get(f"{server.url}/ui", headers={"API-Key": KEY}).status_code == 200
        wrong = "Basic " + base64.b64encode(b"anyone:wrong").decode()
        assert httpx.get(f"{server.url}/ui", headers={"Authorization": wrong}).status_code == 401
        assert httpx.get(f"{server.url}/ui/traces/x", params={"api_key": KEY}).status_code == 401
        # Basic is for the pages only: the API and intake still want the key itself
        api = httpx.get(f"{server.url}/api/v1/traces", headers={"Authorization": basic})
        assert api.status_code == 401 and api.headers["www-authenticate"] == "Bearer"
        intake = httpx.post(f"{server.url}/v1/traces", json={}, headers={"Authorization": basic})
        assert intake.status_code == 401
        assert "set-cookie" not in httpx.get(f"{server.url}/ui", headers={"API-Key": KEY}).headers


@needs_chromium
def test_both_pages_load_in_chromium_with_no_console_message(site: Site, tmp_path: Path) -> None:
    dom, console = chromium(f"{site.url}/ui", tmp_path / "profile", "--dump-dom")
    assert console == ""
    assert "orchestrator, researcher, writer" in dom
    url = f"{site.url}/ui/traces/{site.hostile}"
    dom, console = chromium(url, tmp_path / "profile", "--dump-dom")
    assert console == ""  # the policy let the report's own script run, and nothing else ran
    assert 'class="agent-name">orchestrator' in dom
    assert f'class="agent-name">{HOSTILE.replace("<", "&lt;").replace(">", "&gt;")}writer' in dom
    # every agent is over its 10-token budget
    assert '<div class="status failed">FAILED: 3 failing findings in 3 agents</div>' in dom
    shot = tmp_path / "ui-trace.png"
    chromium(url, tmp_path / "profile", f"--screenshot={shot}")
    assert shot.stat().st_size > 20_000  # a page with content, not a blank one
    keep(shot)
    shot = tmp_path / "ui-list.png"
    chromium(f"{site.url}/ui", tmp_path / "profile", f"--screenshot={shot}")
    keep(shot)
