"""`tracejudge score` with a judge that fails (times out, answers 500), on loopback: the
checks' results are kept and shown, and the judged criterion is "not evaluated" with the
reason, in the text summary, the JSON summary, the result lines and the HTML report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracejudge.cli import main
from tracejudge.testing import Reply, ScriptedLLMServer

VERDICT = json.dumps({"explanation": "Fine.", "applicable": True, "score": 8})
CRITERION = "Reward correct answers"


@pytest.fixture(params=["timeout", "http 500"])
def failing_judge(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ScriptedLLMServer, str]]:
    """A judge model on loopback that fails every call: too slow for the run's timeout, or
    answering HTTP 500; (server, the timeout to give)."""
    reply = Reply.text(VERDICT, delay=3.0) if request.param == "timeout" else Reply.error(500)
    with ScriptedLLMServer(default=reply) as server:
        for name in ("TRACEJUDGE_JUDGE", "COMPOSO_API_KEY", "TRACEJUDGE_JUDGE_TIMEOUT_SECONDS"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", "judge-key")
        yield server, "0.3" if request.param == "timeout" else "2"


def _argv(judge: ScriptedLLMServer, timeout: str, trace: Path, *extra: str) -> list[str]:
    return [
        "score",
        str(trace),
        "--check",
        "final_answer",
        "--criterion",
        CRITERION,
        "--judge",
        "openai:failing-judge",
        "--judge-base-url",
        judge.base_url,
        "--judge-timeout-seconds",
        timeout,
        *extra,
    ]


def test_the_checks_stand_and_the_judged_criterion_is_not_evaluated(
    failing_judge: tuple[ScriptedLLMServer, str],
    demo_trace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge, timeout = failing_judge
    out, html = tmp_path / "out.jsonl", tmp_path / "report.html"
    argv = _argv(judge, timeout, demo_trace, "--out", str(out), "--html", str(html))
    assert main(argv) == 1  # a judgement failed: the run says so
    captured = capsys.readouterr()
    assert judge.requests  # the judge was asked
    assert "No agent was scored" not in captured.out
    assert "final_answer" in captured.out and "not evaluated" in captured.out
    assert "judgements failed and are marked not evaluated" in captured.err

    lines = {line["criterion"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert set(lines) == {"final_answer", CRITERION}
    checked = lines["final_answer"]["agents"].values()
    assert [a["score"] for a in checked if a["score"] is not None]  # the check's scores kept
    judged = [a for a in lines[CRITERION]["agents"].values() if "not_evaluated" in a]
    assert judged and all(a["score"] is None for a in judged)
    reason = judged[0]["not_evaluated"]
    assert reason.startswith("the judge ") and " failed: " in reason
    assert "judge-key" not in out.read_text() + captured.out + captured.err

    page = html.read_text()
    assert "final_answer" in page and "not evaluated" in page
    assert reason.split(": ", 1)[0] in page

    assert main([*argv[:-4], "--json"]) == 1
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])["summary"]
    assert summary["scored"] == 1 and summary["failed"] == 0
    assert summary["judge_failures"] == len(judged)
    assert summary["not_evaluated"] == len(judged)
    assert any(" failed: " in why for why in summary["not_evaluated_reasons"])
