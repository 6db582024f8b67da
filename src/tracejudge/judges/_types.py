"""What a judge is given and what it answers: criterion kinds, requests, verdicts, the protocol."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tracejudge.judges._tools import Exploration
from tracejudge.models import JudgeUsage

__all__ = ["CriterionKind", "JudgeRequest", "Verdict", "Judge", "DEFAULT_TARGET"]

#: What is judged when the caller does not say.
DEFAULT_TARGET = "the final assistant response"


class CriterionKind(str, enum.Enum):
    """How a criterion is scored, read from its first words.

    REWARD and PENALIZE are graded (a 1..10 judgement mapped onto 0..1); PASSES_IF and
    FAILS_IF are binary (1.0 or 0.0).
    """

    REWARD = "reward"
    PENALIZE = "penalize"
    PASSES_IF = "passes_if"
    FAILS_IF = "fails_if"

    @classmethod
    def of(cls, criterion: str) -> CriterionKind:
        """The kind a criterion names by its prefix ("Reward", "Penalize", "Passes if",
        "Fails if"; case ignored). A criterion with no known prefix is a REWARD."""
        text = criterion.lstrip().lower()
        for prefix, kind in _PREFIXES:
            if text.startswith(prefix):
                return kind
        return cls.REWARD

    @property
    def is_binary(self) -> bool:
        """True for PASSES_IF and FAILS_IF, whose verdict is pass/fail rather than a grade."""
        return self in (CriterionKind.PASSES_IF, CriterionKind.FAILS_IF)


# British spelling too: criteria are written by people, and "Penalise ..." means the same.
_PREFIXES: tuple[tuple[str, CriterionKind], ...] = (
    ("reward", CriterionKind.REWARD),
    ("penalize", CriterionKind.PENALIZE),
    ("penalise", CriterionKind.PENALIZE),
    ("passes if", CriterionKind.PASSES_IF),
    ("fails if", CriterionKind.FAILS_IF),
)


@dataclass(frozen=True)
class JudgeRequest:
    """One judgement to make: a criterion applied to already-rendered content.

    `content` is the conversation or agent run to judge, as text; it is data, never
    instructions to the judge. `target` is a phrase naming what is judged (for example
    "the final assistant response" or "the agent 'planner'"). With `clean_explanation`
    the verdict also carries `cleaned_explanation`, a rewrite of the explanation that only
    refers to what is visible in user and assistant messages.

    `context` is data that every judgement of a larger whole shares (an outline of the
    trace): it is sent before `content`, so that providers' prompt caches can reuse it.
    `exploration` says how to judge the request when it is over the judge's input budget
    (see `Exploration`); without it such a request is not evaluated.
    """

    criterion: str
    kind: CriterionKind
    content: str
    target: str = DEFAULT_TARGET
    clean_explanation: bool = False
    context: str = ""
    exploration: Exploration | None = field(default=None, compare=False, repr=False)
    #: What is judged, in a word a person reads (an agent's name), for progress lines;
    #: not sent to the judge (`target` is).
    subject: str = field(default="", compare=False)

    @classmethod
    def of(
        cls,
        criterion: str,
        content: str,
        *,
        target: str = DEFAULT_TARGET,
        clean_explanation: bool = False,
        context: str = "",
        exploration: Exploration | None = None,
        subject: str = "",
    ) -> JudgeRequest:
        """A request whose kind is read from the criterion's prefix."""
        return cls(
            criterion=criterion,
            kind=CriterionKind.of(criterion),
            content=content,
            target=target,
            clean_explanation=clean_explanation,
            context=context,
            exploration=exploration,
            subject=subject,
        )


@dataclass(frozen=True)
class Verdict:
    """A judge's answer to one `JudgeRequest`.

    `score` is in 0..1 (1.0 best; None when the criterion does not apply, or when
    `not_evaluated` says why no judgement was made). `usage` counts
    the HTTP requests made (retries and re-asks included), cache hits, tokens and time.
    `raw` holds what the score was made from: `reply` (the JSON object the model gave),
    `text` (its reply text), `score_source` ("logprobs", "reported", "passed" or
    "not_applicable"), `weighted_score` (the 1..10 expectation from logprobs, or None),
    and `cached` (True when the verdict came from the cache); an exploring judgement adds
    `exploration` (why it explored, its rounds and every read: tool, arguments, tokens).
    """

    score: float | None
    explanation: str
    cleaned_explanation: str | None = None
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    raw: dict[str, Any] = field(default_factory=dict)
    #: Why no judgement could be made (a budget or a cap ran out before a verdict): the
    #: score is then None, and the result is "not evaluated", never "not applicable".
    not_evaluated: str | None = None


@runtime_checkable
class Judge(Protocol):
    """Anything that can judge a `JudgeRequest`: the backends here, or a user's own class."""

    name: str

    async def judge(self, request: JudgeRequest) -> Verdict:
        """Judge one request. Raises a `ComposoError` subclass when no verdict can be had."""
        ...

    async def aclose(self) -> None:
        """Release connections and files. The judge may be used again afterwards."""
        ...
