"""How the built-in checks word their explanations: a summary line, the problems found
(at most `MAX_LISTED_PROBLEMS`, the rest counted), notes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tracejudge.models import LLMToolCall

__all__ = ["MAX_LISTED_PROBLEMS", "NOT_RECORDED", "explain", "plural", "list_calls", "list_ids"]

#: At most this many problems are listed in one explanation; the rest are counted.
MAX_LISTED_PROBLEMS = 20
#: At most this many tool call ids are named in one note.
MAX_NAMED_IDS = 5

NOT_RECORDED = (
    "no message content was recorded for its LLM interactions (content capture off?), so "
    "there is nothing to check"
)


def explain(summary: str, problems: Sequence[str] = (), notes: Sequence[str] = ()) -> str:
    lines = [summary]
    lines.extend(f"- {p}" for p in problems[:MAX_LISTED_PROBLEMS])
    if len(problems) > MAX_LISTED_PROBLEMS:
        lines.append(f"- ... and {len(problems) - MAX_LISTED_PROBLEMS} more")
    lines.extend(f"Note: {n}" for n in notes)
    return "\n".join(lines)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def list_calls(indexes: Iterable[int]) -> str:
    """Model calls by their `llm_interactions` indexes, as people count them: "call 2",
    "calls 1, 3" (from 1, as the page and every explanation name them)."""
    numbers = [str(i + 1) for i in indexes]
    return f"call {numbers[0]}" if len(numbers) == 1 else f"calls {', '.join(numbers)}"


def list_ids(calls: Sequence[LLMToolCall]) -> str:
    named = ", ".join(c.id for c in calls[:MAX_NAMED_IDS])
    return named + (f" and {len(calls) - MAX_NAMED_IDS} more" if len(calls) > MAX_NAMED_IDS else "")
