"""The judging commands' one table of settings: every command that has a setting takes it
as the same flag and the same environment variable (the flag first), says the same about
it in `--help`, and hands it to the judge; `--judge-timeout-seconds` reaches a real slow
judge model on loopback from `score`; `--concurrency`'s old meaning in `calibrate` and
`rubric` still works, with a deprecation message."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tracejudge.cli import build_parser, main
from tracejudge.cli._settings import SETTINGS_BY_NAME, evaluation_settings, resolve
from tracejudge.server.config import SETTINGS_BY_FIELD as SERVE_SETTINGS
from tracejudge.testing import Reply, ScriptedLLMServer

#: The least each command needs besides the settings.
COMMANDS: dict[str, list[str]] = {
    "score": ["score", "traces.jsonl"],
    "attribute": ["attribute", "traces.jsonl"],
    "bench attribution": ["bench", "attribution", "data.json"],
    "calibrate": ["calibrate", "labels.jsonl"],
    "rubric": ["rubric", "data.jsonl", "--rubric", "Reward brevity", "--model", "openai/m"],
    "demo": ["demo"],
    "run": ["run", "experiment.py"],
}

JUDGE = ["judge", "judge_base_url", "judge_timeout_seconds", "max_concurrency"]
TOKENS = ["judge_max_tokens", "judge_max_input_tokens"]
SPEND = ["judge_prices", "max_judge_cost", "max_judge_tokens"]
#: The settings each command has.
HAS: dict[str, list[str]] = {
    "score": [*JUDGE, *TOKENS, *SPEND, "single_call", "no_explore", "fail_under", "concurrency"],
    "attribute": [*JUDGE, *TOKENS, *SPEND, "concurrency"],
    "bench attribution": [*JUDGE, *TOKENS, *SPEND, "concurrency"],
    "calibrate": [*JUDGE, *TOKENS, "fail_under"],
    "rubric": ["judge_timeout_seconds", "max_concurrency"],
    "demo": [*JUDGE, *TOKENS],
    "run": [*JUDGE, *TOKENS, *SPEND, "single_call", "no_explore", "fail_under", "concurrency"],
}
#: A value of each setting as typed, and as read.
VALUES: dict[str, tuple[str, Any]] = {
    "judge": ("openai:flag-model", "openai:flag-model"),
    "judge_base_url": ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"),
    "judge_timeout_seconds": ("2.5", 2.5),
    "max_concurrency": ("3", 3),
    "judge_max_tokens": ("700", 700),
    "judge_max_input_tokens": ("3000", 3000),
    "judge_prices": ("prices.json", "prices.json"),
    "max_judge_cost": ("1.25", 1.25),
    "max_judge_tokens": ("9000", 9000),
    "single_call": ("yes", True),
    "no_explore": ("true", True),
    "fail_under": ("0.7", 0.7),
    "concurrency": ("5", 5),
}
CASES = [(command, name) for command, names in HAS.items() for name in names]


def parse(command: str, *extra: str, environ: dict[str, str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args([*COMMANDS[command], *extra])
    resolve(args, environ or {})
    return args


def command_parser(command: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = build_parser()
    for word in command.split():
        (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = commands.choices[word]
    return parser


def help_of(command: str, flag: str) -> str:
    for action in command_parser(command)._actions:
        if flag in action.option_strings:
            return str(action.help)
    raise AssertionError(f"{command} has no {flag}")


@pytest.mark.parametrize(("command", "name"), CASES)
def test_each_command_takes_the_flag(command: str, name: str) -> None:
    row = SETTINGS_BY_NAME[name]
    text, value = VALUES[name]
    extra = [row.flag] if row.switch else [row.flag, text]
    assert getattr(parse(command, *extra), name) == value


@pytest.mark.parametrize(("command", "name"), [c for c in CASES if c[1] != "judge"])
def test_each_command_reads_the_variable_and_the_flag_wins(command: str, name: str) -> None:
    row = SETTINGS_BY_NAME[name]
    text, value = VALUES[name]
    from_env = parse(command, environ={row.env: text})
    assert getattr(from_env, name) == value
    assert from_env._sources[name] == row.env
    if not row.switch:
        other = {"2.5": "7", "3": "6", "0.7": "0.2", "5": "2", "1.25": "4"}.get(text, text + "0")
        flagged = parse(command, row.flag, other, environ={row.env: text})
        assert getattr(flagged, name) != value
        assert flagged._sources[name] == row.flag


@pytest.mark.parametrize("command", list(HAS))
def test_the_judge_variable_is_left_to_the_backend_precedence(command: str) -> None:
    """TRACEJUDGE_JUDGE is read where OPENAI_API_KEY / OPENAI_BASE_URL are (a judge it names
    that cannot be built matters only when a criterion needs a judge); the flag wins."""
    if "judge" not in HAS[command]:
        pytest.skip(f"{command} names its judge otherwise")
    assert parse(command, environ={"TRACEJUDGE_JUDGE": "openai:env-model"}).judge is None
    assert "[TRACEJUDGE_JUDGE]" in help_of(command, "--judge")


@pytest.mark.parametrize("name", list(VALUES))
def test_the_help_is_the_same_in_every_command(name: str) -> None:
    row = SETTINGS_BY_NAME[name]
    helps = {command: help_of(command, row.flag) for command, names in HAS.items() if name in names}
    assert len(helps) >= 2 or name in ("single_call", "no_explore")
    for command, text in helps.items():
        assert text.startswith(row.help), command
        assert text.endswith(f"[{row.env}]"), command
    if name in SERVE_SETTINGS:  # serve says the same, from the same variable
        served = SERVE_SETTINGS[name]
        assert (served.flag, served.env, served.help) == (row.flag, row.env, row.help)


def test_the_defaults_each_command_keeps() -> None:
    score = parse("score")
    assert (score.concurrency, score.max_concurrency, score.judge_timeout_seconds) == (8, 32, 60.0)
    attribute = parse("attribute", "--concurrency", "2")
    assert (attribute.concurrency, attribute.max_concurrency) == (2, 8)
    assert parse("attribute").concurrency == 4
    assert parse("bench attribution").concurrency == 4
    assert parse("calibrate").max_concurrency == 8
    assert parse("rubric").max_concurrency == 8
    assert parse("demo").max_concurrency == 16  # serve's


@pytest.mark.parametrize("command", ["score", "attribute", "bench attribution", "calibrate"])
def test_the_settings_reach_evaluation_settings(command: str) -> None:
    args = parse(
        command,
        "--judge-timeout",
        "4.5",
        "--max-concurrency",
        "5",
        "--judge-max-tokens",
        "300",
        environ={"TRACEJUDGE_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    settings = evaluation_settings(args)
    assert (settings.http.timeout, settings.http.max_concurrency) == (4.5, 5)
    assert (settings.max_tokens, settings.base_url) == (300, "http://127.0.0.1:9/v1")


def test_the_demo_server_gets_the_judge_settings(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from tracejudge.cli import demo

    args = parse("demo", "--judge-timeout-seconds", "7", "--judge-max-tokens", "99")
    options = {name: getattr(args, name) for name in demo._JUDGE_OPTIONS}
    server = demo._demo_server(judge=None, db=str(tmp_path / "d.db"), judge_options=options)
    assert (server.config.judge_timeout_seconds, server.config.judge_max_tokens) == (7.0, 99)
    assert server.config.max_concurrency == 16


def test_demo_to_refuses_the_judge_settings_of_its_own_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["demo", "--to", "http://127.0.0.1:9", "--judge-timeout-seconds", "3"])
    assert status == 2
    assert "--judge-timeout-seconds" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("variable", "text"),
    [("TRACEJUDGE_JUDGE_TIMEOUT_SECONDS", "soon"), ("TRACEJUDGE_CONCURRENCY", "0")],
)
def test_an_unusable_variable_is_a_usage_error_naming_it(
    variable: str, text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(variable, text)
    assert main(["score", "nothing-here.jsonl"]) == 2
    error = capsys.readouterr().err
    assert f"{variable}={text!r}" in error
    assert (
        SETTINGS_BY_NAME["judge_timeout_seconds" if "TIMEOUT" in variable else "concurrency"].flag
        in error
    )


@pytest.mark.parametrize("command", ["calibrate", "rubric"])
def test_the_old_concurrency_spelling_still_sets_judge_calls_with_a_message(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(command, "--concurrency", "3")
    assert args.max_concurrency == 3
    error = capsys.readouterr().err
    assert "--concurrency is deprecated here, use --max-concurrency" in error
    assert error.count("deprecated") == 1
    resolve(args, {})  # resolved once: said once
    assert "deprecated" not in capsys.readouterr().err
    assert "deprecated" not in (
        parse(command, "--max-concurrency", "3") and capsys.readouterr().err
    )


# --------------------------------------------------------------------------- a slow judge

VERDICT = json.dumps({"explanation": "Fine.", "applicable": True, "score": 8})


@pytest.fixture
def slow_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLMServer]:
    """A judge model on loopback that answers each call after 2 seconds."""
    with ScriptedLLMServer(default=Reply.text(VERDICT, delay=2.0)) as server:
        for name in ("TRACEJUDGE_JUDGE", "COMPOSO_API_KEY", "TRACEJUDGE_JUDGE_TIMEOUT_SECONDS"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", "judge-key")
        yield server


@pytest.fixture
def one_trace(tmp_path: Path) -> Path:
    agent = {
        "id": "a1",
        "name": "helper",
        "interactions": [
            {
                "input_messages": [{"role": "user", "content": "What is 2 + 2?"}],
                "output_messages": [{"content": "4"}],
            }
        ],
    }
    path = tmp_path / "trace.json"
    path.write_text(
        json.dumps({"root_agent_instance_id": "a1", "agent_instance_by_id": {"a1": agent}})
    )
    return path


def _score(model: ScriptedLLMServer, trace: Path, *extra: str) -> list[str]:
    return [
        "score",
        str(trace),
        "--judge",
        "openai:slow-judge",
        "--judge-base-url",
        model.base_url,
        "--criterion",
        "Reward correct answers",
        "--json",
        *extra,
    ]


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_score_gives_up_on_a_slow_judge_after_the_judge_timeout(
    how: str,
    slow_model: ScriptedLLMServer,
    one_trace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if how == "flag":
        argv = _score(slow_model, one_trace, "--judge-timeout-seconds", "0.3")
    else:
        monkeypatch.setenv("TRACEJUDGE_JUDGE_TIMEOUT_SECONDS", "0.3")
        argv = _score(slow_model, one_trace)
    assert main(argv) == 1  # the judgement failed: not evaluated, and the run says so
    captured = capsys.readouterr()
    assert "within the 0.3s timeout" in captured.err
    # the judge's advice in the CLI's words: the flag, not the Python keyword
    assert "raise --judge-timeout-seconds" in captured.err and "raise timeout" not in captured.err
    summary = json.loads(captured.out.splitlines()[-1])["summary"]
    assert (summary["judge_failures"], summary["not_evaluated"]) == (1, 1)
    assert slow_model.requests  # the judge was asked, and not waited for


@pytest.mark.heavy("a judge that answers after 2 s, waited for")
def test_score_waits_for_the_slow_judge_within_the_default_timeout(
    slow_model: ScriptedLLMServer, one_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_score(slow_model, one_trace)) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])["summary"]
    assert (summary["scored"], summary["failed"], summary["judge_failures"]) == (1, 0, 0)


@pytest.mark.heavy("the command as a process against a judge that answers after 2 s")
def test_rubric_gives_up_on_a_slow_judge_after_the_judge_timeout(
    slow_model: ScriptedLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracejudge import rewards

    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps({"solution_str": "4"}) + "\n")
    argv = ["rubric", str(dataset), "--rubric", "Reward correct answers"]
    argv += ["--model", "openai/slow-judge", "--base-url", slow_model.base_url, "--json"]
    try:
        assert main([*argv, "--judge-timeout-seconds", "0.3"]) == 1  # no item scored
        first = json.loads(capsys.readouterr().out.splitlines()[0])
        assert "0.3s timeout" in first["error"]
        assert main(argv) == 0  # within the default timeout, the slow answer is taken
        assert json.loads(capsys.readouterr().out.splitlines()[0])["score"] is not None
    finally:
        with rewards._SERVICES_LOCK:
            entries = list(rewards._SERVICES.values())
            rewards._SERVICES.clear()
        rewards._close_quietly([entry.service for entry in entries])
