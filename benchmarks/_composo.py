"""The published `composo` SDK (PyPI), in a virtualenv of its own under a cache folder.

It pins other versions than tracejudge's, so the benchmarks that compare against it run
it in that virtualenv's interpreter. The virtualenv is built on first use (about a
minute, from PyPI) and reused: `$XDG_CACHE_HOME/tracejudge-bench/composo-<version>`
(default `~/.cache/...`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

COMPOSO_VERSION = "0.4.0"


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "tracejudge-bench" / f"composo-{COMPOSO_VERSION}"


def composo_python() -> tuple[Path | None, str]:
    """(the virtualenv's interpreter, "") or (None, why it could not be built)."""
    venv = cache_folder()
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python, ""
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", f"composo=={COMPOSO_VERSION}"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.SubprocessError) as error:
        shutil.rmtree(venv, ignore_errors=True)
        return None, f"could not create its virtualenv: {error}"
    if install.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        tail = install.stderr.strip().splitlines()[-1:] or ["(no output)"]
        return None, f"pip install composo=={COMPOSO_VERSION} failed: {tail[0]}"
    (venv / ".complete").write_text("ok")
    return python, ""


def clean_env() -> dict[str, str]:
    """The environment for the composo interpreter: no tracejudge on the path, no keys."""
    return {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONPATH"
        and not k.startswith(("TRACEJUDGE_", "OPENAI_", "COMPOSO_", "OTEL_", "TRACELOOP_"))
    }
