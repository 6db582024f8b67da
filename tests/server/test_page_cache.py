"""The trace page kept once drawn (issue #32 item 5): a 20,000-span trace's page takes a
second of CPU to draw, several seconds of wall time on a busy machine, for every view. A
second view of an unchanged trace is the page kept (its `Server-Timing` says `kept`);
anything the page is drawn from that changes (a label, a new answer) draws it anew."""

from __future__ import annotations

import httpx

from tests.checks import faults
from tests.server.harness import InProcessServer, wait_for
from tracejudge.models import MultiAgentTrace
from tracejudge.server.http.page_cache import PageCache


def _how(page: httpx.Response) -> str:
    assert page.status_code == 200, page.text
    return page.headers["server-timing"].split('desc="', 1)[1].split('"', 1)[0]


def test_a_page_is_drawn_once_until_what_it_shows_changes(server: InProcessServer) -> None:
    trace = MultiAgentTrace.from_agent(faults.long_agent(8))
    agent = trace.root_agent_instance_id
    with server.client() as http:
        body = {"evaluator_name": "final_answer", "trace": trace.to_wire(), "trace_id": "t1"}
        assert http.post("/api/v1/evals/trace", json=body).status_code == 200
        first = http.get("/ui/traces/t1")
        assert _how(first) == "drawn"
        again = http.get("/ui/traces/t1")
        assert _how(again) == "kept" and again.content == first.content

        label = {
            "trace_id": "t1",
            "agent_instance_id": agent,
            "criterion": "final_answer",
            "stance": "score",
            "score": 0.25,
            "note": "a note on the cached page",
        }
        assert http.post("/api/v1/labels", json=label).status_code in (200, 201)
        labelled = http.get("/ui/traces/t1")
        assert _how(labelled) == "drawn" and "a note on the cached page" in labelled.text
        assert _how(http.get("/ui/traces/t1")) == "kept"

        task = http.post("/api/v1/traces/t1/score", json={"checks": ["loops"]}).json()["task_id"]
        wait_for(lambda: http.get(f"/api/v1/tasks/{task}").json()["status"] == "done")
        rescored = http.get("/ui/traces/t1")
        assert _how(rescored) == "drawn" and '"loops"' in rescored.text
        assert '"loops"' not in first.text


def test_the_pages_kept_stay_within_their_bound() -> None:
    cache = PageCache(max_bytes=100)
    for k in range(6):
        cache.put(f"p{k}", bytes(30))
        assert cache.size <= 100
    assert cache.get("p0") is None and cache.get("p5") == bytes(30)
    cache.get("p3")  # viewed: kept before the others
    cache.put("p6", bytes(30))
    assert cache.get("p3") is not None and cache.get("p4") is None
    cache.put("big", bytes(51))  # over half the bound: never kept
    assert cache.get("big") is None
