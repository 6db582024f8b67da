"""Human labels: a person's verdict on one (trace, agent, criterion), the lines of the
labels file that `tracejudge calibrate` reads (JSON lines, easy to write by hand).

One line::

    {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "agent": "writer",
     "criterion": "Reward answers that cite their sources", "verdict": "fail",
     "note": "no source for the 2019 figure", "who": "ana", "when": "2026-03-02T10:15:00Z"}

- `trace_id`: the trace (its OTLP trace id, or a MultiAgentTrace's `trace_id`).
- `agent` (its name) and/or `agent_instance_id`: the agent judged.
- `criterion`: the criterion's text, or a check's name (`tool_arguments`, ...).
- `verdict` "pass" or "fail", and/or `score` in 0..1 (a grade; for a 1-10 grade g write
  (g - 1) / 9): at least one of them.
- `note`, `who` (the person), `when` (ISO 8601): optional.
"""

from __future__ import annotations

import datetime as _dt
from typing import Literal

from pydantic import Field, field_validator, model_validator

from tracejudge.models._base import WireModel

__all__ = ["HumanLabel", "LabelVerdict"]

LabelVerdict = Literal["pass", "fail"]


class HumanLabel(WireModel):
    """One person's verdict on one agent of one trace against one criterion."""

    trace_id: str = Field(min_length=1)
    agent: str | None = None
    agent_instance_id: str | None = None
    criterion: str = Field(min_length=1)
    verdict: LabelVerdict | None = None
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    note: str | None = None
    who: str | None = None
    when: str | None = None

    _omit_when_none = frozenset(
        {"agent", "agent_instance_id", "verdict", "score", "note", "who", "when"}
    )

    @field_validator("verdict", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("when")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"must be an ISO 8601 date or time such as 2026-03-02T10:15:00Z, got {value!r}"
            ) from None
        return value

    @model_validator(mode="after")
    def _has_agent_and_verdict(self) -> HumanLabel:
        if not (self.agent or self.agent_instance_id):
            raise ValueError("give 'agent' (the agent's name) or 'agent_instance_id'")
        if self.verdict is None and self.score is None:
            raise ValueError("give 'verdict' (\"pass\" or \"fail\") or 'score' (0 to 1)")
        return self

    def verdict_at(self, bar: float) -> LabelVerdict:
        """The pass/fail verdict: `verdict` when given, else `score` held to `bar`."""
        if self.verdict is not None:
            return self.verdict
        assert self.score is not None
        return "fail" if self.score < bar else "pass"
