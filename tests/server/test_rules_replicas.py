"""Two replicas on one PostgreSQL database, each started with the same rules file, sample
the same traces: whichever replica received a trace and whichever scored it, the rule's
decision is the trace id's (and OpenTelemetry's), and each trace is decided once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.server.harness import InProcessServer, wait_for
from tests.server.postgres import Cluster
from tests.server.rules_traffic import run, scored, send, trace_ids
from tracejudge.server.work.rules import sampled
from tracejudge.testing import ScriptedLLMServer

RULES = """
[[rule]]
name = "a-third"
sample_rate = 0.33
criteria = ["Reward answers that cite the sources the researcher found"]

[[rule]]
name = "also-a-third"
sample_rate = 0.33
criteria = ["Reward answers that cite the sources the researcher found"]
[rule.filter]
root_agent = "orchestrator"
"""


@pytest.mark.heavy("two replicas on PostgreSQL score 12 traces")
def test_two_replicas_sample_the_same_traces(
    tmp_path: Path,
    pg_cluster: Cluster,
    judge_model: ScriptedLLMServer,
    start_server: Callable[..., InProcessServer],
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    db = pg_cluster.database()
    args = ["--workers", "2", "--trace-quiet-seconds", "0.2", "--rules", str(rules)]
    replicas = [start_server(db, judge=judge_model, args=args) for _ in range(2)]
    ids = trace_ids(12, seed=60)
    expected = {t: sampled(t, 0.33) for t in ids}
    assert 0 < sum(expected.values()) < len(ids)
    a, b = (r.client() for r in replicas)
    try:
        for n, trace_id in enumerate(ids):
            send(a if n % 2 else b, run(trace_id))
        scored(a, len(ids))
        for trace_id in ids:
            decisions = wait_for(lambda t=trace_id: a.get(f"/api/v1/traces/{t}").json()["rules"])
            outcomes = {d["rule"]: d["outcome"] for d in decisions}
            want = "scored" if expected[trace_id] else "sampled_out"
            # the two rules at one rate judge the same traces, on either replica
            assert outcomes == {"a-third": want, "also-a-third": want}
            seen_by_b = b.get(f"/api/v1/traces/{trace_id}").json()["rules"]
            assert seen_by_b == decisions
        # each picked trace was judged once for the criterion both rules ask for
        for trace_id in ids:
            evaluations = a.get(f"/api/v1/traces/{trace_id}/evaluations").json()["evaluations"]
            judged = [e for e in evaluations if e["criterion"].startswith("Reward answers")]
            assert len(judged) == (1 if expected[trace_id] else 0)
        tallies = {r["rule"]["name"]: r for r in b.get("/api/v1/rules").json()["rules"]}
        assert tallies["a-third"]["scored"] == sum(expected.values())
    finally:
        a.close()
        b.close()
