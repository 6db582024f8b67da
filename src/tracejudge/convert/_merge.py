"""One model call recorded by several instrumentations becomes one interaction.

Instrumentations compose: the `anthropic` SDK records its own `anthropic.messages.create`
span beside OpenLLMetry's `anthropic.chat`; OpenLLMetry's `openai.chat` sits beside (or
inside) OpenInference's `ChatCompletion` or LangChain's `ChatOpenAI`; an agent framework's
`openai.response` span wraps the HTTP client's `openai.chat`. Each span reads as a model
call, so without this module every such call would count two or three times (tokens
doubled, an empty twin whose "answer" is nothing).

How two model-call spans of one trace are matched as the same call, strongest rule first:

1. **Nested**: one is a descendant of the other with no agent span between them. The
   same call, unless both carry response ids and the ids differ.
2. **Same response id**: both carry a response id (`gen_ai.response.id`, or the `"id"`
   of the response JSON an OpenInference span keeps in `output.value`, LangChain's
   `llm_output.id` / `response_metadata.id` included), the ids are equal, the spans
   overlap in time (when both times are known) and come from different instrumentation
   scopes (when both scopes are known).
3. **Model and time**: neither rule decides (at most one carries a response id), the
   spans have the same parent span, come from different instrumentation scopes (one
   scope unknown is allowed, the same known scope never), name compatible models (equal,
   one a dated version of the other such as `gpt-4o` / `gpt-4o-2024-08-06`, or one
   unknown), overlap for at least 90% of the shorter span, and, when both recorded
   input messages, end their inputs with the same message.
4. **Same content, one after the other**: neither rule decides, the spans come from
   different instrumentation scopes (both known), name compatible models, end their
   inputs with the same message and hold the same answer (its text and tool call ids),
   and one starts within `ADJACENT_NS` of the other's end. LlamaIndex's streamed calls:
   OpenInference's `astream_chat` span ends as the stream is handed back, before the
   openai client's span of the same call (a sibling, not a child) starts.
5. **Within, the same tokens** (`_merge_within`): no rule decides (at most one carries a
   response id), the spans come from different instrumentation scopes (both known), one
   lies within the other in time, they name
   compatible models, count the same input and output tokens and, when both recorded
   input messages, end their inputs with the same message; the outer one is where the
   call sits. A framework that writes its spans when the run ends (OpenInference's
   BeeAI) beside a client instrumentation that recorded the call live, elsewhere.

A record that holds only the response of a call whose request another span recorded
(`Extraction.response_apart`: logfire's streamed responses, written after the stream was
read) joins the nearest model-call record before it of the same parent and scope that
has no output, whatever the rules above say.

An instrumentation never records one call twice except when it wrapped the client
twice (OpenLLMetry instrumented a second time): such twins are nested spans of one name,
they are still one call, and they are the one case that gives a warning. (A framework
may record a call as a step around its own native span of it, as Google ADK's schema v1
does with `call_llm` around `generate_content`: nested records of one call, no warning.)

The group's records are merged into one `Extraction`: the record with output and usage
wins (then: with inputs, with every tool result readable, with tools, the outermost),
and every field it lacks is filled from the others in order (inputs, outputs, tools,
model, usage, finish reasons, other choices, refusal, reasoning, built-in tool calls,
aliases). Usage is never summed: it
is the same call's usage seen twice. The interaction keeps the winner's times and sits
where the outermost span of the group sits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._common import Extraction, as_str
from tracejudge.convert._json import is_mapping
from tracejudge.convert._merge_within import usage_key, within_pairs
from tracejudge.convert._records import SpanRecord
from tracejudge.models import LLMInput, LLMToolCall, LLMToolResponse

__all__ = ["Call", "group_calls", "merge", "response_id"]

#: Rule 3: the share of the shorter span's duration the two spans must overlap.
MIN_OVERLAP = 0.9
#: Rule 4: how long after one record ends the other may start (nanoseconds).
ADJACENT_NS = 1_000_000_000
# Raw response JSON bigger than this is not parsed for its id (it is only a hint).
_MAX_RAW_RESPONSE_CHARS = 2_000_000


@dataclass
class Call:
    """The span records of one model call: `span` is where it sits in the tree (the
    outermost record), `primary` is the record whose content wins."""

    span: SpanRecord
    records: list[tuple[SpanRecord, Extraction]] = field(default_factory=list)
    #: Same-scope nesting (an instrumentation that wrapped the client twice).
    doubled: list[tuple[SpanRecord, SpanRecord]] = field(default_factory=list)
    #: The provider's response id each record names (by span id), read once.
    response_ids: dict[str, str | None] = field(default_factory=dict)

    _primary: tuple[SpanRecord, Extraction] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def primary(self) -> tuple[SpanRecord, Extraction]:
        if self._primary is None:  # chosen once: records do not change after grouping
            self._primary = max(
                enumerate(self.records),
                key=lambda item: (*_completeness(item[1][1]), item[1][0] is self.span, -item[0]),
            )[1]
        return self._primary


def _completeness(extraction: Extraction) -> tuple[bool, bool, bool, bool, bool]:
    """How complete a record is, best last: output, usage, input; then whether every tool
    result in its input is readable (a framework's record may hold its own types where the
    client's span inside it holds what went on the wire: OpenInference AutoGen's `function`
    results); then the tools."""
    return (
        bool(extraction.outputs),
        extraction.usage is not None,
        bool(extraction.inputs),
        _results_readable(extraction.inputs),
        extraction.tools is not None,
    )


def _results_readable(inputs: list[LLMInput]) -> bool:
    """Whether no tool result of `inputs` lost its text."""
    for message in inputs:
        content = message.content
        if isinstance(content, LLMToolResponse) and not content.response:
            return False
    return True


# --------------------------------------------------------------------------- response ids


def response_id(span: SpanRecord) -> str | None:
    """The provider's id of the response the span recorded, or None."""
    attrs = span.attributes
    found = as_str(attrs.get(semconv.GEN_AI_RESPONSE_ID))
    if found:
        return found
    raw = attrs.get(semconv.OUTPUT_VALUE)
    if not isinstance(raw, str) or len(raw) > _MAX_RAW_RESPONSE_CHARS:
        return None
    if not raw.lstrip().startswith("{") or '"id"' not in raw:
        return None
    try:
        value = _json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return _id_in(value)


