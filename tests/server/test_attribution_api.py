"""Attribution through the server's API (a real server on loopback, SQLite): a stored
trace's deterministic causes by default, judge methods on a scripted judge model within
the server's judge budget, the attribution made with a judge stored and shown on the trace
page (headless Chromium: the timeline opens at the page of the marked step), and a trace
sent in the body."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.cdp import Browser
from tests.checks import faults
from tests.chromium import keep, needs_chromium
from tests.server.labelled import DEFAULT_CRITERIA, record_faulty_trace, store_scored
from tracejudge import checks
from tracejudge._sync import run
from tracejudge.evaluation.attribution import AttributionRequest, from_answers, trace_steps
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import AgentInstance, Attribution, MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig
from tracejudge.testing import Reply, ScriptedLLMServer

USAGE = {"prompt_tokens": 100, "completion_tokens": 10}


def _same(a: Attribution, b: Attribution) -> bool:
    return a.model_dump(exclude={"seconds"}) == b.model_dump(exclude={"seconds"})


def _stored(url: str, trace_id: str) -> tuple[MultiAgentTrace, list[MultiAgentTraceResponse]]:
    body = httpx.get(f"{url}/api/v1/traces/{trace_id}").json()
    answers = [MultiAgentTraceResponse.model_validate(e["response"]) for e in body["evaluations"]]
    return MultiAgentTrace.model_validate(body["trace"]), answers


@dataclass
class Stored:
    db: str
    trace_id: str
    trace: MultiAgentTrace


@pytest.fixture
def stored(tmp_path: Path, composo_tracing: TracerProvider) -> Stored:
    """The researcher's tool call breaks its schema; a judge failed it on POLITE too."""
    db = str(tmp_path / "attribution.db")
    trace = record_faulty_trace()
    trace_id = store_scored(db, trace, DEFAULT_CRITERIA)
    return Stored(db, trace_id, trace.model_copy(update={"trace_id": trace_id}))


@pytest.fixture
def checks_server(stored: Stored) -> Iterator[str]:
    with BackgroundServer(ServerConfig(port=0, db=stored.db), checks_only=True) as server:
        yield server.url


def test_the_default_is_the_deterministic_attribution_of_the_stored_answers(
    stored: Stored, checks_server: str
) -> None:
    answer = httpx.get(f"{checks_server}/api/v1/traces/{stored.trace_id}/attribution")
    assert answer.status_code == 200, answer.text
    got = Attribution.model_validate(answer.json())
    trace, answers = _stored(checks_server, stored.trace_id)
    assert _same(got, from_answers(trace, answers))
    assert got.failed and got.methods == ["checks"] and got.usage.calls == 0
    researcher = next(a for a in trace.iter_agents() if a.name == "researcher")
    top = got.top
    assert top is not None and top.step is not None
    assert (top.agent_instance_id, top.step.interaction, top.step.tool_call_id) == (
        researcher.id,
        0,
        "call_bad",
    )
    # the judged criterion the researcher failed is a cause too, without a step
    judged = [c for c in got.causes if c.criteria == ["Passes if the agent is polite"]]
    assert [(c.agent_name, c.step) for c in judged] == [("researcher", None)]
    # the caller's outcome is added to what failed; nothing is stored without a judge
    said = httpx.get(
        f"{checks_server}/api/v1/traces/{stored.trace_id}/attribution",
        params={"outcome": "the weather was never given"},
    ).json()
    assert said["failures"][-1] == "outcome: the weather was never given"


@pytest.mark.parametrize(
    ("query", "status", "words"),
    [
        ({"method": "guess"}, 422, "query parameter method: unknown method 'guess'"),
        ({"method": "checks,all_at_once"}, 400, "all_at_once need a judge"),
        ({"failed": "maybe"}, 422, "query parameter failed: 'maybe' is not true or false"),
        ({"max_step_chars": "5"}, 422, "query parameter max_step_chars"),
        ({"outcome": "x" * 4001}, 422, "query parameter outcome"),
    ],
)
def test_a_bad_query_is_refused_naming_the_parameter(
    stored: Stored, checks_server: str, query: dict[str, str], status: int, words: str
) -> None:
    answer = httpx.get(f"{checks_server}/api/v1/traces/{stored.trace_id}/attribution", params=query)
    assert answer.status_code == status and words in answer.json()["detail"], answer.text


