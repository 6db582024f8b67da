"""`tracejudge score` with a judge over HTTP: tokens and dollars per result line and in
the summary, and `--max-judge-cost` stopping a 1,000-trace run at the cap with every paid
result kept. The scripted judge model reports fixed usage, so each call's cost is known."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tracejudge.cli import main
from tracejudge.testing import Reply, ScriptedLLMServer

VERDICT = json.dumps({"explanation": "Fine.", "applicable": True, "score": 8})
#: $1 per million input tokens, nothing for output: 10,000 prompt tokens cost $0.01.
FLAT = {"flat-judge": {"input": 1.0, "output": 0.0, "cached_input": 0.25}}
CRITERION = "Reward answers that stay on task"


def completion(prompt: int, cached: int, out: int) -> Reply:
    return Reply.raw(
        200,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "flat-judge",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": VERDICT},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": out,
                "total_tokens": prompt + out,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        },
    )


def trace(number: int, agents: int = 1) -> dict[str, Any]:
    """A MultiAgentTrace with `agents` agents, each with one model call."""
    ids = [f"a{number}-{i}" for i in range(agents)]
    instances: dict[str, Any] = {}
    for i, agent_id in enumerate(ids):
        interactions: list[Any] = [
            {
                "input_messages": [{"role": "user", "content": f"question {number}.{i}"}],
                "output_messages": [{"content": f"answer {number}.{i}"}],
            }
        ]
        if i == 0:
            interactions.extend(ids[1:])
        instances[agent_id] = {"id": agent_id, "name": f"agent{i}", "interactions": interactions}
    return {"root_agent_instance_id": ids[0], "agent_instance_by_id": instances}


def write_traces(path: Path, count: int, agents: int = 1) -> Path:
    path.write_text("".join(json.dumps(trace(n, agents)) + "\n" for n in range(count)))
    return path


@pytest.fixture
def judge_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(default=completion(10_000, 0, 0)) as server:
        for name in ("TRACEJUDGE_JUDGE", "COMPOSO_API_KEY", "TRACEJUDGE_JUDGE_PRICES"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "judge-key")
        yield server


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(FLAT))
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _summary(out: str) -> dict[str, Any]:
    return json.loads(out.strip().splitlines()[-1])["summary"]


def test_every_result_line_and_the_summary_carry_tokens_and_dollars(
    tmp_path: Path, judge_model: ScriptedLLMServer, prices: Path, capsys: pytest.CaptureFixture
) -> None:
    judge_model.default = completion(10_000, 8_000, 100)
    inputs = write_traces(tmp_path / "traces.jsonl", 3, agents=2)
    out = tmp_path / "out.jsonl"
    arguments = ["score", str(inputs), "--judge", "openai:flat-judge", "--judge-prices"]
    arguments += [str(prices), "--criterion", CRITERION, "--check", "loops", "--out", str(out)]
    report = tmp_path / "report.html"
    assert main([*arguments, "--html", str(report)]) == 0
    text = capsys.readouterr().out
    call = (2_000 * 1.0 + 8_000 * 0.25) / 1_000_000  # $0.004
    lines = _lines(out)
    judged = [line for line in lines if line["criterion"] == CRITERION]
    assert len(judged) == 3
    for line in judged:
        usage = line["usage"]
        assert (usage["calls"], usage["input_tokens"], usage["cached_input_tokens"]) == (
            2,
            20_000,
            16_000,
        )
        assert usage["output_tokens"] == 200
        assert usage["cost_usd"] == pytest.approx(2 * call)
        for agent in line["agents"].values():
            assert agent["usage"]["cost_usd"] == pytest.approx(call)
    assert all("usage" not in line for line in lines if line["criterion"] == "loops")
    # the text summary: per criterion and in total
    table = text[text.index("judge usage") :]
    criterion_row, total_row = table.splitlines()[1:3]
    assert criterion_row.startswith(CRITERION[:37]) and total_row.startswith("total")
    assert total_row.split() == ["total", "6", "60,000", "48,000", "600", "$0.024"]
    # the HTML report: a cost line in the overview, the usage of each trace in its data
    page = report.read_text()
    assert (
        '<p class="cost" id="tj-cost">6 judge calls, 60,000 tokens in (48,000 cached), 600 out, '
        "$0.024.</p>"
    ) in page
    data = json.loads(page.split('id="tj-data">', 1)[1].split("</script>", 1)[0])
    assert [entry["usage"]["cost_usd"] for entry in data] == [pytest.approx(2 * call)] * 3
    (judged_result,) = [r for r in data[0]["results"] if r["criterion"] == CRITERION]
    assert judged_result["usage"]["calls"] == 2
    # --json: the same figures as data
    assert main([*arguments, "--json"]) == 0
    summary = _summary(capsys.readouterr().out)
    usage = summary["judge_usage"]
    assert usage["total"]["cost_usd"] == pytest.approx(6 * call)
    assert usage["by_criterion"][CRITERION]["cached_input_tokens"] == 48_000
    assert "loops" not in usage["by_criterion"]


def test_an_unpriced_judge_shows_tokens_and_says_its_cost_is_unknown(
    tmp_path: Path, judge_model: ScriptedLLMServer, capsys: pytest.CaptureFixture
) -> None:
    inputs = write_traces(tmp_path / "traces.jsonl", 2)
    out = tmp_path / "out.jsonl"
    arguments = ["score", str(inputs), "--judge", "openai:flat-judge", "--criterion", CRITERION]
    assert main([*arguments, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert all(line["usage"]["cost_usd"] is None for line in _lines(out))
    assert "n/a" in text and "cost unknown for 2 results" in text and "--judge-prices" in text


def test_max_judge_cost_stops_a_thousand_trace_run_at_the_cap_keeping_every_paid_result(
    tmp_path: Path, judge_model: ScriptedLLMServer, prices: Path, capsys: pytest.CaptureFixture
) -> None:
    inputs = write_traces(tmp_path / "traces.jsonl", 1000)
    out = tmp_path / "out.jsonl"
    status = main(
        [
            "score",
            str(inputs),
            "--judge",
            "openai:flat-judge",
            "--judge-prices",
            str(prices),
            "--criterion",
            CRITERION,
            "--max-judge-cost",
            "1.00",
            "--concurrency",
            "8",
            "--out",
            str(out),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    calls = len(judge_model.requests)
    # $0.01 a call: 100 calls reach $1.00; at most the 8 traces in flight finish past it.
    assert 100 <= calls <= 108
    lines = _lines(out)
    assert len(lines) == 1000 and len({line["trace_id"] for line in lines}) == 1000
    agents = [agent for line in lines for agent in line["agents"].values()]
    scored = [agent for agent in agents if agent["score"] is not None]
    skipped = [agent for agent in agents if agent.get("not_evaluated")]
    # every paid judgement is kept, scored, with its cost; nothing else is scored
    assert len(scored) == calls and len(skipped) == 1000 - calls
    assert all(agent["usage"]["cost_usd"] == pytest.approx(0.01) for agent in scored)
    reason = "the run's judge budget of $1.00 was spent"
    assert {agent["not_evaluated"] for agent in skipped} == {reason}
    assert all("usage" not in agent and agent["score"] is None for agent in skipped)
    # left out of every aggregate: no 0 and no N/A among the skipped lines' figures
    skipped_lines = [
        line for line in lines if any(a.get("not_evaluated") for a in line["agents"].values())
    ]
    assert all(
        line["overall_score"] is None and line["failing_agents"] == 0 for line in skipped_lines
    )
    summary = _summary(captured.out)
    assert summary["not_evaluated"] == 1000 - calls
    assert summary["not_evaluated_reasons"] == {reason: 1000 - calls}
    assert summary["judge_usage"]["total"]["cost_usd"] == pytest.approx(calls * 0.01)
    assert summary["agents"]["agent0"]["criteria"][CRITERION]["scored"] == calls
    assert summary["judge_cap"]["reached"] == reason
    assert summary["judge_cap"]["not_started"] == 1000 - calls
    assert (
        reason in captured.err and f"{1000 - calls:,} judgements were not started" in captured.err
    )


def test_a_cost_cap_for_an_unpriced_judge_is_refused_or_capped_by_tokens(
    tmp_path: Path, judge_model: ScriptedLLMServer, capsys: pytest.CaptureFixture
) -> None:
    judge_model.default = completion(1_000, 0, 0)
    inputs = write_traces(tmp_path / "traces.jsonl", 20)
    arguments = ["score", str(inputs), "--judge", "openai:flat-judge", "--criterion", CRITERION]
    assert main([*arguments, "--max-judge-cost", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--max-judge-cost: the judge's model 'flat-judge' has no price" in err
    assert "--judge-prices FILE" in err and "--max-judge-tokens N" in err
    assert judge_model.requests == []

    out = tmp_path / "out.jsonl"
    capped = [*arguments, "--max-judge-cost", "1", "--max-judge-tokens", "5000", "--out", str(out)]
    assert main([*capped, "--concurrency", "1"]) == 0
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert "cannot be enforced; --max-judge-tokens 5,000 caps the run" in first
    assert len(judge_model.requests) == 5  # 1,000 tokens each, one at a time
    skipped = [a for line in _lines(out) for a in line["agents"].values() if a.get("not_evaluated")]
    assert len(skipped) == 15
    assert skipped[0]["not_evaluated"] == "the run's judge budget of 5,000 tokens was spent"


def test_a_bad_prices_file_is_a_usage_error_naming_the_option(
    tmp_path: Path, judge_model: ScriptedLLMServer, capsys: pytest.CaptureFixture
) -> None:
    inputs = write_traces(tmp_path / "traces.jsonl", 1)
    bad = tmp_path / "prices.json"
    bad.write_text('{"flat-judge": {"input": "cheap", "output": 1}}')
    arguments = ["score", str(inputs), "--judge", "openai:flat-judge", "--criterion", CRITERION]
    assert main([*arguments, "--judge-prices", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "--judge-prices: prices file" in err and "input" in err and "cheap" in err