def _id_in(value: Any) -> str | None:
    """A response id in a raw response: OpenAI/Anthropic `{"id"}`, LangChain's
    `llm_output.id` or a generation message's `response_metadata.id`."""
    if not is_mapping(value):
        return None
    found = as_str(value.get("id"))
    if found:
        return found
    llm_output = value.get("llm_output")
    if is_mapping(llm_output) and as_str(llm_output.get("id")):
        return as_str(llm_output.get("id"))
    for row in value.get("generations") or ():
        for generation in row if isinstance(row, list) else [row]:
            message = generation.get("message") if is_mapping(generation) else None
            kwargs = message.get("kwargs") if is_mapping(message) else None
            metadata = kwargs.get("response_metadata") if is_mapping(kwargs) else None
            if is_mapping(metadata) and as_str(metadata.get("id")):
                return as_str(metadata.get("id"))
    return None


# --------------------------------------------------------------------------- matching


@dataclass
class _Node:
    span: SpanRecord
    extraction: Extraction
    response_id: str | None
    index: int


def group_calls(
    records: Sequence[tuple[SpanRecord, Extraction]],
    llm_ancestor: Callable[[SpanRecord], str | None],
) -> list[Call]:
    """The model calls among `records` (model-call spans with what each says), in the
    order of their outermost spans in `records`.

    `llm_ancestor(span)` is the span id of the nearest model-call span above `span` with
    no agent span in between, or None.
    """
    ids = [response_id(span) for span, _ in records]
    if _apart(records, ids, llm_ancestor):  # the usual case: every call recorded once
        return [_single_call(span, ex, ids[i]) for i, (span, ex) in enumerate(records)]
    grouping = _Grouping([_Node(span, ex, ids[i], i) for i, (span, ex) in enumerate(records)])
    grouping.join_responses_apart()
    grouping.join_nested(llm_ancestor)
    grouping.join_by_response_id()
    grouping.join_overlapping_siblings()
    if _two_scopes(records):
        grouping.join_same_content()
        grouping.join_within(within_pairs(records, _compatible_models))
    return grouping.calls(llm_ancestor)


