"""The one reader of the text files a user hands in: criteria files and rubric files.

`read_criteria_file` is what `tracejudge serve`, `score` and `attribute` read
`--criteria-file` with, and `read_text_file` what `rubric` reads `--rubric-file` with, so
a file is read by the same rules everywhere: UTF-8 (a byte-order mark is allowed), one
criterion per line, blank lines and lines starting with # skipped, each criterion checked
as a criterion sent to the API is. Every problem is one `ConfigurationError` line naming
the option, the file (and the line) and the fix; never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from tracejudge.errors import BadRequestError, ConfigurationError
from tracejudge.models import validate_criterion_text

__all__ = ["read_criteria_file", "read_text_file"]


def read_text_file(path: str | os.PathLike[str], option: str) -> str:
    """The text of the file `option` (say "--rubric-file") names, read as UTF-8.

    Raises `ConfigurationError`, one line naming `option` and the file: when it cannot be
    read (missing, a directory, no permission), or is not UTF-8 text (with where the first
    bad byte is and how to convert the file).
    """
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except IsADirectoryError:
        raise ConfigurationError(f"{option} {name} is a directory; give a text file") from None
    except OSError as error:
        raise ConfigurationError(
            f"{option} {name} cannot be read ({error.strerror or error}); give a UTF-8 text file"
        ) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ConfigurationError(
            f"{option} {name} is not UTF-8 text (byte 0x{data[error.start]:02x} on line "
            f"{line}); save it as UTF-8, e.g. iconv -f latin1 -t utf-8 {name} > fixed.txt"
        ) from None


def read_criteria_file(path: str | os.PathLike[str], option: str = "--criteria-file") -> list[str]:
    """The criteria of a text file: one per line; blank lines and lines starting with # are
    skipped. Raises `ConfigurationError`, one line naming `option`, the file and (for a bad
    criterion) its line: the file cannot be read or is not UTF-8 (see `read_text_file`), a
    line is not a valid criterion, or the file holds none."""
    name = os.fspath(path)
    found: list[str] = []
    for number, line in enumerate(read_text_file(name, option).splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            validate_criterion_text(text, "criterion")
        except BadRequestError as error:
            raise ConfigurationError(f"{option} {name}, line {number}: {error.message}") from None
        found.append(text)
    if not found:
        raise ConfigurationError(
            f"{option} {name} holds no criterion; write one per line (# starts a comment)"
        )
    return found
