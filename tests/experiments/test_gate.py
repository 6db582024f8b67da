"""`compare_runs` and its gate: significant and large enough, or inconclusive, or a hard
break; pass^k, pass@k and flaky rows with repeats. Runs are built from per-row verdicts
(what a run directory records); the end-to-end trials run the real agent and judge."""

from __future__ import annotations

import random
from collections.abc import Collection
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

import tracejudge
from tracejudge.experiments import (
    AgentScore,
    GatePolicy,
    RowResult,
    RunRecord,
    StoredRun,
    compare_runs,
)
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.testing import ScriptedLLMServer

from .conftest import adder_model, make_task, noisy_judge, rows


def run_of(verdicts: dict[str, list[bool]], seconds: float = 1.0) -> StoredRun:
    """A run whose rows passed or failed "correct" as given, one list entry per repeat."""
    results = [
        RowResult(
            row,
            repeat,
            "in",
            "out",
            "out",
            seconds,
            scores=[AgentScore("agent", "correct", float(passed), 1.0, passed)],
        )
        for row, repeats in verdicts.items()
        for repeat, passed in enumerate(repeats)
    ]
    repeats = max(len(v) for v in verdicts.values())
    record = RunRecord(
        name="r",
        started_at="t",
        repeats=repeats,
        rows=len(verdicts),
        cost={"judge_cost_usd": 0.5 * seconds},
    )
    return StoredRun(record, results)


def rows_passing(n: int, failing: Collection[int] = (), repeats: int = 1) -> dict[str, list[bool]]:
    return {f"r{i}": [i not in failing] * repeats for i in range(n)}


def test_a_significant_large_drop_is_a_regression_with_its_rows() -> None:
    comparison = compare_runs(
        run_of(rows_passing(50)), run_of(rows_passing(50, {3, 7, *range(20, 30)}), 2.0)
    )
    (item,) = comparison.criteria
    assert item.verdict == "regressed"
    assert (item.worse, item.better, item.paired_rows) == (12, 0, 50)
    assert item.p_value == pytest.approx(2 * 0.5**12)
    assert item.pass_rate_difference == pytest.approx(-0.24)
    assert item.pass_rate_interval is not None and item.pass_rate_interval[1] < 0
    assert set(item.regressed_rows) == {"r3", "r7", *(f"r{i}" for i in range(20, 30))}
    assert comparison.gate() == ("fail", [f"agent / correct: {item.reason}"])
    assert comparison.latency["delta"]["mean_seconds"] == pytest.approx(1.0)
    assert comparison.cost["delta"]["judge_cost_usd"] == pytest.approx(0.5)


def test_an_improvement_is_not_a_failure() -> None:
    comparison = compare_runs(run_of(rows_passing(50, set(range(15)))), run_of(rows_passing(50)))
    assert comparison.criteria[0].verdict == "improved"
    assert comparison.gate()[0] == "pass"


def test_a_small_significant_drop_is_unchanged_and_a_large_unsure_one_inconclusive() -> None:
    # 12 of 400 rows worse: significant (p ~ 0.0005) but a 3% drop, under the 5% minimum
    small = compare_runs(run_of(rows_passing(400)), run_of(rows_passing(400, set(range(12)))))
    assert small.criteria[0].verdict == "unchanged"
    # 3 of 20 worse and 1 better: a 10% drop, not significant (p = 0.625)
    before = rows_passing(20, {19})
    after = rows_passing(20, {0, 1, 2})
    unsure = compare_runs(run_of(before), run_of(after))
    item = unsure.criteria[0]
    assert item.verdict == "inconclusive" and "not significant" in item.reason
    assert unsure.gate() == ("inconclusive", [f"agent / correct: {item.reason}"])


def test_too_few_rows_is_inconclusive_however_large_the_drop() -> None:
    comparison = compare_runs(run_of(rows_passing(5)), run_of(rows_passing(5, {0, 1, 2, 3, 4})))
    item = comparison.criteria[0]
    assert item.verdict == "inconclusive" and "only 5 rows" in item.reason
    assert (
        compare_runs(
            run_of(rows_passing(5)),
            run_of(rows_passing(5, {0, 1, 2, 3, 4})),
            GatePolicy(min_rows=5, level=0.1),
        )
        .criteria[0]
        .verdict
        == "regressed"
    )


