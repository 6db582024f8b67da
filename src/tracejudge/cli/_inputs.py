"""Reading traces from the files `tracejudge score` is given."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tracejudge.cli._errors import UsageError
from tracejudge.models import MultiAgentTrace

# Bytes read to tell a MultiAgentTrace document from OTLP (its first key comes early).
_HEAD = 64 * 1024


def load_traces(path: str | os.PathLike[str]) -> list[MultiAgentTrace]:
    """Traces from a file: a MultiAgentTrace JSON document (or a list of them), or OTLP
    (protobuf, or OTLP/JSON lines), told apart by content; or from the OTLP files of a
    directory.

    Raises `UsageError` naming the file when it cannot be read or holds a
    MultiAgentTrace that does not validate. OTLP that cannot be read gives traces
    without LLM interactions and `warnings` saying why (see `tracejudge.convert`). OTLP
    is read as a stream: a large file costs what its spans cost, not its size.
    """
    source = Path(path)
    try:
        if source.is_dir():
            return _otlp(source)
        with source.open("rb") as handle:
            head = handle.read(_HEAD)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
    if head.lstrip().startswith((b"{", b"[")) and b"agent_instance_by_id" in head:
        try:
            document = json.loads(source.read_bytes())
        except OSError as error:
            raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
        except ValueError:
            document = None  # JSON lines: several OTLP requests
        items = document if isinstance(document, list) else [document]
        if items and all(isinstance(i, dict) and "agent_instance_by_id" in i for i in items):
            return [_trace(item, path, index, len(items)) for index, item in enumerate(items)]
    return _otlp(source)


def _otlp(source: Path) -> list[MultiAgentTrace]:
    from tracejudge.convert import traces_from_otlp

    try:
        return traces_from_otlp(source)
    except OSError as error:
        raise UsageError(f"cannot read {source}: {error.strerror or error}") from None
    except ValueError as error:
        raise UsageError(f"cannot read {source}: {error}") from None


def _trace(item: Any, path: str | os.PathLike[str], index: int, count: int) -> MultiAgentTrace:
    try:
        return MultiAgentTrace.model_validate(item)
    except ValidationError as error:
        where = f"{path}" if count == 1 else f"{path}, trace {index + 1} of {count}"
        problem = _first_problem(error)
        raise UsageError(f"{where} is not a valid MultiAgentTrace: {problem}") from None


def _first_problem(error: ValidationError) -> str:
    """The first validation problem on one line: ``field.path: message (and N more)``."""
    problems = error.errors(include_url=False)
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "document"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {first['msg']}{more}"
