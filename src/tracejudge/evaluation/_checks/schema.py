"""A small JSON-schema validator: the subset that tool definitions use.

Tool schemas in practice are shallow: an object with typed properties, a
`required` list, enums, arrays of items, sometimes nested objects, `$ref`s into
`$defs` (pydantic) and `anyOf` for optional fields. This module validates that
subset without a dependency. Keywords it does not know are ignored, so an
unusual schema can only make it more lenient, never reject a valid call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["validate", "type_name"]

#: Past this depth a (probably recursive) `$ref` chain is not followed further.
_MAX_DEPTH = 32


def validate(instance: Any, schema: Any) -> list[str]:
    """Every way `instance` breaks `schema`, each as "<json path>: <problem>"; [] when valid."""
    errors: list[str] = []
    _validate(instance, schema, "$", schema if isinstance(schema, Mapping) else {}, errors, 0)
    return errors


#: JSON type names of Python values, bool before int (a bool is an int in Python).
_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return next(
        (name for kind, name in _TYPE_NAMES if isinstance(value, kind)), type(value).__name__
    )


def _is_type(value: Any, expected: str) -> bool:
    # bool is never a number in JSON; 2.0 is an integer in JSON Schema.
    actual = type_name(value)
    if expected == "integer":
        return actual == "integer" or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if expected == "number":
        return actual in ("integer", "number")
    if expected in ("null", "boolean", "string", "array", "object"):
        return actual == expected
    return True  # an unknown type name: be lenient


def _json_equal(a: object, b: object) -> bool:
    # enum/const compare JSON values: True is not 1, 1 equals 1.0.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return a == b


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    """A local `#/...` reference, or None when it cannot be followed."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for raw in ref[1:].split("/"):
        if not raw:
            continue
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{key!r}]"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _validate(
    value: Any,
    schema: Any,
    path: str,
    root: Mapping[str, Any],
    errors: list[str],
    depth: int,
) -> None:
    if schema is True or schema is None or depth > _MAX_DEPTH:
        return
    if schema is False:
        errors.append(f"{path}: no value is allowed here")
        return
    if not isinstance(schema, Mapping):
        return

    if isinstance(schema.get("$ref"), str):
        target = _resolve(schema["$ref"], root)
        if target is not None:
            _validate(value, target, path, root, errors, depth + 1)

    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if names and not any(_is_type(value, str(name)) for name in names):
            errors.append(
                f"{path}: expected {' or '.join(map(str, names))}, got {type_name(value)} "
                f"{_short(value)}"
            )
            return  # further keywords would only repeat the same mistake

    if "enum" in schema and isinstance(schema["enum"], list):
        if not any(_json_equal(value, option) for option in schema["enum"]):
            options = ", ".join(_short(o) for o in schema["enum"])
            errors.append(f"{path}: {_short(value)} is not one of {options}")
    if "const" in schema and not _json_equal(value, schema["const"]):
        errors.append(f"{path}: must be {_short(schema['const'])}, got {_short(value)}")

    if isinstance(value, dict):
        _validate_object(value, schema, path, root, errors, depth)
    elif isinstance(value, list):
        _validate_array(value, schema, path, root, errors, depth)
    elif isinstance(value, str):
        _validate_string(value, schema, path, errors)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(value, schema, path, errors)

    _validate_combinators(value, schema, path, root, errors, depth)


def _validate_object(
    value: dict[str, Any],
    schema: Mapping[str, Any],
    path: str,
    root: Mapping[str, Any],
    errors: list[str],
    depth: int,
) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    if isinstance(required, list):
        for key in required:
            if isinstance(key, str) and key not in value:
                errors.append(f"{path}: missing required property {key!r}")
    patterns = schema.get("patternProperties")
    patterns = patterns if isinstance(patterns, Mapping) else {}
    additional = schema.get("additionalProperties", True)
    for key, item in value.items():
        matched = False
        if key in properties:
            matched = True
            _validate(item, properties[key], _child(path, key), root, errors, depth + 1)
        for pattern, sub in patterns.items():
            try:
                hit = re.search(pattern, key) is not None
            except re.error:
                continue
            if hit:
                matched = True
                _validate(item, sub, _child(path, key), root, errors, depth + 1)
        if matched:
            continue
        if additional is False:
            errors.append(f"{path}: unexpected property {key!r}")
        elif isinstance(additional, Mapping):
            _validate(item, additional, _child(path, key), root, errors, depth + 1)
    if isinstance(schema.get("minProperties"), int) and len(value) < schema["minProperties"]:
        errors.append(f"{path}: needs at least {schema['minProperties']} properties")
    if isinstance(schema.get("maxProperties"), int) and len(value) > schema["maxProperties"]:
        errors.append(f"{path}: allows at most {schema['maxProperties']} properties")