def test_repeats_give_pass_k_flaky_rows_and_hard_breaks() -> None:
    before = {"a": [True] * 3, "b": [True, False, True], "c": [True] * 3, "d": [False] * 3}
    after = {"a": [False] * 3, "b": [True, True, False], "c": [True] * 3, "d": [False, True, False]}
    comparison = compare_runs(run_of(before), run_of(after))
    (item,) = comparison.criteria
    assert item.baseline.repeats == 3
    assert item.baseline.pass_all_k == pytest.approx(
        2 / 4
    ) and item.baseline.pass_any_k == pytest.approx(3 / 4)
    assert item.candidate.pass_all_k == pytest.approx(
        1 / 4
    ) and item.candidate.pass_any_k == pytest.approx(3 / 4)
    assert item.baseline.flaky_rows == ["b"] and item.candidate.flaky_rows == ["b", "d"]
    assert item.hard_breaks == ["a"]  # b went from 2/3 to 2/3: not even worse
    assert item.verdict == "inconclusive"  # four rows
    assert comparison.gate()[0] == "inconclusive"
    result, reasons = comparison.gate(hard_breaks=True)
    assert result == "fail" and "hard break on rows a" in reasons[0]
    # two repeats are not enough for a hard break by default
    two = compare_runs(run_of({"a": [True] * 2}), run_of({"a": [False] * 2}))
    assert two.criteria[0].hard_breaks == []


def test_rows_that_failed_to_run_are_left_out_and_counted() -> None:
    base = run_of(rows_passing(12))
    broken = run_of(rows_passing(12))
    failed = [
        RowResult(r.id, r.repeat, r.input, r.expected, None, 1.0, error="boom")
        if r.id == "r0"
        else r
        for r in broken.results
    ]
    comparison = compare_runs(base, StoredRun(broken.record, failed))
    assert comparison.criteria[0].paired_rows == 11
    assert comparison.errors == {"baseline": 0, "candidate": 1}


def test_the_policy_names_a_bad_value() -> None:
    with pytest.raises(ValueError, match="level must be between 0 and 1"):
        GatePolicy(level=1.5)


# --------------------------------------------------------------------------- end to end


def judged_run(agent: ScriptedLLMServer, seed: int, salt: str, path: Path) -> StoredRun:
    with ScriptedLLMServer(default=noisy_judge(seed, salt)) as judge_server:
        judge = OpenAICompatibleJudge(
            "judge", base_url=judge_server.base_url, api_key="k", cache=False
        )
        return tracejudge.experiment(
            rows(100),
            make_task(agent),
            ["Reward a correct sum"],
            judge=judge,
            directory=path,
            concurrency=16,
        )


@pytest.mark.heavy("runs an agent over 100 rows three times, end to end")
def test_one_trial_of_each_kind_end_to_end_with_a_judge_that_flips_a_tenth(
    composo_tracing: TracerProvider, tmp_path: Path
) -> None:
    broken = set(random.Random(7).sample(range(100), 30))
    with ScriptedLLMServer(default=adder_model()) as good:
        baseline = judged_run(good, 1, "baseline", tmp_path / "baseline")
        again = judged_run(good, 1, "again", tmp_path / "again")
    with ScriptedLLMServer(default=adder_model(broken)) as bad:
        candidate = judged_run(bad, 1, "candidate", tmp_path / "candidate")
    flips = sum(not s.passed for r in baseline.results for s in r.scores)
    assert 3 <= flips <= 20  # the judge is wrong on about a tenth of the right answers
    regression = compare_runs(baseline, candidate)
    (item,) = regression.criteria
    assert item.verdict == "regressed" and regression.gate()[0] == "fail"
    assert len(set(item.regressed_rows) & {f"q{i}" for i in broken}) >= 20
    same = compare_runs(baseline, again)
    assert same.criteria[0].verdict in ("unchanged", "inconclusive")
    assert same.gate()[0] != "fail"
    assert same.criteria[0].worse + same.criteria[0].better >= 5  # the noise was there


def test_the_page_escapes_what_the_runs_hold() -> None:
    from tracejudge.report import render_comparison_html

    before = run_of(rows_passing(12))
    after = run_of(rows_passing(12, {0}))
    hostile = [
        RowResult(r.id, r.repeat, "<script>alert(1)</script>", "x", "<img src=x>", 1.0, r.scores)
        for r in after.results
    ]
    page = render_comparison_html(compare_runs(before, StoredRun(after.record, hostile)).as_dict())
    assert "<script>alert" not in page and "<img" not in page
    assert "&lt;img src=x&gt;" in page and "Rows that changed (1)" in page
