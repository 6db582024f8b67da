"""Attributions in plain text: what failed, then the ranked causes (`tracejudge attribute`).

Example::

    trace 4bf9...: failed (2 failures)
      tool_arguments: agent 'researcher' (r1) scored 0.00, below 1: researcher: 0 of 1 ...
      1. researcher (r1), step 1 = its model call 0, tool call call_7 (get_weather)
         checks (tool_arguments), confidence 0.95
         tool_arguments: researcher llm_interactions[0], tool call call_7 ...
      2. ...
"""

from __future__ import annotations

from tracejudge.models import Attribution, Cause

__all__ = ["format_attribution", "format_cause"]

#: Characters of a cause's evidence shown in text.
MAX_EVIDENCE = 400


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_cause(cause: Cause) -> list[str]:
    """A cause as indented lines: where, how found, how sure, what shows it."""
    where = f"{cause.rank}. {cause.agent_name} ({cause.agent_instance_id})"
    if cause.step is not None:
        where += f", step {cause.index} = its model call {cause.step.interaction}"
        if cause.step.tool_call_id:
            where += f", tool call {cause.step.tool_call_id} ({cause.step.tool_name})"
    else:
        where += ", the agent as a whole"
    how = cause.method + (f" ({', '.join(cause.criteria)})" if cause.criteria else "")
    how += f", confidence {cause.confidence:.2f}"
    if cause.consequence_of is not None:
        how += f", may follow from cause {cause.consequence_of}"
    lines = [f"  {where}", f"     {how}"]
    if cause.evidence:
        lines.append(f"     {_short(cause.evidence, MAX_EVIDENCE)}")
    if cause.fix:
        changes = {True: "would avoid the failure", False: "would not avoid it", None: ""}
        lines.append(
            f"     fix: {_short(cause.fix, 200)} {changes[cause.outcome_changes]}".rstrip()
        )
    return lines


def format_attribution(attribution: Attribution, *, name: str | None = None, top: int = 5) -> str:
    """One trace's attribution: its status line, what failed, the first `top` causes."""
    label = name or attribution.trace_id or "trace"
    if not attribution.failed:
        return f"{label}: nothing to attribute ({'; '.join(attribution.notes) or 'did not fail'})"
    count = len(attribution.failures)
    lines = [f"{label}: failed ({count} failure{'s' if count != 1 else ''})"]
    lines.extend(f"  - {_short(line, 200)}" for line in attribution.failures[:10])
    if len(attribution.failures) > 10:
        lines.append(f"  - ... and {len(attribution.failures) - 10} more")
    for cause in attribution.causes[:top]:
        lines.extend(format_cause(cause))
    if len(attribution.causes) > top:
        lines.append(f"  ({len(attribution.causes) - top} more causes; --top N shows more)")
    if attribution.usage.calls:
        cost = attribution.usage.cost_usd
        lines.append(
            f"  judge: {attribution.usage.calls} calls, {attribution.usage.input_tokens} input "
            f"and {attribution.usage.output_tokens} output tokens"
            + (f", ${cost:.4f}" if cost is not None else "")
        )
    lines.extend(f"  note: {note}" for note in attribution.notes)
    return "\n".join(lines)