class _Grouping:
    """The records of one trace's model calls, joined into calls rule by rule (a
    union-find over the records; each join keeps the lower index as the group's)."""

    def __init__(self, nodes: list[_Node]) -> None:
        self.nodes = nodes
        self.by_id = {node.span.span_id: node for node in nodes}
        self.parent = list(range(len(nodes)))
        self.scopes: list[set[str]] = [{n.span.scope} if n.span.scope else set() for n in nodes]
        #: (inner, outer) records of a client wrapped twice by one instrumentation
        self.doubled: list[tuple[_Node, _Node]] = []
        #: rule 5's inner records (their outer record is where the call sits)
        self.within: set[int] = set()

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, a: int, b: int, *, forced: bool = False) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if not forced and self.scopes[ra] & self.scopes[rb]:
            return False  # one instrumentation records each call once
        keep, gone = min(ra, rb), max(ra, rb)
        self.parent[gone] = keep
        self.scopes[keep] |= self.scopes[gone]
        return True

    def join_responses_apart(self) -> None:
        """A response recorded apart (logfire's streaming log span): the request before
        it, of the same parent and scope."""
        answered: set[int] = set()
        for node in self.nodes:
            if node.extraction.response_apart:
                request = _request_of(node, self.nodes, answered)
                if request is not None:
                    answered.add(request.index)
                    self.union(node.index, request.index, forced=True)

    def join_nested(self, llm_ancestor: Callable[[SpanRecord], str | None]) -> None:
        """Rule 1: a record nested in another's span (unless their response ids differ)."""
        for node in self.nodes:
            above_id = llm_ancestor(node.span)
            above = self.by_id.get(above_id) if above_id else None
            if above is None:
                continue
            if node.response_id and above.response_id and node.response_id != above.response_id:
                continue
            # A client wrapped twice nests a span of its own name; a framework's step around
            # its native span of the call (ADK's `call_llm` > `generate_content`) is not that.
            same_scope = (
                node.span.scope is not None
                and node.span.scope == above.span.scope
                and node.span.name == above.span.name
            )
            self.union(node.index, above.index, forced=True)
            if same_scope:
                self.doubled.append((node, above))

    def join_by_response_id(self) -> None:
        """Rule 2: the same response id, spans that overlap."""
        with_id: dict[str, list[_Node]] = {}
        for node in self.nodes:
            if node.response_id:
                with_id.setdefault(node.response_id, []).append(node)
        for group in with_id.values():
            for i, first in enumerate(group):
                for second in group[i + 1 :]:
                    if _overlap(first.span, second.span, any_overlap=True):
                        self.union(first.index, second.index)

    def join_overlapping_siblings(self) -> None:
        """Rule 3: siblings of compatible models that overlap in time."""
        siblings: dict[str | None, list[_Node]] = {}
        for node in self.nodes:
            siblings.setdefault(node.span.parent_id, []).append(node)
        for group in siblings.values():
            if len(group) < 2:
                continue
            group = sorted(group, key=lambda n: (n.span.start_ns or 0, n.index))
            for i, first in enumerate(group):
                for second in group[i + 1 :]:
                    if (second.span.start_ns or 0) > (
                        first.span.end_ns or second.span.start_ns or 0
                    ):
                        break  # sorted by start: no later sibling overlaps `first`
                    if _same_by_model_and_time(first, second):
                        self.union(first.index, second.index)

    def join_same_content(self) -> None:
        """Rule 4 (where two instrumentations recorded calls): the same content, one
        record right after the other."""
        by_content: dict[tuple[Any, ...], list[_Node]] = {}
        for node in self.nodes:
            key = _content_key(node.extraction)
            if key is not None and node.span.scope:
                by_content.setdefault(key, []).append(node)
        for group in by_content.values():
            if len(group) < 2:
                continue
            group = sorted(group, key=lambda n: (n.span.start_ns or 0, n.index))
            for i, first in enumerate(group):
                for second in group[i + 1 :]:
                    if _adjacent(first, second) and self.find(first.index) != self.find(
                        second.index
                    ):
                        self.union(first.index, second.index)

    def join_within(self, pairs: list[tuple[int, int]]) -> None:
        """Rule 5: a record within another's time that counts the same tokens (unless
        both carry response ids: rule 2 decided)."""
        for inner, outer in pairs:
            if self.nodes[inner].response_id and self.nodes[outer].response_id:
                continue
            if self.find(inner) != self.find(outer) and self.union(inner, outer):
                self.within.add(inner)

    def calls(self, llm_ancestor: Callable[[SpanRecord], str | None]) -> list[Call]:
        """One call per group, in the order of their outermost records."""
        members: dict[int, list[_Node]] = {}
        for node in self.nodes:
            members.setdefault(self.find(node.index), []).append(node)
        doubled_in: dict[int, list[tuple[SpanRecord, SpanRecord]]] = {}
        for inner, outer_node in self.doubled:
            doubled_in.setdefault(self.find(inner.index), []).append((inner.span, outer_node.span))
        placed = []
        for root, group in members.items():
            if len(group) == 1:
                outer = group[0]  # the usual case: a call recorded once
            else:
                outer = min(
                    group,
                    key=lambda n: (
                        _depth_in(n, group, llm_ancestor, self.by_id) + (n.index in self.within),
                        n.index,
                    ),
                )
            call = Call(
                span=outer.span,
                records=[(n.span, n.extraction) for n in group],
                doubled=doubled_in.get(root, []),
                response_ids={n.span.span_id: n.response_id for n in group},
            )
            placed.append((outer.index, call))
        placed.sort(key=lambda item: item[0])
        return [call for _, call in placed]


