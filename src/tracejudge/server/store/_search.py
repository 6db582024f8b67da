"""Full-text search over stored traces: what is indexed and how a query reads.

Both stores index the same words: the text is cut into runs of letters and digits
(everything else, underscores included, separates words), lower-cased by the index. A
query `q` is words, "quoted phrases" and prefixes (`weath*`); a trace matches when it holds
every one of them (a phrase as consecutive words). SQLite runs it on an FTS5 table,
PostgreSQL on a `tsvector` column with a GIN index (the `simple` configuration: no
stemming, no stop words, as FTS5's unicode61 tokenizer); neither scans the traces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SearchQuery", "SearchQueryError", "index_words"]

_WORD = re.compile(r"[^\W_]+")
_UNIT = re.compile(r'"([^"]*)"?|(\S+)')
#: A query is cut to this many words (a search box, not a document).
MAX_WORDS = 32


class SearchQueryError(ValueError):
    """A search that holds no word to look for."""


def index_words(text: str) -> str:
    """The text as the index reads it: its words, separated by single spaces."""
    return " ".join(_WORD.findall(text))


@dataclass(frozen=True)
class _Unit:
    words: tuple[str, ...]
    prefix: bool


@dataclass(frozen=True)
class SearchQuery:
    """A parsed search: each unit a word, a phrase (several words) or a prefix."""

    units: tuple[_Unit, ...]

    @classmethod
    def parse(cls, text: str) -> SearchQuery:
        units: list[_Unit] = []
        count = 0
        for match in _UNIT.finditer(text):
            phrase, bare = match.group(1), match.group(2)
            raw = phrase if phrase is not None else bare
            words = tuple(w.lower() for w in _WORD.findall(raw))[: MAX_WORDS - count]
            if not words:
                continue
            # `max_price`, `e-mail`: one token typed, several words, read as a phrase
            units.append(_Unit(words, prefix=phrase is None and raw.endswith("*")))
            count += len(words)
            if count >= MAX_WORDS:
                break
        if not units:
            raise SearchQueryError(
                f'{text!r} holds no word to search for: give words, a "quoted phrase" or a prefix*'
            )
        return cls(tuple(units))

    def fts5(self) -> str:
        """The FTS5 MATCH expression (every word quoted: no FTS5 syntax gets through)."""
        parts = []
        for unit in self.units:
            quoted = '"' + " ".join(unit.words) + '"'
            parts.append(quoted + " *" if unit.prefix else quoted)
        return " AND ".join(parts)

    def tsquery(self) -> tuple[str, list[str]]:
        """A PostgreSQL tsquery expression with its parameters (`%s` placeholders)."""
        parts = []
        for unit in self.units:
            terms = list(unit.words)
            if unit.prefix:
                terms[-1] += ":*"
            parts.append(" <-> ".join(terms))
        # Words are letters and digits only, so the query text needs no escaping.
        return "to_tsquery('simple', ?)", [" & ".join(f"({p})" for p in parts)]
