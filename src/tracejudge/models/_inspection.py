"""What the converter made of an input's spans: `tracejudge inspect`'s answer.

`tracejudge.convert.inspect_otlp` (and `inspect_spans`, `inspect_records`) give an
`Inspection`; `tracejudge.report.format_inspection` prints it, and
`Inspection.model_dump_json()` is the JSON that `tracejudge inspect --json` writes. That
JSON shape is stable: every key below is always present (null or empty when there is
nothing to say), keys may be added, and `version` goes up if one ever changes meaning
or leaves. `Inspection.model_json_schema()` gives its JSON Schema.

    {"version": 1, "spans": 42, "warnings": ["..."],        # the input as a whole
     "traces": [{
        "trace_id": "4bf9...", "sources": ["run.jsonl"], "spans": 40,
        "producers": [{"scope": "openinference.instrumentation.langchain",
                       "version": "0.1.80", "conventions": ["langgraph", "openinference"],
                       "spans": 40, "read": 12}],
        "read": [{"span_id": "...", "parent_id": "...", "name": "agent",
                  "scope": "...", "start": 1764680000.25, "convention": "langgraph",
                  "kind": "agent", "agent": "00f0...", "reason": null, "detail": null}],
        "ignored": [{"span_id": "...", "name": "RunnableSequence", "convention":
                     "openinference", "kind": "step", "agent": null, "reason": "step",
                     "detail": "a step of openinference (CHAIN)", "attributes": [],
                     ...}],
        "root": "00f0...",
        "agents": [{"id": "00f0...", "name": "supervisor", "parent": null,
                    "span_id": "00f0...", "model_calls": 2, "tool_calls": 1,
                    "tools": ["transfer_to_researcher"], "handoff": null,
                    "answer": "Paris is sunny..."}],
        "warnings": ["..."]}]}

A span is *read* when the converter took something from it (an agent, a model call, a
tool run, a hand-off); every other span is *ignored*, with a `reason` code (see
`IGNORED_REASONS`) and a `detail` sentence.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ANSWER_EXCERPT",
    "IGNORED_REASONS",
    "INSPECTION_VERSION",
    "InspectedAgent",
    "InspectedProducer",
    "InspectedSpan",
    "InspectedTrace",
    "Inspection",
]

#: The version of the JSON shape (`Inspection.version`).
INSPECTION_VERSION = 1
#: The longest answer excerpt an `InspectedAgent` holds.
ANSWER_EXCERPT = 200

#: Why a span is ignored, by `InspectedSpan.reason`.
IGNORED_REASONS = {
    "unknown": "no convention of the table knows the span",
    "step": "a step of a known convention (a chain, a task, a retriever...): nothing the "
    "trace holds",
    "nested_node": "a LangGraph node nested in another node: a step of the outer node's agent",
    "no_tool": "a tool span that names no tool",
    "no_handoff": "a hand-off span that names no agent",
    "unreadable": "a model-call span that could not be read (see the trace's warnings)",
    "no_agent": "its trace holds no agent and no model call, so nothing of it is read",
    "failed": "its trace could not be converted (see the trace's warnings)",
}

IgnoredReason = Literal[
    "unknown", "step", "nested_node", "no_tool", "no_handoff", "unreadable", "no_agent", "failed"
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InspectedProducer(_Model):
    """One instrumentation scope that recorded spans of the trace."""

    #: The instrumentation scope's name (the library that wrote the spans), or None.
    scope: str | None
    #: The scope's version, or None when the producer did not record one.
    version: str | None
    #: The conventions of the table that claimed its spans, in table order.
    conventions: list[str] = Field(default_factory=list)
    #: How many of the trace's spans it recorded, and how many of those were read.
    spans: int = 0
    read: int = 0


class InspectedSpan(_Model):
    """One span, read or ignored."""

    span_id: str
    parent_id: str | None = None
    name: str
    scope: str | None = None
    #: Start time in Unix seconds; None when unknown.
    start: float | None = None
    #: The convention that claimed the span (`tracejudge.convert.conventions.TABLE`), or
    #: None when none did.
    convention: str | None = None
    #: What that convention says the span is (`tracejudge.convert.conventions.Kind`:
    #: "agent", "workflow", "model call", "tool run", "hand-off", "step"), or None when
    #: no convention claimed it.
    kind: str | None = None
    #: Read spans: the id of the agent the span is, or whose run it belongs to.
    agent: str | None = None
    #: Ignored spans: why (a key of `IGNORED_REASONS`); None for read spans.
    reason: IgnoredReason | None = None
    #: Ignored spans: the reason in a sentence. Read spans: how it was read, when that is
    #: worth saying (another record of a call read once, a twin agent span folded).
    detail: str | None = None
    #: The span's attribute keys, for the spans no convention reads whole: those no
    #: convention knows, and the model calls of no known convention (the `unrecognised`
    #: row keeps only their model and usage). Empty for the others.
    attributes: list[str] = Field(default_factory=list)


class InspectedAgent(_Model):
    """One agent of the converted trace."""

    id: str
    name: str
    #: The id of the agent that ran this one; None for the root.
    parent: str | None = None
    #: The agent's span; None for the implicit root that holds calls outside every agent.
    span_id: str | None = None
    model_calls: int = 0
    tool_calls: int = 0
    #: The names of the tools it called, each once, in the order first called.
    tools: list[str] = Field(default_factory=list)
    #: The agent it handed its work to, as a hand-off span recorded it ("" when the
    #: span names no target and none could be told); None without a hand-off.
    handoff: str | None = None
    #: The start of its final answer (at most `ANSWER_EXCERPT` characters), or None.
    answer: str | None = None


class InspectedTrace(_Model):
    """One trace id of the input."""

    trace_id: str
    #: The inputs its spans came from, when the caller says (the CLI does).
    sources: list[str] = Field(default_factory=list)
    spans: int = 0
    producers: list[InspectedProducer] = Field(default_factory=list)
    #: Spans in start order.
    read: list[InspectedSpan] = Field(default_factory=list)
    ignored: list[InspectedSpan] = Field(default_factory=list)
    #: The root agent's id; None when the trace holds no agent and no model call.
    root: str | None = None
    #: Depth first from the root, as `MultiAgentTrace.iter_agents` gives them.
    agents: list[InspectedAgent] = Field(default_factory=list)
    #: The converter's warnings about this trace (those about the input as a whole are
    #: `Inspection.warnings`).
    warnings: list[str] = Field(default_factory=list)


class Inspection(_Model):
    """Every trace of an input, as the converter read it."""

    version: int = INSPECTION_VERSION
    #: How many spans the input held.
    spans: int = 0
    #: What was skipped or unreadable in the input as a whole.
    warnings: list[str] = Field(default_factory=list)
    #: In order of each trace's first span start.
    traces: list[InspectedTrace] = Field(default_factory=list)
