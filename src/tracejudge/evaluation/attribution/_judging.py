"""The one way attribution asks its judge: `Asker.ask`, over the service's judge call.

Every judge call of the attribution methods goes through here, so what the judge does
around a call (its cache, retries, a token budget, exploration) applies to them as to
any judgement, and what the calls cost is summed from each `Verdict.usage`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tracejudge.errors import MalformedError
from tracejudge.judges import JudgeRequest, StructuredRequest, Verdict, reply_of
from tracejudge.models import JudgeUsage

__all__ = ["Asker", "JudgeCall", "schema"]

#: How the evaluation service sends one request to its judge (its concurrency limit held).
JudgeCall = Callable[[JudgeRequest], Awaitable[Verdict]]


def schema(**properties: dict[str, Any]) -> dict[str, Any]:
    """A strict reply schema: an object of `properties`, every one required, no other
    (what strict structured output asks for). "explanation" comes first."""
    ordered = {"explanation": {"type": "string"}, **properties}
    return {
        "type": "object",
        "properties": ordered,
        "required": list(ordered),
        "additionalProperties": False,
    }


@dataclass
class Asker:
    """Asks the judge structured questions for one attribution; sums their usage."""

    call: JudgeCall
    name: str = "judge"
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    notes: list[str] = field(default_factory=list)

    async def ask(self, request: StructuredRequest) -> dict[str, Any] | None:
        """The judge's reply object, or None when the judge could not judge (a budget or a
        cap ran out: the reason is noted). Raises `MalformedError` for a judge that scores
        the question instead of answering it (one that does not know structured asks)."""
        verdict = await self.call(request)
        self.usage = self.usage + verdict.usage
        if verdict.not_evaluated is not None:
            self.notes.append(f"{request.schema_name}: not evaluated ({verdict.not_evaluated})")
            return None
        reply = reply_of(verdict)
        if reply is None:
            raise MalformedError(
                f"judge {self.name} answered a structured ask with a score, not its reply "
                "object; attribution needs a judge that answers StructuredRequest (the HTTP "
                "judges do; a judge of your own returns Verdict(raw={'reply': {...}}))"
            )
        return reply
