"""Verdicts: which agents failed which criteria, read the same way everywhere.

The one statement of what "failing" means (docs/guides/scoring.md, "How scores become
verdicts", says the same; the CLI, the report, the server's list and API and the pytest
plugin all read it from here):

- An agent instance **fails** a criterion when its score is below the criterion's bar,
  `fail_under`. The bar is the one the user sets (`fail_under=`, `--fail-under`, the
  pytest plugin's `min_score`), else `CHECK_BAR` (1.0: a deterministic check that found
  any problem) for a check and `JUDGED_BAR` (0.5) for a judged criterion.
- A score of None ("not applicable") and a judgement that could not be made ("not
  evaluated", with its reason) neither pass nor fail, and are left out of every mean,
  median, minimum and count of failures.
- Per criterion, a `MultiAgentTraceResponse` keeps the seed SDK's fields
  (`overall_score` is the mean over agents, `agent_scores`) and adds `worst_agent` (the
  lowest-scoring instance) and `failing_agents` (how many instances are below the bar).
- Per trace, `TraceVerdict.of(responses)` (in `_answers`, beside the answers it reads):
  the trace fails when any (agent, criterion)
  pair fails; its `worst_score` (what a list shows for it) is the lowest agent score of
  any criterion, never a mean; `failures` lists the failing pairs, worst first.
"""

from __future__ import annotations

import re

from pydantic import Field

from tracejudge.models._base import WireModel

__all__ = [
    "CHECK_BAR",
    "JUDGED_BAR",
    "Failure",
    "ScoredAgent",
    "Step",
    "default_bar",
    "fails",
]

#: The bar of a deterministic check: any problem it found is a failure.
CHECK_BAR = 1.0
#: The bar of a judged criterion (Reward / Penalize scores, Passes if / Fails if 0 or 1).
JUDGED_BAR = 0.5


def default_bar(is_check: bool) -> float:
    """The bar of a criterion when the user set none."""
    return CHECK_BAR if is_check else JUDGED_BAR


def fails(score: float | None, bar: float) -> bool:
    """Whether a score fails its bar (None, not applicable or not evaluated, never does)."""
    return score is not None and score < bar


class Step(WireModel):
    """Where in an agent instance a finding points: `interaction`, the index of the model
    call in the agent's `llm_interactions` (from 0), and the tool call when there is one."""

    interaction: int = Field(ge=0)
    tool_call_id: str | None = None
    tool_name: str | None = None

    _omit_when_none = frozenset({"tool_call_id", "tool_name"})

    @staticmethod
    def call_name(interaction: int) -> str:
        """A model call as every text a person reads names it: "call 3" for the agent's
        `llm_interactions[2]` (JSON keeps the index from 0; people count from 1)."""
        return f"call {interaction + 1}"

    @property
    def call(self) -> str:
        """This step's model call as a person reads it ("call 3")."""
        return Step.call_name(self.interaction)

    def label(self) -> str:
        """ "call 3, tool call call_7 (search)": the step as a person reads it."""
        if self.tool_call_id is None:
            return self.call
        named = f" ({self.tool_name})" if self.tool_name else ""
        return f"{self.call}, tool call {self.tool_call_id}{named}"

    def named_in(self, text: str) -> bool:
        """Whether `text` names this step's model call ("call 3", not "call 30")."""
        return re.search(rf"\b{re.escape(self.call)}\b", text) is not None


class ScoredAgent(WireModel):
    """One agent instance and its score on one criterion."""

    agent_name: str
    agent_instance_id: str
    score: float


class Failure(WireModel):
    """One failing (agent instance, criterion) pair: its score, the bar it fell below,
    what the criterion said, and the steps the finding points to (checks know them)."""

    criterion: str
    agent_name: str
    agent_instance_id: str
    score: float
    fail_under: float
    explanation: str = ""
    steps: list[Step] = Field(default_factory=list)
