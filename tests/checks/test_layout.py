"""Where the checks live: one public path, `tracejudge.checks`, over the private package
`tracejudge.evaluation._checks` (issue #7)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import tracejudge.evaluation as evaluation
from tracejudge import checks


def test_the_old_second_public_path_is_gone() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tracejudge.evaluation.checks")
    assert "checks" not in evaluation.__all__


def test_the_public_face_offers_the_evaluation_rooms_objects() -> None:
    for name in checks.__all__:
        assert getattr(checks, name) is getattr(evaluation, name), name
    assert checks.ALL == (
        checks.tool_arguments,
        checks.tool_results,
        checks.loops,
        checks.grounded_numbers,
        checks.final_answer,
    )


def test_the_check_protocol_loads_without_the_built_in_checks() -> None:
    # The evaluator and the client need TraceCheck on import; the checks' regexes and
    # helpers load only when a check is used.
    code = (
        "import sys, tracejudge.evaluation as e; e.TraceCheck; "
        "print(*sorted(m for m in sys.modules if m.startswith('tracejudge.evaluation._checks')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == [
        "tracejudge.evaluation._checks",
        "tracejudge.evaluation._checks.base",
    ]
