"""Messages: what a model is given and what it answers, tool calls, results and definitions."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ConfigDict, field_validator

from tracejudge.models._base import WireModel

__all__ = [
    "LLMInput",
    "LLMOutput",
    "LLMToolCall",
    "LLMToolDefinition",
    "LLMToolResponse",
    "to_json_string",
]


# What `json.dumps(value, ensure_ascii=False, default=str)` uses, made once: `dumps` builds a
# new encoder for every call that passes options, a third of the time for small values.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def _c_encoder() -> Callable[[Any, int], Sequence[str]] | None:
    """The C encoder `_ENCODER.encode` makes on every call, made once, without the
    circular-reference check (a dict of ids per call): a third of the time for tool
    arguments. A value it cannot encode is handed to `_ENCODER`, which decides as before."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        encoder: Callable[[Any, int], Sequence[str]] = make(
            None, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
        )
        return encoder
    except TypeError:  # another Python's signature: the standard path only
        return None


_C_ENCODER = _c_encoder()


def to_json_string(value: Any) -> str:
    """Tool arguments, results and schemas travel as JSON strings; keep strings as they are."""
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    if _C_ENCODER is not None:
        try:
            return "".join(_C_ENCODER(value, 0))
        except Exception:  # (a cycle ends in RecursionError here) decided below
            pass
    try:
        return _ENCODER.encode(value)
    except RecursionError:
        # In a validator this becomes a ValidationError naming the field.
        raise ValueError(
            "the value is nested deeper than can be encoded as JSON; flatten it"
        ) from None
    except (TypeError, ValueError):
        return str(value)


class LLMToolCall(WireModel):
    """A call to a tool, made by the model. `parameters` is the arguments as a JSON string."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    parameters: str = "{}"

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters_as_json(cls, value: Any) -> str:
        return to_json_string(value)

    def arguments(self) -> Any:
        """The arguments parsed from JSON; raises ValueError when they are not JSON."""
        return json.loads(self.parameters)


class LLMToolResponse(WireModel):
    """What a tool returned for the call with the same `id`."""

    model_config = ConfigDict(extra="allow")
    _omit_when_none = frozenset({"name"})

    id: str
    response: str
    name: str | None = None

    @field_validator("response", mode="before")
    @classmethod
    def _response_as_string(cls, value: Any) -> str:
        return to_json_string(value)


class LLMToolDefinition(WireModel):
    """A tool offered to the model. `parameters` is its JSON schema as a JSON string."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str = ""
    parameters: str = "{}"

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters_as_json(cls, value: Any) -> str:
        return to_json_string(value)

    @field_validator("description", mode="before")
    @classmethod
    def _description_text(cls, value: Any) -> str:
        return "" if value is None else str(value)

    def schema_dict(self) -> dict[str, Any] | None:
        """The JSON schema as a dict, or None when it is not a JSON object."""
        try:
            parsed = json.loads(self.parameters)
        except (ValueError, RecursionError):
            return None
        return parsed if isinstance(parsed, dict) else None


class LLMInput(WireModel):
    """One message given to the model: text, a tool call it made earlier, or a tool result."""

    model_config = ConfigDict(extra="forbid")
    _omit_when_none = frozenset({"type"})

    role: str
    type: str | None = None
    content: str | LLMToolCall | LLMToolResponse


class LLMOutput(WireModel):
    """One item the model produced: text or a tool call."""

    model_config = ConfigDict(extra="forbid")
    _omit_when_none = frozenset({"type"})

    type: str | None = None
    content: str | LLMToolCall
