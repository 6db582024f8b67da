"""The attribution benchmark against a scripted judge whose answers are known: it reports
exactly the accuracies and nDCG those answers earn (step 10 for a true step 1 is wrong),
with intervals numpy's percentile gives on the same resamples; and it reads Who&When (the
shipped records, both splits), MP-Bench's multi-label form and tracejudge's own labels."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tracejudge import _stats
from tracejudge.bench import history_trace, read_items
from tracejudge.cli import main
from tracejudge.errors import BadRequestError
from tracejudge.evaluation.attribution import trace_steps
from tracejudge.models import BenchReport
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

WHOWHEN = Path(__file__).resolve().parents[1] / "fixtures" / "whowhen"
SPEAKERS = ["planner", "coder", "verifier"]


def _history(size: int, tag: str) -> list[dict[str, Any]]:
    """A Who&When-shaped history: the task, then the speakers in turn."""
    entries = [{"role": "human", "content": f"Task {tag}: count the files."}]
    for i in range(1, size):
        name = SPEAKERS[(i - 1) % 3]
        entries.append({"role": "assistant", "name": name, "content": f"{name} says {tag}/{i}"})
    return entries


def _speaker(step: int) -> str:
    return "human" if step == 0 else SPEAKERS[(step - 1) % 3]


#: Who&When items: tag -> (true step, the judge's step, its other steps).
WHOWHEN_ITEMS = {
    "A": (1, 10, [1]),  # 10 for a true 1: wrong (Who&When's scorer would count it)
    "B": (10, 10, []),  # right
    "C": (4, 5, [4, 6]),  # one off: wrong, but within ±1
    "D": (7, 99, []),  # not a step: the named agent only
}
#: MP-Bench item: its labelled steps, the judge's step and other steps.
MP_ITEM = ("M", [3, 6], 6, [2, 3])


def _write_data(root: Path) -> None:
    (root / "Hand-Crafted").mkdir(parents=True)
    for tag, (true_step, _, _) in WHOWHEN_ITEMS.items():
        record = {
            "history": _history(12, tag),
            "question": f"Task {tag}",
            "ground_truth": "42",
            "mistake_agent": _speaker(true_step),
            "mistake_step": str(true_step),
            "mistake_reason": "wrong count",
        }
        (root / "Hand-Crafted" / f"{tag}.json").write_text(json.dumps(record))
    (root / "manual").mkdir()
    tag, labelled, _, _ = MP_ITEM
    history = _history(9, tag)
    for i, entry in enumerate(history):
        entry["step"] = str(i)
        entry["fail_annotation"] = "1" if i in labelled else "0"
    (root / "manual" / "m1.json").write_text(json.dumps({"history": history, "question": "Task M"}))


def _judge_answer(request: RecordedRequest) -> Reply:
    prompt = "\n".join(m["content"] for m in request.json["messages"])
    tag = re.search(r"Task (\w):", prompt).group(1)  # type: ignore[union-attr]
    if tag == MP_ITEM[0]:
        _, _, step, others = MP_ITEM
    else:
        _, step, others = WHOWHEN_ITEMS[tag]
    agent = _speaker(WHOWHEN_ITEMS["D"][0]) if step == 99 else _speaker(step)
    reply = {
        "explanation": f"item {tag}",
        "agent": agent,
        "step": step,
        "other_steps": others,
        "confidence": 0.7,
    }
    return Reply.text(json.dumps(reply), usage={"prompt_tokens": 50, "completion_tokens": 5})


def _ndcg(ranked: list[int], relevant: list[int], k: int = 5) -> float:
    dcg = sum(1 / math.log2(r + 2) for r, s in enumerate(ranked[:k]) if s in relevant)
    return dcg / sum(1 / math.log2(r + 2) for r in range(min(k, len(relevant))))


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> BenchReport:
    data = tmp_path / "data"
    _write_data(data)
    out = tmp_path / "report.json"
    with ScriptedLLMServer() as server:
        server.default = _judge_answer
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        command = ["bench", "attribution", str(data), "--method", "all_at_once"]
        assert main([*command, "--judge", "openai:judge", "--out", str(out), *extra]) == 0
    return BenchReport.model_validate_json(out.read_text())


def test_a_scripted_judge_scores_exactly_what_its_answers_earn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge": {"input": 2.0, "output": 10.0}}))
    options = ["--bootstrap", "500", "--seed", "3", "--judge-prices", str(prices)]
    report = _run(tmp_path, monkeypatch, *options)
    rows = {(r.split, r.method): r for r in report.rows}
    assert set(rows) == {
        ("Hand-Crafted", "all_at_once"),
        ("manual", "all_at_once"),
        ("all", "all_at_once"),
    }
    hand = rows["Hand-Crafted", "all_at_once"]
    # A: step 10's speaker (planner) is not step 1's? Both are "planner": agent right.
    assert _speaker(10) == _speaker(1) == "planner"
    assert hand.items == 4 and hand.answered == 4 and hand.errors == 0
    assert hand.step_accuracy.value == 0.25  # only B
    assert hand.step_within_k.value == 0.5  # B, and C one off
    assert hand.agent_accuracy.value == 0.75  # A (same speaker), B, D; not C
    expected_ndcg = [_ndcg([10, 1], [1]), 1.0, _ndcg([5, 4, 6], [4]), 0.0]
    assert hand.ndcg.value == pytest.approx(sum(expected_ndcg) / 4)
    manual = rows["manual", "all_at_once"]
    assert manual.step_accuracy.value == 1.0 and manual.agent_accuracy.value == 1.0
    assert manual.ndcg.value == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert rows["all", "all_at_once"].step_accuracy.value == pytest.approx(2 / 5)
    by_item = {Path(i.item).stem: i for i in report.items}
    assert (by_item["A"].predicted_step, by_item["A"].step_correct) == (10, False)
    assert (by_item["D"].predicted_step, by_item["D"].predicted_agent) == (None, _speaker(7))
    assert hand.judge_calls == 4 and hand.input_tokens_per_trace == 50
    assert hand.cost_per_trace_usd == pytest.approx((50 * 2.0 + 5 * 10.0) / 1e6)
    # The intervals are numpy's percentiles of the same seeded resamples.
    flags = [0.0, 1.0, 0.0, 0.0]  # exact step per item, in order A, B, C, D
    samples = _stats.bootstrap_samples(4, 500, 3)
    means = [np.mean([flags[i] for i in s]) for s in samples]
    low, high = np.percentile(means, [2.5, 97.5])
    assert (hand.step_accuracy.low, hand.step_accuracy.high) == pytest.approx((low, high))
    table = capsys.readouterr().out
    assert "25.0% [" in table and "steps match as whole numbers" in table


def test_the_shipped_who_and_when_records_read_as_traces_step_for_step() -> None:
    items = read_items([WHOWHEN])
    assert sorted((i.split, Path(i.id).name) for i in items) == sorted(
        [("Hand-Crafted", f"{n}.json") for n in (6, 24, 48)]
        + [("Algorithm-Generated", f"{n}.json") for n in (21, 47, 93)]
    )
    for item in items:
        record = json.loads(Path(item.source).read_text())
        steps = trace_steps(item.trace)
        assert len(steps) == len(record["history"])
        for step, entry in zip(steps, record["history"], strict=True):
            assert step.call.output_text == entry["content"]
            expected = entry.get("name") or entry["role"].split(" (")[0]
            assert step.agent.name == expected
        (true,) = item.steps
        assert steps[true].agent.name.casefold() == item.agents[0].casefold()
        assert "The correct answer is" in (item.outcome or "")


def test_a_judge_told_the_truth_is_right_on_every_shipped_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    truth = {}
    for path in WHOWHEN.rglob("*.json"):
        record = json.loads(path.read_text())
        truth[record["question"].strip()] = int(record["mistake_step"])

    def answer(request: RecordedRequest) -> Reply:
        told = request.json["messages"][0]["content"]  # the outcome names the task
        (step,) = [v for question, v in truth.items() if f"The task: {question}" in told]
        return Reply.text(
            json.dumps(
                {
                    "explanation": "known",
                    "agent": "x",
                    "step": step,
                    "other_steps": [],
                    "confidence": 1.0,
                }
            )
        )

    out = tmp_path / "r.json"
    with ScriptedLLMServer() as server:
        server.default = answer
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        command = [
            "bench",
            "attribution",
            str(WHOWHEN),
            "--method",
            "all_at_once",
            "--method",
            "checks",
            "--judge",
            "openai:judge",
            "--out",
            str(out),
            "--json",
        ]
        assert main(command) == 0
    report = BenchReport.model_validate_json(out.read_text())
    rows = {(r.split, r.method): r for r in report.rows}
    for split in ("Hand-Crafted", "Algorithm-Generated", "all"):
        assert rows[split, "all_at_once"].step_accuracy.value == 1.0
        assert rows[split, "all_at_once"].agent_accuracy.value == 1.0
    assert rows["all", "checks"].items == 6 and rows["all", "checks"].judge_calls == 0


def test_labelled_traces_name_agents_and_their_own_steps(tmp_path: Path) -> None:
    trace = history_trace(_history(6, "L"))
    document = {
        **trace.to_wire(),
        "labels": [{"agent": "coder", "step": 1}],
        "outcome": "wrong count",
        "split": "mine",
    }
    path = tmp_path / "labelled.jsonl"
    path.write_text(json.dumps(document) + "\n")
    (item,) = read_items([path])
    assert (item.split, item.agents, item.steps, item.outcome) == (
        "mine",
        ("coder",),
        (5,),
        "wrong count",
    )
    bad = {**document, "labels": [{"agent": "coder", "step": 7}]}
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(
        Exception, match=r"labelled.jsonl, line 1, labels\[0\]: agent 'coder' has no model call 7"
    ):
        read_items([path])


def test_bad_data_is_one_line_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broken.json"
    path.write_text(
        json.dumps({"history": _history(3, "X"), "mistake_agent": "coder", "mistake_step": "12"})
    )
    assert main(["bench", "attribution", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: field 'mistake_step' must be an index into 'history' (0 to 2)" in err
    assert main(["bench", "attribution", str(path), "--method", "binary_search"]) == 2
    assert "needs a judge" in capsys.readouterr().err


def test_the_html_page_is_self_contained_and_escapes_every_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = history_trace(
        [
            {"role": "human", "content": "Task H: x"},
            {"role": "<script>alert(1)</script>", "content": "y"},
        ]
    )
    document = {**trace.to_wire(), "labels": [{"agent": "<script>alert(1)</script>", "step": 0}]}
    data = tmp_path / "h"
    data.mkdir()
    (data / "t.json").write_text(json.dumps(document))
    page = tmp_path / "bench.html"
    assert main(["bench", "attribution", str(data), "--html", str(page), "--bootstrap", "50"]) == 0
    text = page.read_text()
    assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "http://" not in text and "https://" not in text and "src=" not in text


def test_the_task_a_person_states_is_never_blamed_by_the_checks(tmp_path: Path) -> None:
    """Who&When's hand-crafted logs open with the person's task (role "human"): its numbers
    are given, not invented, so grounded_numbers must not rank the person first."""
    history = [
        {"role": "human", "content": "Which store opens at 9 pm on 12 March 2023, 17 km away?"},
        {"role": "Orchestrator (thought)", "content": "Plan: ask WebSurfer to search."},
        {"role": "WebSurfer", "content": "The store opens at 9 pm."},
    ]
    record = {
        "history": history,
        "question": "Which store?",
        "ground_truth": "Acme",
        "mistake_agent": "WebSurfer",
        "mistake_step": "2",
    }
    (tmp_path / "Hand-Crafted").mkdir()
    (tmp_path / "Hand-Crafted" / "1.json").write_text(json.dumps(record))
    out = tmp_path / "r.json"
    assert main(["bench", "attribution", str(tmp_path), "--out", str(out)]) == 0
    (result,) = BenchReport.model_validate_json(out.read_text()).items
    assert result.predicted_agent != "human"
    assert 0 not in result.ranked_steps


def test_an_item_the_judge_could_not_judge_is_counted_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A judgement over the judge's input budget is not evaluated: the item is unanswered
    with the reason kept (in the row's errors and the warnings), not silently wrong."""
    (tmp_path / "Hand-Crafted").mkdir()
    history = _history(6, "Z")
    for entry in history[1:]:
        entry["content"] += " and more" * 5_000  # 45,000 characters a step
    record = {
        "history": history,
        "question": "Task Z",
        "ground_truth": "42",
        "mistake_agent": _speaker(2),
        "mistake_step": 2,
    }
    (tmp_path / "Hand-Crafted" / "z.json").write_text(json.dumps(record))
    out = tmp_path / "r.json"
    with ScriptedLLMServer() as server:
        server.default = _judge_answer
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        command = ["bench", "attribution", str(tmp_path), "--method", "all_at_once"]
        # Every step read whole: about 56,000 tokens, past the default budget.
        command += ["--max-step-chars", "50000", "--judge", "openai:judge", "--out", str(out)]
        assert main(command) == 0
        assert not server.requests
    report = BenchReport.model_validate_json(out.read_text())
    (result,) = report.items
    assert result.predicted_step is None and result.step_correct is False
    assert result.error is not None and "not evaluated" in result.error
    assert report.rows[0].errors == 1
    assert any("not evaluated" in w for w in report.warnings)
    assert "(1 errors)" in capsys.readouterr().out


@pytest.mark.parametrize("written", [3, "3", " 3 ", 3.0])
def test_mistake_step_reads_as_the_same_whole_number_however_written(
    tmp_path: Path, written: object
) -> None:
    record = {"history": _history(6, "S"), "mistake_agent": _speaker(3), "mistake_step": written}
    (tmp_path / "s.json").write_text(json.dumps(record))
    (item,) = read_items([tmp_path / "s.json"])
    assert item.steps == (3,)


@pytest.mark.parametrize("written", ["3.5", 3.5, "-1", "", None, True, "ten"])
def test_a_mistake_step_that_is_no_index_is_refused_naming_the_field(
    tmp_path: Path, written: object
) -> None:
    record = {"history": _history(6, "S"), "mistake_agent": _speaker(3), "mistake_step": written}
    (tmp_path / "s.json").write_text(json.dumps(record))
    with pytest.raises(BadRequestError, match="mistake_step"):
        read_items([tmp_path / "s.json"])
