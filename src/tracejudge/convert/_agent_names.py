"""The name a span gives the run of an agent, read from its attribute keys alone.

A program names its agents, and an instrumentation carries that name on the span that
runs one, under a key of its own: the AI SDK's `ai.telemetry.functionId`, an
`agent_name`, a graph's `node`, a `workflow.name`, a `team.name` (a team of agents whose
leader delegates to its members, as Agno's). A span's **agent name** is the value of an
attribute whose key names an agent, a function, a node, a workflow or a team (the key's
last words are `agent`, `function`, `node`, `workflow` or `team`, or one of these followed
by `name` or `id`; `name` preferred, `id` last), when that value is short text (one line,
at most `MAX_NAME` characters, not JSON or a tuple, not a generated id such as a UUID).
The keys of a JSON object held by a key of metadata (its last word `metadata`,
`properties`, `attributes`, `context`, `labels` or `tags`) are read too, one level down,
as `<key>.<its key>` (OpenInference keeps LangGraph's `langgraph_node` in its `metadata`). The
OpenTelemetry `code.*` attributes name source code, and a `user-agent` an HTTP
client, and the function of a tool call (`tool_call.function.name`) a tool: none is
read. No producer's key is listed: the words are the rule.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping
from typing import Any

from tracejudge.convert import _json
from tracejudge.convert._records import SpanRecord

__all__ = [
    "MAX_NAME",
    "agent_name",
    "is_given_name",
    "is_name",
    "named_keys",
    "names_an_agent",
    "run_name",
    "says_agent",
]

#: The longest attribute value read as an agent's name.
MAX_NAME = 64
#: The words that make a key name a run of the program's own.
_RUNS = frozenset({"agent", "function", "node", "workflow", "team"})
#: OpenTelemetry's source-code attributes (`code.function`): a Python function, not an agent.
_NOT_NAMES = ("code.",)
_SEGMENTS = re.compile(r"[.:/]")
#: The longest JSON object value whose keys are read for an agent name (metadata).
_MAX_JSON = 8192
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
#: A generated id (a UUID, hex digits, a number): it tells runs apart, it does not name one.
_GENERATED = re.compile(r"[0-9a-fA-F-]{8,}|[0-9]+")
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
#: Preference of a naming key by its last word (lower first).
_RANK = {"name": 0, "agent": 1, "function": 1, "node": 1, "workflow": 1, "team": 1, "id": 2}
#: What each attribute key seen says (`_verdict`).
_VERDICTS: dict[str, int | object | None] = {}
_UNSEEN = object()
#: The top-level attribute keys seen whose verdict is None: they never give a name.
_NAME_NOTHING: set[str] = set()
#: Whether each key seen names an agent (`names_an_agent`).
_AGENT_KEYS: dict[str, bool] = {}
#: A key holding a JSON object of metadata, whose keys are read one level down.
_CONTAINER = object()
_CONTAINER_WORDS = frozenset({"metadata", "properties", "attributes", "context", "labels", "tags"})
_VERDICTS_CAP = 4096


def _key_rank(key: str) -> int | None:
    """The key's rank when it names an agent, function, node, workflow or team, else None."""
    found = _key_run(key)
    return found[1] if found is not None else None


def names_an_agent(key: str) -> bool:
    """Whether the key names an agent (not a function, a node, a workflow or a team: runs
    of a program that nest in one another, where an agent inside an agent is its child)."""
    answer = _AGENT_KEYS.get(key)
    if answer is None:
        found = _key_run(key)
        answer = found is not None and found[0] == "agent"
        if len(_AGENT_KEYS) < _VERDICTS_CAP:  # (keys are a program's few attribute names)
            _AGENT_KEYS[key] = answer
    return answer


def _key_run(key: str) -> tuple[str, int] | None:
    """(the word of the run the key names, the key's rank), or None."""
    if key.startswith(_NOT_NAMES):
        return None
    words = [w.lower() for segment in _SEGMENTS.split(key) for w in _WORDS.findall(segment)]
    if not words:
        return None
    if words[-1] in ("name", "id") and len(words) > 1:
        run, rank = words[-2], _RANK[words[-1]]
        before = words[-3] if len(words) > 2 else None
    else:
        run, rank = words[-1], _RANK.get(words[-1], 1)
        before = words[-2] if len(words) > 1 else None
    if run not in _RUNS or (run == "agent" and before == "user"):
        return None  # (a `user-agent` header names an HTTP client)
    if run == "function" and before in ("call", "tool", "calls", "tools"):
        return None  # (a tool call's function is a tool)
    return run, rank