def _apart(
    records: Sequence[tuple[SpanRecord, Extraction]],
    ids: list[str | None],
    llm_ancestor: Callable[[SpanRecord], str | None],
) -> bool:
    """Whether no rule can match two of the records (it may say no when none does): none
    is nested in another, no response id comes twice, and no sibling starts before the
    one started before it ended."""
    span_ids = {span.span_id for span, _ in records}
    if any(llm_ancestor(span) in span_ids for span, _ in records):
        return False
    if any(extraction.response_apart for _, extraction in records):
        return False
    named = [found for found in ids if found]
    if len(set(named)) != len(named):
        return False
    if _two_scopes(records):
        keys = [key for _, ex in records if (key := _content_key(ex)) is not None]
        if len(set(keys)) != len(keys):
            return False  # rule 4 would compare them
        tokens = [key for _, ex in records if (key := usage_key(ex)) is not None]
        if len(set(tokens)) != len(tokens):
            return False  # rule 5 would compare them
    siblings: dict[str | None, list[SpanRecord]] = {}
    for span, _ in records:
        siblings.setdefault(span.parent_id, []).append(span)
    if len(siblings) == len(records):
        return True
    for group in siblings.values():
        if len(group) < 2:
            continue
        group.sort(key=_start_or_zero)  # (stable: rule 3's order)
        for first, second in pairwise(group):
            if (second.start_ns or 0) <= (first.end_ns or second.start_ns or 0):
                return False  # rule 3 would compare them
    return True


def _request_of(response: _Node, nodes: Sequence[_Node], answered: set[int]) -> _Node | None:
    """The record of the request whose response `response` holds: of the records before
    it with the same parent and scope, no output, no response apart and not answered yet,
    the latest with the same input messages (streams read in parallel end in any order),
    else the latest."""
    span, inputs = response.span, response.extraction.inputs
    latest = same_inputs = None
    for node in nodes[: response.index]:
        other = node.span
        if (
            other.parent_id == span.parent_id
            and other.scope == span.scope
            and node.index not in answered
            and not node.extraction.response_apart
            and not node.extraction.outputs
            and (other.start_ns or 0) <= (span.start_ns or 0)
        ):
            latest = node
            if inputs and node.extraction.inputs == inputs:
                same_inputs = node
    return same_inputs or latest


def _start_or_zero(span: SpanRecord) -> int:
    return span.start_ns or 0


def _single_call(span: SpanRecord, extraction: Extraction, found: str | None) -> Call:
    """The call of a span that no other span records."""
    call = Call(span=span, records=[(span, extraction)], response_ids={span.span_id: found})
    call._primary = call.records[0]
    return call


def _depth_in(
    node: _Node,
    group: list[_Node],
    llm_ancestor: Callable[[SpanRecord], str | None],
    by_id: Mapping[str, _Node],
) -> int:
    """How many of the group's spans sit above `node` (0 for the outermost)."""
    members = {n.span.span_id for n in group}
    depth, seen = 0, {node.span.span_id}
    above = llm_ancestor(node.span)
    while above and above in members and above not in seen:
        depth += 1
        seen.add(above)
        above = llm_ancestor(by_id[above].span)
    return depth


def _overlap(first: SpanRecord, second: SpanRecord, *, any_overlap: bool = False) -> bool:
    """Whether the spans overlap (`any_overlap`) or overlap for `MIN_OVERLAP` of the
    shorter one. Unknown times match only for `any_overlap` (a response id decides)."""
    times = (first.start_ns, first.end_ns, second.start_ns, second.end_ns)
    if any(t is None for t in times):
        return any_overlap
    a_start, a_end, b_start, b_end = (t or 0 for t in times)
    shared = min(a_end, b_end) - max(a_start, b_start)
    if any_overlap:
        return shared >= 0
    shorter = min(a_end - a_start, b_end - b_start)
    return shared >= 0 and shared >= MIN_OVERLAP * shorter


def _same_by_model_and_time(first: _Node, second: _Node) -> bool:
    if first.response_id and second.response_id:
        return False  # rule 2 decided
    if first.span.scope and first.span.scope == second.span.scope:
        return False
    if not _compatible_models(first.extraction.model, second.extraction.model):
        return False
    if not _overlap(first.span, second.span):
        return False
    return _same_last_input(first.extraction, second.extraction)


