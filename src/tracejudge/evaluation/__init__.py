"""Evaluation: criteria, rendering for the judge, the evaluator, deterministic checks, and
the one evaluation service.

Not a public import path for users (those are `tracejudge`, `.checks`, `.criteria`,
`.client`, `.rewards`, ...): this package's `__all__` is what the other rooms of the
package take from it, pinned by `tests/test_public_surface_evaluation.py`, so a name
added here is a decision, not an accident:

- the deterministic checks (`TraceCheck`, the built-in checks, `ALL`, `@check`,
  `from_reward`, ...): private in `_checks`, public as `tracejudge.checks`;
- the builders: `EvaluationSettings`, `build_judge`, `build_service` (`settings`), and
  `DEFAULT_EXPLORATION`;
- what the client, the server and the commands check and convert with: `Criterion`,
  `validate_criteria`, `validate_tags`, `validate_explanation_cleaning`, `adapt_input`,
  `adapt_result`, `as_plain`, `gather_all`, `TaskRegistry`, `summarize_trace_response`;
- prices: `PricesOption`, `resolve_prices`, `judge_model`, `format_usd`.

Everything else is imported from its own module: the service and its requests
(`evaluation.service`), the evaluator (`evaluation.evaluator`), rendering
(`evaluation.render`), spend (`evaluation.spend`), criteria files
(`evaluation.criteria_file`), attribution (`evaluation.attribution`), the ready-made
criteria (`evaluation.criteria`).

Names are imported on first use, so importing a submodule (a check, the
criteria) does not load the judges.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # The checks (`tracejudge.checks` is their public face).
    "TraceCheck": "tracejudge.evaluation._checks.base",
    "AgentCheck": "tracejudge.evaluation._checks.base",
    "FunctionCheck": "tracejudge.evaluation._checks.base",
    "Score": "tracejudge.evaluation._checks.base",
    "check": "tracejudge.evaluation._checks.base",
    "is_check": "tracejudge.evaluation._checks.base",
    "RewardCheck": "tracejudge.evaluation._checks.reward",
    "from_reward": "tracejudge.evaluation._checks.reward",
    "as_check": "tracejudge.evaluation._checks.reward",
    "ToolArguments": "tracejudge.evaluation._checks.tool_arguments",
    "tool_arguments": "tracejudge.evaluation._checks.tool_arguments",
    "ToolResults": "tracejudge.evaluation._checks.tool_results",
    "tool_results": "tracejudge.evaluation._checks.tool_results",
    "Loops": "tracejudge.evaluation._checks.loops",
    "loops": "tracejudge.evaluation._checks.loops",
    "loops_with": "tracejudge.evaluation._checks.loops",
    "GroundedNumbers": "tracejudge.evaluation._checks.grounded_numbers",
    "grounded_numbers": "tracejudge.evaluation._checks.grounded_numbers",
    "FinalAnswer": "tracejudge.evaluation._checks.final_answer",
    "final_answer": "tracejudge.evaluation._checks.final_answer",
    "final_answer_with": "tracejudge.evaluation._checks.final_answer",
    "Budgets": "tracejudge.evaluation._checks.budgets",
    "budgets": "tracejudge.evaluation._checks.budgets",
    "ALL": "tracejudge.evaluation._checks.defaults",
    # The rest of the room.
    "Criterion": "tracejudge.evaluation._validate",
    "validate_criteria": "tracejudge.evaluation._validate",
    "validate_tags": "tracejudge.evaluation._validate",
    "validate_explanation_cleaning": "tracejudge.evaluation._validate",
    "adapt_result": "tracejudge.evaluation._adapt",
    "as_plain": "tracejudge.evaluation._adapt",
    "adapt_input": "tracejudge.evaluation._adapt",
    "TaskRegistry": "tracejudge.evaluation._tasks",
    "DEFAULT_EXPLORATION": "tracejudge.evaluation.evaluator",
    "summarize_trace_response": "tracejudge.evaluation.evaluator",
    "gather_all": "tracejudge.evaluation.evaluator",
    "EvaluationSettings": "tracejudge.evaluation.settings",
    "build_judge": "tracejudge.evaluation.settings",
    "build_service": "tracejudge.evaluation.settings",
    "PricesOption": "tracejudge.evaluation.spend",
    "format_usd": "tracejudge.evaluation.spend",
    "judge_model": "tracejudge.evaluation.spend",
    "resolve_prices": "tracejudge.evaluation.spend",
}

__all__ = [
    "ALL",
    "DEFAULT_EXPLORATION",
    "AgentCheck",
    "Budgets",
    "Criterion",
    "EvaluationSettings",
    "FinalAnswer",
    "FunctionCheck",
    "GroundedNumbers",
    "Loops",
    "PricesOption",
    "RewardCheck",
    "Score",
    "TaskRegistry",
    "ToolArguments",
    "ToolResults",
    "TraceCheck",
    "adapt_input",
    "adapt_result",
    "as_check",
    "as_plain",
    "budgets",
    "build_judge",
    "build_service",
    "check",
    "final_answer",
    "final_answer_with",
    "format_usd",
    "from_reward",
    "gather_all",
    "grounded_numbers",
    "is_check",
    "judge_model",
    "loops",
    "loops_with",
    "resolve_prices",
    "summarize_trace_response",
    "tool_arguments",
    "tool_results",
    "validate_criteria",
    "validate_explanation_cleaning",
    "validate_tags",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tracejudge.evaluation' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*__all__, *globals()})


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from tracejudge.evaluation._adapt import adapt_input, adapt_result, as_plain
    from tracejudge.evaluation._checks.base import (
        AgentCheck,
        FunctionCheck,
        Score,
        TraceCheck,
        check,
        is_check,
    )
    from tracejudge.evaluation._checks.budgets import Budgets, budgets
    from tracejudge.evaluation._checks.defaults import ALL
    from tracejudge.evaluation._checks.final_answer import (
        FinalAnswer,
        final_answer,
        final_answer_with,
    )
    from tracejudge.evaluation._checks.grounded_numbers import GroundedNumbers, grounded_numbers
    from tracejudge.evaluation._checks.loops import Loops, loops, loops_with
    from tracejudge.evaluation._checks.reward import RewardCheck, as_check, from_reward
    from tracejudge.evaluation._checks.tool_arguments import ToolArguments, tool_arguments
    from tracejudge.evaluation._checks.tool_results import ToolResults, tool_results
    from tracejudge.evaluation._tasks import TaskRegistry
    from tracejudge.evaluation._validate import (
        Criterion,
        validate_criteria,
        validate_explanation_cleaning,
        validate_tags,
    )
    from tracejudge.evaluation.evaluator import (
        DEFAULT_EXPLORATION,
        gather_all,
        summarize_trace_response,
    )
    from tracejudge.evaluation.settings import EvaluationSettings, build_judge, build_service
    from tracejudge.evaluation.spend import PricesOption, format_usd, judge_model, resolve_prices
