"""Advice worded for where the reader is: Python code, the command line, or a server's
answer.

The same missing setting is fixed differently on each surface: in Python, with
`judge='openai:…'`; from the CLI, with `--judge`; from a server's answer, only by whoever
starts the server ("start the server with --judge"). Whatever produces such advice takes
a `Surface` and asks here for its words, so that no surface tells its reader to do what
only another surface can.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Surface", "how_to_configure_a_judge", "judge_setting", "reworded"]


class Surface(Enum):
    """Where the reader of a message is."""

    PYTHON = "python"  # code calling the library (Composo, build_service, ...)
    CLI = "cli"  # a `tracejudge` command
    SERVER = "server"  # a client of `tracejudge serve`, reading its answer


_EXAMPLES = "'anthropic:claude-sonnet-4-5', 'ollama:llama3.1'"
_ENVIRONMENT = (
    "or set TRACEJUDGE_JUDGE (e.g. TRACEJUDGE_JUDGE=openai:gpt-4.1-mini), or set "
    "OPENAI_API_KEY, or OPENAI_BASE_URL for a local OpenAI-compatible server such as vLLM, "
    "Ollama or llama.cpp (e.g. OPENAI_BASE_URL=http://localhost:11434/v1 with "
    "TRACEJUDGE_JUDGE_MODEL=llama3.1)"
)

_NO_JUDGE = {
    Surface.PYTHON: (
        f"No judge model is configured. Pass judge='openai:gpt-4.1-mini' (or {_EXAMPLES}, "
        f"or a judge object), {_ENVIRONMENT}. To use a remote tracejudge or Composo server "
        "instead, pass base_url=... or set COMPOSO_API_KEY."
    ),
    Surface.CLI: (
        "No judge model is configured. Give --judge openai:gpt-4.1-mini (or "
        f"{_EXAMPLES.replace(chr(39), '')}; --judge-base-url URL for any OpenAI-compatible "
        f"server), {_ENVIRONMENT}."
    ),
    Surface.SERVER: (
        "This server has no judge model, so only checks run here: start the server with "
        "--judge (e.g. tracejudge serve --judge openai:gpt-4.1-mini), or with "
        "TRACEJUDGE_JUDGE, OPENAI_API_KEY or OPENAI_BASE_URL set."
    ),
}


def _server(setting: str) -> str:
    return f"start the server with {setting}"


def how_to_configure_a_judge(surface: Surface = Surface.PYTHON) -> str:
    """What to tell a reader on `surface` who asked for a judged criterion with no judge."""
    return _NO_JUDGE[surface]


# A judge setting as each surface spells it: the keyword, the CLI flag, the serve flag.
_SETTINGS = {
    "judge": ("judge=", "--judge", "--judge"),
    "timeout": ("timeout=", "--judge-timeout-seconds", "--judge-timeout-seconds"),
    "max_tokens": ("max_tokens=", "--judge-max-tokens", "--judge-max-tokens"),
}


def judge_setting(name: str, surface: Surface) -> str:
    """How a reader on `surface` sets the judge setting `name` ("judge", "timeout",
    "max_tokens"): `timeout=` in Python, `--judge-timeout-seconds` from the CLI, "start
    the server with --judge-timeout-seconds" from a server's answer."""
    python, cli, server = _SETTINGS[name]
    if surface is Surface.PYTHON:
        return python
    if surface is Surface.CLI:
        return cli
    return f"start the server with {server}"


# The judge backends' and the HTTP layer's advice names Python keywords (they do not know
# where their message is read): each phrase, and what it says from the CLI and in a
# server's answer. Longer phrases first: one may contain another.
_PHRASES = (
    (
        "set OPENAI_BASE_URL or pass base_url=... instead",
        "give --judge-base-url URL (or set OPENAI_BASE_URL) instead",
        "start the server with --judge-base-url instead",
    ),
    # A key is never given on a command line: from the environment only.
    (" (or pass api_key=...)", "", ""),
    (" or pass api_key=...", "", ""),
    ("pass api_key=...", "set the judge's key variable", "set the judge's key where it runs"),
    ("with base_url=...", "with --judge-base-url URL", "with --judge-base-url"),
    ("raise timeout", "raise --judge-timeout-seconds", _server("a larger --judge-timeout-seconds")),
    ("lower max_tokens", "lower --judge-max-tokens", _server("a smaller --judge-max-tokens")),
)


def reworded(message: str, surface: Surface) -> str:
    """`message`, a judge's or the HTTP layer's, with its advice worded for `surface`:
    "raise timeout" is "raise --judge-timeout-seconds" from the CLI and "start the server
    with a larger --judge-timeout-seconds" in a server's answer."""
    if surface is Surface.PYTHON:
        return message
    for python, cli, server in _PHRASES:
        message = message.replace(python, cli if surface is Surface.CLI else server)
    return message
