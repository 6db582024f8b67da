"""Evaluation rules through real servers: a rules file at start, sampling decided from the
trace id (OpenTelemetry's own decision), checks on every trace, a rule's bar held, each
trace saying which rules scored it and which sampled it out (API and page), rules made and
changed through the API for new traces only, a capped backfill, a rule's own budget."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from tests.server.harness import QUIET_SECONDS, InProcessServer, wait_for
from tests.server.rules_traffic import run, scored, send, trace_ids
from tracejudge import checks
from tracejudge.server.work.rules import sampled
from tracejudge.testing import ScriptedLLMServer

CITES = "Reward answers that cite the sources the researcher found"
CHECK_NAMES = {c.name for c in checks.ALL}


def test_sampled_is_opentelemetrys_trace_id_ratio_decision() -> None:
    generator = random.Random(7)
    ids = [f"{generator.getrandbits(128):032x}" for _ in range(3000)]
    for rate in (0.0, 0.01, 0.1, 0.5, 0.9, 1.0):
        sampler = TraceIdRatioBased(rate)
        for trace_id in ids:
            theirs = sampler.should_sample(None, int(trace_id, 16), "span").decision
            assert sampled(trace_id, rate) == (theirs == Decision.RECORD_AND_SAMPLE), (
                trace_id,
                rate,
            )
    # a lower rate's traces are among a higher one's: two rules at 10% judge the same 10%
    tenth = {t for t in ids if sampled(t, 0.1)}
    assert tenth <= {t for t in ids if sampled(t, 0.5)}
    assert 200 < len(tenth) < 400
    # an id of the caller's (a posted trace) is decided too, the same way every time
    assert sampled("order-1234", 0.5) == sampled("order-1234", 0.5)
    assert sum(sampled(f"order-{n}", 0.5) for n in range(2000)) in range(850, 1150)


def _rules_file(tmp_path: Path, text: str, suffix: str = ".toml") -> Path:
    path = tmp_path / f"rules{suffix}"
    path.write_text(text)
    return path


HALF_OF_CHECKOUT = f"""
[[rule]]
name = "checkout-quality"
description = "half of checkout's traces judged"
sample_rate = 0.5
criteria = [{{text = "{CITES}", bar = 0.9}}]
check_bars = {{final_answer = 1.0}}
[rule.filter]
service = "checkout"
"""


def _evaluated(http: httpx.Client, trace_id: str) -> set[str]:
    answer = http.get(f"/api/v1/traces/{trace_id}/evaluations").json()
    return {e["criterion"] for e in answer["evaluations"]}


@pytest.fixture
def ruled(
    tmp_path: Path,
    judge_model: ScriptedLLMServer,
    start_server: Callable[..., InProcessServer],
) -> InProcessServer:
    rules = _rules_file(tmp_path, HALF_OF_CHECKOUT)
    args = ["--trace-quiet-seconds", QUIET_SECONDS, "--rules", str(rules)]
    return start_server(str(tmp_path / "tracejudge.db"), judge=judge_model, args=args)


def test_half_of_checkout_judged_checks_on_all_and_each_trace_says_why(
    ruled: InProcessServer, judge_model: ScriptedLLMServer
) -> None:
    checkout, search = trace_ids(10), trace_ids(2, seed=34)
    picked = {t for t in checkout if sampled(t, 0.5)}
    assert 0 < len(picked) < len(checkout)  # the seed gives both kinds
    with ruled.client() as http:
        for trace_id in checkout:
            send(http, run(trace_id, service="checkout"))
        for trace_id in search:
            send(http, run(trace_id, service="search"))
        scored(http, 12)
        for trace_id in checkout + search:
            body = http.get(f"/api/v1/traces/{trace_id}").json()
            criteria = {e["criterion"] for e in body["evaluations"]}
            assert CHECK_NAMES <= criteria  # the checks ran on every trace
            judged = trace_id in picked
            assert (CITES in criteria) == judged
            decisions = {d["rule"]: d for d in body["rules"]}
            if trace_id in search:
                assert decisions == {}  # not one of the rule's traces
                continue
            decision = decisions["checkout-quality"]
            assert decision["outcome"] == ("scored" if judged else "sampled_out")
            assert decision["revision"] == 1
            if judged:  # the judge said 8/10; the rule's bar is 0.9
                (cited,) = [e for e in body["evaluations"] if e["criterion"] == CITES]
                assert cited["response"]["fail_under"] == 0.9
                assert cited["tags"] == {"tracejudge.rule": "checkout-quality"}  # for trends
                assert body["verdict"] == "failed"
            else:
                assert "not in the rule's 50% sample" in decision["reason"]
        # only the picked traces reached the judge
        judged_ids = {t for t in checkout if CITES in _evaluated(http, t)}
        assert judged_ids == picked
        assert all(CITES in json.dumps(r.json) for r in judge_model.requests)
        # the page says it too
        out = sorted(set(checkout) - picked)[0]
        page = http.get(f"/ui/traces/{out}").text
        assert 'data-outcome="sampled_out"' in page and "checkout-quality" in page
        # the rules list counts what each decided
        (listed,) = http.get("/api/v1/rules").json()["rules"]
        assert listed["source"] == "file"
        assert (listed["scored"], listed["sampled_out"]) == (len(picked), 10 - len(picked))
        # a rule of the file is changed in the file, not through the API
        body = {"name": "checkout-quality", "sample_rate": 1.0}
        answer = http.put("/api/v1/rules/checkout-quality", json=body)
        assert answer.status_code == 409 and "--rules file" in answer.json()["detail"]
        assert http.delete("/api/v1/rules/checkout-quality").status_code == 409


def test_rules_made_through_the_api_apply_to_new_traces_and_backfill_is_capped(
    server: InProcessServer,
) -> None:
    before, after = trace_ids(5, seed=40), trace_ids(2, seed=41)
    with server.client() as http:
        for trace_id in before:
            send(http, run(trace_id, service="checkout"))
        scored(http, 5)
        rule = {"name": "cites", "criteria": [CITES], "filter": {"root_agent": "orchestrator"}}
        made = http.post("/api/v1/rules", json=rule)
        assert made.status_code == 201, made.text
        assert made.json()["revision"] == 1 and made.json()["source"] == "api"
        assert http.post("/api/v1/rules", json=rule).status_code == 409
        wrong = http.post("/api/v1/rules", json={**rule, "name": "x", "sample_rate": 2})
        assert wrong.status_code == 422 and "sample_rate" in wrong.text
        unknown = http.post("/api/v1/rules", json={**rule, "name": "y", "check_bars": {"nope": 1}})
        assert unknown.status_code == 422 and "unknown check 'nope'" in unknown.text
        changed = http.put("/api/v1/rules/cites", json={**rule, "description": "v2"})
        assert changed.json()["revision"] == 2
        for trace_id in after:
            send(http, run(trace_id, service="checkout"))
        scored(http, 7)
        wait_for(lambda: all(_decisions(http, t) for t in after))
        # the change applies to new traces: the stored ones were not judged again
        assert all(CITES in _evaluated(http, t) for t in after)
        assert not any(CITES in _evaluated(http, t) for t in before)
        assert {_decisions(http, t)[0]["revision"] for t in after} == {2}
        # a backfill is an explicit action, capped
        first = http.post("/api/v1/rules/cites/backfill", json={"limit": 2}).json()
        assert (first["queued"], first["capped"]) == (2, True)
        rest = http.post("/api/v1/rules/cites/backfill", json={"limit": 100}).json()
        assert (rest["queued"], rest["capped"]) == (3, False)
        wait_for(lambda: all(CITES in _evaluated(http, t) for t in before))
        wait_for(lambda: all(_decisions(http, t)[0]["outcome"] == "scored" for t in before))
        again = http.post("/api/v1/rules/cites/backfill", json={}).json()
        assert again["queued"] == 0
        too_many = http.post("/api/v1/rules/cites/backfill", json={"limit": 10_001})
        assert too_many.status_code == 422
        assert http.delete("/api/v1/rules/cites").status_code == 204
        assert http.get("/api/v1/rules/cites").status_code == 404


def _decisions(http: httpx.Client, trace_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = http.get(f"/api/v1/traces/{trace_id}").json()["rules"]
    return found


def test_a_rule_past_its_own_budget_stops_judging_and_says_so(server: InProcessServer) -> None:
    ids = trace_ids(3, seed=50)
    rule = {"name": "frugal", "criteria": [CITES], "max_judge_tokens_per_day": 1}
    with server.client() as http:
        assert http.post("/api/v1/rules", json=rule).status_code == 201
        send(http, run(ids[0]))
        scored(http, 1)
        for trace_id in ids[1:]:
            send(http, run(trace_id))
        scored(http, 3)
        wait_for(lambda: all(_decisions(http, t) for t in ids))
        assert _decisions(http, ids[0])[0]["outcome"] == "scored"
        for trace_id in ids[1:]:
            (decision,) = _decisions(http, trace_id)
            assert decision["outcome"] == "over_budget"
            assert "budget of 1 tokens a day is spent" in decision["reason"]
            assert CITES not in _evaluated(http, trace_id)
            assert CHECK_NAMES <= _evaluated(http, trace_id)  # the checks still ran


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[rule]]\nsample_rate = 0.1\n", "rule 1: name: missing"),
        ('[[rule]]\nname = "a"\nsample_rate = 1.5\n', "sample_rate is 1.5; it must be at most 1"),
        ('[[rule]]\nname = "a"\nsampel_rate = 0.5\n', "sampel_rate: unknown field; the fields"),
        ('[[rule]]\nname = "a"\n[rule.filter]\nservise = "x"\n', "filter.servise: unknown field"),
        ('[[rule]]\nname = "a"\ncheck_bars = {loop = 1}\n', "unknown check 'loop'; the checks"),
        ('[[rule]]\nname = "a"\n[[rule]]\nname = "a"\n', "rule 2 ('a'): name 'a' is given twice"),
        ('[[rule]]\nname = "a b"\n', "is not a rule name; use letters"),
        ('[[rule]]\nname = "a"\ncriteria = [""]\n', "criteria.0.text"),
        ("rule = 3\n", "holds no rule"),
        ("[[rule]\n", "is not valid"),
    ],
)
def test_a_bad_rules_file_is_one_line_naming_the_field_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    from tracejudge.server.main import main

    path = _rules_file(tmp_path, text)
    status = main(["--rules", str(path), "--db", str(tmp_path / "db"), "--port", "0"])
    error = capsys.readouterr().err
    assert status == 2
    assert error.count("\n") == 1 and error.startswith(f"tracejudge serve: --rules {path}")
    assert expected in error


def test_yaml_and_toml_rules_are_the_same_rules(tmp_path: Path) -> None:
    from tracejudge.server.work.rules import read_rules_file

    yaml_text = f"""