def _same_last_input(first: Extraction, second: Extraction) -> bool:
    """Whether two records end their inputs with the same message (or one records none)."""
    a, b = first.inputs, second.inputs
    return not (a and b and _message_key(a[-1]) != _message_key(b[-1]))


def _two_scopes(records: Sequence[tuple[SpanRecord, Extraction]]) -> bool:
    """Whether two known instrumentation scopes recorded calls here (rule 4 needs them)."""
    first = None
    for span, _ in records:
        scope = span.scope
        if scope:
            if first is None:
                first = scope
            elif scope != first:
                return True
    return False


def _content_key(extraction: Extraction) -> tuple[Any, ...] | None:
    """What rule 4 compares: the last input message and the answer (texts, tool call
    ids), or None for a record without both."""
    if not extraction.inputs or not extraction.outputs:
        return None
    answer = []
    for output in extraction.outputs:
        content = output.content
        if isinstance(content, LLMToolCall):
            answer.append(("call", content.id))
        elif content.strip():
            answer.append(("text", " ".join(content.split())))
    if not answer:
        return None
    return (_message_key(extraction.inputs[-1]), tuple(answer))


def _adjacent(first: _Node, second: _Node) -> bool:
    """Rule 4 for two records of the same content, `first` starting first."""
    a, b = first.span, second.span
    if not a.scope or not b.scope or a.scope == b.scope:
        return False
    if first.response_id and second.response_id:
        return False  # rule 2 decided
    if not _compatible_models(first.extraction.model, second.extraction.model):
        return False
    if a.end_ns is None or b.start_ns is None:
        return False
    return b.start_ns - a.end_ns <= ADJACENT_NS


def _compatible_models(first: str | None, second: str | None) -> bool:
    if not first or not second:
        return True
    first, second = first.lower(), second.lower()
    shorter, longer = sorted((first, second), key=len)
    return longer == shorter or longer.startswith(shorter + "-")


def _message_key(message: LLMInput) -> tuple[str, str]:
    content = message.content
    if isinstance(content, LLMToolCall):
        return ("call", content.id)
    if isinstance(content, LLMToolResponse):
        return ("result", content.id)
    return (message.role, " ".join(content.split()))


# --------------------------------------------------------------------------- merging


def merge(call: Call) -> Extraction:
    """One extraction for the call: the primary record, with what it lacks taken from
    the others (in their order)."""
    _, primary = call.primary
    if len(call.records) == 1:
        return primary
    merged = Extraction(
        inputs=list(primary.inputs),
        outputs=list(primary.outputs),
        tools=primary.tools,
        model=primary.model,
        usage=primary.usage,
        finish_reasons=list(primary.finish_reasons),
        call_aliases=dict(primary.call_aliases),
        has_content=primary.has_content,
        warnings=list(primary.warnings),
        alternatives=list(primary.alternatives),
        refusal=primary.refusal,
        reasoning=list(primary.reasoning),
        server_tools=list(primary.server_tools),
        content_setting=primary.content_setting,
        unread_keys=primary.unread_keys,
    )
    for _, other in call.records:
        if other is primary:
            continue
        merged.inputs = merged.inputs or list(other.inputs)
        merged.outputs = merged.outputs or list(other.outputs)
        merged.tools = _more_tools(merged.tools, other.tools)
        merged.model = merged.model or other.model
        merged.usage = merged.usage if merged.usage is not None else other.usage
        merged.finish_reasons = merged.finish_reasons or list(other.finish_reasons)
        merged.has_content = merged.has_content or other.has_content
        merged.alternatives = merged.alternatives or list(other.alternatives)
        merged.refusal = merged.refusal or other.refusal
        merged.reasoning = merged.reasoning or list(other.reasoning)
        merged.server_tools = merged.server_tools or list(other.server_tools)
        for key, value in other.call_aliases.items():
            merged.call_aliases.setdefault(key, value)
        merged.warnings.extend(w for w in other.warnings if w not in merged.warnings)
    return merged


def _more_tools(kept: list[Any] | None, other: list[Any] | None) -> list[Any] | None:
    """The kept tool list, or the other record's when it offers every kept tool and more:
    an instrumentation may leave some tools out (OpenInference's smolagents records no
    managed-agent tool), and the tools offered to one call are one list."""
    if kept is None:
        return other
    if other is None or len(other) <= len(kept):
        return kept
    names = {tool.name for tool in other}
    return other if all(tool.name in names for tool in kept) else kept
