"""Headless Chromium for the tests of HTML pages (the report, the server's web pages)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def needs_chromium(test: Callable[..., Any]) -> Callable[..., Any]:
    """A test of a page in headless Chromium: skipped, saying why, without it; `heavy`
    (tests/speed.py), since loading, clicking and drawing a page takes seconds."""
    test = pytest.mark.heavy("a page in headless Chromium")(test)
    return pytest.mark.skipif(
        CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"
    )(test)


#: Every screenshot a test takes is kept here (TRACEJUDGE_TEST_ARTIFACTS moves it).
ARTIFACTS = Path(
    os.environ.get("TRACEJUDGE_TEST_ARTIFACTS")
    or Path(__file__).resolve().parent.parent / ".pytest-artifacts"
)


def chromium(url: str, profile: Path, *extra: str) -> tuple[str, str]:
    """(the page's DOM, its console messages) once `url` has loaded in headless Chromium,
    1200 x 1600 px, as `chromium --dump-dom` gives them; `--screenshot=PATH` in `extra`
    also saves the viewport as a PNG there. A tab of the process's one Chromium
    (tests/cdp.py), in a context of its own: as fresh as a new profile."""
    from tests.cdp import Browser

    unknown = [e for e in extra if e != "--dump-dom" and not e.startswith("--screenshot=")]
    assert not unknown, f"chromium(): only --dump-dom and --screenshot=PATH, not {unknown}"
    with Browser(profile, width=1200, height=1600) as tab:
        tab.load(url)
        dom = str(tab.evaluate("document.documentElement.outerHTML"))
        for option in extra:
            if option.startswith("--screenshot="):
                tab.screenshot(Path(option.removeprefix("--screenshot=")))
        return dom, "\n".join(tab.console)


def keep(shot: Path) -> None:
    """Copy a screenshot to the test artifacts folder (.pytest-artifacts/ by default)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, ARTIFACTS / shot.name)
