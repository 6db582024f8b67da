"""`GET /metrics` of a real server, scraped as Prometheus does and read with
prometheus_client's own text parser (issue #32 item 9)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.harness import ServerProcess, wait_for
from tests.server.hostile import otlp_protobuf

PROTOBUF = {"Content-Type": "application/x-protobuf"}


def scrape(server: ServerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics: (name, sorted labels) -> value."""
    answer = httpx.get(f"{server.url}/metrics", headers=server.headers, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def observed(tmp_path, judge_model) -> Iterator[ServerProcess]:
    args = ["--trace-quiet-seconds", "0.3", "--max-trace-spans", "20"]
    args += ["--max-backlog-traces", "50", "--rate-limit", "0"]
    process = ServerProcess(
        str(tmp_path / "db"), judge=judge_model, args=args, log=tmp_path / "log"
    ).start()
    yield process
    process.stop()


def test_metrics_count_what_the_server_did(observed: ServerProcess) -> None:
    """Before: no /metrics (404). Now the requests by route and status, the spans accepted
    and rejected, the backlog, the traces scored, the judge's calls and cost, the errors
    and the store's latency, as counted while a real server took real traffic."""
    assert httpx.get(f"{observed.url}/metrics").status_code == 401  # keys protect it
    with observed.client() as http:
        for _ in range(3):
            assert http.post("/v1/traces", content=otlp_protobuf(5), headers=PROTOBUF).is_success
        too_large = http.post("/v1/traces", content=otlp_protobuf(25), headers=PROTOBUF)
        assert too_large.is_success
        assert http.get(f"/api/v1/traces/{secrets.token_hex(16)}").status_code == 404
        wait_for(
            lambda: (
                len(http.get("/api/v1/traces", params={"status": "scored"}).json()["traces"]) == 3
            )
        )

    samples = wait_for(
        lambda: (
            (s := scrape(observed))
            and value(s, "tracejudge_traces_scored_total", status="scored") == 3
            # the backlog gauge is sampled, not moved with each trace: polled too
            and value(s, "tracejudge_backlog_traces") == 0
            and s
        )
    )
    posts = value(
        samples, "tracejudge_http_requests_total", route="/v1/traces", method="POST", status="200"
    )
    assert posts == 4
    missing = value(
        samples,
        "tracejudge_http_requests_total",
        route="/api/v1/traces/{trace_id}",
        method="GET",
        status="404",
    )
    assert missing == 1  # by template: one series for every trace id
    assert value(samples, "tracejudge_spans_accepted_total") == 15
    assert value(samples, "tracejudge_spans_rejected_total", reason="too_large") == 25
    assert value(samples, "tracejudge_backlog_limit") == 50
    assert value(samples, "tracejudge_backlog_traces") == 0  # all scored
    # 3 traces x (the judge's criteria), each one call to the scripted model.
    calls = value(samples, "tracejudge_judge_calls_total")
    assert calls >= 3 and value(samples, "tracejudge_judge_tokens_total") > 0
    assert ("tracejudge_judge_cost_usd_total", ()) in samples
    assert value(samples, "tracejudge_tasks_total", kind="score_trace", outcome="done") == 3
    assert value(samples, "tracejudge_errors_total", kind="unexpected") == 0
    assert value(samples, "tracejudge_errors_total", kind="store") == 0
    store_calls = value(samples, "tracejudge_store_seconds_count", operation="traces.add_spans")
    assert store_calls == 4
    assert value(samples, "tracejudge_store_seconds_sum", operation="traces.add_spans") > 0
    durations = value(samples, "tracejudge_http_request_seconds_count", route="/v1/traces")
    assert durations == 4
