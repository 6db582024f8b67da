"""Attribution: which agent, which step caused a trace's failure, ranked, with evidence.

What `Composo.attribute()` and `tracejudge attribute` answer (the server and the trace
viewer will show the same JSON). A trace's *steps* are its agents' model calls; each has
two names:

- `Step` (from `_verdict`): the agent instance's own model call index (`interaction`, as
  in `AgentInstance.llm_interactions`) and the tool call when there is one, the way the
  checks' findings point;
- `index`: the step's place in the whole trace, from 0: every agent's model calls in the
  order they ran (by start time when every call has one, else in the tree's order, a
  child's calls where its parent ran it). This is what `tracejudge attribute` prints as
  "step N" and what benchmarks compare (a Who&When history entry's index, say).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tracejudge.models._answers import JudgeUsage
from tracejudge.models._base import WireModel
from tracejudge.models._verdict import Step

__all__ = ["ATTRIBUTION_METHODS", "Attribution", "AttributionMethod", "Cause"]

#: How a cause was found: the deterministic checks (and failing criteria), or one of the
#: judge methods.
AttributionMethod = Literal[
    "checks", "all_at_once", "step_by_step", "binary_search", "counterfactual"
]
#: Every method, in the order `attribute` runs them when several are picked.
ATTRIBUTION_METHODS: tuple[AttributionMethod, ...] = (
    "checks",
    "all_at_once",
    "step_by_step",
    "binary_search",
    "counterfactual",
)


class Cause(WireModel):
    """One candidate cause of the failure: an agent instance and, where known, its step.

    - `rank`: 1 for the most likely cause.
    - `step`: the agent's model call (and tool call) the cause lies in; None when the
      cause is the agent as a whole (a budget it overran, a judged criterion it failed).
    - `index`: the step's place in the whole trace (see this module's docstring).
    - `method`: what found it; `criteria`: for `checks`, the checks (or criteria) whose
      findings point here.
    - `evidence`: what in the trace shows it (a check's finding, the judge's reasoning).
    - `confidence`: 0..1, how sure the method is (a schema violation is near certain; a
      judge's guess is what the judge says, capped by the method).
    - `consequence_of`: the rank of an earlier cause this one may follow from (the tool
      error a bad argument produced, the answer cut off after it); None for a root cause.
    - `fix`, `outcome_changes`: the counterfactual method's smallest fix for the step, and
      whether the judge predicts that the failure would then be avoided.
    """

    rank: int = Field(ge=1)
    agent_name: str
    agent_instance_id: str
    step: Step | None = None
    index: int | None = Field(default=None, ge=0)
    method: AttributionMethod
    criteria: list[str] = Field(default_factory=list)
    evidence: str = ""
    confidence: float = Field(ge=0.0, le=1.0)
    consequence_of: int | None = None
    fix: str | None = None
    outcome_changes: bool | None = None

    _omit_when_none = frozenset({"step", "index", "consequence_of", "fix", "outcome_changes"})


class Attribution(WireModel):
    """The ranked causes of one trace's failure.

    `failed`: whether there was a failure to explain (a failing check or criterion, a
    given `outcome`, or the caller's word); `failures` says what failed, one line each.
    `causes` are ranked, most likely first: the deterministic findings first (the
    earliest root cause before its consequences), then those of the judge methods picked,
    then agents that failed a judged criterion without a step. `methods` are the methods
    that ran; `notes` what could not be done (a judge method without a judge, a judgement
    over its budget). `usage` sums the judge calls (tokens, and dollars for a priced
    model); `seconds` is the wall time.
    """

    trace_id: str | None = None
    failed: bool
    failures: list[str] = Field(default_factory=list)
    outcome: str | None = None
    causes: list[Cause] = Field(default_factory=list)
    methods: list[AttributionMethod] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    steps: int = 0
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    seconds: float = 0.0

    _omit_when_none = frozenset({"trace_id", "outcome"})

    @property
    def top(self) -> Cause | None:
        """The most likely cause, or None when none was found."""
        return self.causes[0] if self.causes else None

    def ranked_indexes(self) -> list[int]:
        """The distinct step indexes of the causes, in rank order (what nDCG ranks)."""
        seen: dict[int, None] = {}
        for cause in self.causes:
            if cause.index is not None:
                seen.setdefault(cause.index, None)
        return list(seen)
