"""The JSON-schema subset that tool_arguments validates against."""

from __future__ import annotations

import pytest

from tracejudge.evaluation._checks.schema import validate

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "unit": {"type": "string", "enum": ["C", "F"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "ratio": {"type": "number"},
        "verbose": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
            "additionalProperties": False,
        },
    },
    "required": ["city"],
    "additionalProperties": False,
}


def test_a_valid_call_has_no_errors() -> None:
    args = {
        "city": "Paris",
        "unit": "C",
        "days": 3,
        "ratio": 2,  # an integer is a number
        "verbose": False,
        "tags": ["a", "b"],
        "where": {"lat": 48.8, "lon": 2.3},
    }
    assert validate(args, WEATHER) == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, "$: missing required property 'city'"),
        ({"city": 7}, "$.city: expected string, got integer 7"),
        ({"city": "P", "unit": "K"}, "$.unit: 'K' is not one of 'C', 'F'"),
        ({"city": "P", "days": 2.5}, "$.days: expected integer, got number 2.5"),
        ({"city": "P", "days": True}, "$.days: expected integer, got boolean True"),
        ({"city": "P", "ratio": "2"}, "$.ratio: expected number, got string '2'"),
        ({"city": "P", "verbose": 1}, "$.verbose: expected boolean, got integer 1"),
        ({"city": "P", "days": 0}, "$.days: 0 is less than the minimum 1"),
        ({"city": "P", "extra": 1}, "$: unexpected property 'extra'"),
        ({"city": "P", "tags": ["a", 2]}, "$.tags[1]: expected string, got integer 2"),
        ({"city": "P", "tags": ["a"] * 4}, "$.tags: allows at most 3 items, got 4"),
        ({"city": "P", "where": {"lat": 1}}, "$.where: missing required property 'lon'"),
        ({"city": "P", "where": {"lat": 1, "lon": 2, "z": 0}}, "$.where: unexpected property 'z'"),
        ({"city": ""}, "$.city: shorter than 1 characters"),
    ],
)
def test_each_violation_is_reported_with_its_path(args: dict, error: str) -> None:
    assert error in validate(args, WEATHER)


def test_integral_floats_are_integers_and_bools_are_not_numbers() -> None:
    assert validate(3.0, {"type": "integer"}) == []
    assert validate(True, {"type": "number"}) != []
    assert validate(None, {"type": ["string", "null"]}) == []


def test_enum_compares_json_values() -> None:
    assert validate(1.0, {"enum": [1, 2]}) == []
    assert validate(True, {"enum": [1, 2]}) != []
    assert validate(1, {"enum": [True]}) != []


def test_any_of_and_one_of() -> None:
    optional_int = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert validate(None, optional_int) == []
    assert validate(4, optional_int) == []
    assert "matches none of the anyOf options" in validate("x", optional_int)[0]
    one = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert validate(1.5, one) == []
    assert "matches 2 of the oneOf options" in validate(1, one)[0]


def test_local_refs_are_followed() -> None:
    schema = {
        "type": "object",
        "properties": {"item": {"$ref": "#/$defs/Item"}},
        "$defs": {
            "Item": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        },
    }
    assert validate({"item": {"n": 1}}, schema) == []
    assert validate({"item": {}}, schema) == ["$.item: missing required property 'n'"]


def test_unknown_keywords_and_bad_patterns_are_lenient() -> None:
    assert validate("x", {"type": "string", "format": "email", "x-custom": 1}) == []
    assert validate("x", {"type": "string", "pattern": "(?<!"}) == []
    assert validate({"a": 1}, {}) == []
    assert validate({"a": 1}, True) == []
    assert validate({"a": 1}, False) == ["$: no value is allowed here"]
