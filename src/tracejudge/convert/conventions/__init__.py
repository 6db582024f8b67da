"""The span conventions the converter reads, as one ordered table.

Each row is one producer convention: an object (see `Convention`) that recognises its
spans and reads them. The tree walk asks every span of a trace, once, which row claims it
(`classify`: the first whose `kind` answers) and then reads the span through that row
alone; nothing else in the converter looks at a span's attributes to decide what it is.

Order matters where spans carry several producers' marks: LangGraph's node metadata rides
on OpenInference and OpenLLMetry spans; OpenLLMetry's framework kinds on GenAI spans;
OpenInference LLM spans may also carry GenAI messages; the Vercel AI SDK's spans carry
`gen_ai.*` keys, and OpenInference's kinds where its Vercel span processor ran; logfire's
model-call spans carry `gen_ai.operation.name` without (format version 1) GenAI messages.

Adding a producer
-----------------

1. Its attribute names go in `tracejudge/semconv.py` (no literal key anywhere else).
2. One module here with one `Convention` subclass and its instance: `kind` says which
   spans are its and what each is (cheaply: it is asked of spans of every producer after
   the rows above it, unless its `marker_keys` / `marker_scopes` / `marker_names` say
   which spans can be its); `agent`, `model_call`, `tool_run`, `handoff` read what the kinds
   it answers promise. Messages become `Extraction`s with `convert._common`'s helpers.
3. One row in `TABLE`, above any row that would claim its spans first.
4. Recorded fixtures (tests/fixtures/frameworks) and the tests that read them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import (
    UNNAMED_AGENT,
    AnswerKey,
    Convention,
    Identity,
    Kind,
)
from tracejudge.convert.conventions.adk import ADK
from tracejudge.convert.conventions.agent_framework import AGENT_FRAMEWORK
from tracejudge.convert.conventions.autogen import OPENINFERENCE_AUTOGEN
from tracejudge.convert.conventions.genai import GENAI
from tracejudge.convert.conventions.genkit import GENKIT
from tracejudge.convert.conventions.langgraph import LANGGRAPH
from tracejudge.convert.conventions.llamaindex_openinference import OPENINFERENCE_LLAMAINDEX
from tracejudge.convert.conventions.llamaindex_openllmetry import OPENLLMETRY_LLAMAINDEX
from tracejudge.convert.conventions.logfire import LOGFIRE
from tracejudge.convert.conventions.openinference import OPENINFERENCE
from tracejudge.convert.conventions.openlit import OPENLIT
from tracejudge.convert.conventions.openllmetry import LEGACY_OPENLLMETRY, TRACELOOP
from tracejudge.convert.conventions.semantic_kernel import SEMANTIC_KERNEL
from tracejudge.convert.conventions.strands import STRANDS
from tracejudge.convert.conventions.unrecognised import UNRECOGNISED
from tracejudge.convert.conventions.vercel_ai import VERCEL_AI

__all__ = [
    "ANSWER_KEYS",
    "UNNAMED_AGENT",
    "ADK",
    "AGENT_FRAMEWORK",
    "AnswerKey",
    "GENAI",
    "GENKIT",
    "LANGGRAPH",
    "LEGACY_OPENLLMETRY",
    "LOGFIRE",
    "OPENINFERENCE",
    "OPENLIT",
    "STRANDS",
    "TABLE",
    "VERCEL_AI",
    "UNRECOGNISED",
    "Convention",
    "Identity",
    "Kind",
    "call_reader",
    "classify",
    "rows_removed",
]

#: The conventions, in the order they are asked.
TABLE: tuple[Convention, ...] = (
    LANGGRAPH,
    # Before OPENINFERENCE and GENAI: the AI SDK's model-call spans also carry gen_ai.*
    # keys, and @arizeai/openinference-vercel adds OpenInference kinds to its spans while
    # keeping the ai.* keys (which alone name the run by its functionId).
    VERCEL_AI,
    # Strands' and Agent Framework's own spans, by their instrumentation scope alone: before
    # ADK, which claims GenAI `execute_tool` spans that carry `gen_ai.tool.type`.
    STRANDS,  # (GenAI operations, but Bedrock content blocks in their events)
    AGENT_FRAMEWORK,  # (GenAI, with its own workflow spans)
    # Before OpenInference: its ADK instrumentor writes its LLM and TOOL kinds on ADK's
    # `call_llm` and `execute_tool` spans, whose ADK attributes say more (finish reasons,
    # transfers).
    ADK,
    OPENINFERENCE_AUTOGEN,
    OPENINFERENCE_LLAMAINDEX,
    OPENINFERENCE,
    OPENLLMETRY_LLAMAINDEX,
    TRACELOOP,
    # Before `genai`: their spans are GenAI spans, read with what is their own.
    OPENLIT,
    SEMANTIC_KERNEL,
    LOGFIRE,
    GENAI,
    LEGACY_OPENLLMETRY,
    GENKIT,
    # Last: a span no row above reads that names a model and counts tokens.
    UNRECOGNISED,
)


def call_reader(span: SpanView) -> Convention:
    """The convention that reads `span` as a model call: the one that claims it as one,
    else (a span no convention calls a model call) the one whose messages it carries."""
    found = classify(span)
    if found is not None and found[1] is Kind.MODEL_CALL:
        return found[0]
    if LEGACY_OPENLLMETRY.carries_messages(span):
        return LEGACY_OPENLLMETRY
    return GENAI


class _Rows:
    """A table made ready for `classify`: the rows asked of every span (no markers), and
    every marker of the others, so that a span carrying none of these is asked of the
    unmarked rows alone (most spans: one comparison)."""

    __slots__ = ("all", "unmarked", "any_key", "any_scope", "any_name", "_rows", "_by_scope")

    def __init__(self, table: tuple[Convention, ...]) -> None:
        self.all = tuple((c, c.marker_keys, c.marker_scopes, c.marker_names) for c in table)
        self.unmarked = tuple(c for c in table if c.marker_keys is None)
        marked = [row for row in self.all if row[1] is not None]
        self.any_key: frozenset[str] = frozenset().union(*(row[1] or () for row in marked))
        self.any_scope: frozenset[str] = frozenset().union(*(row[2] for row in marked))
        self.any_name: frozenset[str] = frozenset().union(*(row[3] for row in marked))
        #: the rows to ask, by the markers a span carries (`_Signature`)
        self._rows: dict[_Signature, tuple[Convention, ...]] = {}
        #: the rows of a span marked by its scope alone, by scope
        self._by_scope: dict[str, tuple[Convention, ...]] = {}

    def rows(self, span: SpanView) -> tuple[Convention, ...]:
        """The rows to ask of `span`, in table order: the unmarked ones, and the marked
        ones whose markers it carries. Spans of one producer carry the same markers: the
        rows are worked out once per set of markers carried (a walk over every row of the
        table per span was a tenth of the converter's time on small spans)."""
        marked = self.any_key.intersection(span.attributes.keys())  # (one pass over the keys)
        scope, name = span.scope, span.name
        by_scope: str | None = None  # (the scope of a span marked by its scope alone)
        if not marked and name not in self.any_name:
            if scope is None or scope not in self.any_scope:
                return self.unmarked
            rows = self._by_scope.get(scope)
            if rows is not None:
                return rows
            by_scope = scope
        signature = (
            marked,
            scope if scope in self.any_scope else None,
            name if name in self.any_name else None,
        )
        rows = self._rows.get(signature)
        if rows is None:
            if len(self._rows) >= _REMEMBERED_SIGNATURES:  # (made-up combinations of markers)
                self._rows.clear()
            rows = self._rows[signature] = tuple(
                c
                for c, markers, scopes, names in self.all
                if markers is None
                or not signature[0].isdisjoint(markers)
                or signature[1] in scopes
                or signature[2] in names
            )
        if by_scope is not None:  # (one entry per marker scope at most)
            self._by_scope[by_scope] = rows
        return rows


#: The markers of the table a span carries: (its marker keys, its scope when a marker
#: scope, else None, its name when a marker name, else None).
_Signature = tuple[frozenset[str], "str | None", "str | None"]
#: The most combinations of markers remembered.
_REMEMBERED_SIGNATURES = 1024


_WHOLE = _Rows(TABLE)
#: The table `classify` reads, where `rows_removed` set one; else the whole one.
_ANSWER_FORMS = ("text", "messages", "json")
#: Every row's answer keys (`Convention.answer_keys`): the answer itself first, then
#: output messages, then JSON text; rows in table order within each form. Taken from the
#: whole table, also inside `rows_removed`: a span's recorded answer is read wherever it
#: is, as the keys are not a row's marks.
ANSWER_KEYS: tuple[AnswerKey, ...] = tuple(
    dict.fromkeys(  # (a row that extends another declares its keys again: asked once)
        key for form in _ANSWER_FORMS for row in TABLE for key in row.answer_keys if key[1] == form
    )
)

_ACTIVE: ContextVar[_Rows | None] = ContextVar("tracejudge_convention_rows", default=None)


@contextmanager
def rows_removed(*removed: Convention) -> Iterator[None]:
    """Convert, inside the block (and this context only), as if these rows were not in
    the table: how the converter reads a producer nobody added a row for (the
    leave-one-out benchmark, and tests of the structural rules that need no row)."""
    unknown = [c for c in removed if c not in TABLE]
    if unknown:
        raise ValueError(f"not rows of the conventions table: {unknown}")
    token = _ACTIVE.set(_Rows(tuple(c for c in TABLE if c not in removed)))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def classify(span: SpanView) -> tuple[Convention, str] | None:
    """(the convention that claims the span, the span's `Kind`), or None when no
    convention knows it."""
    for convention in (_ACTIVE.get() or _WHOLE).rows(span):
        kind = convention.kind(span)
        if kind is not None:
            return convention, kind
    return None
