"""What a convention is: one object that recognises its producer's spans and reads them.

The tree walk asks the table (`conventions.TABLE`) of every span, in order, "is this span
yours, and what kind is it?" (`kind`); the first convention that answers owns the span, and
the walk then asks that convention, and only it, what the span holds: an agent's identity
(`agent`), a model call (`model_call`), a tool run (`tool_run`) or a hand-off
(`handoff`). A convention reads attributes through the span's `SpanView` and names them
from `tracejudge.semconv`; it knows nothing of the tree.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from tracejudge.convert._common import Extraction
from tracejudge.convert._handoffs import Handoff
from tracejudge.convert._tools import ToolRun
from tracejudge.convert._view import SpanView
from tracejudge.models import LLMToolDefinition

__all__ = ["UNNAMED_AGENT", "AnswerKey", "Convention", "Identity", "Kind"]

#: (the agent id the span declares, or None; the agent's name)
Identity = tuple["str | None", str]
#: An attribute in which a producer records an agent's answer, and its form: `text` (the
#: answer itself, or an object with an output field), `messages` (GenAI output messages:
#: the last one's text), `json` (JSON text holding either, or plain text).
AnswerKey = tuple[str, Literal["text", "messages", "json"]]


#: The name of an agent whose span records none (a convention's `agent` falls back to it).
UNNAMED_AGENT = "agent"


class Kind:
    """What a span is, as its convention says. The values are plain strings (they are
    shown by `tracejudge inspect`); compare them with `is` or `==`."""

    AGENT = "agent"
    #: a run of several agents that the framework records as one span: the root agent
    WORKFLOW = "workflow"
    MODEL_CALL = "model call"
    TOOL_RUN = "tool run"
    HANDOFF = "hand-off"
    #: the convention's, but nothing the trace holds (a chain step, a retriever, a task)
    STEP = "step"
    #: a step that says which agent runs from here on: the agent it names (`agent`) runs
    #: this span and its later siblings, until a turn of another agent (LlamaIndex's
    #: `AgentWorkflow` steps are siblings, each event naming the current agent)
    TURN = "agent turn"


class Convention:
    """One producer's span convention. Subclasses set `name` and answer `kind`; each of
    the other methods is asked only of spans whose `kind` said so."""

    #: Short name, shown by `tracejudge inspect` and in warnings.
    name: ClassVar[str] = "convention"
    #: How a user turns message content capture on for this producer (for the warning on
    #: a model call recorded without content); None when content is always recorded.
    content_setting: ClassVar[str | None] = None
    #: For a producer whose agents are named only in recorded content (LlamaIndex's
    #: workflow events): how a user gets them; a trace of its model calls without any
    #: agent says so with this. None: no agent is the producer's to name.
    agent_setting: ClassVar[str | None] = None
    #: The attribute in which the producer names its own kind of span (OpenInference's
    #: CHAIN, a Traceloop task), shown by `tracejudge inspect` for the spans this
    #: convention calls steps; None when it has none.
    kind_attribute: ClassVar[str | None] = None
    #: What every span of this convention carries, when something does: one of these
    #: attribute keys, or one of these instrumentation scopes or span names. The table
    #: asks `kind` only of spans that carry one (a set comparison, not a call), so that
    #: a long table costs little for spans of the rows below; None: ask every span.
    marker_keys: ClassVar[frozenset[str] | None] = None
    marker_scopes: ClassVar[frozenset[str]] = frozenset()
    marker_names: ClassVar[frozenset[str]] = frozenset()
    #: Where the producer records an agent's answer on the agent's span (or on a span
    #: that holds its output): asked by `_answers` of every span that may, in the order
    #: `conventions.ANSWER_KEYS` gives.
    answer_keys: ClassVar[tuple[AnswerKey, ...]] = ()

    def content_hint(self, span: SpanView) -> str | None:
        """How to get the messages of a model call this span recorded without them."""
        return self.content_setting

    def kind(self, span: SpanView) -> str | None:
        """The span's `Kind` when the span is this convention's, else None (the next
        convention of the table is asked)."""
        return None

    def step_kind(self, span: SpanView) -> str | None:
        """The producer's own name for the kind of a span (see `kind_attribute`)."""
        if self.kind_attribute is None:
            return None
        value = span.attributes.get(self.kind_attribute)
        return None if value is None else str(value)

    def agent(self, span: SpanView) -> Identity:
        """The identity of an AGENT, WORKFLOW or TURN span."""
        raise NotImplementedError(f"{self.name} reads no agent spans")

    def identity_warnings(self, span: SpanView) -> list[str]:
        """What an AGENT or WORKFLOW span's identity lacks (a run recorded with no name),
        said once per agent span; none by default."""
        return []

    def agent_tools(self, span: SpanView, warnings: list[str]) -> list[LLMToolDefinition] | None:
        """The tools an AGENT span says its agent offers the model (they apply to the
        agent's calls that record none of their own), or None."""
        return None

    def agent_handoff(self, span: SpanView) -> Handoff | None:
        """The hand-off an AGENT span records of its own agent (where no span of its own
        records it: the agent's tool result that passed the run on), or None."""
        return None

    def model_call(self, span: SpanView) -> Extraction:
        """Everything a MODEL_CALL span says about its call, in wire form."""
        raise NotImplementedError(f"{self.name} reads no model calls")

    def tool_run(self, span: SpanView) -> ToolRun | None:
        """The run a TOOL_RUN span records (None when it names no tool)."""
        return None

    def handoff(self, span: SpanView) -> Handoff | None:
        """The hand-off a HANDOFF span records."""
        return None

    def __repr__(self) -> str:
        return f"<convention {self.name}>"
