"""What a search matched in each listed trace: the list page shows, under each trace a
search found, where the words are ("researcher, call 2 · tool result") and the words
around them, the match marked.

The index says which traces match; this finds the place in the stored trace, for the
traces of one page only (at most the page's size are read), with the index's notion of a
word (runs of letters and digits) so that what the index matched is found here too. The
search's first unit (a word, a "quoted phrase" or a prefix*) is the one shown.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence

from tracejudge.models import LLMToolCall, LLMToolResponse, MultiAgentTrace, Step
from tracejudge.server.store import SearchQuery, SearchQueryError, Store

__all__ = ["Snippet", "find_snippets"]

#: Characters shown on each side of the match.
AROUND = 70


class Snippet:
    """Where the match is and the words around it, as HTML (escaped, the match marked)."""

    def __init__(self, where: str, before: str, match: str, after: str) -> None:
        self.where, self.before, self.match, self.after = where, before, match, after

    def html(self) -> str:
        e = html.escape
        return (
            f'<span class="where">{e(self.where)}</span>: {e(self.before)}'
            f"<mark>{e(self.match)}</mark>{e(self.after)}"
        )


def _pattern(q: str) -> re.Pattern[str] | None:
    try:
        unit = SearchQuery.parse(q).units[0]
    except (SearchQueryError, IndexError):
        return None
    words = r"[\W_]+".join(re.escape(w) for w in unit.words)
    end = r"[^\W_]*" if unit.prefix else r"(?![^\W_])"
    return re.compile(rf"(?<![^\W_]){words}{end}", re.IGNORECASE)


def _places(trace: MultiAgentTrace) -> Iterator[tuple[str, str]]:
    """Every text of the trace with where it is, in the trace's order."""
    for agent in trace.iter_agents():
        for i, call in enumerate(agent.llm_interactions):
            where = f"{agent.name}, {Step.call_name(i)}"
            said: list[tuple[str, object]] = [
                (m.role or "user", m.content) for m in call.input_messages
            ]
            said += [("assistant", m.content) for m in call.output_messages]
            for role, content in said:
                if isinstance(content, str):
                    yield f"{where} · {role}", content
                elif isinstance(content, LLMToolCall):
                    yield f"{where} · tool call {content.name}", content.parameters
                elif isinstance(content, LLMToolResponse):
                    yield f"{where} · tool result", content.response or ""
            for result in call.tool_results or ():
                yield f"{where} · tool result", result.response or ""


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)  # each run of spaces and line breaks one space


def snippet(trace_json: str, q: str) -> Snippet | None:
    """The first place in the trace that `q`'s first unit matches, or None."""
    pattern = _pattern(q)
    if pattern is None:
        return None
    trace = MultiAgentTrace.model_validate_json(trace_json)
    for where, text in _places(trace):
        found = pattern.search(text)
        if found is None:
            continue
        start, end = max(0, found.start() - AROUND), min(len(text), found.end() + AROUND)
        before = ("…" if start else "") + text[start : found.start()]
        after = text[found.end() : end] + ("…" if end < len(text) else "")
        return Snippet(where, _one_line(before), found.group(0), _one_line(after))
    return None


def find_snippets(store: Store, trace_ids: Sequence[str], q: str) -> dict[str, Snippet]:
    """Each listed trace's snippet (run in a worker thread: it reads the store)."""
    found: dict[str, Snippet] = {}
    for trace_id in trace_ids:
        row = store.traces.get(trace_id)
        if row is None or row.trace_json is None:
            continue
        try:
            place = snippet(row.trace_json, q)
        except ValueError:  # a stored document that is not a trace: nothing to show
            continue
        if place is not None:
            found[trace_id] = place
    return found
