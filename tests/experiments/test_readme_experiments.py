"""The README's experiments section, run as it is written: its dataset line, its
agent_eval.py and its three shell lines, in real processes, with the model and the judge a
ScriptedLLMServer reached through OPENAI_BASE_URL (as a user's environment would)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

pytestmark = pytest.mark.heavy("the README's experiment loop run as written, commands as processes")

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("## Did my change make it better or worse? Experiments", 1)[1].split(
        "\n## ", 1
    )[0]


def _block(section: str, language: str) -> str:
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def model_or_judge(request: RecordedRequest) -> Reply:
    system = request.json["messages"][0]["content"]
    if "JSON object" in system:  # the judge's instructions
        return Reply.text(json.dumps({"explanation": "Direct.", "applicable": True, "score": 9}))
    return Reply.text("Paris.")


def test_the_readme_loop_runs_and_its_compare_gate_passes(tmp_path: Path) -> None:
    section = _section()
    blocks = [_block(section, language) for language in ("jsonl", "python", "sh")]
    assert sum(1 for block in blocks for line in block.splitlines() if line.strip()) < 20
    (tmp_path / "questions.jsonl").write_text(_block(section, "jsonl"))
    (tmp_path / "agent_eval.py").write_text(_block(section, "python"))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TRACEJUDGE_", "COMPOSO_", "OTEL_", "ANTHROPIC_"))
    }
    outputs = []
    with ScriptedLLMServer(default=model_or_judge) as server:
        env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="scripted")
        for line in _block(section, "sh").splitlines():
            command = shlex.split(line, comments=True)
            assert command[0] == "tracejudge"
            done = subprocess.run(
                [sys.executable, "-m", "tracejudge", *command[1:]],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
                check=False,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            outputs.append(done.stdout)
    record = json.loads((tmp_path / "runs/pr/run.json").read_text())
    assert record["criteria"] == ["correct", "Reward a direct answer"]
    rows = [json.loads(line) for line in (tmp_path / "runs/pr/rows.jsonl").open()]
    assert [s["passed"] for s in rows[0]["scores"]] == [True, True]
    # one row is too few to tell: said, and not a failure
    assert "INCONCLUSIVE" in outputs[-1] and "only 1 row in both runs" in outputs[-1]
