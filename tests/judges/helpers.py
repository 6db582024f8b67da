"""Scripted judge-model replies shared by the judge tests."""

from __future__ import annotations

import json
from typing import Any

from tracejudge.testing import Reply


def reply(**fields: Any) -> Reply:
    """A judge model answering exactly this JSON object."""
    return Reply.text(json.dumps(fields))


def graded(score: int, explanation: str = "Looks right.", **extra: Any) -> Reply:
    return reply(explanation=explanation, applicable=True, score=score, **extra)


def binary(passed: bool, explanation: str = "Checked.", **extra: Any) -> Reply:
    return reply(explanation=explanation, applicable=True, passed=passed, **extra)
