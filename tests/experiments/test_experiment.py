"""`tracejudge.experiment`: the user's task on every row, traced, scored, recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import tracejudge
from tracejudge import checks
from tracejudge.errors import BadRequestError
from tracejudge.experiments import read_dataset, read_run
from tracejudge.testing import ScriptedLLMServer

from .conftest import adder_model, correct, make_task, rows


def test_a_run_traces_scores_and_records_every_row(
    composo_tracing: TracerProvider, agent_model: ScriptedLLMServer, tmp_path: Path
) -> None:
    agent_model.default = adder_model(broken={1, 3})
    run = tracejudge.experiment(
        rows(6),
        make_task(agent_model),
        [correct, checks.loops],
        name="adder-v2",
        params={"prompt": "v2"},
        directory=tmp_path / "run",
        concurrency=3,
    )
    assert len(agent_model.requests) == 6
    assert agent_model.max_in_flight <= 3
    verdicts = {r.id: s.passed for r in run.results for s in r.scores if s.criterion == "correct"}
    assert verdicts == {"q0": True, "q1": False, "q2": True, "q3": False, "q4": True, "q5": True}
    (only,) = {s.agent for r in run.results for s in r.scores}
    assert only == "adder"  # the task's agent, named after the function
    assert {s.criterion for r in run.results for s in r.scores} == {"correct", "loops"}
    # the record: what identifies the run, read back from its directory
    stored = read_run(tmp_path / "run")
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["name"] == "adder-v2" and record["params"] == {"prompt": "v2"}
    assert record["models"] == ["scripted-model"]  # the model that answered, as it said
    assert record["rows"] == 6 and record["repeats"] == 1
    assert record["criteria"] == ["correct", "loops"]
    assert record["started_at"] <= record["ended_at"]
    assert set(record["git"]) == {"commit", "dirty"}
    assert record["cost"]["judge_calls"] == 0 and record["cost"]["task_seconds"] > 0
    assert [r.id for r in stored.results] == [f"q{i}" for i in range(6)]
    assert stored.results[1].output == "3" and stored.results[1].expected == "2"
    traces = [json.loads(line) for line in (tmp_path / "run" / "traces.jsonl").open()]
    assert [t["trace_id"] for t in traces] == [r.trace_id for r in stored.results]
    assert all(t["agent_instance_by_id"] for t in traces)


def test_an_async_task_repeats_and_a_task_that_raises(
    composo_tracing: TracerProvider, tmp_path: Path
) -> None:
    calls: list[Any] = []

    async def flaky(question: Any) -> str:
        calls.append(question)
        await asyncio.sleep(0)
        if question == "boom":
            raise ValueError("no luck")
        return "yes"

    run = tracejudge.experiment(
        [{"input": "a", "expected": "yes"}, {"input": "boom"}],
        flaky,
        [correct],
        repeats=3,
        directory=tmp_path / "r",
    )
    assert len(calls) == 6 and len(run.results) == 6
    failed = [r for r in run.results if r.error]
    assert len(failed) == 3 and "ValueError: no luck" in (failed[0].error or "")
    passed = [s.passed for r in run.results for s in r.scores]
    # no model call was seen: the task's own call is the trace, and it is still scored
    assert passed == [True, True, True]
    assert sorted({r.repeat for r in run.results}) == [0, 1, 2]


def test_a_judged_criterion_goes_through_the_judge(
    composo_tracing: TracerProvider, agent_model: ScriptedLLMServer, tmp_path: Path
) -> None:
    from tracejudge.judges import OpenAICompatibleJudge
    from tracejudge.testing import Reply

    with ScriptedLLMServer(
        default=Reply.text(json.dumps({"explanation": "Fine.", "applicable": True, "score": 9}))
    ) as judge_server:
        judge = OpenAICompatibleJudge(
            "judge-model", base_url=judge_server.base_url, api_key="k", cache=False
        )
        run = tracejudge.experiment(
            rows(3),
            make_task(agent_model),
            ["Reward a correct sum"],
            judge=judge,
            directory=tmp_path / "j",
        )
        assert len(judge_server.requests) == 3
    scores = [s for r in run.results for s in r.scores]
    assert [s.passed for s in scores] == [True] * 3 and scores[0].explanation
    assert read_run(tmp_path / "j").record.cost["judge_calls"] == 3


def test_datasets_from_json_lines_and_csv(tmp_path: Path) -> None:
    lines = tmp_path / "d.jsonl"
    lines.write_text('{"input": "x", "expected_output": "y", "topic": "t"}\n\n{"input": 2}\n')
    first, second = read_dataset(lines)
    assert (first.id, first.input, first.expected, first.metadata) == (
        "0",
        "x",
        "y",
        {"topic": "t"},
    )
    assert (second.id, second.input, second.expected) == ("1", 2, None)
    table = tmp_path / "d.csv"
    table.write_text("id,input,expected,level\na,hello,world,easy\n")
    (row,) = read_dataset(table)
    assert (row.id, row.input, row.expected, row.metadata) == (
        "a",
        "hello",
        "world",
        {"level": "easy"},
    )


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ([{"question": "x"}], r"row 0: no 'input' field"),
        ([{"id": 1, "input": "a"}, {"id": "1", "input": "b"}], "the id '1' is used twice"),
        ([], "holds no rows"),
        (["text"], "a row is an object"),
    ],
)
def test_bad_datasets_name_the_row_and_the_fix(dataset: Any, message: str) -> None:
    with pytest.raises(BadRequestError, match=message):
        read_dataset(dataset)


def test_bad_json_lines_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"input": 1}\n{oops\n')
    with pytest.raises(BadRequestError, match=r"bad.jsonl, line 2: not JSON"):
        read_dataset(path)


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    with pytest.raises(BadRequestError, match="criteria\\[0\\]: int is not a criterion"):
        tracejudge.experiment([{"input": 1}], str, [3], directory=tmp_path)
    with pytest.raises(BadRequestError, match="repeats: must be at least 1"):
        tracejudge.experiment([{"input": 1}], str, [correct], repeats=0, directory=tmp_path)
    with pytest.raises(BadRequestError, match="not a run directory"):
        read_run(tmp_path)


def test_a_sync_task_runs_concurrency_rows_at_once_and_no_more(
    composo_tracing: TracerProvider, tmp_path: Path
) -> None:
    import threading

    # Eight rows can only pass the barrier together: it proves eight ran at once (the
    # event loop's default thread pool has fewer threads on a small machine).
    barrier = threading.Barrier(8, timeout=60)
    running, most = 0, 0
    lock = threading.Lock()

    def task(question: Any) -> str:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        barrier.wait()
        with lock:
            running -= 1
        return "ok"

    run = tracejudge.experiment(
        [{"input": i, "expected": "ok"} for i in range(16)],
        task,
        [correct],
        concurrency=8,
        directory=tmp_path / "c",
    )
    assert [r.error for r in run.results] == [None] * 16
    assert most == 8
