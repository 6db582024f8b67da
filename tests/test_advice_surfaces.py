"""Advice worded for its surface (#35): a missing judge is `judge='openai:...'` in Python,
`--judge` from the CLI (and a slow judge `--judge-timeout-seconds`); a server's answers
say "start the server with --judge" (tests/server/test_evals.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracejudge import Composo
from tracejudge._advice import Surface, how_to_configure_a_judge, reworded
from tracejudge.cli import main
from tracejudge.errors import ConfigurationError
from tracejudge.models import AgentInstance, MultiAgentTrace

FIXTURES = Path(__file__).parent / "fixtures"
_JUDGE_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TRACEJUDGE_JUDGE",
    "TRACEJUDGE_JUDGE_MODEL",
    "COMPOSO_API_KEY",
)


@pytest.fixture
def no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _JUDGE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _trace() -> MultiAgentTrace:
    chat = [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}]
    return MultiAgentTrace.from_agent(AgentInstance.from_chat_session(chat))


def test_python_names_the_keyword(no_judge: None) -> None:
    with Composo() as client, pytest.raises(ConfigurationError) as raised:
        client.evaluate_trace(_trace(), "Reward correct answers")
    assert "judge='openai:gpt-4.1-mini'" in str(raised.value)
    assert "--judge" not in str(raised.value)


def test_the_cli_names_its_flag(no_judge: None, capsys: pytest.CaptureFixture[str]) -> None:
    fixture = str(FIXTURES / "openllmetry.jsonl")
    assert main(["score", fixture, "--criterion", "Reward clarity"]) == 2
    err = capsys.readouterr().err
    assert "--judge openai:gpt-4.1-mini" in err, err
    assert "judge='" not in err and "Pass judge" not in err, err


def test_the_cli_attribute_names_its_flag(
    no_judge: None, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = str(FIXTURES / "openllmetry.jsonl")
    assert main(["attribute", fixture, "--method", "all_at_once"]) == 2
    err = capsys.readouterr().err
    assert "--judge" in err and "judge='" not in err, err


@pytest.mark.parametrize("surface", list(Surface))
def test_every_surface_has_its_own_words(surface: Surface) -> None:
    said = how_to_configure_a_judge(surface)
    others = {s: how_to_configure_a_judge(s) for s in Surface if s is not surface}
    assert all(said != other for other in others.values())
    python_keyword = "judge='" in said
    assert python_keyword is (surface is Surface.PYTHON)
    assert ("start the server with --judge" in said) is (surface is Surface.SERVER)


def test_a_judges_timeout_advice_is_reworded_per_surface() -> None:
    said = (
        "judge x gave no usable answer within the 60s timeout; raise timeout, or lower max_tokens"
    )
    assert reworded(said, Surface.PYTHON) == said
    cli = reworded(said, Surface.CLI)
    assert "raise --judge-timeout-seconds, or lower --judge-max-tokens" in cli
    server = reworded(said, Surface.SERVER)
    assert "start the server with a larger --judge-timeout-seconds" in server
    assert "raise timeout" not in cli + server and "max_tokens" not in cli + server
    assert json.dumps(server)  # plain text, one line


def test_a_missing_key_is_told_in_the_clis_words(
    no_judge: None, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = str(FIXTURES / "openllmetry.jsonl")
    argv = ["score", fixture, "--judge", "openai:gpt-4.1-mini", "--criterion", "Reward clarity"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and "--judge-base-url URL" in err, err
    assert "api_key=" not in err and "base_url=" not in err, err
