"""Every program in examples/ runs offline and prints what the reference SDK's would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_runs(example: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TRACEJUDGE_"))}
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Score: 1.0" in done.stdout or "Overall Score: 0.88" in done.stdout
