"""Reading a judge model's reply: the re-ask of an unusable one, the judgement it holds,
and the verdict that judgement gives (a mixin of `HTTPJudge`, split from `_backend`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx

from tracejudge.errors import MalformedError
from tracejudge.errors import TimeoutError as RequestTimeoutError
from tracejudge.judges._exchange import Answer, Ask, Tally
from tracejudge.judges._parse import (
    Judgement,
    ReplyError,
    extract_object,
    validate_reply,
    weighted_score,
)
from tracejudge.judges._types import JudgeRequest, Verdict
from tracejudge.models import JudgeUsage

__all__ = ["ReplyReading", "verdict_entry"]

logger = logging.getLogger("tracejudge.judges")

# Replies longer than this are decoded and parsed in a worker thread: reading a few MiB
# takes long enough to stall every other call sharing the event loop. Shorter ones are
# read in place (a thread hop costs more than they do).
INLINE_READ_LIMIT = 64 * 1024

# What a reply is interpreted into: the judgement(s), the object(s) read, the weighted grade.
_Interpret = Callable[[Answer], Any]


class ReplyReading:
    """What `HTTPJudge` does with an answer once it has one."""

    name: str
    base_url: str
    timeout: float
    max_tokens: int | None
    _logprobs_notice_given: bool

    async def _ask(
        self,
        messages: Any,
        ask: Ask,
        client: httpx.AsyncClient,
        deadline: float,
        tally: Tally,
    ) -> tuple[Answer, bool]:
        raise NotImplementedError

    async def _off_loop(self, deadline: float, size: int, function: Any, *args: Any) -> Any:
        """`function(*args)`: in place for small inputs, else in a worker thread so other
        calls on this event loop go on meanwhile, and bounded by the judgement's deadline."""
        if size <= INLINE_READ_LIMIT:
            return function(*args)
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            # The thread cannot be stopped; the parse it runs is linear in a reply that the
            # response size cap bounds, so it ends soon after the deadline at worst.
            return await asyncio.wait_for(asyncio.to_thread(function, *args), max(remaining, 0))
        except asyncio.TimeoutError:
            raise RequestTimeoutError(
                f"judge {self.name}: reading its {size:,}-character reply did not finish "
                f"within the {self.timeout:g}s timeout; raise timeout, or lower max_tokens"
            ) from None

    def _logprobs_notice(self, reason: str) -> None:
        # Once per judge: a missing feature is worth knowing, not worth a line per call.
        if not self._logprobs_notice_given:
            self._logprobs_notice_given = True
            logger.info("%s; using the reported score (judge %s)", reason, self.name)

    async def _readable(
        self,
        messages: list[dict[str, Any]],
        ask: Ask,
        client: httpx.AsyncClient,
        deadline: float,
        tally: Tally,
        interpret: _Interpret,
        reask: Callable[[str], str],
    ) -> tuple[Answer, Any, bool]:
        """Ask, and read the answer with `interpret`; an unusable one is asked again once
        (the bad reply shown back with `reask(problem)`); a second raises MalformedError.
        The answer, what `interpret` made of it, and whether logprobs were asked for."""
        answer, logprobs_asked = await self._ask(messages, ask, client, deadline, tally)
        try:
            read = await self._off_loop(deadline, len(answer.text), interpret, answer)
        except ReplyError as problem:
            logger.debug("%s: unusable reply (%s); asking again", self.name, problem)
            corrective = [
                *messages,
                {"role": "assistant", "content": answer.text or "(empty reply)"},
                {"role": "user", "content": reask(self._problem(problem, answer))},
            ]
            answer, logprobs_asked = await self._ask(corrective, ask, client, deadline, tally)
            try:
                read = await self._off_loop(deadline, len(answer.text), interpret, answer)
            except ReplyError as second:
                raise self._malformed(second, answer) from None
        return answer, read, logprobs_asked

    def _problem(self, problem: ReplyError, answer: Answer) -> str:
        if answer.cut_off:
            limit = f" (max_tokens={self.max_tokens})" if self.max_tokens else ""
            return (
                f"{problem}; the reply was cut off at the token limit{limit}: keep the "
                "explanation to a few sentences"
            )
        return str(problem)

    def _malformed(self, problem: ReplyError, answer: Answer) -> MalformedError:
        shown = answer.text if len(answer.text) <= 500 else answer.text[:500] + "..."
        cut = " (cut off at the token limit: raise max_tokens)" if answer.cut_off else ""
        return MalformedError(
            f"judge {self.name} twice gave a reply that is not the expected JSON "
            f"object ({problem}){cut}; last reply: {shown!r}. A stronger judge model, or "
            "one that supports structured output, usually fixes this",
            response_body=answer.text,
        )

    def _verdict(
        self,
        request: JudgeRequest,
        judgement: Judgement,
        value: dict[str, Any],
        weighted: float | None,
        answer: Answer,
        logprobs_asked: bool,
        usage: JudgeUsage,
        **raw: Any,
    ) -> Verdict:
        """The verdict a validated judgement gives `request`."""
        if not judgement.applicable:
            weighted = None
            score: float | None = None
            source = "not_applicable"
        elif request.kind.is_binary:
            score = 1.0 if judgement.passed else 0.0
            source = "passed"
        else:
            assert judgement.score is not None
            if answer.logprobs is not None:
                if weighted is None:
                    self._logprobs_notice(
                        f"the logprobs from {self.base_url} do not show the score as one token"
                    )
            elif logprobs_asked:
                self._logprobs_notice(f"logprobs not returned by {self.base_url}")
            grade = weighted if weighted is not None else float(judgement.score)
            score = min(1.0, max(0.0, (grade - 1.0) / 9.0))
            source = "logprobs" if weighted is not None else "reported"
        return Verdict(
            score=score,
            explanation=judgement.explanation,
            cleaned_explanation=judgement.cleaned_explanation,
            usage=usage,
            raw={
                "reply": value,
                "text": answer.text,
                "score_source": source,
                "weighted_score": weighted,
                "cached": False,
                **raw,
            },
        )

    @staticmethod
    def _interpret(
        answer: Answer, request: JudgeRequest
    ) -> tuple[Judgement, dict[str, Any], float | None]:
        """The validated judgement in an answer, the object it was read from, and the
        logprob-weighted grade (None when there are no usable logprobs). Pure CPU work,
        linear in the answer: safe to run in a worker thread."""
        keys = ("passed",) if request.kind.is_binary else ("score",)
        extracted = extract_object(answer.text, keys=(*keys, "explanation"))
        judgement = validate_reply(extracted.value, request.kind, request.clean_explanation)
        weighted: float | None = None
        if (
            judgement.applicable
            and judgement.score is not None
            and not request.kind.is_binary
            and answer.logprobs is not None
        ):
            weighted = weighted_score(answer.logprobs, judgement.score)
        return judgement, extracted.value, weighted


def verdict_entry(verdict: Verdict) -> dict[str, Any]:
    """What the cache keeps of a verdict."""
    return {
        "score": verdict.score,
        "explanation": verdict.explanation,
        "cleaned_explanation": verdict.cleaned_explanation,
        "raw": verdict.raw,
    }