def _validate_array(
    value: list[Any],
    schema: Mapping[str, Any],
    path: str,
    root: Mapping[str, Any],
    errors: list[str],
    depth: int,
) -> None:
    items = schema.get("items")
    prefix = schema.get("prefixItems")
    start = 0
    if isinstance(prefix, list):  # 2020-12 tuples
        for index, sub in enumerate(prefix[: len(value)]):
            _validate(value[index], sub, _child(path, index), root, errors, depth + 1)
        start = len(prefix)
    if isinstance(items, list):  # draft-7 tuples
        for index, sub in enumerate(items[: len(value)]):
            _validate(value[index], sub, _child(path, index), root, errors, depth + 1)
    elif items is not None:
        for index in range(start, len(value)):
            _validate(value[index], items, _child(path, index), root, errors, depth + 1)
    if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
        errors.append(f"{path}: needs at least {schema['minItems']} items, got {len(value)}")
    if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
        errors.append(f"{path}: allows at most {schema['maxItems']} items, got {len(value)}")
    if schema.get("uniqueItems") is True:
        for index, item in enumerate(value):
            if any(_json_equal(item, other) for other in value[:index]):
                errors.append(f"{path}: items must be unique ({_short(item)} repeats)")
                break


def _validate_string(value: str, schema: Mapping[str, Any], path: str, errors: list[str]) -> None:
    if isinstance(schema.get("minLength"), int) and len(value) < schema["minLength"]:
        errors.append(f"{path}: shorter than {schema['minLength']} characters")
    if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']} characters")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, value) is None:
                errors.append(f"{path}: {_short(value)} does not match pattern {pattern!r}")
        except re.error:
            pass  # a pattern Python cannot compile (ECMA syntax): do not judge by it


def _validate_number(value: float, schema: Mapping[str, Any], path: str, errors: list[str]) -> None:
    def bound(key: str) -> float | None:
        limit = schema.get(key)
        if isinstance(limit, bool) or not isinstance(limit, (int, float)):
            return None
        return limit

    if (limit := bound("minimum")) is not None and value < limit:
        errors.append(f"{path}: {value} is less than the minimum {limit}")
    if (limit := bound("maximum")) is not None and value > limit:
        errors.append(f"{path}: {value} is greater than the maximum {limit}")
    if (limit := bound("exclusiveMinimum")) is not None and value <= limit:
        errors.append(f"{path}: {value} must be greater than {limit}")
    if (limit := bound("exclusiveMaximum")) is not None and value >= limit:
        errors.append(f"{path}: {value} must be less than {limit}")
    if (step := bound("multipleOf")) is not None and step > 0:
        quotient = value / step
        if not math.isclose(quotient, round(quotient), abs_tol=1e-9):
            errors.append(f"{path}: {value} is not a multiple of {step}")


def _validate_combinators(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    root: Mapping[str, Any],
    errors: list[str],
    depth: int,
) -> None:
    def failures(sub: Any) -> list[str]:
        found: list[str] = []
        _validate(value, sub, path, root, found, depth + 1)
        return found

    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for sub in all_of:
            errors.extend(failures(sub))
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of:
        results = [failures(sub) for sub in any_of]
        if all(results):
            best = min(results, key=len)  # the branch it came closest to
            errors.append(f"{path}: matches none of the anyOf options ({'; '.join(best)})")
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        results = [failures(sub) for sub in one_of]
        passing = sum(1 for found in results if not found)
        if passing == 0:
            best = min(results, key=len)
            errors.append(f"{path}: matches none of the oneOf options ({'; '.join(best)})")
        elif passing > 1:
            errors.append(f"{path}: matches {passing} of the oneOf options, exactly one expected")
    not_schema = schema.get("not")
    if isinstance(not_schema, (Mapping, bool)) and not failures(not_schema):
        errors.append(f"{path}: must not match the 'not' schema")
