"""Checking what callers pass to an evaluation: criteria, tags, explanation cleaning.

Every check raises `BadRequestError` with a message that names the offending
item and says how to fix it, so the client and the server report the same
mistakes in the same words. The limits and the tag and criterion-text rules are
the wire model's (`tracejudge.models`), re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from tracejudge.errors import BadRequestError
from tracejudge.evaluation._checks.base import TraceCheck
from tracejudge.models import (
    MAX_CRITERION_LENGTH,
    MAX_TAG_LENGTH,
    validate_criterion_text,
    validate_tags,
)

__all__ = [
    "MAX_CRITERION_LENGTH",
    "MAX_TAG_LENGTH",
    "CheckedCriteria",
    "Criterion",
    "validate_criteria",
    "validate_tags",
    "validate_explanation_cleaning",
]

#: One criterion: natural-language text for a judge, or a deterministic check.
Criterion = str | TraceCheck


class CheckedCriteria(list[Criterion]):
    """Criteria `validate_criteria` has checked, so that a call checks them once: given
    again (the client's engine hands them to the service, `score` to each trace's
    request), they are taken as they are. `as_list`: whether the caller passed a list."""

    def __init__(self, criteria: Iterable[Criterion] = (), *, as_list: bool = True) -> None:
        super().__init__(criteria)
        self.as_list = as_list

    def where(self, keep: Callable[[Criterion], bool]) -> CheckedCriteria:
        """Those of these criteria that `keep` keeps (still checked)."""
        return CheckedCriteria((c for c in self if keep(c)), as_list=self.as_list)


def validate_criteria(
    criteria: str | TraceCheck | Sequence[str | TraceCheck] | None,
) -> tuple[CheckedCriteria, bool]:
    """The criteria as a list, and whether the caller passed a list (so the answer is one);
    criteria already checked (`CheckedCriteria`) are returned as they are.

    Text criteria must be non-empty and at most `MAX_CRITERION_LENGTH` characters.
    Their kind is read from the first words ("Reward", "Penalize", "Passes if",
    "Fails if"); text with none of these prefixes is accepted and judged as a
    Reward criterion.
    """
    if isinstance(criteria, CheckedCriteria):
        return criteria, criteria.as_list
    if criteria is None:
        raise BadRequestError(
            "criteria is required: pass a criterion such as "
            '"Reward accurate and helpful responses", a list of them, or a check'
        )
    # Any collection of criteria counts as a list (a tuple, a generator); a check object
    # is one criterion even if it happens to be iterable. A plain list or tuple is
    # answered first: the TraceCheck test (a runtime Protocol) is slow, and this runs
    # once per judged item.
    as_list = type(criteria) in (list, tuple) or (
        isinstance(criteria, Iterable)
        and not isinstance(criteria, (str, bytes, Mapping, TraceCheck))
    )
    # (`as_list`: an iterable, though no check object, which mypy cannot narrow to)
    items: list[Any] = list(cast("Iterable[Any]", criteria)) if as_list else [criteria]
    if not items:
        raise BadRequestError(
            "criteria is an empty list: give at least one criterion, for example "
            '["Reward accurate and helpful responses"]'
        )
    checked = CheckedCriteria(as_list=as_list)
    for index, item in enumerate(items):
        where = f"criteria[{index}]" if as_list else "criteria"
        if isinstance(item, str):
            validate_criterion_text(item, where)
            checked.append(item)
        elif isinstance(item, TraceCheck):
            checked.append(item)
        else:
            raise BadRequestError(
                f"{where} is a {type(item).__name__}; a criterion must be a string "
                '("Reward ...", "Penalize ...", "Passes if ...", "Fails if ...") or a '
                "check object with a `name` and an `evaluate(trace)` method"
            )
    return checked, as_list


def validate_explanation_cleaning(value: str | None) -> bool:
    """True when `cleaned_explanation` is wanted ("end_user"), False for None."""
    if value is None:
        return False
    if value == "end_user":
        return True
    raise BadRequestError(
        f'explanation_cleaning={value!r} is not supported: use "end_user" to get a '
        "cleaned_explanation, or leave it as None"
    )
