"""`tracejudge rubric` and the batch reward API against a scripted judge over real sockets:
order kept, concurrency bounded, one item's failure recorded and never fatal."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.batch.conftest import offline_env
from tests.in_flight import HeldUntilInFlight
from tracejudge import (
    aevaluate_rubric,
    aevaluate_rubric_batch,
    batch_rewards,
    evaluate_rubric,
    evaluate_rubric_batch,
    osmosis_reward,
    rewards,
)
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer


def _judge(request: RecordedRequest) -> Reply:
    """Grades by the solution's text: "good N" scores N/10; "BOOM" is a 500 (every retry);
    "GARBLE" gets replies that are not JSON (the re-ask too); "SLOW" is answered late."""
    text = json.dumps(request.json)
    if "BOOM" in text:
        return Reply.error(500, message="scripted outage")
    if "GARBLE" in text:
        return Reply.text("I refuse to answer in JSON.")
    grade = 10
    for word in range(1, 11):
        if f"good {word}." in text:
            grade = word
    verdict = {"explanation": f"graded {grade}", "applicable": True, "score": grade}
    # "SLOW" answers last: the items after it finish first.
    return Reply.text(json.dumps(verdict), delay=0.8 if "SLOW" in text else 0.0)


@pytest.fixture()
def judge() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(default=_judge) as server:
        yield server
    with rewards._SERVICES_LOCK:
        entries = list(rewards._SERVICES.values())
        rewards._SERVICES.clear()
    rewards._close_quietly([entry.service for entry in entries])


def _info(server: ScriptedLLMServer) -> dict:
    return {"provider": "openai", "model": "judge", "base_url": server.base_url}


ITEMS = [
    ("good 10.", "ref", {}),
    {"solution_str": "BOOM", "ground_truth": "ref"},
    ("good 1.", None, None),
    {"ground_truth": "no solution_str"},
    ("GARBLE",),
    "good 4.",
]


def _check(results: list) -> None:
    assert [r.ok for r in results] == [True, False, True, False, False, True]
    assert results[0].score == 1.0 and results[2].score == 0.0
    assert results[5].score == pytest.approx(3 / 9)
    assert results[1].error_type == "ProviderRequestError" and "500" in results[1].error
    assert results[3].error_type == "ValueError" and "solution_str" in results[3].error
    assert results[4].error_type == "ProviderRequestError"


def test_batch_keeps_order_bounds_concurrency_and_records_errors(judge) -> None:
    results = evaluate_rubric_batch(
        ITEMS * 3, rubric="Reward correct answers", model_info=_info(judge), concurrency=3
    )
    _check(results[:6])
    assert [r.score for r in results[:6]] == [r.score for r in results[12:]]
    assert judge.max_in_flight <= 3


def test_batch_concurrency_above_the_judge_default_is_reached() -> None:
    # The judge's own limit (16 by default) must not cap a batch that asks for more.
    verdict = json.dumps({"explanation": "ok", "applicable": True, "score": 10})
    with ScriptedLLMServer(default=HeldUntilInFlight(Reply.text(verdict), 40)) as slow:
        items = [f"answer {n}" for n in range(40)]
        results = evaluate_rubric_batch(
            items, rubric="Reward answers", model_info=_info(slow), concurrency=40
        )
        assert [r.score for r in results] == [1.0] * 40
        assert slow.max_in_flight == 40


async def test_from_a_running_event_loop_async_and_sync(judge) -> None:
    info = _info(judge)
    _check(await aevaluate_rubric_batch(ITEMS, rubric="Reward correct answers", model_info=info))
    assert await aevaluate_rubric("Reward", "good 10.", info) == 1.0
    # the sync API inside a running loop blocks it, but works
    assert evaluate_rubric("Reward", "good 1.", info) == 0.0


def _worker(base_url: str) -> list:
    info = {"provider": "openai", "model": "judge", "base_url": base_url}
    results = evaluate_rubric_batch(ITEMS, rubric="Reward correct answers", model_info=info)
    return [(r.ok, r.score, r.error_type) for r in results]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_in_worker_processes(judge, method: str) -> None:
    # the parent used the judge first: a forked child must not reuse its loop
    evaluate_rubric("Reward", "good 10.", _info(judge))
    context = multiprocessing.get_context(method)
    with context.Pool(2) as pool:
        got = pool.map(_worker, [judge.base_url] * 2)
    for results in got:
        assert [ok for ok, _, _ in results] == [True, False, True, False, False, True]
        assert results[1][2] == "ProviderRequestError"


def test_reward_functions_in_a_batch() -> None:
    @osmosis_reward
    def exact(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
        if solution_str == "raise":
            raise RuntimeError("the reward function failed")
        return 1.0 if solution_str == ground_truth else 0.0

    results = batch_rewards(exact, [("a", "a"), ("raise", "x"), ("b", "a")], concurrency=2)
    assert [r.score for r in results] == [1.0, None, 0.0]
    assert results[1].error == "the reward function failed"
    assert results[1].error_type == "RuntimeError"


@pytest.mark.heavy("the rubric command as a process")
def test_the_rubric_command(judge, tmp_path: Path) -> None:
    dataset = tmp_path / "data.jsonl"
    lines = [
        {"solution_str": "good 10. SLOW", "ground_truth": "x", "original_input": "q"},
        {"solution_str": "BOOM"},
        {"solution_str": "good 4.", "metadata": {"k": 1}, "extra_info": {"a": 2}},
    ]
    dataset.write_text(
        "\n".join(json.dumps(line) for line in lines) + "\n{not json\n" + '{"no": 1}\n'
    )
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [
            sys.executable, "-m", "tracejudge", "rubric", str(dataset),
            "--rubric", "Reward correct answers", "--model", "openai/judge",
            "--base-url", judge.base_url, "--number", "2", "--score-max", "10",
            "--concurrency", "2", "--out", str(out), "--json",
        ],
        capture_output=True, text=True, env=offline_env(), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    *printed, summary = [json.loads(line) for line in done.stdout.splitlines()]
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert printed == written
    # in the dataset's order, although line 1 (SLOW) finished last
    assert [line["line"] for line in written] == [1, 2, 3, 4, 5]
    first, boom, fourth, not_json, no_solution = written
    assert first["scores"] == [10.0, 10.0] and first["std"] == 0.0
    assert fourth["score"] == pytest.approx(10 / 3)
    assert boom["error_type"] == "ProviderRequestError"
    assert "not JSON" in not_json["error"] and "solution_str" in no_solution["error"]
    assert summary["summary"] == {
        "items": 5,
        "scored": 2,
        "errors": 3,
        "mean": pytest.approx((10 + 10 / 3) / 2),
        "std": pytest.approx((10 - 10 / 3) / 2),
        "min": pytest.approx(10 / 3),
        "max": 10.0,
    }
    # the text summary, and a missing dataset as bad input
    text = subprocess.run(
        [sys.executable, "-m", "tracejudge", "rubric", str(dataset), "--rubric", "R",
         "--model", "openai/judge", "--base-url", judge.base_url],
        capture_output=True, text=True, env=offline_env(), timeout=120,
    )  # fmt: skip
    assert text.returncode == 0 and "errors  3" in text.stdout and "line 2:" in text.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "tracejudge", "rubric", str(tmp_path / "nope.jsonl"),
         "--rubric", "R", "--model", "openai/judge"],
        capture_output=True, text=True, env=offline_env(), timeout=120,
    )  # fmt: skip
    assert missing.returncode == 2 and missing.stderr.startswith("tracejudge rubric: no such file")


def test_repeats_bypass_the_verdict_cache(judge) -> None:
    results = evaluate_rubric_batch(
        ["good 10."], rubric="Reward", model_info=_info(judge), repeats=3
    )
    assert results[0].scores == (1.0, 1.0, 1.0)
    assert len([r for r in judge.requests if r.path.endswith("/chat/completions")]) == 3


def test_errors_that_concern_every_item_are_raised(judge) -> None:
    with pytest.raises(ValueError, match="rubric must be"):
        evaluate_rubric_batch(["x"], rubric=" ", model_info=_info(judge))
    with pytest.raises(ValueError, match="score_max"):
        asyncio.run(
            aevaluate_rubric_batch(["x"], rubric="R", model_info=_info(judge), score_max=-1)
        )


def test_an_out_file_that_cannot_be_written_fails_before_any_judge_call(
    judge, tmp_path: Path
) -> None:
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps({"solution_str": "good 10."}) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "rubric", str(dataset), "--rubric", "R",
         "--model", "openai/judge", "--base-url", judge.base_url,
         "--out", str(tmp_path / "missing" / "out.jsonl")],
        capture_output=True, text=True, env=offline_env(), timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("tracejudge rubric: cannot write --out ")
    assert "no such directory" in done.stderr and len(done.stderr.splitlines()) == 1
    assert judge.requests == []  # nothing paid for
