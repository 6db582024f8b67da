"""The plugin loads in every pytest session of an environment where tracejudge is
installed (the `pytest11` entry point): loading it must not import what scores and traces,
which only a test that asks for `assert_trace` or the `tracejudge_trace` fixture needs."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "tracejudge.models",
    "tracejudge.evaluation.service",
    "tracejudge.experiments",
    "tracejudge.tracing",
    "tracejudge.report",
    "opentelemetry.sdk",
    "pydantic",
)


def test_loading_the_plugin_imports_nothing_that_scores_or_traces() -> None:
    program = (
        "import sys, pytest, tracejudge.pytest_plugin\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == []


def test_the_lazy_names_still_resolve() -> None:
    from tracejudge.models import JudgeUsage
    from tracejudge.pytest_plugin import TraceVerdict

    verdict = TraceVerdict(min_score=0.5)
    assert verdict.usage == JudgeUsage() and verdict.ok
    assert verdict.agents.status is not None
