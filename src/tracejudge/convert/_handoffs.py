"""Hand-off spans: an agent passed its work on to another agent.

The OpenAI Agents SDK records a hand-off as a span of its own, whatever the name of the
tool the model called for it (`transfer_to_<agent>` by default, any name with
`tool_name_override`):

- OpenLLMetry: `gen_ai.operation.name=handoff`, `gen_ai.handoff.from_agent`, and
  `gen_ai.handoff.to_agent` when the target was known as the span started (often it is
  not: the span is then named `triage → unknown.handoff`);
- OpenInference: a TOOL span named `handoff to <agent>`, `input.value` the agent handing
  off and `output.value` the target.

The hand-off belongs to the agent it names as the one handing off (else the agent it is
nested in). A target the span does not name is the agent that started next after it,
among the agents of the trace other than the one handing off and its ancestors.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracejudge import semconv
from tracejudge.convert._common import as_str
from tracejudge.convert._records import SpanRecord

__all__ = ["OPENINFERENCE_KIND", "OPERATION", "Handoff", "handoff"]

#: What OpenLLMetry writes for an agent it did not know.
_UNKNOWN = "unknown"


@dataclass(frozen=True)
class Handoff:
    """One hand-off as its span records it."""

    from_agent: str | None
    to_agent: str | None
    start_ns: int | None


def _known(name: str | None) -> str | None:
    return name if name and name != _UNKNOWN else None


#: A hand-off span's `gen_ai.operation.name`, or else its OpenInference span kind:
#: `handoff` reads no other span.
OPERATION = semconv.OPERATION_HANDOFF
OPENINFERENCE_KIND = semconv.OPENINFERENCE_KIND_TOOL


def handoff(span: SpanRecord) -> Handoff | None:
    """The hand-off a span records, or None when it is not a hand-off span."""
    attrs = span.attributes
    if attrs.get(semconv.GEN_AI_OPERATION_NAME) == OPERATION:
        return Handoff(
            from_agent=_known(as_str(attrs.get(semconv.GEN_AI_HANDOFF_FROM_AGENT))),
            to_agent=_known(as_str(attrs.get(semconv.GEN_AI_HANDOFF_TO_AGENT))),
            start_ns=span.start_ns,
        )
    if (
        attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == OPENINFERENCE_KIND
        and attrs.get(semconv.TOOL_NAME) is None
        and span.name.startswith(semconv.OPENINFERENCE_HANDOFF_PREFIX)
    ):
        target = (
            as_str(attrs.get(semconv.OUTPUT_VALUE))
            or span.name[len(semconv.OPENINFERENCE_HANDOFF_PREFIX) :].strip()
        )
        return Handoff(
            from_agent=_known(as_str(attrs.get(semconv.INPUT_VALUE))),
            to_agent=_known(target),
            start_ns=span.start_ns,
        )
    return None
