"""Scripted judge-model replies shared by the judge tests."""

from __future__ import annotations

import contextlib
import gc
import json
import warnings
from collections.abc import Iterator
from typing import Any

from tracejudge.testing import Reply


def reply(**fields: Any) -> Reply:
    """A judge model answering exactly this JSON object."""
    return Reply.text(json.dumps(fields))


def graded(score: int, explanation: str = "Looks right.", **extra: Any) -> Reply:
    return reply(explanation=explanation, applicable=True, score=score, **extra)


def binary(passed: bool, explanation: str = "Checked.", **extra: Any) -> Reply:
    return reply(explanation=explanation, applicable=True, passed=passed, **extra)


@contextlib.contextmanager
def no_resource_warnings() -> Iterator[None]:
    """Fail when the block leaves an unclosed socket or transport behind.

    Garbage from before the block is collected first; what the block dropped is collected
    inside it, so each ResourceWarning is recorded here rather than in a later test.
    """
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, leaks
