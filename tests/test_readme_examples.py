"""The README's first Python example, run as it is written (in a subprocess, the model
and the judge a ScriptedLLMServer on loopback reached through OPENAI_BASE_URL): it prints
each criterion's scores by agent name, not by random instance id."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tracejudge.testing import Reply, ScriptedLLMServer

pytestmark = pytest.mark.heavy("the README's example as a program of its own")

ROOT = Path(__file__).resolve().parent.parent


def _fifteen_lines() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## In fifteen lines", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_fifteen_line_example_prints_scores_by_agent_name(tmp_path: Path) -> None:
    program = tmp_path / "fifteen.py"
    program.write_text(_fifteen_lines())
    verdict = {"explanation": "Stays on task.", "applicable": True, "score": 10}
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TRACEJUDGE_", "COMPOSO_", "OTEL_", "ANTHROPIC_"))
    }
    with ScriptedLLMServer(default=Reply.text(json.dumps(verdict))) as model:
        env.update(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="scripted")
        done = subprocess.run(
            [sys.executable, str(program)], capture_output=True, text=True, env=env, timeout=120
        )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    for line, criterion in zip(
        lines, ["final_answer", "Reward agents that stay on task"], strict=True
    ):
        assert line.startswith(criterion + " "), line
        scores = ast.literal_eval(line[line.index("{") :])
        assert scores == {"orchestrator": 1.0, "researcher": 1.0}, line
    # no instance ids (uuids) in what it prints
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", done.stdout)