def is_name(value: Any) -> bool:
    """Whether a value reads as an agent's name (see the module's docstring)."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    return (
        0 < len(text) <= MAX_NAME
        and "\n" not in text
        and text[0] not in "{[(\"'"
        and text.lower() not in ("none", "null", "true", "false")
        and _GENERATED.fullmatch(text) is None
    )


def named_keys(attributes: Mapping[str, Any]) -> list[tuple[int, str, str]]:
    """(rank, key, name) of each attribute that gives an agent name (see the module's
    docstring), best first."""
    found: list[tuple[int, str, str]] = []
    # Only the keys not yet known to name nothing are looked at (most keys of a span:
    # the set difference runs in C, where the loop below ran once per attribute; from a
    # set of the span's keys, it walks those, not every key known).
    maybe = set(attributes).difference(_NAME_NOTHING)
    if not maybe:
        return found
    if len(maybe) == 1:
        (key,) = maybe
        _collect(((key, attributes[key]),), "", found)
    else:
        _collect([item for item in attributes.items() if item[0] in maybe], "", found)
    found.sort(key=lambda item: item[0])  # (stable: attribute order among equals)
    return found


def _collect(
    pairs: Iterable[tuple[str, Any]], prefix: str, found: list[tuple[int, str, str]]
) -> None:
    for key, value in pairs:
        key = prefix + key
        verdict = _VERDICTS.get(key, _UNSEEN)
        if verdict is _UNSEEN:
            verdict = _verdict(key)
            if len(_VERDICTS) < _VERDICTS_CAP:
                _VERDICTS[key] = verdict
                if verdict is None and not prefix:
                    _NAME_NOTHING.add(key)  # (whatever its value: the key names nothing)
        if verdict is None or not isinstance(value, str):
            continue  # (names are text; a JSON object is text too)
        if verdict is _CONTAINER:
            if not prefix and value[:1] == "{" and len(value) <= _MAX_JSON:
                try:
                    inner = _json.loads(value)
                except (ValueError, RecursionError):
                    continue
                if isinstance(inner, Mapping):
                    _collect(((str(k), v) for k, v in inner.items()), key + ".", found)
        elif is_name(value):
            found.append((verdict, key, value.strip()))  # type: ignore[arg-type]


def _verdict(key: str) -> int | object | None:
    """The key's rank when it names a run, `_CONTAINER` when it holds metadata, else None."""
    rank = _key_rank(key)
    if rank is not None:
        return rank
    last = _WORDS.findall(_SEGMENTS.split(key)[-1])
    return _CONTAINER if last and last[-1].lower() in _CONTAINER_WORDS else None


def agent_name(attributes: Mapping[str, Any]) -> str | None:
    """The agent name the span's attributes give, or None."""
    found = named_keys(attributes)
    return found[0][2] if found else None


def says_agent(name: str) -> bool:
    """Whether a span's name calls it an agent: its last word is `agent` (`weather_agent`,
    `PlannerAgent`), as a program names the span of an agent's run (not a step about
    agents: `summarise_agent_memory`)."""
    words = _WORDS.findall(name)
    return bool(words) and words[-1].lower() == "agent"


def is_given_name(name: str) -> bool:
    """Whether a span's name reads as a name the program gave (an identifier such as
    `weather_agent`, as a traced function or a flow is named), not an operation's
    (`ai.generateText`, `Agent.run`, `chat gpt-4o`, `POST`)."""
    return _IDENTIFIER.fullmatch(name) is not None and not name.isupper()


def run_name(
    host: SpanRecord,
    calls: Iterable[SpanRecord],
    by_id: Mapping[str, SpanRecord],
    tools: Container[str] = (),
) -> str | None:
    """The agent name of the run `host` holds: of the spans from `host` down to each of
    `calls` (not the calls themselves), the outermost that gives one other than the names
    the span above `host` gives (the caller's, repeated on the steps of its run); else the
    outermost whose own name is a given name (`is_given_name`) other than a tool's of
    `tools` (the tool call that ran the agent names its tool's span). None when none does
    or the calls' spans give different names."""
    above = by_id.get(host.parent_id) if host.parent_id else None
    # (a name the span above the host gives too is the caller's run's, repeated on its steps)
    inherited = {k[2] for k in named_keys(above.attributes)} if above is not None else set()
    calls = list(calls)
    held = {call.span_id for call in calls}  # (a call's records nest: none names a run)
    paths = [path for call in calls if (path := _path(call, host, by_id, held)) is not None]
    given: set[str] = set()
    for path in paths:
        name = _outermost(path, inherited)
        if name is not None:
            given.add(name)
    if not given:
        for path in paths:
            named = [s.name for s in path if is_given_name(s.name) and s.name not in tools]
            if named:
                given.add(named[-1])
    return given.pop() if len(given) == 1 else None


def _outermost(path: list[SpanRecord], inherited: set[str]) -> str | None:
    """The agent name the outermost span of `path` (nearest first) that gives one gives."""
    found = None
    for span in path:
        names = [k[2] for k in named_keys(span.attributes) if k[2] not in inherited]
        if names:
            found = names[0]
    return found


def _path(
    call: SpanRecord, host: SpanRecord, by_id: Mapping[str, SpanRecord], held: Container[str]
) -> list[SpanRecord] | None:
    """The spans from the call's parent up to `host` (nearest first, the held calls left
    out), or None when the call is not under `host`."""
    path: list[SpanRecord] = []
    seen = {call.span_id}
    parent_id = call.parent_id
    while parent_id and parent_id not in seen:
        parent = by_id.get(parent_id)
        if parent is None:
            return None
        seen.add(parent_id)
        if parent_id not in held:
            path.append(parent)
        if parent_id == host.span_id:
            return path
        parent_id = parent.parent_id
    return None
