"""OpenLLMetry's pre-0.55 indexed keys: whether a span has them, and its messages read
from them in one pass.

OpenLLMetry 0.54 and earlier write `gen_ai.prompt.{i}.<field>`,
`gen_ai.prompt.{i}.tool_calls.{j}.<field>`, the same under `gen_ai.completion`, and
`llm.request.functions.{i}.<field>`. Read through the generic nested-dict index
(`SpanView.unflatten`), a legacy span's keys cost a fifth of its conversion; these
"regular" shapes are read here straight into one dict per message instead, with what
`unflatten` then `indexed` give for them. Any other key below these prefixes that
starts with a digit (a leading zero, a deeper path, a value where a parent goes) makes
`read` answer None, and the caller reads the span the generic way.

What each key is (`_shape`) is worked out once per key string and conversion
(`ConversionMemo`): instrumentations write the same keys on every span.
"""

from __future__ import annotations

from typing import Any

from tracejudge import semconv
from tracejudge.convert._common import in_order, list_index
from tracejudge.convert._memo import REMEMBERED_KEYS, ConversionMemo

__all__ = ["PROMPTS", "COMPLETIONS", "FUNCTIONS", "TOOL_CALLS", "has_indexed_keys", "read"]

#: The groups of `read`'s answer, in its order.
PROMPTS, COMPLETIONS, FUNCTIONS = 0, 1, 2
#: The field of a message that holds its tool calls (`{i}.tool_calls.{j}.<field>`).
TOOL_CALLS = "tool_calls"

_STARTS = (
    (semconv.GEN_AI_PROMPT + ".", PROMPTS),
    (semconv.GEN_AI_COMPLETION + ".", COMPLETIONS),
    (semconv.LLM_REQUEST_FUNCTIONS + ".", FUNCTIONS),
)

# A key's shape: None when it is no legacy indexed key (no legacy prefix, or a first
# segment that does not start with a digit: `has_indexed` and `indexed` ignore those);
# _IRREGULAR for one that only the generic reading gets right; else
# (group, index, field, tool call index or -1, tool call field).
_Shape = tuple[int, int, str, int, str]
_IRREGULAR: _Shape = (-1, -1, "irregular", -1, "")  # (sentinels: compared by identity)
_UNSEEN: _Shape = (-1, -1, "unseen", -1, "")
# The memo's `legacy_plain` and `legacy_keys`: the keys known to be no legacy key, and the
# ones known to be one, as sets: a span's whole key view is compared with them at C speed
# (`has_indexed_keys`).


def _shape_of(key: str) -> _Shape | None:
    found = next((item for item in _STARTS if key.startswith(item[0])), None)
    if found is None:
        return None
    start, group = found
    segments = key[len(start) :].split(".")
    if not segments[0][:1].isdigit():
        return None
    index = list_index(segments[0])
    if index is None:
        return _IRREGULAR
    if len(segments) == 2 and segments[1] and segments[1] != TOOL_CALLS:
        return (group, index, segments[1], -1, "")
    if len(segments) == 4 and group != FUNCTIONS and segments[1] == TOOL_CALLS:
        call = list_index(segments[2])
        if call is not None and segments[3]:
            return (group, index, TOOL_CALLS, call, segments[3])
    return _IRREGULAR


def _shape(key: str, memo: ConversionMemo) -> _Shape | None:
    shapes: dict[str, _Shape | None] = memo.legacy_shapes
    try:
        return shapes[key]
    except KeyError:
        pass
    shape = _shape_of(key)
    if len(shapes) >= REMEMBERED_KEYS:
        shapes.clear()
        memo.legacy_plain.clear()
        memo.legacy_keys.clear()
    shapes[key] = shape
    (memo.legacy_plain if shape is None else memo.legacy_keys).add(key)
    return shape


def has_indexed_keys(attrs: dict[str, Any], memo: ConversionMemo) -> bool:
    """Whether any key is `gen_ai.prompt.<digit>…`, `gen_ai.completion.<digit>…` or
    `llm.request.functions.<digit>…` (what `SpanView.has_indexed` answers for the three)."""
    keys = attrs.keys()
    if keys <= memo.legacy_plain:  # every key seen before, none a legacy key: most spans
        return False
    if not keys.isdisjoint(memo.legacy_keys):
        return True
    return any(_shape(key, memo) is not None for key in keys)


def read(
    attrs: dict[str, Any], memo: ConversionMemo
) -> tuple[dict[int, dict[str, Any]], ...] | None:
    """The messages of the prompt, of the completion and the request's functions, each a
    dict of field dicts by index (in no order: `sorted` gives the index order); a
    message's `tool_calls` (when it has any) a list of field dicts in index order. None
    when some key is irregular (see above)."""
    groups: tuple[dict[int, dict[str, Any]], ...] = ({}, {}, {})
    with_calls: list[dict[str, Any]] = []
    get = memo.legacy_shapes.get
    for key in attrs:
        shape = get(key, _UNSEEN)
        if shape is None:  # most keys: the value is not even looked up
            continue
        if shape is _UNSEEN:
            shape = _shape(key, memo)
            if shape is None:
                continue
        if shape is _IRREGULAR:
            return None
        group, index, field, call, call_field = shape
        entries = groups[group]
        entry = entries.get(index)
        if entry is None:
            entry = entries[index] = {}
        if call < 0:
            entry[field] = attrs[key]
            continue
        calls = entry.get(TOOL_CALLS)
        if calls is None:
            calls = entry[TOOL_CALLS] = {}
            with_calls.append(entry)
        fields = calls.get(call)
        if fields is None:
            fields = calls[call] = {}
        fields[call_field] = attrs[key]
    for entry in with_calls:
        entry[TOOL_CALLS] = in_order(entry[TOOL_CALLS])
    return groups
