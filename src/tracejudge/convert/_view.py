"""One span as the conventions read it: its record, and what is worked out from its
attributes once (the nested form of its flattened keys).

The tree walk makes one `SpanView` per span and hands it to the conventions table
(`conventions`), whose answers are all the walk reads. A convention asks several questions
of the same attributes (`has_indexed`, then `tree` for each prefix); the view indexes the
flattened keys in one pass the first time one is asked, and keeps the result for the
span's other questions. Nothing about a span outlives its view.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert._memo import ConversionMemo
from tracejudge.convert._records import EventRecord, SpanRecord

__all__ = ["FLATTENED_PREFIXES", "SpanView"]

#: The prefixes of indexed (flattened) attributes the conventions read, e.g.
#: `llm.input_messages.0.message.role`. One pass over a span's keys sorts them out for all of
#: these at once.
FLATTENED_PREFIXES = (
    semconv.GEN_AI_PROMPT,
    semconv.GEN_AI_COMPLETION,
    semconv.LLM_REQUEST_FUNCTIONS,
    semconv.LLM_INPUT_MESSAGES,
    semconv.LLM_OUTPUT_MESSAGES,
    semconv.LLM_TOOLS,
    "llm.prompts",
    "llm.choices",
)
_STARTS = tuple(prefix + "." for prefix in FLATTENED_PREFIXES)
_KNOWN_STARTS = frozenset(_STARTS)
_MISSING: Any = object()


class SpanView:
    """A span's record, with its flattened keys indexed on first use.

    It answers what the conventions read of a span (`attributes`, `events`, `name`,
    `span_id`, `scope`, and the rest through `record`), so the readers take either; `memo`
    is the conversion's (see `_memo`).
    """

    __slots__ = ("record", "attributes", "events", "name", "span_id", "scope", "memo", "_trees")

    def __init__(self, record: SpanRecord, memo: ConversionMemo | None = None) -> None:
        self.record = record
        #: what the conventions learnt from the spans read before this one
        self.memo = memo if memo is not None else ConversionMemo()
        self.attributes: dict[str, Any] = record.attributes
        self.events: list[EventRecord] = record.events
        self.name = record.name
        self.span_id = record.span_id
        self.scope = record.scope
        self._trees: dict[str, dict[str, Any]] | None = None

    def tree(self, prefix: str) -> dict[str, Any] | None:
        """The nested form of the keys under `prefix` (one of `FLATTENED_PREFIXES`), or
        None when the span holds none. `prefix.0.message.role = x` becomes
        `{"0": {"message": {"role": x}}}`; a key that is both a value and the parent of
        other keys keeps the first seen. Shared by the span's readers: do not change it."""
        start = prefix + "."
        if start not in _KNOWN_STARTS:
            raise ValueError(f"{prefix!r} is not one of FLATTENED_PREFIXES; add it there")
        trees = self._trees
        if trees is None:
            trees = self._trees = _index(self.attributes)
        return trees.get(start)

    def unflatten(self, prefix: str) -> dict[str, Any]:
        """`tree(prefix)`, empty when the span holds no such key."""
        return self.tree(prefix) or {}

    def has_indexed(self, prefix: str) -> bool:
        """Whether any key is `prefix.<digit>...`."""
        tree = self.tree(prefix) or {}
        return any(key[:1].isdigit() for key in tree)  # a tree's keys: its paths' first parts

    def __repr__(self) -> str:
        return f"SpanView({self.name!r}, {self.span_id})"


def view_of(span: SpanRecord | SpanView) -> SpanView:
    """`span` as a view (a record gets a new one)."""
    return span if isinstance(span, SpanView) else SpanView(span)


def _index(attrs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    trees: dict[str, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(_STARTS):
            continue
        for start in _STARTS:
            if key.startswith(start):
                *parents, leaf = key[len(start) :].split(".")
                tree = trees.get(start)
                if tree is None:
                    tree = trees[start] = {}
                _place(tree, parents, leaf, value)
                break
    return trees


def _place(root: dict[str, Any], parents: list[str], leaf: str, value: Any) -> None:
    """Put `value` at `parents`/`leaf` under `root`; the first value seen at a place stays
    (and a value where a parent dict would go stops the path)."""
    node = root
    for part in parents:
        child = node.get(part, _MISSING)  # (not setdefault: no new dict for a known part)
        if child is _MISSING:
            child = node[part] = {}
        elif type(child) is not dict:
            return
        node = child
    if leaf not in node:
        node[leaf] = value