def test_an_unknown_trace_is_404(checks_server: str) -> None:
    answer = httpx.get(f"{checks_server}/api/v1/traces/nope/attribution")
    assert answer.status_code == 404 and "no trace 'nope'" in answer.json()["detail"]


def test_a_trace_in_the_body_is_attributed_as_in_process(
    stored: Stored, checks_server: str
) -> None:
    url = f"{checks_server}/api/v1/attribution"
    trace = stored.trace
    answer = httpx.post(url, json={"trace": json.loads(trace.to_json())})
    assert answer.status_code == 200, answer.text
    local = run(EvaluationService().attribute(AttributionRequest(trace=trace)))
    assert _same(Attribution.model_validate(answer.json()), local)
    # checks by name, the caller's word
    only = httpx.post(url, json={"trace": json.loads(trace.to_json()), "checks": ["loops"]})
    assert only.status_code == 200 and only.json()["failed"] is False
    forced = httpx.post(
        url, json={"trace": json.loads(trace.to_json()), "checks": ["loops"], "failed": True}
    ).json()
    assert forced["failed"] is True and forced["failures"][0].startswith("the user reports")
    # what this server cannot do, or what is wrong, says so
    for body, status, words in [
        ({"checks": ["nope"]}, 422, "unknown check 'nope'"),
        ({"criteria": ["Passes if polite"]}, 400, "text criteria need a judge"),
        ({"methods": ["counterfactual"]}, 400, "counterfactual need a judge"),
        ({"methods": ["guess"]}, 422, "unknown attribution method 'guess'"),
        ({"max_step_chars": 5}, 422, "max_step_chars"),
    ]:
        refused = httpx.post(url, json={"trace": json.loads(trace.to_json()), **body})
        assert refused.status_code == status and words in refused.text, (body, refused.text)
    empty = MultiAgentTrace.from_agent(AgentInstance(id="a", name="a", interactions=[]))
    refused = httpx.post(url, json={"trace": json.loads(empty.to_json())})
    assert refused.status_code == 422 and "model call" in refused.json()["detail"]


# --------------------------------------------------------------------------- with a judge


def _wide_trace(workers: int, rounds: int) -> MultiAgentTrace:
    """A root that ran `workers` children of `rounds` tool calls each: a timeline of
    several pages."""
    children = []
    for n in range(workers):
        child = faults.long_agent(rounds)
        children.append(child.model_copy(update={"id": f"child-{n}", "name": f"worker-{n}"}))
    root = AgentInstance(id="root", name="root", interactions=[c.id for c in children])
    return MultiAgentTrace(
        root_agent_instance_id="root",
        agent_instance_by_id={"root": root, **{c.id: c for c in children}},
    )


@dataclass
class Judged:
    url: str
    model: ScriptedLLMServer
    trace_id: str
    trace: MultiAgentTrace


@pytest.fixture
def judged(tmp_path: Path) -> Iterator[Judged]:
    """A clean wide trace stored scored on the checks, and a server whose judge (a
    scripted model) names the last worker's last step; 150 judge tokens a day."""
    db = str(tmp_path / "judged.db")
    trace = _wide_trace(20, 10)
    trace_id = store_scored(db, trace, list(checks.ALL))
    trace = trace.model_copy(update={"trace_id": trace_id})
    last = trace_steps(trace)[-1]
    with ScriptedLLMServer() as model:
        model.default = lambda request: Reply.text(
            json.dumps(
                {
                    "explanation": f"{last.agent.name} added the values up wrong",
                    "agent": last.agent.name,
                    "step": last.index,
                    "other_steps": [],
                    "confidence": 0.8,
                }
            ),
            usage=USAGE,
        )
        # no verdict cache: each ask reaches the model (and the budget)
        judge = OpenAICompatibleJudge(
            "judge-model", base_url=model.base_url, api_key="k", cache=False
        )
        config = ServerConfig(port=0, db=db, max_judge_tokens_per_day=150)
        with BackgroundServer(config, judge=judge) as server:
            yield Judged(server.url, model, trace_id, trace)


def _task_status(judged: Judged, task: str) -> str:
    return str(httpx.get(f"{judged.url}/api/v1/tasks/{task}").json()["status"])


def _attribute(judged: Judged, **query: Any) -> httpx.Response:
    return httpx.get(
        f"{judged.url}/api/v1/traces/{judged.trace_id}/attribution", params=query, timeout=60
    )


