"""A slow judgement shows that it is waiting, and for how long (#35): on a terminal, a live
line "judging <agent> · <criterion> · N s" that counts up while the judge answers and is
cleared when it has; nothing when standard error is not a terminal, or with -q. The judge
is a ScriptedLLMServer on loopback that answers after 3 s; the command runs as a process
whose standard error is a pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tracejudge import _watch
from tracejudge.cli._judging import SHOW_AFTER_SECONDS, judging_text
from tracejudge.testing import Reply, ScriptedLLMServer

VERDICT = json.dumps({"explanation": "Right.", "applicable": True, "score": 9})
LINE = re.compile(r"judging helper · Reward correct answers · (\d+) s")


def _trace(tmp_path: Path) -> Path:
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


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_judging_text_names_the_longest_running_judgement_and_the_others() -> None:
    now = 100.0
    slow = _watch.Judging("researcher", "Reward accuracy", "openai:local", now - 42.4)
    quick = _watch.Judging("writer", "Reward clarity", "openai:local", now - 0.2)
    assert judging_text([], now) == ""
    assert judging_text([quick], now) == ""  # under SHOW_AFTER_SECONDS: no flicker
    assert SHOW_AFTER_SECONDS <= 42
    assert judging_text([slow, quick], now) == (
        "judging researcher · Reward accuracy · 42 s (+1 more in flight)"
    )


@pytest.mark.heavy("a judge that answers after 3 s, watched from three processes at once")
def test_a_slow_judgement_shows_a_live_line_on_a_terminal_only(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACEJUDGE_", "OPENAI_"))}
    env["OPENAI_API_KEY"] = "judge-key"
    with ScriptedLLMServer(default=Reply.text(VERDICT, delay=3.0)) as judge:
        argv = [sys.executable, "-m", "tracejudge", "score", str(trace), "--json"]
        argv += ["--judge", "openai:slow-judge", "--judge-base-url", judge.base_url]
        argv += ["--criterion", "Reward correct answers"]
        # on a terminal, as it is and with -q; and with standard error a pipe
        terminals = []
        for extra in ([], ["-q"]):
            parent, child = pty.openpty()
            process = subprocess.Popen(
                [*argv, *extra], stdout=subprocess.PIPE, stderr=child, env=env
            )
            os.close(child)
            terminals.append((parent, process))
        piped = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        seen = [_read_all(parent).decode() for parent, _ in terminals]
        for parent, process in terminals:
            os.close(parent)
            assert process.wait(timeout=120) == 0
            assert process.stdout is not None
            assert json.loads(process.stdout.read().splitlines()[-1])["summary"]["scored"] == 1
        _, piped_err = piped.communicate(timeout=120)
    shown, quiet = seen
    seconds = {int(s) for s in LINE.findall(shown)}
    assert len(seconds) >= 2 and min(seconds) >= 1, shown  # it counts up while it waits
    assert shown.rstrip().endswith("\r\x1b[K"), repr(shown[-80:])  # cleared once answered
    assert "judging" not in quiet  # -q
    assert piped.returncode == 0 and b"judging" not in piped_err  # not a terminal
