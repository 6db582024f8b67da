"""One model call (`LLMInteraction`) and the tokens it used (`TokenUsage`)."""

from __future__ import annotations

from pydantic import ConfigDict

from tracejudge.models._base import INTERACTION_EXTENSION_FIELDS, WireModel
from tracejudge.models._messages import (
    LLMInput,
    LLMOutput,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
)

__all__ = ["LLMInteraction", "TokenUsage"]


class TokenUsage(WireModel):
    """Tokens used by one model call."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class LLMInteraction(WireModel):
    """One call to a model: what it was given, what it answered, which tools it could use.

    `model`, `usage`, `start_time`, `end_time` (Unix seconds), `error`,
    `finish_reason`, `refusal`, `alternatives`, `reasoning`, `server_tool_calls` and
    `tool_results` are tracejudge extensions, filled by the converter from span
    attributes. They are not part of the wire shape: the default JSON leaves them out,
    `to_json()` / `model_dump(context={EXTENSIONS: True})` keep them, and equality
    ignores them (they measure a call; they do not make it a different call).

    - `finish_reason`: why the first choice ended, in OpenAI's words (`stop`,
      `length`, `tool_calls`, `content_filter`, ...; Anthropic's are mapped).
    - `refusal`: the model's refusal text; a refused call has no text answer.
    - `alternatives`: the other choices of a call with `n` > 1; `output_messages` is
      the first choice, the one the program used.
    - `reasoning`: the reasoning (summary) the model returned, apart from the answer.
    - `server_tool_calls`: built-in tools the provider ran itself (web search, file
      search, code interpreter, MCP); no result is expected from the client, and what
      they returned is not recorded (name `server_tool` when the kind is unknown).
    - `tool_results`: results of this call's tool calls that no later input of the agent
      carries, as the framework's tool spans recorded them (an agent's last calls: a
      `final_answer` call, a hand-off, a tool whose result ended the run; or calls whose
      later inputs do not repeat the conversation). The checks and the judge read them
      like results in a later input.
    - `span_id`: the (hex) id of the span that recorded the call, and `response_id`
      the provider's id of its response: where evaluation results written back onto
      the trace are attached when the agent has no span of its own.
    """

    model_config = ConfigDict(extra="forbid")
    _omit_when_none = frozenset({"tools_available"})
    _extensions = INTERACTION_EXTENSION_FIELDS

    input_messages: list[LLMInput]
    output_messages: list[LLMOutput]
    tools_available: list[LLMToolDefinition] | None = None
    model: str | None = None
    usage: TokenUsage | None = None
    start_time: float | None = None
    end_time: float | None = None
    error: str | None = None
    finish_reason: str | None = None
    refusal: str | None = None
    alternatives: list[list[LLMOutput]] | None = None
    reasoning: str | None = None
    server_tool_calls: list[LLMToolCall] | None = None
    tool_results: list[LLMToolResponse] | None = None
    span_id: str | None = None
    response_id: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LLMInteraction):
            return NotImplemented
        return (
            self.input_messages == other.input_messages
            and self.output_messages == other.output_messages
            and self.tools_available == other.tools_available
        )

    @property
    def duration_seconds(self) -> float | None:
        """How long the call took (`end_time - start_time`, never negative), or None when
        either time was not recorded."""
        if self.start_time is None or self.end_time is None:
            return None
        return max(0.0, self.end_time - self.start_time)

    @property
    def output_text(self) -> str:
        """The text the model produced, its text items joined by blank lines."""
        return "\n\n".join(m.content for m in self.output_messages if isinstance(m.content, str))

    @property
    def tool_calls(self) -> list[LLMToolCall]:
        """The tool calls the model made in this call, in output order."""
        return [m.content for m in self.output_messages if isinstance(m.content, LLMToolCall)]