def test_a_judge_method_is_asked_stored_and_kept_within_the_budget(judged: Judged) -> None:
    last = trace_steps(judged.trace)[-1]
    # the clean trace has nothing to attribute by the checks: no judge is asked
    plain = _attribute(judged, method="all_at_once").json()
    assert plain["failed"] is False and plain["causes"] == [] and judged.model.requests == []
    answer = _attribute(judged, method="all_at_once", failed="true")
    assert answer.status_code == 200, answer.text
    got = Attribution.model_validate(answer.json())
    assert got.methods == ["all_at_once"] and got.usage.calls == 1
    assert got.usage.input_tokens == 100 and got.usage.output_tokens == 10
    top = got.top
    assert top is not None and top.method == "all_at_once" and top.step is not None
    assert (top.agent_instance_id, top.step.interaction, top.index) == (
        last.agent.id,
        last.interaction,
        last.index,
    )
    assert len(judged.model.requests) == 1
    # asked again for the same methods: the stored attribution, no new judge call
    again = _attribute(judged, method="all_at_once")
    assert _same(Attribution.model_validate(again.json()), got)
    assert len(judged.model.requests) == 1
    # fresh=true asks again: 110 tokens were spent, so 220 reach the budget of 150
    fresh = Attribution.model_validate(
        _attribute(judged, method="all_at_once", failed="true", fresh="true").json()
    )
    assert fresh.usage.calls == 1 and len(judged.model.requests) == 2
    # the budget is spent: the judge is not asked, and the answer says why
    spent = Attribution.model_validate(
        _attribute(judged, method="all_at_once", failed="true", fresh="true").json()
    )
    assert len(judged.model.requests) == 2 and spent.usage.calls == 0
    assert spent.causes == []
    assert any("judge budget of 150 tokens per day was spent" in n for n in spent.notes)
    # the deterministic attribution costs nothing, whatever the budget
    checked = _attribute(judged, failed="true").json()
    assert checked["methods"] == ["checks"] and len(judged.model.requests) == 2


@needs_chromium
def test_the_page_shows_the_stored_attribution_and_opens_the_timeline_at_its_mark(
    judged: Judged, tmp_path: Path
) -> None:
    last = trace_steps(judged.trace)[-1]
    agents = list(judged.trace.iter_agents())
    at = next(k for k, a in enumerate(agents) if a.id == last.agent.id)
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{judged.url}/ui/traces/{judged.trace_id}")
        assert tab.console == []
        # nothing failed and nothing is stored: no attribution, the timeline's first page
        assert tab.evaluate("document.querySelectorAll('.causes').length") == 0
        pager = "document.querySelector('.tl .pager span').textContent"
        assert tab.evaluate(pager).startswith("rows 1–200 of 441")
        assert _attribute(judged, method="all_at_once", failed="true").status_code == 200
        tab.load(f"{judged.url}/ui/traces/{judged.trace_id}")
        assert tab.console == []
        facts = tab.evaluate("document.querySelector('.causes').parentNode.textContent")
        assert "found by a judge, all at once" in facts and "1 call" in facts
        assert "no criterion failed: the run was reported failed" in facts
        # the timeline opens at its last page, where the judge's step is marked
        assert tab.evaluate(pager).startswith("rows 401–441 of 441")
        marked = tab.evaluate(
            "Array.from(document.querySelectorAll('.tl-row.call-row.attributed'),"
            "r=>[Number(r.dataset.agent),Number(r.dataset.call)])"
        )
        assert marked == [[at, last.interaction]]
        cause = tab.evaluate("document.querySelector('.causes li').textContent")
        assert f"{last.agent.name}" in cause
        assert f"(call {last.index + 1} of the whole trace)" in cause
        assert "added the values up wrong" in cause and "all_at_once" in cause
        keep(tab.screenshot(tmp_path / "ui-trace-judged-attribution.png"))
    # scored anew, the stored attribution is older than the answers: not shown
    rescore = httpx.post(
        f"{judged.url}/api/v1/traces/{judged.trace_id}/score", json={"checks": ["loops"]}
    )
    assert rescore.status_code == 202
    task = rescore.json()["task_id"]
    deadline = time.monotonic() + 60
    while (status := _task_status(judged, task)) not in ("done", "failed"):
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    assert status == "done"
    page = httpx.get(f"{judged.url}/ui/traces/{judged.trace_id}").text
    assert '"attribution"' not in page.split('id="tj-data">', 1)[1].split("</script>", 1)[0]
