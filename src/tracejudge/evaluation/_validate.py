"""Checking what callers pass to an evaluation: criteria, tags, explanation cleaning.

Every check raises `BadRequestError` with a message that names the offending
item and says how to fix it, so the client and the server report the same
mistakes in the same words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tracejudge.errors import BadRequestError
from tracejudge.evaluation._checks.base import TraceCheck

__all__ = [
    "MAX_CRITERION_LENGTH",
    "MAX_TAG_LENGTH",
    "Criterion",
    "validate_criteria",
    "validate_tags",
    "validate_explanation_cleaning",
]

#: The longest criterion accepted, in characters (the Composo API's limit).
MAX_CRITERION_LENGTH = 4096
#: The longest tag key or value accepted, in characters.
MAX_TAG_LENGTH = 64

#: One criterion: natural-language text for a judge, or a deterministic check.
Criterion = str | TraceCheck


def _describe(criterion: str) -> str:
    return criterion if len(criterion) <= 60 else criterion[:57] + "..."


def validate_criteria(
    criteria: str | TraceCheck | Sequence[str | TraceCheck] | None,
) -> tuple[list[Criterion], bool]:
    """The criteria as a list, and whether the caller passed a list (so the answer is one).

    Text criteria must be non-empty and at most `MAX_CRITERION_LENGTH` characters.
    Their kind is read from the first words ("Reward", "Penalize", "Passes if",
    "Fails if"); text with none of these prefixes is accepted and judged as a
    Reward criterion.
    """
    if criteria is None:
        raise BadRequestError(
            "criteria is required: pass a criterion such as "
            '"Reward accurate and helpful responses", a list of them, or a check'
        )
    # Any collection of criteria counts as a list (a tuple, a generator); a check object
    # is one criterion even if it happens to be iterable.
    as_list = isinstance(criteria, Iterable) and not isinstance(
        criteria, (str, bytes, Mapping, TraceCheck)
    )
    items: list[Any] = list(criteria) if as_list else [criteria]  # type: ignore[call-overload]
    if not items:
        raise BadRequestError(
            "criteria is an empty list: give at least one criterion, for example "
            '["Reward accurate and helpful responses"]'
        )
    checked: list[Criterion] = []
    for index, item in enumerate(items):
        where = f"criteria[{index}]" if as_list else "criteria"
        if isinstance(item, str):
            if not item.strip():
                raise BadRequestError(
                    f"{where} is empty: write what to judge, for example "
                    '"Reward responses that answer the question"'
                )
            if len(item) > MAX_CRITERION_LENGTH:
                raise BadRequestError(
                    f"{where} ({_describe(item)!r}) is {len(item)} characters long; the limit "
                    f"is {MAX_CRITERION_LENGTH}: shorten it or split it into several criteria"
                )
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


def validate_tags(tags: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The tags with every value as a string, or None when there are none.

    Keys must be strings of at most 64 characters; values strings, numbers or
    booleans (converted to strings) of at most 64 characters; nothing nested.
    """
    if tags is None:
        return None
    if not isinstance(tags, Mapping):
        raise BadRequestError(
            f"tags must be a dict of str keys to str/int/float/bool values, got "
            f"{type(tags).__name__}"
        )
    result: dict[str, str] = {}
    for key, value in tags.items():
        if not isinstance(key, str):
            raise BadRequestError(
                f"tag key {key!r} is a {type(key).__name__}; tag keys must be strings"
            )
        if len(key) > MAX_TAG_LENGTH:
            raise BadRequestError(
                f"tag key {key[:20]!r}... is {len(key)} characters long; tag keys may have at "
                f"most {MAX_TAG_LENGTH}"
            )
        if isinstance(value, (dict, list, tuple, set, frozenset)) or isinstance(value, Mapping):
            raise BadRequestError(
                f"tag {key!r} has a nested {type(value).__name__} value; tag values must be a "
                "string, number or bool (flatten it into separate tags)"
            )
        if isinstance(value, bool):
            text = str(value)
        elif isinstance(value, (str, int, float)):
            text = str(value)
        else:
            raise BadRequestError(
                f"tag {key!r} has a {type(value).__name__} value; tag values must be a string, "
                "number or bool"
            )
        if len(text) > MAX_TAG_LENGTH:
            raise BadRequestError(
                f"tag {key!r} has a value {len(text)} characters long; tag values may have at "
                f"most {MAX_TAG_LENGTH}"
            )
        result[key] = text
    return result


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
