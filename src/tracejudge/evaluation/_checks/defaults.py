"""`ALL`: the built-in checks that need no configuration, the default check list."""

from __future__ import annotations

from tracejudge.evaluation._checks.base import AgentCheck
from tracejudge.evaluation._checks.final_answer import final_answer
from tracejudge.evaluation._checks.grounded_numbers import grounded_numbers
from tracejudge.evaluation._checks.loops import loops
from tracejudge.evaluation._checks.tool_arguments import tool_arguments
from tracejudge.evaluation._checks.tool_results import tool_results

__all__ = ["ALL"]

#: The built-in checks that need no configuration (`budgets` needs limits).
ALL: tuple[AgentCheck, ...] = (tool_arguments, tool_results, loops, grounded_numbers, final_answer)
