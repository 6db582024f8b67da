"""Every program in examples/ runs offline (ScriptedLLMServer on loopback) and prints scores.

Each runs in its own process with the developer's model variables removed, under a time
bound. An example whose framework is not installed (its `# requires: <module>` line)
prints how to install it and exits 0; its run is skipped here, and that exit is checked
once with the framework hidden.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
_REQUIRES = re.compile(r"^# requires: (\S+)$", re.M)


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TRACEJUDGE_", "ANTHROPIC_", "COMPOSO_", "OTEL_"))
    }
    src = str(ROOT / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


def _requires(example: Path) -> str | None:
    found = _REQUIRES.search(example.read_text())
    return found.group(1) if found else None


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_runs(example: Path) -> None:
    module = _requires(example)
    if module is not None and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (the example prints how to install it)")
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert done.returncode == 0, done.stderr
    scores = re.findall(r"Score: (\d\.\d+|None)", done.stdout)
    assert scores, done.stdout
    assert any(s != "None" and float(s) > 0.5 for s in scores), done.stdout


def test_a_framework_example_without_its_framework_says_how_to_install_it(tmp_path) -> None:
    # A module of the framework's name that cannot be found: a sitecustomize hides it.
    (tmp_path / "sitecustomize.py").write_text(
        "import importlib.util\n"
        "_find = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'langgraph' else _find(n, *a)\n"
    )
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "framework_langgraph.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "pip install langgraph" in done.stdout
    assert "Score" not in done.stdout
