"""Headless Chromium for the tests of HTML pages (the report, the server's web pages)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"
)
#: Every screenshot a test takes is kept here (TRACEJUDGE_TEST_ARTIFACTS moves it).
ARTIFACTS = Path(
    os.environ.get("TRACEJUDGE_TEST_ARTIFACTS")
    or Path(__file__).resolve().parent.parent / ".pytest-artifacts"
)


def chromium(url: str, profile: Path, *extra: str) -> tuple[str, str]:
    """(stdout, console messages) of headless Chromium loading `url`."""
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={profile}",
            "--window-size=1200,1600",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    console = "\n".join(line for line in done.stderr.splitlines() if ":CONSOLE" in line)
    return done.stdout, console


def keep(shot: Path) -> None:
    """Copy a screenshot to the test artifacts folder (.pytest-artifacts/ by default)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, ARTIFACTS / shot.name)
