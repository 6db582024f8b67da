"""`tracejudge.evaluation`'s surface, pinned: not a user's import path, but what the other
rooms of the package (the `tracejudge.checks` face, the client, the server, the
commands, the plugin, the rewards) take from it. The list is exact: a name added or
removed is a decision made here, with the importers it serves; everything else is
imported from its own module (`evaluation.service`, `.render`, `.spend`, ...)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import tracejudge

SURFACE = {
    # the deterministic checks, public as `tracejudge.checks`
    "ALL",
    "AgentCheck",
    "Budgets",
    "FinalAnswer",
    "FunctionCheck",
    "GroundedNumbers",
    "Loops",
    "RewardCheck",
    "Score",
    "ToolArguments",
    "ToolResults",
    "TraceCheck",
    "as_check",
    "budgets",
    "check",
    "final_answer",
    "final_answer_with",
    "from_reward",
    "grounded_numbers",
    "is_check",
    "loops",
    "loops_with",
    "tool_arguments",
    "tool_results",
    # the builders
    "DEFAULT_EXPLORATION",
    "EvaluationSettings",
    "build_judge",
    "build_service",
    # checking and converting what callers pass
    "Criterion",
    "TaskRegistry",
    "adapt_input",
    "adapt_result",
    "as_plain",
    "gather_all",
    "summarize_trace_response",
    "validate_criteria",
    "validate_explanation_cleaning",
    "validate_tags",
    # prices
    "PricesOption",
    "format_usd",
    "judge_model",
    "resolve_prices",
}

PACKAGE = Path(tracejudge.__file__).parent


def test_the_surface_is_exactly_the_pinned_one() -> None:
    evaluation = importlib.import_module("tracejudge.evaluation")
    assert set(evaluation.__all__) == SURFACE
    assert len(evaluation.__all__) == len(SURFACE)  # no name twice
    for name in evaluation.__all__:
        assert getattr(evaluation, name) is not None, name


def _imported_from_the_room() -> set[str]:
    """The names modules outside `evaluation/` import from `tracejudge.evaluation`."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if PACKAGE / "evaluation" in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "tracejudge.evaluation":
                names.update(alias.name for alias in node.names)
    return names


def test_every_name_serves_another_room_and_every_import_is_on_it() -> None:
    imported = _imported_from_the_room() - {"criteria", "attribution"}  # submodules
    assert imported <= SURFACE, f"imported but not on the surface: {imported - SURFACE}"
    assert imported == SURFACE, f"on the surface but no room imports: {SURFACE - imported}"
