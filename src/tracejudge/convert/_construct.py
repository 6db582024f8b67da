"""`construct(Model, **values)`: a model instance from values already of their fields' types,
without validation: what `Model.model_construct(**values)` gives, in a fifth of the time.

The converter builds tens of thousands of messages from values it made itself (`as_str`,
`to_json_string`, `as_int`); validating them again, or even `model_construct`'s generic
loop over aliases, was a large share of its time. Only code that guarantees the types may
use this; anything read from outside goes through validation.

A model this shortcut cannot build exactly as `model_construct` does (a default factory
or a mutable default, a post-init hook, aliases, a root model) is handed to
`model_construct`, and so is any value that is not a field (an extra). The test suite
compares the two for every model the converter builds this way.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["construct"]

M = TypeVar("M", bound=BaseModel)

_IMMUTABLE = (type(None), str, int, float, bool, tuple, frozenset)
# Per model class: its fields' (name, default) in order (`_REQUIRED` when required), and
# whether extras are allowed; None when the shortcut does not apply.
_Plan = tuple[tuple[tuple[str, Any], ...], bool]
_plans: dict[type[BaseModel], _Plan | None] = {}
_REQUIRED = object()
_set = object.__setattr__


def _plan(cls: type[BaseModel]) -> _Plan | None:
    if cls.__pydantic_post_init__ or cls.__pydantic_root_model__:
        return None
    fields = []
    for name, info in cls.model_fields.items():
        if info.alias not in (None, name) or info.validation_alias not in (None, name):
            return None
        if info.default_factory is not None:
            return None
        if info.is_required():
            fields.append((name, _REQUIRED))
        elif isinstance(info.default, _IMMUTABLE):
            fields.append((name, info.default))
        else:
            return None
    return tuple(fields), cls.model_config.get("extra") == "allow"


def construct(cls: type[M], **values: Any) -> M:
    """`cls.model_construct(**values)`, faster (see the module's docstring)."""
    try:
        plan = _plans[cls]
    except KeyError:
        plan = _plans[cls] = _plan(cls)
    if plan is None:
        return cls.model_construct(**values)
    fields, allows_extra = plan
    data: dict[str, Any] = {}
    given = 0
    for name, default in fields:
        if name in values:
            data[name] = values[name]
            given += 1
        elif default is not _REQUIRED:
            data[name] = default
    if given != len(values):  # an extra value: the generic path places it
        return cls.model_construct(**values)
    instance = cls.__new__(cls)
    _set(instance, "__dict__", data)
    _set(instance, "__pydantic_fields_set__", set(values))
    _set(instance, "__pydantic_extra__", {} if allows_extra else None)
    _set(instance, "__pydantic_private__", None)
    return instance
