"""Which input messages of an agent's model call are new since its previous call.

Chat agents resend the whole conversation on every model call, so each
`LLMInteraction` repeats, as its input, the previous interaction's input and
outputs before adding what is new (tool results, a user message). The judge's
transcript (`render`) writes every message once and the checks (`checks`) look
for tool results only where they are new; both read an agent through
`new_messages`, so they agree on what each call added.

The comparison is linear in the trace: a call's inputs are taken to repeat the
previous call's inputs when they agree at a few sampled places (the first, the
middle and the last of them), not compared in full, which would make an agent
that resends its history quadratic. Only the previous call's outputs, and what
follows them, are compared one by one. Messages are compared by what they say:
whitespace in text, the spacing and key order of JSON tool arguments, and the
order in which the previous outputs come back do not matter.

When the inputs do not repeat the previous inputs that way, the previous
inputs' last message is looked for near the end of the new inputs (a history
cut at the front, or a rewritten first message such as a system prompt with
the time in it: the new first message is then new); failing that, the new
inputs share with the previous ones only their common beginning, which may be
nothing (a fresh context).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from tracejudge.models import LLMInput, LLMInteraction, LLMToolCall, LLMToolResponse

__all__ = ["Turn", "new_messages", "normal_json"]

#: How far back from the end of a call's inputs the previous inputs' last message is
#: looked for when the inputs do not simply repeat the previous ones.
ANCHOR_WINDOW = 64

Key = tuple[str, ...]


@dataclass(frozen=True)
class Turn:
    """What one LLM interaction's inputs add to the agent's previous interaction."""

    #: The interaction.
    interaction: LLMInteraction
    #: Its input messages that are not in the previous interaction's inputs and outputs,
    #: in order: everything, for the first interaction or a fresh context.
    new: Sequence[LLMInput]
    #: Its input messages that repeat the previous interaction's outputs (its text and
    #: tool calls, in the order this interaction lists them).
    replayed: Sequence[LLMInput]
    #: How many of its input messages repeat the previous interaction's inputs and outputs.
    repeated: int
    #: Whether its inputs begin with all of the previous interaction's inputs (judged at
    #: the sampled places) and then its outputs (in any order): the model was given
    #: everything written so far. True for the first interaction.
    complete: bool


def normal_json(text: str) -> str:
    """JSON text in one canonical spelling (sorted keys, no extra spaces); other text
    stripped."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return text.strip()


def _key(role: str, content: str | LLMToolCall | LLMToolResponse) -> Key:
    """Identity of a message for spotting repeated history: what it says, not how typed."""
    if isinstance(content, LLMToolCall):
        return ("call", content.id, content.name, normal_json(content.parameters))
    if isinstance(content, LLMToolResponse):
        return ("result", content.id, content.response.strip())
    return ("text", role, " ".join(content.split()))


def _message_key(message: LLMInput) -> Key:
    return _key(message.role, message.content)


def _same(a: LLMInput, b: LLMInput) -> bool:
    return a is b or _message_key(a) == _message_key(b)


def _repeats(inputs: Sequence[LLMInput], previous: Sequence[LLMInput]) -> bool:
    """Whether `inputs` begins with `previous`, judged at the first, middle and last places."""
    n = len(previous)
    if len(inputs) < n:
        return False
    return not n or all(_same(inputs[k], previous[k]) for k in {0, n // 2, n - 1})


def _anchor(inputs: Sequence[LLMInput], last: LLMInput, expected: int) -> int | None:
    """Where `last` (the previous inputs' last message) is in `inputs`: at `expected`, or
    the last place within `ANCHOR_WINDOW` of the end; None when it is not there."""
    if 0 <= expected < len(inputs) and _same(inputs[expected], last):
        return expected
    for p in range(len(inputs) - 1, max(-1, len(inputs) - 1 - ANCHOR_WINDOW), -1):
        if _same(inputs[p], last):
            return p
    return None


def _common_prefix(inputs: Sequence[LLMInput], previous: Sequence[LLMInput]) -> int:
    n = min(len(inputs), len(previous))
    i = 0
    while i < n and _same(inputs[i], previous[i]):
        i += 1
    return i


def _replayed(inputs: Sequence[LLMInput], start: int, outputs: Sequence[Key]) -> tuple[int, bool]:
    """How far from `start` the inputs repeat `outputs`, in any order (a converter can list
    an assistant message's text and tool calls either way), and whether all of them."""
    pending = Counter(outputs)
    end = start
    while pending and end < len(inputs):
        key = _message_key(inputs[end])
        if not pending[key]:
            break
        pending[key] -= 1
        if not pending[key]:
            del pending[key]
        end += 1
    return end, not pending


def _compare(
    interaction: LLMInteraction, previous: Sequence[LLMInput], outputs: Sequence[Key]
) -> Turn:
    inputs = interaction.input_messages
    n = len(previous)
    head: Sequence[LLMInput] = ()
    whole = _repeats(inputs, previous)
    if whole:  # the whole history, then what is new: the common case
        start = n
    else:
        p = _anchor(inputs, previous[-1], n - 1)
        if p is None:
            # A fresh or rewritten context: it repeats at most its common beginning.
            k = _common_prefix(inputs, previous)
            return Turn(interaction, inputs[k:], (), repeated=k, complete=False)
        start = p + 1
        if p > 0 and not _same(inputs[0], previous[0]):
            head = inputs[:1]  # a rewritten first message (a system prompt with the time)
    end, all_outputs = _replayed(inputs, start, outputs)
    new = [*head, *inputs[end:]] if head else inputs[end:]
    complete = whole and all_outputs
    return Turn(interaction, new, inputs[start:end], repeated=end - len(head), complete=complete)


def new_messages(interactions: Iterable[LLMInteraction]) -> Iterator[Turn]:
    """For each of an agent's LLM interactions, in order, the input messages that are new
    relative to the previous interaction's inputs and outputs (see the module's notes)."""
    previous: Sequence[LLMInput] = ()
    outputs: list[Key] = []
    for interaction in interactions:
        yield _compare(interaction, previous, outputs)
        previous = interaction.input_messages
        outputs = [_key("assistant", o.content) for o in interaction.output_messages]
