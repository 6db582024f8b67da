"""An OpenInference span's flattened keys (`llm.input_messages.{i}.message.role` ...) as
records: one dict per message, tool, prompt or choice, in index order (gaps skipped).

The keys are read in one pass straight into the records. The generic reading
(`SpanView.unflatten`: nested dicts for every path, walked again by each reader) cost more
than half of an OpenInference span's conversion. The pass knows only the key shapes
OpenInference writes, none of which is the parent of another; a span with any other key
under these prefixes (a key that is both a value and a parent, an index like `01` or `x`,
a field OpenInference does not write) is read from the generic nested form instead, which
gives the same records for the same keys (the test suite checks that the two agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert._common import in_order, indexed, list_index
from tracejudge.convert._json import is_mapping
from tracejudge.convert._memo import REMEMBERED_KEYS
from tracejudge.convert._view import SpanView

__all__ = ["SECTIONS", "records", "records_from_tree"]

#: The indexed sections, in the order `records` gives them: input messages, output
#: messages, tools (`{json_schema}`), legacy Completions prompts and choices (`{text}`).
SECTIONS = (
    semconv.LLM_INPUT_MESSAGES,
    semconv.LLM_OUTPUT_MESSAGES,
    semconv.LLM_TOOLS,
    "llm.prompts",
    "llm.choices",
)
# Below `{i}.` of the sections that are not messages: the path to their one field.
_ITEM_PATHS = {
    2: (semconv.OI_TOOL, semconv.OI_JSON_SCHEMA),
    3: ("prompt", "text"),
    4: ("completion", "text"),
}
# Below `{i}.message.`: the message's own fields, its tool calls (`tool_calls.{j}.tool_call.`
# + id, function.name, function.arguments: `{id, name, arguments}`) and its contents
# (`contents.{k}.message_content.` + type, text: `{type, text}`).
_MESSAGE_FIELDS = frozenset(
    {"role", "content", "name", "id", "tool_call_id"}
    | {"function_call_name", "function_call_arguments_json"}  # legacy `function_call`
)
_CALLS = "tool_calls"
_PARTS = "contents"
_CALL_PATHS: dict[tuple[str, ...], str] = {
    ("id",): "id",
    ("function", "name"): "name",
    ("function", "arguments"): "arguments",
}
_PART_PATHS: dict[tuple[str, ...], str] = {("type",): "type", ("text",): "text"}

Record = dict[str, Any]


def records(view: SpanView) -> list[list[Record]]:
    """The records of each of `SECTIONS`, in index order.

    A message record holds the message's fields (`role`, `content` ...), its tool calls
    under `tool_calls` and its content parts under `contents`, each a dict by index (absent
    when the message has none). Read from the nested form, a call may also have a
    `call_id`, and `builtin: False` marks a call without a function (whose `name` then
    cannot be a built-in tool's item type), as well as a legacy `function_call` object,
    which comes last.
    """
    found: list[dict[int, Record]] = [{}, {}, {}, {}, {}]
    # The highest index of each section so far: records are made in index order (and then
    # need no sorting, a tenth of the pass's time) unless one comes below it.
    tops = [-1, -1, -1, -1, -1]
    in_index_order = True
    shapes = view.memo.oi_shapes
    for key, value in view.attributes.items():
        try:
            shape = shapes[key]
        except KeyError:
            shape = _learn(key, shapes)
        if shape is None:
            continue
        section, index, group, position, field = shape
        if section < 0:
            return records_from_tree(view)
        items = found[section]
        record = items.get(index)
        if record is None:
            record = items[index] = {}
            if index > tops[section]:
                tops[section] = index
            else:
                in_index_order = False
        if group is None:
            record[field] = value
            continue
        members = record.get(group)
        if members is None:
            record[group] = {position: {field: value}}
            continue
        member = members.get(position)
        if member is None:
            members[position] = {field: value}
        else:
            member[field] = value
    if in_index_order:
        return [list(items.values()) for items in found]
    return [in_order(items) if items else [] for items in found]


# Where a key's value goes: (section, index, group, position, field): the field of the
# record at `index` of the section, or of the member at `position` of its `group` (tool
# calls or contents). None for a key of no section, `_UNKNOWN` for one whose shape the
# pass does not know.
_Shape = tuple[int, int, "str | None", int, str]
_UNKNOWN: _Shape = (-1, 0, None, 0, "")
# Instrumentations write the same keys on every span, so each key is split once per
# conversion (`ConversionMemo.oi_shapes`).
_STARTS = tuple(section + "." for section in SECTIONS)


def _learn(key: str, shapes: dict[str, _Shape | None]) -> _Shape | None:
    shape = None
    for section, start in enumerate(_STARTS):
        if key.startswith(start):
            shape = _shape(section, key[len(start) :].split(".")) or _UNKNOWN
            break
    if len(shapes) >= REMEMBERED_KEYS:
        shapes.clear()
    shapes[key] = shape
    return shape


def _shape(section: int, path: list[str]) -> _Shape | None:
    """The shape of `{index}.rest` (split at the dots), when the pass knows it."""
    index = list_index(path[0])
    rest = tuple(path[1:])
    if index is None:
        return None
    if section in _ITEM_PATHS:
        outer, field = _ITEM_PATHS[section]
        return (section, index, None, 0, field) if rest == (outer, field) else None
    if len(rest) < 2 or rest[0] != semconv.OI_MESSAGE:
        return None
    if len(rest) == 2:
        return (section, index, None, 0, rest[1]) if rest[1] in _MESSAGE_FIELDS else None
    group, position = rest[1], list_index(rest[2])
    leaf: str | None
    if group == _CALLS and rest[3:4] == (semconv.OI_TOOL_CALL,):
        leaf = _CALL_PATHS.get(rest[4:])
    elif group == _PARTS and rest[3:4] == (semconv.OI_MESSAGE_CONTENT,):
        leaf = _PART_PATHS.get(rest[4:])
    else:
        return None
    return (section, index, group, position, leaf) if leaf and position is not None else None


# ------------------------------------------------------------------ the generic nested form


def records_from_tree(view: SpanView) -> list[list[Record]]:
    """`records`, read from the nested form of the keys: any key shape; where a key is
    both a value and a parent the first value is kept, and values that are not objects
    where objects belong are read as nothing, as the readers of the nested form read them."""
    found: list[list[Record]] = []
    for section, prefix in enumerate(SECTIONS):
        entries = indexed(view.unflatten(prefix))
        if section in _ITEM_PATHS:
            outer, field = _ITEM_PATHS[section]
            items = []
            for entry in entries:
                node = entry.get(outer) if is_mapping(entry) else None
                items.append({field: node.get(field)} if is_mapping(node) else {})
            found.append(items)
        else:
            found.append([_message_from_tree(entry) for entry in entries])
    return found


def _message_from_tree(entry: Any) -> Record:
    message = entry.get(semconv.OI_MESSAGE) if is_mapping(entry) else None
    if not is_mapping(message):
        return {}  # read as an empty user message
    record = dict(message)
    record.pop(_CALLS, None)
    calls: dict[int, Record] = {}
    for item in indexed(message.get(_CALLS)):
        call = item.get(semconv.OI_TOOL_CALL) if is_mapping(item) else None
        if is_mapping(call):
            calls[len(calls)] = _call_from_tree(call)
    legacy_call = message.get("function_call")  # (a `function_call_name` comes first)
    if message.get("function_call_name") is None and is_mapping(legacy_call):
        calls[len(calls)] = {**_call_from_tree(legacy_call), "builtin": False}
    if calls:
        record[_CALLS] = calls
    if _PARTS in message:
        parts: dict[int, Record] = {}
        for item in indexed(message.get(_PARTS)):
            part = item.get(semconv.OI_MESSAGE_CONTENT) if is_mapping(item) else None
            if is_mapping(part):
                parts[len(parts)] = {"type": part.get("type"), "text": part.get("text")}
        record[_PARTS] = parts
    return record


def _call_from_tree(call: Mapping[str, Any]) -> Record:
    fields = {"id": call.get("id"), "call_id": call.get("call_id")}
    function = call.get("function")
    if is_mapping(function):
        fields.update(name=function.get("name"), arguments=function.get("arguments"))
    else:  # the call's own name and arguments, never a built-in tool's item type
        fields.update(name=call.get("name"), arguments=call.get("arguments"), builtin=False)
    return fields
