"""Alerts end to end: a monitor on the writer's failure rate, created through the API of a
real server, fires to a webhook receiver on loopback that is down at first (the server
retries with backoff, and logs each attempt), then up (one delivery, with a link to the
failing traces that the server's list answers); it recovers only once the rate is back
past its hysteresis. Two replicas over one PostgreSQL database fire once."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from calendar import timegm
from collections.abc import Callable, Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from time import strptime
from urllib.parse import urlsplit

import httpx
import pytest

from tests.server.harness import InProcessServer, wait_for
from tests.server.stored import agent_trace, answer, stored
from tracejudge.server.store import open_store

PUBLIC = "https://tracejudge.test"
FAST = ["--alert-interval-seconds", "0.2", "--alert-retry-seconds", "0.2", "--public-url", PUBLIC]
FINAL = "final_answer"


class Receiver:
    """A webhook receiver on loopback: records each POST's body, answers 204."""

    def __init__(self, port: int) -> None:
        received = self.received = []  # type: ignore[var-annotated]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("Content-Length", 0))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def free_port() -> int:
    """A loopback port nothing listens on (yet)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def seed(db: str, failing: int, passing: int) -> None:
    """Scored traces of the last minute: the writer fails `failing` of them."""
    store = open_store(db)
    try:
        items = []
        for i in range(failing + passing):
            trace = agent_trace(["planner", "writer"], start=time.time() - 60)
            score = 0.1 if i < failing else 0.9
            items.append(
                stored(
                    uuid.uuid4().hex,
                    trace,
                    [answer(trace, FINAL, {"planner": 1.0, "writer": score})],
                )
            )
        store.traces.save_many(items)
    finally:
        store.close()


def monitor(server: InProcessServer, port: int, **given: object) -> str:
    body = {
        "name": "writer fails",
        "metric": "failure_rate",
        "agent": "writer",
        "criterion": FINAL,
        "threshold": 0.2,
        "min_count": 10,
        "window_hours": 1,
        "webhook_url": f"http://127.0.0.1:{port}/hook/SECRET",
        **given,
    }
    with server.client() as http:
        created = http.post("/api/v1/monitors", json=body)
    assert created.status_code == 201, created.text
    assert "SECRET" not in created.text  # the webhook URL is shown by its host only
    return str(created.json()["id"])


def deliveries(server: InProcessServer, monitor_id: str) -> list[dict]:
    with server.client() as http:
        found = http.get(f"/api/v1/monitors/{monitor_id}/deliveries")
    assert found.status_code == 200, found.text
    return found.json()["deliveries"]  # type: ignore[no-any-return]


@pytest.fixture
def receivers() -> Iterator[Callable[[int], Receiver]]:
    started: list[Receiver] = []

    def start(port: int) -> Receiver:
        started.append(Receiver(port))
        return started[-1]

    yield start
    for receiver in started:
        receiver.stop()


@pytest.mark.heavy("a receiver down then up: the retries' backoff is waited out")
def test_fires_once_retries_while_the_receiver_is_down_and_recovers(
    tmp_path: Path,
    start_server: Callable[..., InProcessServer],
    receivers: Callable[[int], Receiver],
) -> None:
    db = str(tmp_path / "alerts.db")
    server = start_server(db, args=FAST)
    seed(db, failing=10, passing=10)  # the writer fails half the time
    port = free_port()
    monitor_id = monitor(server, port)

    def failed_four_times() -> bool:
        found = deliveries(server, monitor_id)
        return bool(found) and len(found[0]["log"]) >= 4

    wait_for(failed_four_times)
    (down,) = deliveries(server, monitor_id)
    assert down["status"] == "pending" and down["event"] == "firing"
    assert {e["outcome"] for e in down["log"]} == {"not sent: ConnectError"}
    # the waits between attempts double: 0.2 s, 0.4 s, 0.8 s at least
    moments = [datetime.fromisoformat(e["at"]).timestamp() for e in down["log"][:4]]
    gaps = [later - earlier for earlier, later in zip(moments, moments[1:], strict=False)]
    assert all(gap >= 0.2 * 2**i - 0.01 for i, gap in enumerate(gaps)), gaps
    assert [e["attempt"] for e in down["log"]][:4] == [1, 2, 3, 4]
    receiver = receivers(port)  # the receiver comes up: the next retry gets through
    wait_for(lambda: deliveries(server, monitor_id)[0]["status"] == "delivered")
    (fired,) = receiver.received
    assert fired["event"] == "firing" and fired["value"] == pytest.approx(0.5)
    assert fired["count"] == 20 and fired["crossing"] == 1
    assert "webhook_url" not in fired["monitor"]
    link = urlsplit(fired["failing_traces"])
    assert f"{link.scheme}://{link.netloc}" == PUBLIC
    with server.client() as http:  # the link's page on this server lists the failing traces
        listed = http.get(
            "/api/v1/traces",
            params=[*httpx.QueryParams(link.query).multi_items(), ("limit", "500")],
        )
    assert listed.status_code == 200 and listed.json()["total"] == 10

    # 170 more that pass: 10 of 190 (5%) is past the hysteresis (18%): recovered, once
    seed(db, failing=0, passing=170)
    wait_for(lambda: len(receiver.received) == 2)
    assert [r["event"] for r in receiver.received] == ["firing", "recovered"]
    with server.client() as http:
        state = http.get(f"/api/v1/monitors/{monitor_id}").json()["state"]
    assert state["state"] == "ok" and state["crossings"] == 1
    assert state["value"] == pytest.approx(10 / 190)


@pytest.mark.heavy("two servers over one PostgreSQL database, checking for a while")
def test_two_replicas_over_one_postgresql_fire_once(
    pg_cluster: object,
    start_server: Callable[..., InProcessServer],
    receivers: Callable[[int], Receiver],
) -> None:
    db = pg_cluster.database()  # type: ignore[attr-defined]
    seed(db, failing=15, passing=5)
    port = free_port()
    receiver = receivers(port)
    replicas = [start_server(db, args=FAST) for _ in range(2)]
    monitor_id = monitor(replicas[0], port, format="slack")
    wait_for(lambda: len(receiver.received) >= 1)
    (delivered,) = deliveries(replicas[1], monitor_id)
    sent_at = time.time()

    def checked_since() -> bool:  # both replicas go on checking for a good while
        with replicas[1].client() as http:
            state = http.get(f"/api/v1/monitors/{monitor_id}").json()["state"]
        checked = state["checked_at"]
        return checked is not None and timegm(strptime(checked, "%Y-%m-%dT%H:%M:%SZ")) > sent_at + 2

    wait_for(checked_since)
    assert len(receiver.received) == 1
    (slack,) = receiver.received
    assert set(slack) == {"text"} and slack["text"].startswith("FIRING: writer fails")
    assert f"<{PUBLIC}/ui?verdict=failed" in slack["text"]
    assert delivered["id"] == f"{monitor_id}:1:firing"
    assert len(deliveries(replicas[0], monitor_id)) == 1
