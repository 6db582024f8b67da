"""`tracejudge demo`, the README's first command, run as a user runs it: the console script
in a subprocess. The trace goes through a real server (uvicorn in a thread, SQLite in a
temporary folder) over OTLP/HTTP; the output, the report and what is left behind are
checked. Also the server-in-a-thread on its own."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

import tracejudge
from tests.server.harness import verdict
from tracejudge.cli._demo_program import scripted_replies
from tracejudge.testing import Reply, ScriptedLLMServer

pytestmark = pytest.mark.heavy("the `tracejudge demo` command end to end")

SCRIPT = Path(sys.executable).parent / "tracejudge"


def _demo(
    *arguments: str, tmp_path: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`tracejudge demo ARGUMENTS` with no judge configured (unless `env` adds one) and its
    temporary files under tmp_path/tmp."""
    return subprocess.run(
        _command(*arguments),
        capture_output=True,
        text=True,
        env=_environment(tmp_path, env),
        timeout=120,
    )


def _command(*arguments: str) -> list[str]:
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "tracejudge"]
    return [*command, "demo", *arguments]


def _environment(tmp_path: Path, env: dict[str, str] | None) -> dict[str, str]:
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TRACEJUDGE_", "COMPOSO_", "OTEL_", "ANTHROPIC_"))
    }
    # Set for another backend: the demo's exporter must neither follow nor send these.
    clean["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://127.0.0.1:9/v1/traces"
    clean["OTEL_EXPORTER_OTLP_HEADERS"] = "Authorization=Bearer other-backend"
    clean["TMPDIR"] = str(scratch)
    return {**clean, **(env or {})}


def _rows(out: str) -> dict[str, list[str]]:
    """The score table: agent (or header / overall) -> its cells."""
    table = out.split("Scores per agent", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[1:]:
        name, *cells = line.split()
        rows[name] = cells
    return rows


def test_the_demo_prints_a_scored_trace_that_went_through_the_server(tmp_path: Path) -> None:
    saved = tmp_path / "trace.json"
    done = _demo("--save-trace", str(saved), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert done.stderr == ""
    # the tree
    assert "  orchestrator 2 LLM calls, 0 tool calls" in out
    assert "  researcher   3 LLM calls, 3 tool calls, child of orchestrator" in out
    assert "  writer       1 LLM call, 0 tool calls, child of orchestrator" in out
    # the scores per agent, as the server computed them
    rows = _rows(out)
    assert rows["tool_arguments"] == [
        "tool_results",
        "loops",
        "grounded_numbers",
        "final_answer",
        "budgets",
    ]
    assert rows["researcher"] == ["0.67", "1.00", "1.00", "1.00", "1.00", "1.00"]
    assert rows["writer"][3] == "0.67"
    assert rows["orchestrator"] == ["n/a", "n/a", "1.00", "1.00", "1.00", "1.00"]
    # the planted findings
    assert "call_h1 (search_hotels)" in out and "expected integer, got string 'cheap'" in out
    assert "number '15%' appears in no input or tool result" in out
    # what it says about judges and scripted replies
    assert "No judge configured" in out and "--judge openai:gpt-4.1-mini" in out
    assert "replies were scripted" in out and "--base-url https://api.openai.com/v1" in out
    # the report, the only thing left in the temporary folder (store and server gone)
    report = Path(out.split("HTML report: ", 1)[1].split("\n", 1)[0])
    assert report.parent == tmp_path / "tmp"
    assert list((tmp_path / "tmp").iterdir()) == [report]
    page = report.read_text()
    assert "orchestrator" in page and "15%" in page and page.startswith("<!doctype html>")
    # the trace the server converted, with the trace id printed
    trace = tracejudge.MultiAgentTrace.from_json(saved.read_text())
    assert [a.name for a in trace.iter_agents()] == ["orchestrator", "researcher", "writer"]
    assert f"Trace {trace.trace_id}," in out


def test_json_lines_are_the_server_responses_in_criteria_order(tmp_path: Path) -> None:
    done = _demo("--json", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    responses = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["criterion"] for r in responses] == [
        "tool_arguments",
        "tool_results",
        "loops",
        "grounded_numbers",
        "final_answer",
        "budgets(max_tokens=2000, max_seconds=30)",
    ]
    for response in responses:
        assert set(response) >= {"request_id", "results_by_agent_name", "overall_score"}
    assert list((tmp_path / "tmp").iterdir()) == []  # no report unless --html is given


def test_a_configured_judge_scores_two_criteria_through_the_server(tmp_path: Path) -> None:
    with ScriptedLLMServer(default=verdict(7, "Uses its tools sensibly.")) as judge:
        env = {"OPENAI_BASE_URL": judge.base_url}
        done = _demo("--judge", "openai:judge-model", tmp_path=tmp_path, env=env)
        asked = judge.requests
    assert done.returncode == 0, done.stderr
    assert "Judge: openai:judge-model (two natural-language criteria)" in done.stdout
    assert "No judge configured" not in done.stdout
    rows = _rows(done.stdout)
    assert rows["tool_arguments"][-2:] == ["criterion1", "criterion2"]
    assert rows["researcher"][-2:] == ["0.67", "0.67"]  # 7 on the judge's 1..10 scale
    assert len(asked) == 6  # two criteria x three agents, every call from the server
    assert all(r.json["model"] == "judge-model" for r in asked)


def test_a_failing_judge_is_reported_and_the_checks_still_stand(tmp_path: Path) -> None:
    with ScriptedLLMServer(default=Reply.error(500)) as judge:
        env = {"OPENAI_BASE_URL": judge.base_url}
        done = _demo("--judge", "openai:judge-model", tmp_path=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("judge ") and " failed: " in done.stderr
    rows = _rows(done.stdout)
    assert rows["researcher"][0] == "0.67"  # the checks' scores stand
    assert rows["researcher"][-2:] == ["n/e", "n/e"]  # the judged criteria: not evaluated
    assert (
        "n/e = not evaluated (criterion1, criterion2): the judge openai:judge-model failed: "
        in (done.stdout)
    )


def test_a_judge_slower_than_its_timeout_leaves_the_checks_and_says_not_evaluated(
    tmp_path: Path,
) -> None:
    slow = Reply.text(json.dumps({"explanation": "Fine.", "applicable": True, "score": 8}), delay=5)
    with ScriptedLLMServer(default=slow) as judge:
        env = {"OPENAI_BASE_URL": judge.base_url}
        argv = ["--judge", "openai:slow-model", "--judge-timeout-seconds", "0.5", "--json"]
        done = _demo(*argv, tmp_path=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "0.5s timeout" in done.stderr
    responses = {r["criterion"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert responses["final_answer"]["overall_score"] is not None  # the checks are there
    judged = [r for c, r in responses.items() if c.startswith(("Reward", "Penalize"))]
    assert len(judged) == 2
    for response in judged:
        for result in response["results_by_agent_name"].values():
            for agent in result["results_by_agent_instance_id"].values():
                assert agent["score"] is None and "0.5s timeout" in agent["not_evaluated"]


def test_base_url_runs_the_program_against_another_model(tmp_path: Path) -> None:
    with ScriptedLLMServer(scripted_replies()) as model:
        done = _demo("--base-url", model.base_url, "--model", "my-model", tmp_path=tmp_path)
        asked = model.requests
    assert done.returncode == 0, done.stderr
    assert f"against {model.base_url}" in done.stdout
    assert "replies were scripted" not in done.stdout
    assert {r.json["model"] for r in asked} == {"my-model"}
    assert _rows(done.stdout)["writer"][3] == "0.67"


def test_an_unwritable_path_fails_before_any_work(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "trace.json"
    done = _demo("--json", "--save-trace", str(target), tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"tracejudge demo: cannot write {target}: No such file or directory\n"
    done = _demo("--html", str(tmp_path), tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"tracejudge demo: cannot write {tmp_path}: Is a directory\n"


def test_a_bad_judge_spec_is_a_usage_error(tmp_path: Path) -> None:
    done = _demo("--judge", "nope:x", tmp_path=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("tracejudge demo: unknown judge provider 'nope'")
    assert len(done.stderr.splitlines()) == 1


def test_the_background_server_leaves_nothing_running(tmp_path: Path) -> None:
    from tracejudge.server.background import BackgroundServer
    from tracejudge.server.config import ServerConfig

    before = set(threading.enumerate())
    config = ServerConfig(port=0, db=str(tmp_path / "t.db"), log_level="warning")
    with BackgroundServer(config, checks_only=True) as server:
        assert server.port > 0 and server.judge_label is None
        assert httpx.get(f"{server.url}/health").json()["status"] == "ok"
    # Worker threads of the server's loop stop as the loop closes; give them a moment.
    leftover = set(threading.enumerate()) - before
    for thread in leftover:
        thread.join(timeout=5)
    assert [t for t in leftover if t.is_alive()] == []
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2)
    with pytest.raises(ValueError, match="loopback only"):
        BackgroundServer(ServerConfig(host="0.0.0.0", db=str(tmp_path / "u.db")))
