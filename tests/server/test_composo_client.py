"""The published `composo` client (PyPI 0.4.0), unchanged, against a live tracejudge server.

It pins other versions than tracejudge's, so it gets its own virtualenv, built once and
cached in the temporary folder under its version. Skipped (saying why) only when PyPI
cannot be reached to build it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.server.harness import API_KEY, InProcessServer, server_env
from tests.server.test_evals import SCORE, TRACE
from tracejudge.testing import ScriptedLLMServer

COMPOSO_VERSION = "0.4.0"
SCRIPT = Path(__file__).with_name("composo_script.py")


def _composo_python() -> Path:
    """The interpreter of a virtualenv with composo==COMPOSO_VERSION, built on first use."""
    venv = Path(tempfile.gettempdir()) / f"tracejudge-composo-{COMPOSO_VERSION}"
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", f"composo=={COMPOSO_VERSION}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if install.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        pytest.skip(
            f"could not install composo=={COMPOSO_VERSION} from PyPI (unreachable?): "
            f"{install.stderr.strip()[-300:]}"
        )
    (venv / ".complete").write_text("ok")
    return python


@pytest.fixture(scope="session")
def composo_python() -> Path:
    """Built (the first time on a machine) before the test's call: pip's time is not the
    test's."""
    return _composo_python()


@pytest.mark.heavy("the published client runs in an interpreter of its own")
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_published_composo_client_works_unchanged(
    server: InProcessServer, judge_model: ScriptedLLMServer, composo_python: Path
) -> None:
    python = composo_python
    env = {k: v for k, v in server_env().items() if k != "PYTHONPATH"}
    env.update(SERVER_URL=server.url, SERVER_KEY=API_KEY)
    run = subprocess.run(
        [str(python), str(SCRIPT), json.dumps(TRACE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tempfile.gettempdir(),  # not this checkout: composo must not see tracejudge
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["one"]["score"] == pytest.approx(SCORE) and out["one"]["explanation"]
    assert [r["score"] for r in out["several"]] == [pytest.approx(SCORE), pytest.approx(SCORE)]
    assert out["tools"]["score"] == pytest.approx(SCORE)
    assert set(out["trace"]["results_by_agent_name"]) == {"orchestrator", "writer"}
    assert out["background"]["status"] == "done"
    assert out["background"]["result"]["score"] == pytest.approx(SCORE)
    assert out["trace_background"]["status"] == "done"
    assert out["async"]["score"] == pytest.approx(SCORE)
    prompts = [r.json["messages"][-1]["content"] for r in judge_model.requests]
    # the tool call from `result` reached the judge
    assert any("get_weather" in p and "Paris" in p for p in prompts)
    assert not os.environ.get("COMPOSO_API_KEY")
