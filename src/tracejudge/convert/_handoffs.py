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

__all__ = ["Handoff", "known"]

#: What OpenLLMetry writes for an agent it did not know.
_UNKNOWN = "unknown"


@dataclass(frozen=True)
class Handoff:
    """One hand-off as its span records it."""

    from_agent: str | None
    to_agent: str | None
    start_ns: int | None


def known(name: str | None) -> str | None:
    """The agent's name, unless it is missing or OpenLLMetry's placeholder for one."""
    return name if name and name != _UNKNOWN else None
