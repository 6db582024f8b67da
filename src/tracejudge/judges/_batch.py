"""Several criteria of one material judged in ONE call (a mixin of `HTTPJudge`, split
from `_backend`): one reply object per criterion, the call's usage shared out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import httpx

from tracejudge._http import LoopClients
from tracejudge.errors import BadRequestError
from tracejudge.judges._cache import JudgeCache, cache_key
from tracejudge.judges._exchange import Answer, Ask, Tally
from tracejudge.judges._parse import Judgement, ReplyError, extract_object, validate_reply
from tracejudge.judges._prompt import (
    batch_key,
    batch_reask_message,
    batch_reply_schema,
    build_batch_messages,
)
from tracejudge.judges._reading import verdict_entry
from tracejudge.judges._types import JudgeRequest, Verdict
from tracejudge.models import JudgeUsage

__all__ = ["BatchJudging", "share_usage"]


class _BatchHost(Protocol):
    """What `judge_batch` uses of the judge (`HTTPJudge`)."""

    name: str
    model: str
    timeout: float
    max_input_tokens: int
    one_reply_schema_for_all_kinds: bool
    cache: JudgeCache | None
    _clients: LoopClients

    async def judge(self, request: JudgeRequest) -> Verdict: ...

    async def learn_input_budget(self) -> None: ...

    def estimate(self, messages: Sequence[dict[str, Any]], ask: Ask) -> int: ...

    def _cache_parameters(self, request: JudgeRequest) -> dict[str, Any]: ...

    async def _cache_call(self, limit: float, function: Any, *args: Any) -> Any: ...

    def _cached_verdict(self, hit: Any, started: float) -> Verdict | None: ...

    def _judgement_span(self, request: JudgeRequest) -> Any: ...

    def _watched(self, request: JudgeRequest, criterion: str | None = None) -> Any: ...

    async def _readable(
        self,
        messages: list[dict[str, Any]],
        ask: Ask,
        client: httpx.AsyncClient,
        deadline: float,
        tally: Tally,
        interpret: Callable[[Answer], Any],
        reask: Callable[[str], str],
    ) -> tuple[Answer, Any, bool]: ...

    @staticmethod
    def _interpret_batch(
        answer: Answer, requests: Sequence[JudgeRequest]
    ) -> list[tuple[Judgement, dict[str, Any]]]: ...

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


class BatchJudging:
    """`judge_batch()`, over `HTTPJudge`'s machinery."""

    async def judge_batch(self: _BatchHost, requests: Sequence[JudgeRequest]) -> list[Verdict]:
        """Judge several criteria of one material in ONE call: one reply object per
        criterion (see docs/guides/judge.md, "The judge reply contract"). Cheaper than a
        call each (the
        material is read once), at the price of some independence between the criteria.

        The requests must share `content`, `context`, `target` and `clean_explanation`.
        Logprobs are not asked for (each criterion's reported grade is its score). When the
        call would be over `max_input_tokens`, each request is judged alone (and explores,
        or is not evaluated, as `judge` does). Verdicts in the order of `requests`; the
        call's usage is shared out among them.
        """
        listed = list(requests)
        if not listed:
            return []
        for request in listed:
            if not isinstance(request, JudgeRequest):
                raise TypeError(f"judge_batch() takes JudgeRequests, got {type(request).__name__}")
            if not request.criterion.strip():
                raise BadRequestError("the criterion is empty; write what to reward or penalise")
        first = listed[0]
        shared = (first.content, first.context, first.target, first.clean_explanation)
        if any((r.content, r.context, r.target, r.clean_explanation) != shared for r in listed):
            raise ValueError(
                "judge_batch() judges several criteria of ONE material: the requests must "
                "share content, context, target and clean_explanation"
            )
        if len(listed) == 1:
            return [await self.judge(first)]
        started = time.perf_counter()
        await self.learn_input_budget()
        messages = build_batch_messages(listed)
        ask = Ask(schema=batch_reply_schema(listed, self.one_reply_schema_for_all_kinds))
        if self.estimate(messages, ask) > self.max_input_tokens:
            return list(await asyncio.gather(*(self.judge(r) for r in listed)))
        parameters = {
            **self._cache_parameters(first),
            "kind": [r.kind.value for r in listed],
        }
        key: str | None = None
        if self.cache is not None:
            key = cache_key(self.name, self.model, messages, parameters)
            hit = await self._cache_call(self.timeout / 4, self.cache.get, key)
            entries = hit.get("verdicts") if isinstance(hit, dict) else None
            if isinstance(entries, list) and len(entries) == len(listed):
                cached = [self._cached_verdict(entry, started) for entry in entries]
                hits = [v for v in cached if v is not None]
                if len(hits) == len(cached):
                    return hits
        state = self._clients.get()
        loop = asyncio.get_running_loop()
        criteria = f"{len(listed)} criteria" if len(listed) > 1 else first.criterion
        async with state.semaphore:
            with self._judgement_span(first), self._watched(first, criteria):
                deadline = loop.time() + self.timeout
                tally = Tally()
                answer, read, _ = await self._readable(
                    messages,
                    ask,
                    state.client,
                    deadline,
                    tally,
                    lambda answer: self._interpret_batch(answer, listed),
                    lambda problem: batch_reask_message(problem, listed),
                )
        shares = share_usage(tally.usage(time.perf_counter() - started), len(listed))
        verdicts = [
            self._verdict(
                request,
                judgement,
                value,
                None,
                answer,
                False,
                share,
                batch={"criteria": len(listed), "index": index},
            )
            for index, (request, (judgement, value), share) in enumerate(
                zip(listed, read, shares, strict=True)
            )
        ]
        if key is not None and self.cache is not None:
            entry = {"verdicts": [verdict_entry(v) for v in verdicts]}
            await self._cache_call(deadline - loop.time(), self.cache.set, key, entry)
        return verdicts

    @staticmethod
    def _interpret_batch(
        answer: Answer, requests: Sequence[JudgeRequest]
    ) -> list[tuple[Judgement, dict[str, Any]]]:
        """Each criterion's validated judgement in a reply for several, and its object."""
        keys = tuple(batch_key(i) for i in range(len(requests)))
        extracted = extract_object(answer.text, keys=keys)
        read: list[tuple[Judgement, dict[str, Any]]] = []
        for index, request in enumerate(requests):
            part = extracted.value.get(batch_key(index))
            if not isinstance(part, dict):
                raise ReplyError(
                    f'the JSON object needs "{batch_key(index)}": the object for criterion '
                    f"{index + 1}"
                )
            try:
                judgement = validate_reply(part, request.kind, request.clean_explanation)
            except ReplyError as problem:
                raise ReplyError(f'in "{batch_key(index)}", {problem}') from None
            read.append((judgement, part))
        return read


def share_usage(usage: JudgeUsage, parts: int) -> list[JudgeUsage]:
    """`usage` shared out among `parts` verdicts (what is left over goes to the first),
    so that their sum is the whole."""

    def split(total: int) -> list[int]:
        each, rest = divmod(total, parts)
        return [each + (rest if i == 0 else 0) for i in range(parts)]

    columns = {
        name: split(getattr(usage, name))
        for name in (
            "calls",
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "cached_input_tokens",
            "cache_write_tokens",
        )
    }
    return [
        JudgeUsage(
            **{name: values[i] for name, values in columns.items()},
            latency_seconds=usage.latency_seconds / parts,
        )
        for i in range(parts)
    ]
