"""The labels file: JSON lines of `tracejudge.models.HumanLabel`, written by hand or
exported. Blank lines and lines starting with `#` are skipped; a bad line raises
`BadRequestError` naming the file, the line, the field and the fix."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from tracejudge.errors import BadRequestError
from tracejudge.models import HumanLabel

__all__ = ["read_labels", "write_labels"]

_EXAMPLE = (
    '{"trace_id": "...", "agent": "writer", "criterion": "Reward ...", "verdict": "pass", '
    '"who": "ana"}'
)


def _problem(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    field = ".".join(str(p) for p in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    if field == "verdict":
        message = f'must be "pass" or "fail" (or give "score" in 0..1), got {first.get("input")!r}'
    return f"field '{field}': {message}" if field else message


def read_labels(path: str | os.PathLike[str]) -> list[HumanLabel]:
    """The labels of a labels file, in order."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise BadRequestError(f"cannot read the labels file {file}: {error}") from None
    labels: list[HumanLabel] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{file}, line {number}"
        try:
            value = json.loads(line)
        except ValueError as error:
            raise BadRequestError(
                f"{where}: not a JSON object ({error}); write e.g. {_EXAMPLE}"
            ) from None
        if not isinstance(value, dict):
            raise BadRequestError(f"{where}: not a JSON object; write e.g. {_EXAMPLE}")
        try:
            labels.append(HumanLabel.model_validate(value))
        except ValidationError as error:
            raise BadRequestError(f"{where}: {_problem(error)}") from None
    if not labels:
        raise BadRequestError(f"{file} holds no label (one JSON object per line, e.g. {_EXAMPLE})")
    return labels


def write_labels(path: str | Path, labels: Iterable[HumanLabel]) -> None:
    """Write `labels` as a labels file (one JSON object per line)."""
    with open(path, "w", encoding="utf-8") as out:
        for label in labels:
            out.write(label.model_dump_json() + "\n")
