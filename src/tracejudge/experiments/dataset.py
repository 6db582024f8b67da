"""A dataset: the rows an experiment runs the task on.

A row is an `input` (what the task is called with), optionally the `expected` output
(`expected_output` is read as well) and `metadata`, and an `id` (default: its position,
from 0). Rows come from a JSON lines file (`.jsonl`), a CSV file (`.csv`: the columns
`input`, `expected`, `id`, the others are metadata), or a list of dicts.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracejudge.errors import BadRequestError

__all__ = ["DatasetLike", "Row", "read_dataset"]

#: What `experiment(dataset=...)` takes.
DatasetLike = str | Path | Iterable[Mapping[str, Any]]

_EXPECTED = ("expected", "expected_output")


@dataclass(frozen=True)
class Row:
    """One row of a dataset."""

    id: str
    input: Any
    expected: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)


def read_dataset(dataset: DatasetLike) -> list[Row]:
    """The rows of `dataset` (a path to a .jsonl or .csv file, or dicts). Raises
    `BadRequestError` naming the row and the problem: a row without `input`, two rows
    with one id, a file that cannot be read."""
    if isinstance(dataset, (str, Path)):
        path = Path(dataset)
        where = str(path)
        documents = _read_file(path)
    else:
        where = "the dataset"
        documents = list(dataset)
    rows: list[Row] = []
    seen: set[str] = set()
    for position, document in enumerate(documents):
        row = _row(document, position, where)
        if row.id in seen:
            raise BadRequestError(f"{where}, row {position}: the id {row.id!r} is used twice")
        seen.add(row.id)
        rows.append(row)
    if not rows:
        raise BadRequestError(f"{where} holds no rows")
    return rows


def _read_file(path: Path) -> list[Mapping[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise BadRequestError(
            f"cannot read the dataset {path}: {error.strerror or error}"
        ) from None
    if path.suffix.lower() == ".csv":
        return list(csv.DictReader(text.splitlines()))
    documents: list[Mapping[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            documents.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise BadRequestError(
                f"{path}, line {number}: not JSON ({error.msg}); a dataset is one JSON object "
                "per line, or a .csv file"
            ) from None
    return documents


def _row(document: Any, position: int, where: str) -> Row:
    if not isinstance(document, Mapping):
        raise BadRequestError(
            f"{where}, row {position}: a row is an object with an 'input', got "
            f"{type(document).__name__}"
        )
    if "input" not in document:
        raise BadRequestError(
            f"{where}, row {position}: no 'input' field (the value the task is called with); "
            f"it has {sorted(document)}"
        )
    expected = next((document[k] for k in _EXPECTED if k in document), None)
    metadata = dict(document.get("metadata") or {})
    known = {"id", "input", "metadata", *_EXPECTED}
    metadata.update({k: v for k, v in document.items() if k not in known})
    row_id = document.get("id")
    return Row(
        id=str(position if row_id is None or row_id == "" else row_id),
        input=document["input"],
        expected=expected,
        metadata=metadata,
    )
