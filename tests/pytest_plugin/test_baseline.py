"""The pytest plugin's baseline mode, run by pytest itself (`pytester`, in process): a
session's `assert_trace` scores saved as a run (a directory, a real server on loopback),
then later sessions compared with it through the gate `tracejudge compare` uses: a
significant drop fails the session, a small one is inconclusive and does not, an
unchanged session passes."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig

pytest_plugins = ["pytester"]

#: Twelve tests of an agent scored by a check; the cases in BROKEN answer wrong. Each
#: test keeps going when its assertion fails (the gate is on the session's pass rate).
USER_TESTS = """
import os

import pytest

from tracejudge.checks import check
from tracejudge.models import MultiAgentTrace
from tracejudge.pytest_plugin import TraceAssertionError, assert_trace

BROKEN = {int(n) for n in os.environ.get("BROKEN", "").split(",") if n}


@check
def adds_one(agent):
    question = agent.interactions[0].input_messages[0].content
    answer = agent.interactions[0].output_messages[0].content
    return answer == str(int(question) + 1)


@pytest.mark.parametrize("n", range(12))
def test_adder(n):
    answer = str(n + (2 if n in BROKEN else 1))
    trace = MultiAgentTrace.model_validate({
        "root_agent_instance_id": "a1",
        "agent_instance_by_id": {"a1": {"id": "a1", "name": "adder", "interactions": [
            {"input_messages": [{"role": "user", "content": str(n)}],
             "output_messages": [{"content": answer}]}]}},
    })
    try:
        assert_trace(trace, criteria=[adds_one], min_score=1.0)
    except TraceAssertionError:
        pass
"""


@pytest.fixture
def user_tests(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("TRACEJUDGE_JUDGE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "COMPOSO_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TRACEJUDGE_API_KEY", raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_adder=USER_TESTS)
    return pytester


def session(
    tests: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, broken: str, *options: str
) -> pytest.RunResult:
    monkeypatch.setenv("BROKEN", broken)
    return tests.runpytest("-p", "tracejudge.pytest_plugin", "-p", "no:cacheprovider", *options)


def test_a_saved_session_is_the_baseline_a_regression_fails_against(
    user_tests: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base = tmp_path / "baseline"
    saved = session(user_tests, monkeypatch, "", f"--tracejudge-save-run={base}")
    assert saved.ret == 0
    saved.stdout.fnmatch_lines(
        [f"tracejudge: run saved: {base} (12 assert_trace calls in 12 tests)"]
    )
    record = json.loads((base / "run.json").read_text())
    assert record["name"] == "pytest" and record["rows"] == 12
    lines = [json.loads(line) for line in (base / "rows.jsonl").read_text().splitlines()]
    assert lines[0]["id"] == "test_adder.py::test_adder[0]"
    assert lines[0]["scores"][0]["criterion"] == "adds_one" and lines[0]["scores"][0]["passed"]

    # half the tests broken: every test passes (their assertions are soft), the gate fails
    worse = session(user_tests, monkeypatch, "0,1,2,3,4,5", f"--tracejudge-baseline={base}")
    worse.assert_outcomes(passed=12)
    assert worse.ret == 1
    worse.stdout.fnmatch_lines(
        [
            "tracejudge: adder / adds_one: REGRESSED",
            "tracejudge:   pass rate 100.0% -> 50.0%*",
            "tracejudge: REGRESSION: the session fails",
        ]
    )
    # two of twelve: a drop, not significant: said, not a failure
    unsure = session(user_tests, monkeypatch, "3,7", f"--tracejudge-baseline={base}")
    assert unsure.ret == 0
    unsure.stdout.fnmatch_lines(["tracejudge: INCONCLUSIVE: not enough evidence*"])
    # unchanged: no regression
    same = session(user_tests, monkeypatch, "", f"--tracejudge-baseline={base}")
    assert same.ret == 0
    same.stdout.fnmatch_lines(["tracejudge: no regression"])
    # the path as the next argument: pytest takes it for a path of tests, and names them
    # from another rootdir: no test pairs, and the session says why
    moved = session(user_tests, monkeypatch, "", "--tracejudge-baseline", str(base))
    assert moved.ret == 0
    moved.stdout.fnmatch_lines(["tracejudge: no test of this session is in the baseline*"])
    # a baseline that is not there: a usage error naming it
    missing = session(user_tests, monkeypatch, "", f"--tracejudge-baseline={tmp_path / 'x'}")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stdout.fnmatch_lines(["tracejudge: --tracejudge-baseline: *is not a run directory*"])


def test_the_baseline_can_live_on_a_server(
    user_tests: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = ServerConfig(port=0, db=str(tmp_path / "runs.db"))
    with BackgroundServer(config, checks_only=True) as server:
        saved = session(
            user_tests, monkeypatch, "", f"--tracejudge-save-run={server.url}",
            "--tracejudge-run-name=main",
        )  # fmt: skip
        assert saved.ret == 0
        saved.stdout.fnmatch_lines([f"tracejudge: run saved: {server.url}/ui/runs/*"])
        (run,) = httpx.get(f"{server.url}/api/v1/runs").json()["runs"]
        assert (run["name"], run["results"]) == ("main", 12)
        # the newest run named "main" is the baseline
        worse = session(
            user_tests,
            monkeypatch,
            "0,1,2,3,4,5,6",
            f"--tracejudge-baseline={server.url}/runs/main",
        )
        assert worse.ret == 1
        worse.stdout.fnmatch_lines(["tracejudge: REGRESSION: the session fails"])
