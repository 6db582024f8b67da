"""The one error a command raises for bad usage or input."""

from __future__ import annotations

from collections.abc import Sequence


class UsageError(Exception):
    """Bad usage or input: `main` prints ``tracejudge COMMAND: <message>`` to stderr,
    then each of `details` indented below it, and exits with status 2. The message is
    one line that names the problem (and the file or option it is in)."""

    exit_code = 2

    def __init__(self, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.details = list(details)
