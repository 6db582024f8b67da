"""The `tracejudge` command and the public package surface."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tracejudge
from tracejudge.cli import main
from tracejudge.convert import traces_from_otlp

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_public_name_resolves() -> None:
    assert sorted(tracejudge.__all__) == sorted(
        [*tracejudge._EXPORTS, *tracejudge._MODULES, "__version__"]
    )
    for name in tracejudge.__all__:
        assert getattr(tracejudge, name) is not None, name


def test_criteria_and_checks_import_as_modules_and_names() -> None:
    from tracejudge import checks, criteria
    from tracejudge.checks import budgets, tool_arguments
    from tracejudge.criteria import agent, rag_faithfulness

    assert rag_faithfulness in criteria.rag and criteria.agent == agent
    assert checks.tool_arguments is tool_arguments and checks.budgets is budgets


def test_importing_the_package_loads_neither_judges_nor_openai() -> None:
    code = (
        "import sys, tracejudge; from tracejudge import AgentTracer, MultiAgentTrace; "
        "print(any(m.startswith(('openai', 'tracejudge.judges')) for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_score_reads_an_otlp_file_and_a_trace_json(tmp_path: Path, capsys) -> None:
    otlp = FIXTURES / "openllmetry.jsonl"
    assert main(["score", str(otlp), "--json-lines"]) == 0
    *lines, last = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert last["summary"]["traces"] == 1
    assert {line["criterion"] for line in lines} == {
        "tool_arguments",
        "tool_results",
        "loops",
        "grounded_numbers",
        "final_answer",
    }
    (trace,) = traces_from_otlp(otlp)
    as_json = tmp_path / "trace.json"
    as_json.write_text(trace.to_json())
    assert main(["score", str(as_json), "--check", "loops", "--max-tokens", "10"]) == 0
    out = capsys.readouterr().out
    assert "researcher" in out and "loops" in out
    assert "budgets(max_tokens=10" in out and "used" in out


def test_score_reports_a_missing_file_and_a_missing_judge(tmp_path: Path, capsys, monkeypatch):
    assert main(["score", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TRACEJUDGE_JUDGE", "COMPOSO_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    code = main(["score", str(FIXTURES / "openllmetry.jsonl"), "--criterion", "Reward clarity"])
    assert code == 2  # bad usage: a criterion that needs a judge, and none configured
    assert "TRACEJUDGE_JUDGE" in capsys.readouterr().err


def test_score_json_is_one_object_and_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    otlp = FIXTURES / "openllmetry.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "score", str(otlp), "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["traces"] == 1
    piped = subprocess.run(
        f"{sys.executable} -m tracejudge score {otlp} --json-lines | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"], ["score", "--help"]])
def test_help_exits_cleanly(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_unreadable_input_exits_2_with_one_line_naming_it(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "missing.jsonl"
    assert main(["score", str(missing)]) == 2
    assert f"tracejudge score: no such file: {missing}" in _one_line_error(capsys)

    broken = tmp_path / "broken.json"
    broken.write_text('{"agent_instance_by_id": 3}')
    assert main(["score", str(broken)]) == 2
    err = _one_line_error(capsys)
    assert f"{broken}, line 1 is not a valid MultiAgentTrace: root_agent_instance_id" in err
    assert "(and 1 more)" in err


def test_input_without_llm_calls_exits_2_and_says_why(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["score", str(empty)]) == 2
    first, *why = capsys.readouterr().err.splitlines()
    assert first == f"tracejudge score: {empty} holds no LLM interaction to score"
    assert why and all(line.startswith("  ") for line in why)


@pytest.mark.parametrize(
    ("option", "value"), [("--max-tokens", "0"), ("--max-tokens", "1.5"), ("--max-seconds", "nan")]
)
def test_budget_options_must_be_positive_numbers(option: str, value: str, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["score", str(FIXTURES / "openllmetry.jsonl"), option, value])
    assert exited.value.code == 2
    assert f"argument {option}:" in capsys.readouterr().err


def test_version_and_python_dash_m(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"tracejudge {tracejudge.__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "score", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "--max-tokens" in done.stdout
