"""OpenInference's flattened keys are read in one pass over the span's keys (`_oi_keys`);
what it reads must be what the generic nested form of the same keys gives, for every key
shape OpenInference writes, and spans with other key shapes are read from the nested form."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.convert._helpers import fixture
from tracejudge.convert._otlp import decode_stream
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions.formats import _oi_keys, openinference

SEED = 20261201
_IN = "llm.input_messages"
_OUT = "llm.output_messages"


def _span(attrs: dict[str, Any], name: str = "ChatCompletion") -> SpanRecord:
    attrs = {"openinference.span.kind": "LLM", **attrs}
    return SpanRecord(trace_id="t1", span_id="s1", parent_id=None, name=name, attributes=attrs)


def _both(span: SpanRecord, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """The span read by the one pass, and read from the nested form."""
    fast = openinference.extract(span)
    with monkeypatch.context() as patched:
        patched.setattr(_oi_keys, "records", _oi_keys.records_from_tree)
        generic = openinference.extract(span)
    return fast, generic


def _recorded_spans() -> list[SpanRecord]:
    spans = []
    for name in ("openinference", "openinference_responses"):
        for suffix in (".jsonl", ".pb"):
            path = fixture(name, suffix)
            records, _, _ = decode_stream(lambda path=path: path.open("rb"))
            spans += [s for s in records if openinference.is_llm(s)]
    return spans


def test_recorded_spans_take_the_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    spans = _recorded_spans()
    assert len(spans) > 10

    def refused(attrs: Any) -> Any:
        raise AssertionError(f"read from the nested form: {sorted(attrs)}")

    expected = []
    for span in spans:
        fast, generic = _both(span, monkeypatch)
        assert fast == generic
        expected.append(fast)
    monkeypatch.setattr(_oi_keys, "records_from_tree", refused)
    assert [openinference.extract(span) for span in spans] == expected


def _value(rng: random.Random, *choices: Any) -> Any:
    return rng.choice([*choices, None, 7, "", "x y"])


def _random_attrs(rng: random.Random) -> dict[str, Any]:
    """Keys of every shape the one pass knows, at random indices (with gaps), with
    ordinary and odd values, in random order."""
    items: list[tuple[str, Any]] = []
    roles = ("user", "assistant", "system", "tool", "function", "Tool", "developer")
    for section in (_IN, _OUT):
        for i in rng.sample(range(12), rng.randrange(4)):
            m = f"{section}.{i}.message."
            for field in rng.sample(sorted(_oi_keys._MESSAGE_FIELDS), rng.randrange(4)):
                items.append((m + field, _value(rng, *roles, "call_1", '{"q": 1}')))
            for j in rng.sample(range(5), rng.randrange(3)):
                call = f"{m}tool_calls.{j}.tool_call."
                for field in rng.sample(["id", "function.name", "function.arguments"], 2):
                    items.append((call + field, _value(rng, "call_2", "web_search_call", "{}")))
            for k in rng.sample(range(5), rng.randrange(3)):
                part = f"{m}contents.{k}.message_content."
                for field in rng.sample(["type", "text"], rng.randrange(1, 3)):
                    items.append((part + field, _value(rng, "text", "reasoning", "image", "hi")))
    schema = json.dumps({"type": "function", "function": {"name": "f", "parameters": {}}})
    for i in rng.sample(range(4), rng.randrange(3)):
        items.append((f"llm.tools.{i}.tool.json_schema", _value(rng, schema, "{bad")))
    for section, field in (("llm.prompts", "prompt.text"), ("llm.choices", "completion.text")):
        for i in rng.sample(range(4), rng.randrange(2)):
            items.append((f"{section}.{i}.{field}", _value(rng, "once upon")))
    rng.shuffle(items)
    return dict(items)


def test_the_one_pass_reads_what_the_nested_form_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(SEED)
    for _ in range(400):
        attrs = _random_attrs(rng)
        assert _oi_keys.records(SpanView(_span(attrs))) is not None
        name = rng.choice(["ChatCompletion", "Response"])
        fast, generic = _both(_span(attrs, name), monkeypatch)
        assert fast == generic, attrs


@pytest.mark.parametrize(
    "odd",
    [
        {f"{_IN}.0.message.content.extra": "b"},  # a value that is also a parent
        {f"{_IN}.01.message.content": "b"},  # two spellings of one index
        {f"{_IN}.x.message.content": "b"},
        {f"{_IN}.0.message.tool_calls.0.tool_call.name": "f"},
        {f"{_IN}.0.message": "b"},
        {f"{_IN}.0.message.function_call.name": "f"},
    ],
)
def test_other_key_shapes_are_read_from_the_nested_form(
    odd: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    attrs = {f"{_IN}.0.message.role": "user", f"{_IN}.0.message.content": "a", **odd}
    fast = _oi_keys.records(SpanView(_span(attrs)))
    assert fast == _oi_keys.records_from_tree(SpanView(_span(attrs)))
    extraction = openinference.extract(_span(attrs))
    first = extraction.inputs[0]
    assert (first.role, first.content) == ("user", "a")  # the first value seen stays


def test_two_spellings_of_an_index_are_two_messages() -> None:
    attrs = {f"{_IN}.1.message.content": "one", f"{_IN}.01.message.content": "zero-one"}
    assert [m.content for m in openinference.extract(_span(attrs)).inputs] == ["one", "zero-one"]


def test_a_legacy_function_call_under_function_call_is_read() -> None:
    attrs = {
        f"{_OUT}.0.message.role": "assistant",
        f"{_OUT}.0.message.function_call.name": "lookup",
        f"{_OUT}.0.message.function_call.arguments": '{"q": 1}',
    }
    (output,) = openinference.extract(_span(attrs)).outputs
    assert (output.content.name, output.content.parameters) == ("lookup", '{"q": 1}')


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({f"{_IN}.0.message.role": "user"}, True),
        ({f"{_IN}.3.message.content": "hi"}, True),
        ({f"{_OUT}.0.message.contents.0.message_content.text": "hi"}, True),
        ({"llm.prompts.0.prompt.text": "hi"}, True),
        ({"llm.choices.x": "hi"}, True),
        ({"llm.tools.0.tool.json_schema": "{}"}, False),
        ({_IN: "[]", "llm.model_name": "m"}, False),
    ],
)
def test_has_messages(attrs: dict[str, Any], expected: bool) -> None:
    span = _span(attrs)
    assert openinference.has_messages(span) is expected
    assert openinference.extract(span).has_content is expected


_RAW_RESPONSES = [
    '{"object": "response", "output": [{"content": [{"type": "output_text"}]}]}',
    '{"object": "response", "output": [{"content": [{"type": "refusal", "refusal": "no"}]}]}',
    '{"output": [{"content": [{"type": "refus\\u0061l", "refus\\u0061l": "no"}]}]}',
    '{"output": [{"content": [{"type": "refusal"}, {"type": "refusal"}]}]}',
    '{"object": "response", "output": [{"content": [{"type": "refusal"}, {"type": "refusal"}]}]}',
    '{"output": [{"content": [{"type": "output_text", "text": "refusal"}]}]}',
]


@pytest.mark.parametrize("raw", _RAW_RESPONSES, ids=range(len(_RAW_RESPONSES)))
def test_a_responses_span_reads_the_raw_response_only_for_a_refusal(raw: str) -> None:
    # Of a span named as a Responses API call only the refusal is read: the same refusal.
    read = openinference._raw_response(raw, responses_span=True)
    assert openinference._refusal(read) == openinference._refusal(openinference._raw_response(raw))
    if "refusal" not in raw:
        assert read == {}
