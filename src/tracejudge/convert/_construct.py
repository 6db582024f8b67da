"""`construct(Model, **values)`: a model instance from values already of their fields' types,
without validation: what `Model.model_construct(**values)` gives, in a fifth of the time;
`build(Model, {every field: value})`, the same in half of `construct`'s time, for the
messages the converter makes by the hundred thousand.

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

from collections.abc import Set as AbstractSet
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["build", "construct"]

M = TypeVar("M", bound=BaseModel)

_IMMUTABLE = (type(None), str, int, float, bool, tuple, frozenset)


class _Plan:
    """How to build instances of one model class: a template of its fields in order (the
    default of each optional one), the names of all fields, and of the required ones."""

    __slots__ = ("template", "names", "required")

    def __init__(self, template: dict[str, Any], required: frozenset[str]) -> None:
        self.template = template
        self.names = frozenset(template)
        self.required = required


_plans: dict[type[BaseModel], _Plan | None] = {}


def _plan(cls: type[BaseModel]) -> _Plan | None:
    if cls.__pydantic_post_init__ or cls.__pydantic_root_model__:
        return None
    template: dict[str, Any] = {}
    required = set()
    for name, info in cls.model_fields.items():
        if info.alias not in (None, name) or info.validation_alias not in (None, name):
            return None
        if info.default_factory is not None:
            return None
        if info.is_required():
            template[name] = None  # a place kept in field order; always given
            required.add(name)
        elif isinstance(info.default, _IMMUTABLE):
            template[name] = info.default
        else:
            return None
    return _Plan(template, frozenset(required))


def construct(cls: type[M], **values: Any) -> M:
    """`cls.model_construct(**values)`, faster (see the module's docstring)."""
    try:
        plan = _plans[cls]
    except KeyError:
        plan = _plans[cls] = _plan(cls)
    # An extra value, or a required field left out: the generic path places them.
    if plan is None or not plan.names >= values.keys() or not plan.required <= values.keys():
        return cls.model_construct(**values)
    data = plan.template.copy()  # the fields in their order, as model_construct has them
    data.update(values)
    return build(cls, data, values.keys())


def build(cls: type[M], data: dict[str, Any], given: AbstractSet[str] | None = None) -> M:
    """`construct(cls, **data)` where `data` holds every field of `cls`, in field order, and
    nothing else (the caller guarantees it: the test suite checks each caller's models).
    `given` names the fields counted as set (`model_fields_set`), when not all of them.
    `data` becomes the instance's own: do not use it again."""
    try:
        extra = _extras[cls]
    except KeyError:
        extra = _extras[cls] = cls.model_config.get("extra") == "allow"
    # pydantic keeps these (and `__dict__`) in slots of BaseModel: their descriptors set them
    # directly, in half the time `object.__setattr__` takes to find them (models here
    # define no __new__).
    instance = _new(cls)
    _set_dict(instance, data)
    _set_fields_set(instance, set(data if given is None else given))
    _set_extra(instance, {} if extra else None)
    _set_private(instance, None)
    return instance


_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_extras: dict[type[BaseModel], bool] = {}
