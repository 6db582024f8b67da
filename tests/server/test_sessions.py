"""Sessions and users through a real server: traces carrying `session.id` and `user.id`
grouped, the list filtered by them, a session with its traces in order and its worst
verdict (API and page), and session-level criteria that read the whole conversation in
order, queued by a rule or asked for, inside the judge's input budget."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.harness import QUIET_SECONDS, InProcessServer, wait_for
from tests.server.rules_traffic import run, scored, send, trace_ids
from tracejudge.testing import ScriptedLLMServer

REMEMBERS = "Reward conversations where the assistant keeps track of what the user asked before"
RULES = f"""
[[rule]]
name = "conversations"
session_criteria = ["{REMEMBERS}"]
"""
CITIES = ("Lisbon", "Oslo", "Quito")
MINUTE_NS = 60 * 10**9


def _start(
    tmp_path: Path,
    db: str,
    judge: ScriptedLLMServer,
    start_server: Callable[..., InProcessServer],
    *extra: str,
) -> InProcessServer:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    args = ["--trace-quiet-seconds", QUIET_SECONDS, "--rules", str(rules), *extra]
    return start_server(db, judge=judge, args=args)


def _send_sessions(http: httpx.Client) -> tuple[list[str], str, str]:
    """Three turns of ann's session s-1 (a minute apart), one of bob's s-2 later, one
    trace of no session; (s-1's ids in order, s-2's id, the lone id)."""
    ids = trace_ids(5, seed=70)
    turns = ids[:3]
    for n, trace_id in enumerate(turns):
        body = run(
            trace_id, session="s-1", user="ann", start_shift_ns=n * MINUTE_NS, city=CITIES[n]
        )
        send(http, body)
    send(http, run(ids[3], session="s-2", user="bob", start_shift_ns=10 * MINUTE_NS))
    send(http, run(ids[4]))
    scored(http, 5)
    return turns, ids[3], ids[4]


def _session_answers(http: httpx.Client, session: str, turns: int) -> list[dict[str, Any]]:
    def found() -> list[dict[str, Any]] | None:
        body = http.get(f"/api/v1/sessions/{session}").json()
        done = [e for e in body["evaluations"] if e["turns"] == turns]
        return done or None

    result: list[dict[str, Any]] = wait_for(found, timeout=60)
    return result


@pytest.mark.parametrize("db_url", ["sqlite", "postgres"], indirect=True)
def test_traces_grouped_by_session_and_user_and_judged_as_one_conversation(
    tmp_path: Path,
    db_url: str,
    judge_model: ScriptedLLMServer,
    start_server: Callable[..., InProcessServer],
) -> None:
    server = _start(tmp_path, db_url, judge_model, start_server)
    with server.client() as http:
        turns, bobs, lone = _send_sessions(http)

        def listed(**params: str) -> list[str]:
            traces = http.get("/api/v1/traces", params={**params, "sort": "start_time"}).json()
            return [t["trace_id"] for t in traces["traces"]]

        wait_for(lambda: len(listed(session="s-1")) == 3)
        assert set(listed(session="s-1")) == set(turns)
        assert listed(user="bob") == [bobs]
        assert listed(session="s-1", user="bob") == []
        assert lone not in listed(session="s-2") and len(listed()) == 5

        sessions = http.get("/api/v1/sessions").json()["sessions"]
        assert [(s["session_id"], s["user_id"], s["traces"]) for s in sessions] == [
            ("s-2", "bob", 1),
            ("s-1", "ann", 3),
        ]
        assert [
            s["session_id"] for s in http.get("/api/v1/sessions?user=ann").json()["sessions"]
        ] == ["s-1"]
        session = http.get("/api/v1/sessions/s-1").json()
        assert [t["trace_id"] for t in session["trace_list"]] == turns  # in start order
        verdicts = [t["verdict"] for t in session["trace_list"]]
        worst = next(v for v in ("failed", "pending", "passed", "unscored") if v in verdicts)
        assert session["verdict"] == worst
        trace = http.get(f"/api/v1/traces/{turns[1]}").json()
        assert (trace["session_id"], trace["user_id"]) == ("s-1", "ann")
        assert http.get("/api/v1/sessions/nothing").status_code == 404

        # the rule's session criterion read the whole conversation, its turns in order
        (answer,) = _session_answers(http, "s-1", 3)[-1:]
        assert answer["criterion"] == REMEMBERS and answer["overall_score"] is not None
        asked = [
            r.json["messages"][-1]["content"]
            for r in judge_model.requests
            if REMEMBERS in str(r.json) and "Quito" in str(r.json)
        ]
        assert asked
        prompt = asked[-1]
        assert prompt.index("Lisbon") < prompt.index("Oslo") < prompt.index("Quito")

        # any criteria, on request
        task = http.post("/api/v1/sessions/s-2/score", json={"criteria": ["Reward brevity"]})
        assert task.status_code == 202
        wait_for(
            lambda: http.get(f"/api/v1/tasks/{task.json()['task_id']}").json()["status"] == "done"
        )
        (brief,) = [
            e for e in _session_answers(http, "s-2", 1) if e["criterion"] == "Reward brevity"
        ]
        assert brief["response"]["results_by_agent_name"]["session"]["agent_name"] == "session"
        refused = http.post("/api/v1/sessions/s-2/score", json={"criteria": []})
        assert refused.status_code == 422

        # the pages: the trace's links to its session; the session's lists its turns in order
        page = http.get(f"/ui/traces/{turns[0]}").text
        assert 'href="/ui/sessions/s-1"' in page
        html = http.get("/ui/sessions/s-1").text
        assert html.index(turns[0]) < html.index(turns[1]) < html.index(turns[2])
        assert REMEMBERS in html and "ann" in html


def test_a_session_longer_than_the_judges_input_budget_is_not_sent_whole(
    tmp_path: Path,
    judge_model: ScriptedLLMServer,
    start_server: Callable[..., InProcessServer],
) -> None:
    budget = ("--judge-max-input-tokens", "300", "--no-explore")
    server = _start(tmp_path, str(tmp_path / "db"), judge_model, start_server, *budget)
    with server.client() as http:
        _send_sessions(http)
        (answer,) = _session_answers(http, "s-1", 3)[-1:]
        (result,) = answer["response"]["results_by_agent_name"]["session"][
            "results_by_agent_instance_id"
        ].values()
        assert result["not_evaluated"] and answer["overall_score"] is None
        assert not any(REMEMBERS in str(r.json) for r in judge_model.requests)
