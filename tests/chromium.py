"""Headless Chromium for the tests of HTML pages (the report, the server's web pages)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"
)
#: Screenshots are copied here when the folder exists (mkdir .pytest-artifacts to look).
ARTIFACTS = Path(__file__).resolve().parent.parent / ".pytest-artifacts"


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
    """Copy a screenshot to .pytest-artifacts/ when that folder exists."""
    if ARTIFACTS.is_dir():
        shutil.copy(shot, ARTIFACTS / shot.name)
