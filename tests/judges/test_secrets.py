"""A key written into base_url (``user:KEY@`` or ``?api-key=KEY``) is sent as the provider's
header and never shown: not in errors, repr, httpx's log lines, the CLI's error line, nor
when a server echoes it back in an error body. Real requests to a server on loopback."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.judges.helpers import graded
from tracejudge.errors import APIError, AuthenticationError
from tracejudge.judges import AnthropicJudge, JudgeRequest, OpenAICompatibleJudge
from tracejudge.testing import Reply, ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")
KEY = "sk-secret-0123456789"
REPO = Path(__file__).resolve().parents[2]


def _with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://user:{KEY}@")


def _everything_shown(judge: object, error: BaseException | None, caplog) -> str:
    parts = [repr(judge), *(r.getMessage() for r in caplog.records)]
    if error is not None:
        parts += [str(error), repr(error), str(getattr(error, "response_body", ""))]
    return "\n".join(parts)


@pytest.mark.parametrize("where", ["userinfo", "query"])
async def test_a_key_in_the_url_is_sent_as_a_header_and_shown_nowhere(
    server: ScriptedLLMServer, where: str, caplog
) -> None:
    url = (
        _with_userinfo(server.base_url)
        if where == "userinfo"
        else f"{server.base_url}?api-key={KEY}&api-version=2024-06-01"
    )
    server.add(graded(8), Reply.error(401, message=f"invalid key {KEY}"))
    judge = OpenAICompatibleJudge("judge-model", base_url=url, cache=False)
    with caplog.at_level(logging.DEBUG):
        verdict = await judge.judge(REQUEST)
        with pytest.raises(AuthenticationError) as caught:
            await judge.judge(JudgeRequest.of("Reward brevity", "user: hi\nassistant: hi"))
    await judge.aclose()
    assert verdict.score is not None
    sent = server.requests[0]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in sent.path
    if where == "query":
        assert "api-version=2024-06-01" in sent.path  # settings in the query stay
    assert any("HTTP Request" in r.getMessage() for r in caplog.records)  # httpx did log
    shown = _everything_shown(judge, caught.value, caplog)
    assert KEY not in shown
    assert "[redacted]" in str(caught.value)  # the echoed key, in the server's message


async def test_an_anthropic_key_in_the_url_goes_in_x_api_key(server: ScriptedLLMServer) -> None:
    server.add(graded(8))
    judge = AnthropicJudge("claude-judge", base_url=_with_userinfo(server.url), cache=False)
    await judge.judge(REQUEST)
    await judge.aclose()
    assert server.requests[0].headers["x-api-key"] == KEY
    assert KEY not in repr(judge)


async def test_an_unreachable_server_with_a_key_in_its_url_is_reported_without_it(
    caplog,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    judge = OpenAICompatibleJudge(
        "judge-model", base_url=f"http://user:{KEY}@127.0.0.1:{port}/v1", cache=False
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(APIError) as caught:
        await judge.judge(REQUEST)
    await judge.aclose()
    assert KEY not in _everything_shown(judge, caught.value, caplog)


def test_the_cli_error_line_does_not_show_the_key(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    trace = REPO / "tests" / "fixtures" / "openllmetry.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TRACEJUDGE_"))}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")])),
        OPENAI_BASE_URL=f"http://user:{KEY}@127.0.0.1:{port}/v1?api-key={KEY}",
        TRACEJUDGE_JUDGE="openai:judge-model",
    )
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "score", str(trace), "--criterion", "Reward accuracy"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "127.0.0.1" in done.stderr + done.stdout  # the error names the server...
    assert KEY not in done.stderr + done.stdout  # ...without its key
