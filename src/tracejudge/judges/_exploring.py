"""Judging material too long for the judge's input budget: the judge explores it.

The model is shown the request's digest instead of its content and reads what it needs
through the request's tools, round by round, until it answers with the judgement. Every
request stays within `max_input_tokens` (a read is cut to the room left); the caps of
`ExplorationLimits` (rounds, tokens per read, tokens over all rounds, the `spend` check)
bound the rest. A cap hit before a verdict gives a verdict that is not evaluated, with the
reason; so does an endpoint that refuses tool calls. Nothing here knows what the material
is: the digest is text and the tools are callables.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from typing import Any, Protocol

import httpx

from tracejudge.errors import MalformedError
from tracejudge.judges._budget import BYTES_PER_TOKEN, TokenEstimator
from tracejudge.judges._exchange import Answer, Ask, AskedCall, Tally, ToolsRefused
from tracejudge.judges._parse import Judgement, ReplyError
from tracejudge.judges._prompt import SYSTEM_PROMPT, data_block, fenced, question, reask_message
from tracejudge.judges._spans import JudgeSpans
from tracejudge.judges._tools import Exploration, ExplorationTool
from tracejudge.judges._types import JudgeRequest, Verdict
from tracejudge.models import JudgeUsage

__all__ = ["explore"]

logger = logging.getLogger("tracejudge.judges")

# A read given less room than this is not made: the judge is told to answer.
_MIN_READ_TOKENS = 64
# Tokens kept free in every request besides the reads (the next round's wrapping).
_MARGIN_TOKENS = 64


def _note(exploration: Exploration, needed: int, budget: int) -> str:
    limits = exploration.limits
    names = ", ".join(tool.name for tool in exploration.tools)
    return (
        f"The material is too long to show whole (about {needed:,} tokens; this judgement "
        f"may hold {budget:,}): between the delimiters above is a digest of it, not the "
        f"material itself. Read what you need with the tools ({names}) before you judge: "
        f"each read returns at most about {limits.max_read_tokens:,} tokens, and you have "
        f"at most {limits.max_rounds - 1} rounds of reads. Judge only on what the digest "
        "and your reads show. When you have the evidence, answer with the JSON object and "
        "call no tool."
    )


class HTTPJudging(Protocol):
    """What the exploring loop uses of the judge (`HTTPJudge`)."""

    name: str
    base_url: str
    timeout: float
    max_input_tokens: int
    estimator: TokenEstimator
    spans: JudgeSpans | None

    def estimate(self, messages: Sequence[dict[str, Any]], ask: Ask) -> int: ...

    async def _ask(
        self,
        messages: Sequence[dict[str, Any]],
        ask: Ask,
        client: httpx.AsyncClient,
        deadline: float,
        tally: Tally,
    ) -> tuple[Answer, bool]: ...

    @staticmethod
    def _interpret(
        answer: Answer, request: JudgeRequest
    ) -> tuple[Judgement, dict[str, Any], float | None]: ...

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
    ) -> Verdict: ...

    def _problem(self, problem: ReplyError, answer: Answer) -> str: ...

    def _malformed(self, problem: ReplyError, answer: Answer) -> MalformedError: ...


class _Stop(Exception):
    """A cap ran out: the verdict is not evaluated, for `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Exploring:
    """One exploring judgement in progress."""

    def __init__(
        self,
        judge: HTTPJudging,
        request: JudgeRequest,
        why: str,
        needed: int,
        client: httpx.AsyncClient,
    ) -> None:
        assert request.exploration is not None
        self.judge = judge
        self.request = request
        self.exploration = request.exploration
        self.limits = request.exploration.limits
        self.client = client
        self.budget = judge.max_input_tokens
        self.tally = Tally()
        self.reads: list[dict[str, Any]] = []
        self.record: dict[str, Any] = {
            "reason": why,
            "max_input_tokens": self.budget,
            "rounds": 0,
            "reads": self.reads,
            "tokens_read": 0,
            "largest_request_tokens": 0,
        }
        self.reading = Ask(tools=self.exploration.tools)
        self.answering = Ask(tools=self.exploration.tools, final=True)
        self.note = _note(self.exploration, needed, self.budget)
        self.messages: list[dict[str, Any]] = []
        self.spent_input = 0

    async def _start(self) -> None:
        """The first request's messages, with the digest (made in a worker thread: making
        it may read the whole material)."""
        # The digest may take half of what the first request leaves: the rest is for reads.
        base = self.judge.estimate(self._opening("", self.note), self.reading)
        room = max(_MIN_READ_TOKENS, (self.budget - base - _MARGIN_TOKENS) // 2)
        digest = await asyncio.to_thread(self.exploration.digest_text, self._tool_tokens(room))
        self.messages = self._opening(digest, self.note)

    def _opening(self, digest: str, note: str = "") -> list[dict[str, Any]]:
        """The first request's messages: the system prompt, the digest, the question."""
        heading = "DIGEST (the material is not shown whole: read it with the tools)\n\n"
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": data_block(self.request, content=heading + digest),
                        "cache": True,
                    },
                    {"type": "text", "text": question(self.request, note)},
                ],
            },
        ]

    def _tool_tokens(self, tokens: int) -> int:
        """`tokens` as a tool or the digest counts them (BYTES_PER_TOKEN bytes each): fewer
        when the judge has learnt that its tokenizer yields more tokens than estimated."""
        return max(1, int(tokens / self.judge.estimator.scale))

    async def run(self, started: float) -> Verdict:
        must_answer = False
        reasked = False
        answer: Answer | None = None
        await self._start()
        try:
            for round_number in range(1, self.limits.max_rounds + 1):
                final = must_answer or round_number == self.limits.max_rounds
                answer = await self._round(round_number, final, started)
                if answer.tool_calls:
                    if final:
                        raise _Stop(
                            f"the judge kept reading after {round_number} rounds and gave no "
                            "verdict (max_rounds)"
                        )
                    must_answer = self._read_all(answer)
                    continue
                try:
                    judgement, value, weighted = self.judge._interpret(answer, self.request)
                except ReplyError as problem:
                    if reasked or final:
                        raise self.judge._malformed(problem, answer) from None
                    reasked = True
                    self.messages += [
                        {"role": "assistant", "content": answer.text or "(empty reply)"},
                        {
                            "role": "user",
                            "content": reask_message(
                                self.judge._problem(problem, answer),
                                self.request.kind,
                                self.request.clean_explanation,
                            ),
                        },
                    ]
                    continue
                return self.judge._verdict(
                    self.request,
                    judgement,
                    value,
                    weighted,
                    answer,
                    False,
                    self.tally.usage(time.perf_counter() - started),
                    exploration=self.record,
                )
            raise _Stop("the judge gave no verdict within max_rounds")  # pragma: no cover
        except _Stop as stop:
            logger.info("judge %s: not evaluated: %s", self.judge.name, stop.reason)
            return Verdict(
                score=None,
                explanation=f"Not evaluated: {stop.reason}.",
                usage=self.tally.usage(time.perf_counter() - started),
                raw={"cached": False, "exploration": self.record},
                not_evaluated=stop.reason,
            )

    async def _round(self, number: int, final: bool, started: float) -> Answer:
        ask = self.answering if final else self.reading
        needed = self.judge.estimate(self.messages, ask)
        if needed > self.budget:
            if number == 1:
                raise _Stop(
                    f"{self.record['reason']}, and even its digest needs about {needed:,} tokens"
                )
            raise _Stop(f"the reads filled the budget of {self.budget:,} tokens before a verdict")
        if self.spent_input + needed > self.limits.max_total_tokens:
            raise _Stop(
                f"exploring would pass {self.limits.max_total_tokens:,} input tokens over all "
                f"its rounds (max_total_tokens) after {number - 1} rounds"
            )
        if number > 1 and self.limits.spend is not None:
            reason = self.limits.spend(self.tally.usage(time.perf_counter() - started))
            if reason:
                raise _Stop(reason)
        self.spent_input += needed
        self.record["rounds"] = number
        self.record["largest_request_tokens"] = max(self.record["largest_request_tokens"], needed)
        deadline = asyncio.get_running_loop().time() + self.judge.timeout
        try:
            answer, _ = await self.judge._ask(self.messages, ask, self.client, deadline, self.tally)
        except ToolsRefused:
            raise _Stop(
                f"{self.record['reason']}, and {self.judge.base_url} does not take tool calls"
            ) from None
        return answer

    def _read_all(self, answer: Answer) -> bool:
        """Run the answer's tool calls into the conversation; whether the room is gone
        (the next round must answer)."""
        self.messages.append(
            {
                "role": "assistant",
                "content": answer.text,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments}
                    for c in answer.tool_calls
                ],
            }
        )
        placeholders = [
            {"role": "tool", "tool_call_id": c.id, "content": fenced("")} for c in answer.tool_calls
        ]
        base = self.judge.estimate([*self.messages, *placeholders], self.reading)
        room = self.budget - base - _MARGIN_TOKENS
        share = min(self.limits.max_read_tokens, room // len(answer.tool_calls))
        exhausted = share < _MIN_READ_TOKENS
        for call in answer.tool_calls:
            if exhausted:
                text, tokens = (
                    "(not read: no room is left in this judgement's input budget; answer now "
                    "with the JSON object, on what you have read)",
                    0,
                )
            else:
                text, tokens = self._read(call, share)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": fenced(text)})
        return exhausted

    def _read(self, call: AskedCall, max_tokens: int) -> tuple[str, int]:
        tool = self.exploration.tool(call.name)
        entry: dict[str, Any] = {"tool": call.name, "arguments": call.arguments, "tokens": 0}
        self.reads.append(entry)
        if tool is None:
            names = ", ".join(t.name for t in self.exploration.tools)
            entry["error"] = "no such tool"
            return f"error: there is no tool {call.name!r}; the tools are {names}", 0
        if not isinstance(call.arguments, dict):
            entry["error"] = "arguments are not a JSON object"
            return "error: the arguments must be a JSON object", 0
        spans = self.judge.spans
        context = spans.tool(call.name, call.id) if spans is not None else None
        try:
            if context is not None:
                with context:
                    text = _run(tool, call.arguments, self._tool_tokens(max_tokens))
            else:
                text = _run(tool, call.arguments, self._tool_tokens(max_tokens))
        except ValueError as problem:
            entry["error"] = str(problem)[:200]
            return f"error: {problem}", 0
        text = self._fit(text, max_tokens)
        tokens = self.judge.estimator.from_bytes(len(text.encode("utf-8")))
        entry["tokens"] = tokens
        self.record["tokens_read"] += tokens
        return text, tokens

    def _fit(self, text: str, max_tokens: int) -> str:
        """`text` cut to about `max_tokens` as sent (JSON escapes counted)."""
        estimator = self.judge.estimator

        def tokens(value: str) -> int:
            return estimator.from_bytes(len(json.dumps(value, ensure_ascii=False).encode()))

        if tokens(text) <= max_tokens:
            return text
        suffix = f"\n[cut: longer than the {max_tokens:,} tokens a read may hold]"
        keep = int(max_tokens * BYTES_PER_TOKEN / estimator.scale)
        while keep > 0:
            cut = text[:keep] + suffix
            if tokens(cut) <= max_tokens:
                return cut
            keep = int(keep * 0.8)
        return suffix.strip()


def _run(tool: ExplorationTool, arguments: dict[str, Any], max_tokens: int) -> str:
    result = tool.run(arguments, max_tokens)
    return result if isinstance(result, str) else str(result)


async def explore(
    judge: HTTPJudging,
    request: JudgeRequest,
    why: str,
    needed: int,
    client: httpx.AsyncClient,
    started: float,
) -> Verdict:
    """Judge `request` (of about `needed` tokens, over the budget: `why`) by exploring its
    material. Each round has the judge's `timeout`; a verdict, or a not-evaluated one when
    a cap runs out."""
    return await _Exploring(judge, request, why, needed, client).run(started)
