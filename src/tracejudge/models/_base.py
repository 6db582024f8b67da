"""The base of every wire model: Composo's JSON shape, tracejudge's extensions on request.

Optional fields listed in `_omit_when_none` are left out of the JSON when they are
None, as the Composo SDK sends them. tracejudge's extension fields (`_extensions`)
are left out unless the serialisation context asks for them with `EXTENSIONS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

__all__ = ["EXTENSIONS", "INTERACTION_EXTENSION_FIELDS", "WireModel"]

#: Fields tracejudge adds to `LLMInteraction`; serialised only when asked for (see below).
INTERACTION_EXTENSION_FIELDS = frozenset(
    {
        "model",
        "usage",
        "start_time",
        "end_time",
        "error",
        "finish_reason",
        "refusal",
        "alternatives",
        "reasoning",
        "server_tool_calls",
        "tool_results",
        "span_id",
        "response_id",
    }
)

#: Serialisation context key: ``model_dump(context={EXTENSIONS: True})`` keeps the
#: extension fields (what `to_json()` and `to_wire()` do).
EXTENSIONS = "tracejudge_extensions"


class WireModel(BaseModel):
    """Base of every model here.

    Validates instances of other pydantic models with the same shape (the official
    `composo` package's, say) through their dump, and leaves out of the JSON the
    optional fields listed in `_omit_when_none` when they are None, and the
    tracejudge extension fields listed in `_extensions` unless the serialisation
    context asks for them.
    """

    _omit_when_none: ClassVar[frozenset[str]] = frozenset()
    _extensions: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _from_other_model(cls, data: Any) -> Any:
        if isinstance(data, BaseModel) and not isinstance(data, cls):
            return data.model_dump()
        return data

    @model_serializer(mode="wrap")
    def _wire_form(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for key in self._omit_when_none:
            if key in data and data[key] is None:
                del data[key]
        if self._extensions:
            context = info.context
            keep = isinstance(context, Mapping) and bool(context.get(EXTENSIONS))
            for key in self._extensions:
                if key in data and (not keep or data[key] is None):
                    del data[key]
        return data