rules:
  - name: checkout-quality
    description: half of checkout's traces judged
    sample_rate: 0.5
    criteria:
      - text: "{CITES}"
        bar: 0.9
    check_bars: {{final_answer: 1.0}}
    filter: {{service: checkout}}
"""
    from_toml = read_rules_file(_rules_file(tmp_path, HALF_OF_CHECKOUT))
    from_yaml = read_rules_file(_rules_file(tmp_path, yaml_text, ".yaml"))
    assert from_toml == from_yaml
    assert from_yaml[0].criteria[0].bar == 0.9


def test_judge_criteria_without_a_judge_are_refused_at_start_and_through_the_api(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    start_server: Callable[..., InProcessServer],
) -> None:
    from tracejudge.server.main import main

    path = _rules_file(tmp_path, HALF_OF_CHECKOUT)
    status = main(["--rules", str(path), "--db", str(tmp_path / "db"), "--port", "0"])
    assert status == 2
    assert "rule 'checkout-quality' gives judge criteria, but no judge" in capsys.readouterr().err
    checks_only = start_server(str(tmp_path / "other.db"))
    with checks_only.client() as http:
        answer = http.post("/api/v1/rules", json={"name": "a", "criteria": [CITES]})
        assert answer.status_code == 400 and "has no judge" in answer.json()["detail"]
        bars = http.post("/api/v1/rules", json={"name": "b", "check_bars": {"loops": 0.5}})
        assert bars.status_code == 201


def test_the_cli_checks_a_rules_file_and_backfills_a_rule_on_a_server(
    server: InProcessServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.server.harness import API_KEY
    from tracejudge.cli import main

    assert main(["rules", "check", str(_rules_file(tmp_path, HALF_OF_CHECKOUT))]) == 0
    assert capsys.readouterr().out == "checkout-quality: 1 judge criteria, 50% sampled\n"
    ids = trace_ids(3, seed=90)
    with server.client() as http:
        for trace_id in ids:
            send(http, run(trace_id))
        scored(http, 3)
        rule = {"name": "later", "criteria": [CITES]}
        assert http.post("/api/v1/rules", json=rule).status_code == 201
        address = server.url.replace("http://", f"http://{API_KEY}@")
        status = main(["rules", "backfill", "later", "--server", address, "--limit", "2"])
        out = capsys.readouterr()
        assert status == 0 and API_KEY not in out.out + out.err
        assert out.out.startswith("rule later: 2 traces queued for its criteria")
        assert "more stored traces may be left" in out.out
        wait_for(lambda: sum(CITES in _evaluated(http, t) for t in ids) == 2)
        assert main(["rules", "backfill", "nothing", "--server", address]) == 1
        assert "no rule named 'nothing'" in capsys.readouterr().err
        assert main(["rules", "backfill", "later", "--server", server.url]) == 1  # no key
        assert "401" in capsys.readouterr().err


def test_the_readmes_rules_file_is_read_as_it_says(tmp_path: Path) -> None:
    from tracejudge.server.work.rules import read_rules_file

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("```toml\n# rules.toml\n", 1)[1].split("```", 1)[0]
    (rule,) = read_rules_file(_rules_file(tmp_path, block))
    assert (rule.name, rule.sample_rate) == ("writer-quality", 0.1)
    assert rule.filter.root_agent == "writer"
    assert rule.criteria[0].bar == 0.7 and rule.max_judge_cost_per_day == 5.0
