"""The converter's fast paths give exactly what the plain paths give: msgspec decoding
versus the standard library, `construct` versus pydantic's `model_construct` and
validation, and the collector pause leaves `gc` as it found it."""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tracejudge.convert import _json, _otlp, traces_from_otlp, traces_from_records
from tracejudge.convert._construct import build, construct
from tracejudge.convert._tree import build_traces
from tracejudge.models import (
    LLMInput,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    LLMToolResponse,
    TokenUsage,
)

from ._helpers import FIXTURES


def _inputs() -> list[Path]:
    found = [p for p in sorted(FIXTURES.rglob("*")) if p.suffix in (".jsonl", ".pb")]
    return [p for p in found if "cassettes" not in p.parts and not p.name.endswith(".logs.pb")]


def _converted(path: Path) -> tuple[list[str], list[str]]:
    logs = path.with_name(path.name.replace(".pb", ".logs.pb"))
    traces = traces_from_otlp(path, logs=logs if path.suffix == ".pb" and logs.exists() else None)
    return [trace.to_json() for trace in traces], traces.warnings


def test_msgspec_and_the_standard_library_convert_every_fixture_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("msgspec")
    assert _json.ACCELERATED
    paths = _inputs()
    assert len(paths) > 40
    fast = {path: _converted(path) for path in paths}
    monkeypatch.setattr(_json, "_decode", None)
    for path in paths:
        assert _converted(path) == fast[path], path.name


_TEXTS: list[Any] = [
    '{"a": 1, "a": 2}',
    '{"big": 18446744073709551616, "neg": -9223372036854775809}',
    "1e400",
    "NaN",
    '"\\ud800"',
    "\ufeff{}",
    b"\xef\xbb\xbf{}",
    '{"a": 1} x',
    "[1,]",
    '{"a":"\\x41"}',
    '"a\tb"',
    "",
    "  ",
    b'{"a": "\xff"}',
    '{"a": [1.5, -0.0, 1e-400, "\\u00e9"]}',
    "[" * 5000 + "]" * 5000,
    '{"ok": true, "n": null}',
]


@pytest.mark.parametrize("text", _TEXTS, ids=range(len(_TEXTS)))
def test_loads_returns_and_raises_what_json_loads_does(text: Any) -> None:
    def outcome(loads: Any) -> Any:
        try:
            return ("value", repr(loads(text)))
        except (ValueError, RecursionError) as error:
            return ("error", type(error).__name__, str(error))

    assert outcome(_json.loads) == outcome(json.loads)


_BUILT: list[tuple[type[Any], dict[str, Any]]] = [
    (LLMToolCall, {"id": "call_1", "name": "search", "parameters": '{"q": "x"}'}),
    (LLMToolResponse, {"id": "call_1", "response": "sunny", "name": None}),
    (LLMToolResponse, {"id": "", "response": '"x"'}),
    (LLMInput, {"role": "user", "type": "text", "content": "hi"}),
    (
        LLMInput,
        {"role": "assistant", "type": "tool_call", "content": LLMToolCall(id="c", name="f")},
    ),
    (LLMOutput, {"type": "text", "content": "answer"}),
    (TokenUsage, {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}),
    (
        LLMInteraction,
        {
            "input_messages": [LLMInput(role="user", type="text", content="q")],
            "output_messages": [LLMOutput(type="text", content="a")],
            "tools_available": None,
            "model": "gpt-4o",
            "usage": TokenUsage(input_tokens=1),
            "start_time": 1.5,
            "end_time": 2.5,
            "span_id": "ab",
        },
    ),
]


@pytest.mark.parametrize(("model", "values"), _BUILT, ids=lambda v: getattr(v, "__name__", ""))
def test_construct_builds_what_model_construct_and_validation_build(
    model: type[Any], values: dict[str, Any]
) -> None:
    built = construct(model, **values)
    generic = model.model_construct(**values)
    validated = model(**values)
    for other in (generic, validated):
        assert type(built) is type(other)
        assert built.__dict__ == other.__dict__
        assert list(built.__dict__) == list(generic.__dict__)  # the fields' order too
        assert built.model_fields_set == other.model_fields_set
        assert built.__pydantic_extra__ == other.__pydantic_extra__
        assert built.__pydantic_private__ == other.__pydantic_private__
        assert built.model_dump_json() == other.model_dump_json()
        assert built == other


