"""How a model call ended, in words: a refusal, or a finish reason that is not a normal
stop (cut off at the token limit, stopped by a content filter).

The judge's transcript (`render`) and the `final_answer` check read an interaction's
ending through here, so that both name it the same way.
"""

from __future__ import annotations

from tracejudge.models import LLMInteraction

__all__ = ["NORMAL_FINISH", "REFUSAL", "refusal_of", "unusual_ending"]

#: Finish reasons of a call that ended as the model meant to (OpenAI's words; the
#: converter maps Anthropic's `end_turn`, `stop_sequence` and `tool_use` onto them).
NORMAL_FINISH = frozenset({"stop", "tool_calls"})
#: The finish reason of a refused call (Anthropic's `stop_reason`).
REFUSAL = "refusal"

_MEANINGS = {
    "length": "cut off at the output token limit",
    "content_filter": "stopped by the provider's content filter",
    REFUSAL: "refused by the model",
}


def refusal_of(interaction: LLMInteraction) -> str | None:
    """The refusal of a call: the model's refusal text (OpenAI's `refusal`), else for a call
    that finished with reason `refusal` (Anthropic) the text it wrote, or '' when it wrote
    none; None when the call did not refuse."""
    if interaction.refusal:
        return interaction.refusal
    if interaction.finish_reason == REFUSAL:
        return interaction.output_text
    return None


def unusual_ending(interaction: LLMInteraction) -> str | None:
    """How a call whose finish reason is not a normal stop ended, to follow "was": 'cut off
    at the output token limit (finish reason 'length')'; None for a normal or unrecorded
    finish reason."""
    reason = interaction.finish_reason
    if not reason or reason in NORMAL_FINISH:
        return None
    meaning = _MEANINGS.get(reason, "stopped for another reason")
    return f"{meaning} (finish reason {reason!r})"
