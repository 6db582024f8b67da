"""One reader of the environment, and where evaluation runs as one pure function."""

from __future__ import annotations

import pytest

from tracejudge import Composo
from tracejudge._env import Backend, choose_backend, read

# (environment, arguments, backend): arguments are what Composo(...) was given.
PRECEDENCE = [
    ({}, {}, Backend.NONE),
    ({}, {"judge": True}, Backend.JUDGE),
    ({"COMPOSO_API_KEY": "ck"}, {"judge": True}, Backend.JUDGE),
    ({"TRACEJUDGE_JUDGE": "ollama:m", "COMPOSO_API_KEY": "ck"}, {"judge": True}, Backend.JUDGE),
    ({}, {"base_url": True}, Backend.REMOTE),
    ({}, {"api_key": "k"}, Backend.REMOTE),
    ({"TRACEJUDGE_JUDGE": "ollama:m"}, {"base_url": True}, Backend.REMOTE),
    ({"OPENAI_API_KEY": "sk"}, {"api_key": "k"}, Backend.REMOTE),
    ({"TRACEJUDGE_JUDGE": "ollama:m"}, {}, Backend.ENV_JUDGE),
    ({"TRACEJUDGE_JUDGE": "ollama:m", "COMPOSO_API_KEY": "ck"}, {}, Backend.ENV_JUDGE),
    ({"COMPOSO_API_KEY": "ck"}, {}, Backend.ENV_REMOTE),
    ({"COMPOSO_API_KEY": "ck", "OPENAI_API_KEY": "sk"}, {}, Backend.ENV_REMOTE),
    # The bug this table was written for: a blank TRACEJUDGE_JUDGE switched the remote
    # server off and evaluation failed with "no judge configured".
    ({"COMPOSO_API_KEY": "ck", "TRACEJUDGE_JUDGE": " "}, {}, Backend.ENV_REMOTE),
    ({"COMPOSO_API_KEY": "ck", "TRACEJUDGE_JUDGE": ""}, {}, Backend.ENV_REMOTE),
    ({"COMPOSO_API_KEY": "  ", "OPENAI_API_KEY": "sk"}, {}, Backend.ENV_OPENAI),
    ({"OPENAI_API_KEY": "sk"}, {}, Backend.ENV_OPENAI),
    ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, {}, Backend.ENV_OPENAI),
    ({"OPENAI_BASE_URL": " ", "OPENAI_API_KEY": "\t"}, {}, Backend.NONE),
    ({"TRACEJUDGE_JUDGE": " ", "OPENAI_BASE_URL": "http://x/v1"}, {}, Backend.ENV_OPENAI),
]


@pytest.mark.parametrize(("environ", "arguments", "expected"), PRECEDENCE)
def test_backend_precedence(
    environ: dict[str, str], arguments: dict[str, object], expected: Backend
) -> None:
    choice = choose_backend(
        judge_given=bool(arguments.get("judge")),
        base_url_given=bool(arguments.get("base_url")),
        api_key=arguments.get("api_key"),  # type: ignore[arg-type]
        environ=environ,
    )
    assert choice.backend is expected


def test_the_choice_carries_the_values_it_used() -> None:
    remote = choose_backend(
        judge_given=False, base_url_given=False, api_key=None, environ={"COMPOSO_API_KEY": " ck "}
    )
    assert remote.remote and remote.api_key == "ck"
    explicit = choose_backend(
        judge_given=False, base_url_given=True, api_key=None, environ={"COMPOSO_API_KEY": "ck"}
    )
    assert explicit.backend is Backend.REMOTE and explicit.api_key == "ck"
    judge = choose_backend(
        judge_given=False,
        base_url_given=False,
        api_key=None,
        environ={"TRACEJUDGE_JUDGE": " ollama:m "},
    )
    assert judge.judge_spec == "ollama:m" and not judge.remote


def test_blank_means_unset() -> None:
    assert read("X", {"X": "   "}) is None
    assert read("X", {"X": ""}) is None
    assert read("X", {}) is None
    assert read("X", {"X": " v "}) == "v"
    assert read(None, {"X": "v"}) is None


def test_a_blank_judge_variable_keeps_the_remote_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COMPOSO_API_KEY", "ck")
    monkeypatch.setenv("TRACEJUDGE_JUDGE", " ")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with Composo() as client:
        assert client._engine.remote is not None
        assert client.judge is None


def test_every_variable_the_package_reads_is_listed() -> None:
    """No module reads os.environ but `_env` (the OpenTelemetry SDK reads its own)."""
    import pathlib

    import tracejudge

    root = pathlib.Path(tracejudge.__file__).parent
    readers = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "_env.py"
        and ("os.environ" in path.read_text() or "getenv(" in path.read_text())
    ]
    assert readers == []
