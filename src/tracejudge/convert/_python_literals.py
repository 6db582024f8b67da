"""A value written as a Python literal (the `repr` of a dict or a list), read as its JSON.

Some producers write a request or a response into an attribute with `str(value)`, not
`json.dumps(value)`: single quotes, `None`, `True`, `False` (LiteLLM's raw request span,
`raw_gen_ai_request`, writes the provider's `messages`, `choices` and `usage` so). The
phases that find a call's content by its shape read such a value as the JSON it would have
been. Only literals are read (`ast.literal_eval`: no name is looked up, no code runs), and
only a value that opens a dict or a list of dicts with a quoted key, at most
`LITERAL_CAP` characters.
"""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["LITERAL_CAP", "python_literal"]

#: How a dict, or a list of dicts, written by `repr` opens.
_OPENINGS = ("{'", "[{'")


#: The longest value read as a literal: parsing one takes about a hundred times what JSON
#: takes, and its syntax tree far more memory (200 KB: up to a second and 170 MB).
LITERAL_CAP = 65_536


def python_literal(raw: str) -> Any:
    """The dict or list `raw` writes as a Python literal, or None when it is no such text
    (or longer than `LITERAL_CAP`)."""
    if len(raw) > LITERAL_CAP or not raw.startswith(_OPENINGS) or raw[-1:] not in ("}", "]"):
        return None
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None