@pytest.mark.parametrize(
    ("model", "values"),
    [(m, v) for m, v in _BUILT if set(v) == set(m.model_fields)],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_build_with_every_field_builds_what_construct_builds(
    model: type[Any], values: dict[str, Any]
) -> None:
    ordered = {name: values[name] for name in model.model_fields}
    built, constructed = build(model, dict(ordered)), construct(model, **ordered)
    assert list(built.__dict__.items()) == list(constructed.__dict__.items())
    assert built.model_fields_set == constructed.model_fields_set
    assert built.__pydantic_extra__ == constructed.__pydantic_extra__
    assert built.__pydantic_private__ is None
    assert built.model_dump_json() == model(**values).model_dump_json()
    assert model.__new__ is object.__new__  # what `build` makes its instances with


def test_construct_hands_an_extra_value_to_model_construct() -> None:
    built = construct(LLMToolCall, id="c", name="f", parameters="{}", kind="x")
    assert built.__pydantic_extra__ == {"kind": "x"}
    assert built == LLMToolCall.model_construct(id="c", name="f", parameters="{}", kind="x")


def test_construct_leaves_a_missing_required_field_unset_as_model_construct_does() -> None:
    built = construct(LLMToolCall, parameters="{}", name="f")
    generic = LLMToolCall.model_construct(parameters="{}", name="f")
    assert list(built.__dict__.items()) == list(generic.__dict__.items())
    assert "id" not in built.__dict__
    assert built.model_fields_set == generic.model_fields_set


def test_conversion_leaves_the_collector_as_it_found_it() -> None:
    source = FIXTURES / "openllmetry.jsonl"
    assert gc.isenabled()
    assert traces_from_otlp(source)
    assert gc.isenabled()
    with pytest.raises(TypeError):
        traces_from_otlp(12)  # type: ignore[arg-type]
    assert gc.isenabled()
    gc.disable()
    try:
        assert traces_from_otlp(source)
        assert not gc.isenabled()
    finally:
        gc.enable()


_RAW_RESPONSES = [
    '{"id": "c1", "choices": [{"message": {"role": "assistant", "refusal": null}}]}',
    '{"id": "c1", "choices": [{"message": {"role": "assistant", "refusal": "I cannot"}}]}',
    '{"id": "c1", "choices": [{"message": {"refusal": ""}}]}',
    '{"object": "response", "output": [{"content": [{"type": "output_text"}]}]}',
    '{"object" : "response", "output": [{"content": [{"type": "refusal", "refusal": "no"}]}]}',
    '{"output": [{"content": [{"type": "refusal",\n "refusal":\n"no"}]}]}',
    '{"choices": [{"message": {"content": "say \\"refusal\\": x"}}]}',
    '{"choices": [{"message": {"refusal": nul',
]


@pytest.mark.parametrize("raw", _RAW_RESPONSES, ids=range(len(_RAW_RESPONSES)))
def test_openinference_reads_the_raw_response_only_when_it_matters(raw: str) -> None:
    from tracejudge.convert.conventions.formats import openinference

    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = {}
    read = openinference._raw_response(raw)
    assert openinference._refusal(read) == openinference._refusal(parsed)
    assert (read.get("object") == "response") == (parsed.get("object") == "response")


def test_converted_interactions_are_built_as_model_construct_builds_them() -> None:
    traces = traces_from_otlp(FIXTURES / "openllmetry.jsonl")
    interactions = [
        i
        for trace in traces
        for a in trace.agent_instance_by_id.values()
        for i in a.llm_interactions
    ]
    assert interactions
    for interaction in interactions:
        values = {name: getattr(interaction, name) for name in interaction.model_fields_set}
        generic = LLMInteraction.model_construct(**values)
        assert list(interaction.__dict__) == list(generic.__dict__)
        assert interaction.model_fields_set == generic.model_fields_set
        assert "tool_results" not in interaction.model_fields_set  # no tool span supplied any
        assert interaction == LLMInteraction.model_validate(interaction.model_dump())


def test_converted_agent_instances_are_built_as_validation_builds_them() -> None:
    from tracejudge.models import AgentInstance

    traces = traces_from_otlp(FIXTURES / "openinference.jsonl")
    agents = [agent for trace in traces for agent in trace.agent_instance_by_id.values()]
    assert agents
    for agent in agents:
        validated = AgentInstance(
            id=agent.id, name=agent.name, interactions=agent.interactions, span_id=agent.span_id
        )
        assert list(agent.__dict__) == list(validated.__dict__)
        assert agent.model_fields_set >= validated.model_fields_set
        assert agent.model_fields_set - validated.model_fields_set <= {"output", "handoff"}
        assert (
            agent.model_dump_json()
            == validated.model_copy(
                update={"output": agent.output, "handoff": agent.handoff}
            ).model_dump_json()
        )


def _reference_unflatten(attrs: dict[str, Any], prefix: str) -> dict[str, Any]:
    """`unflatten` as it was written before the one-pass index (the behaviour to keep)."""
    root: dict[str, Any] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        parts = key[len(start) :].split(".")
        node = root
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node.setdefault(parts[-1], value)
    return root


_FLATTENED: list[dict[str, Any]] = [
    {"llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "a"},
    {"llm.input_messages.0": None, "llm.input_messages.0.message.role": "user"},
    {"llm.input_messages.0.message": "text", "llm.input_messages.0.message.role": "user"},
    {"llm.input_messages.0.message.role": "user", "llm.input_messages.0.message": "late"},
    {"llm.input_messages.1.message.role": "a", "llm.input_messages.1.message.role.x": 1},
    {"llm.input_messages.": 1, "llm.input_messages..": 2, "llm.input_messages.0..x": 3},
    {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "q", "other.key": 1},
    {"llm.tools.0.tool.json_schema": "{}", "llm.tools.10.tool.json_schema": "[]"},
]


@pytest.mark.parametrize("attrs", _FLATTENED, ids=range(len(_FLATTENED)))
def test_the_one_pass_index_unflattens_as_the_plain_walk_does(attrs: dict[str, Any]) -> None:
    from tracejudge.convert._records import SpanRecord
    from tracejudge.convert._view import FLATTENED_PREFIXES, SpanView

    view = SpanView(SpanRecord("t", "s", None, "span", attributes=dict(attrs)))
    for prefix in FLATTENED_PREFIXES:
        expected = _reference_unflatten(attrs, prefix)
        assert view.unflatten(prefix) == expected, prefix
        digit_first = any(k[:1].isdigit() for k in expected)
        assert view.has_indexed(prefix) == digit_first, prefix


def test_a_small_conversion_leaves_the_generations_alone() -> None:
    assert gc.isenabled() and not gc.get_freeze_count()
    traces = traces_from_otlp(FIXTURES / "openllmetry.jsonl")
    oldest = {id(obj) for obj in gc.get_objects(generation=2)}
    assert id(traces) not in oldest and id(traces[0].root.llm_interactions[0]) not in oldest


def test_a_large_conversion_leaves_what_it_made_in_the_oldest_generation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracejudge.convert import _gc

    monkeypatch.setattr(_gc, "LARGE", 0)  # this fixture's conversion counts as large
    assert gc.isenabled() and not gc.get_freeze_count()
    traces = traces_from_otlp(FIXTURES / "openllmetry.jsonl")
    interaction = traces[0].root.llm_interactions[0]
    oldest = {id(obj) for obj in gc.get_objects(generation=2)}
    assert id(traces) in oldest and id(interaction) in oldest
    assert gc.isenabled()


def test_a_programs_frozen_objects_stay_frozen_through_a_conversion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracejudge.convert import _gc

    monkeypatch.setattr(_gc, "LARGE", 0)
    # A bounded cache (the `re` module's patterns, an lru_cache) drops its oldest entry when
    # full: a conversion may free a few frozen objects, freed, not thawed, but no longer
    # counted. Thawing (gc.unfreeze) would empty the permanent generation instead.
    re.purge()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen and traces_from_otlp(FIXTURES / "openllmetry.jsonl")
        after = gc.get_freeze_count()
        assert after <= frozen  # nothing added to the permanent generation
        assert after >= frozen * 0.99  # nothing thawed: at most a cache's evictions freed
    finally:
        gc.unfreeze()


def test_attributes_changed_in_place_between_conversions_are_read_again() -> None:
    from tracejudge.convert import traces_from_records
    from tracejudge.convert._otlp import decode

    spans, _, _ = decode((FIXTURES / "openinference.jsonl").read_bytes())
    key = "llm.input_messages.1.message.content"
    span = next(s for s in spans if key in s.attributes)  # converted alone: read last
    before = traces_from_records([span])
    span.attributes[key] = "a question changed in place"
    after = traces_from_records([span])
    assert "a question changed in place" not in before[0].to_json()
    assert "a question changed in place" in after[0].to_json()


def test_a_prefix_outside_the_index_is_refused_by_name() -> None:
    from tracejudge.convert._records import SpanRecord
    from tracejudge.convert._view import SpanView

    view = SpanView(SpanRecord("t", "s", None, "span", attributes={"llm.other.0": "x"}))
    with pytest.raises(ValueError, match="'llm.other' is not one of FLATTENED_PREFIXES"):
        view.unflatten("llm.other")
    with pytest.raises(ValueError, match="FLATTENED_PREFIXES"):
        view.has_indexed("gen_ai.other")


def test_releasing_records_as_traces_are_built_changes_no_trace() -> None:
    path = FIXTURES / "openinference.jsonl"
    kept, _, _ = _otlp.decode_stream(lambda: open(path, "rb"))
    released = list(kept)
    expected = [t.model_dump_json() for t in build_traces(kept, [])]
    assert [t.model_dump_json() for t in build_traces(released, [], release=True)] == expected
    assert released == [] and len(kept) > 0  # emptied only where asked
    # The public entry points release only lists of their own, never the caller's.
    traces_from_records(kept)
    assert len(kept) > 0
