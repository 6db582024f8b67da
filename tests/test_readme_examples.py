"""The README's first Python example, run as it is written (in a subprocess, with no
OpenAI, tracejudge or OTel variable set: it brings its own scripted model on loopback and
scores with checks), and again switched to a judge as the README says to (the model and
the judge then a ScriptedLLMServer reached through OPENAI_BASE_URL): it prints each
criterion's scores by agent name, not by random instance id."""

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


def _clean_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TRACEJUDGE_", "COMPOSO_", "OTEL_", "ANTHROPIC_"))
    }


def _run(program: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # no instance ids (uuids) in what it prints
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", done.stdout)
    return done.stdout.splitlines()


def _scores(line: str, criterion: str) -> dict[str, float]:
    assert line.startswith(criterion + " "), line
    scores: dict[str, float] = ast.literal_eval(line[line.index("{") :])
    return scores


def test_the_first_example_runs_offline_as_written(tmp_path: Path) -> None:
    program = tmp_path / "fifteen.py"
    program.write_text(_fifteen_lines())
    lines = _run(program, _clean_env())
    # A list of one criterion in, a list of one result out: one line, not one per field.
    assert len(lines) == 1, lines
    assert _scores(lines[0], "final_answer") == {"orchestrator": 1.0, "researcher": 1.0}


def test_the_first_example_switched_to_a_judge_as_the_readme_says(tmp_path: Path) -> None:
    code = _fifteen_lines()
    readme = (ROOT / "README.md").read_text()
    judged_client = 'Composo(judge="openai:gpt-4.1-mini")'
    judged_criteria = 'criteria=[checks.final_answer, "Reward agents that stay on task"]'
    assert judged_client in readme and judged_criteria in readme  # what the README tells
    switched = (
        code.replace("Composo()", judged_client)
        .replace("criteria=[checks.final_answer]", judged_criteria)
        .replace('OpenAI(base_url=model.base_url, api_key="offline")', "OpenAI()")
    )
    assert switched.count(judged_client) == 1 and "OpenAI()" in switched
    program = tmp_path / "judged.py"
    program.write_text(switched)
    verdict = {"explanation": "Stays on task.", "applicable": True, "score": 10}
    env = _clean_env()
    with ScriptedLLMServer(default=Reply.text(json.dumps(verdict))) as served:
        env.update(OPENAI_BASE_URL=served.base_url, OPENAI_API_KEY="scripted")
        lines = _run(program, env)
    assert len(lines) == 2, lines
    for line, criterion in zip(
        lines, ["final_answer", "Reward agents that stay on task"], strict=True
    ):
        assert _scores(line, criterion) == {"orchestrator": 1.0, "researcher": 1.0}, line
