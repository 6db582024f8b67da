"""Deterministic trace checks: `from tracejudge.checks import tool_arguments` (or
`from tracejudge import checks`). They live in `tracejudge.evaluation.checks`."""

from tracejudge.evaluation.checks import *  # noqa: F403
from tracejudge.evaluation.checks import __all__  # noqa: F401
