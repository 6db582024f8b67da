"""What failed, and the deterministic candidates for its cause, from the criteria's answers.

Every failing (agent, criterion) pair (`TraceVerdict.of`) is a finding. A check's finding
points to its exact steps (`ScoreResponse.steps`): one candidate per step, the line of
the check's explanation that names it as the evidence. They are ordered by when the step
ran, and among findings at the same step by how early in a chain of faults their kind
comes: a call's bad arguments before the error result they bring, a loop, then an answer's
invented number, then the answer itself (cut off, empty, refused), then a budget. A
finding without a step (a budget, a check of your own) points to the agent as a whole;
so does a judged criterion an agent failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracejudge.evaluation.attribution._rank import Candidate
from tracejudge.evaluation.attribution._steps import TraceSteps
from tracejudge.models import Failure, MultiAgentTraceResponse, Step, TraceVerdict

__all__ = ["Findings", "findings"]

#: Where each built-in check's kind of fault comes in a chain of faults, earliest first.
PRECEDENCE = {
    "tool_arguments": 0,
    "tool_results": 1,
    "loops": 2,
    "grounded_numbers": 3,
    "final_answer": 4,
    "budgets": 5,
}
#: How sure a built-in check's finding is to be a real fault, by check.
CONFIDENCE = {
    "tool_arguments": 0.95,
    "tool_results": 0.9,
    "final_answer": 0.9,
    "loops": 0.85,
    "grounded_numbers": 0.75,
    "budgets": 0.6,
}
#: A check of the user's own, whose findings tracejudge cannot weigh.
OTHER_CHECK_CONFIDENCE = 0.7
#: An agent that failed a judged criterion (no step: the judge named none).
CRITERION_CONFIDENCE = 0.5


@dataclass
class Findings:
    """The failures of a trace and the candidates they give, in three groups."""

    failures: list[Failure] = field(default_factory=list)
    #: Check findings with a step, earliest first.
    with_steps: list[Candidate] = field(default_factory=list)
    #: Check findings without a step (the agent as a whole).
    agents: list[Candidate] = field(default_factory=list)
    #: Agents that failed a judged criterion.
    judged: list[Candidate] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What failed, one line per failing pair (what the judge methods are told)."""
        return [
            f"{f.criterion}: agent {f.agent_name!r} ({f.agent_instance_id}) scored "
            f"{f.score:.2f}, below {f.fail_under:g}: {_first_line(f.explanation)}"
            for f in self.failures
        ]


def _base(name: str) -> str:
    return name.split("(", 1)[0]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _evidence(failure: Failure, interaction: int, tool_call_id: str | None) -> str:
    """The line of the finding's explanation about this step, or its summary."""
    lines = [line.lstrip("- ").strip() for line in failure.explanation.splitlines()]
    step = Step(interaction=interaction)
    for line in lines:
        if step.named_in(line) and (tool_call_id is None or tool_call_id in line):
            return f"{failure.criterion}: {line}"
    for line in lines:
        if step.named_in(line):
            return f"{failure.criterion}: {line}"
    return f"{failure.criterion}: {_first_line(failure.explanation)}"


def findings(
    responses: Sequence[MultiAgentTraceResponse],
    steps: TraceSteps,
    checks: set[str],
    *,
    fail_under: float | None = None,
) -> Findings:
    """The failures in `responses` and their candidates; `checks` names the criteria that
    are deterministic checks (the rest were judged)."""
    verdict = TraceVerdict.of(responses, fail_under=fail_under)
    found = Findings(failures=list(verdict.failures))
    keyed: list[tuple[tuple[int, int, int], Candidate]] = []
    for failure in verdict.failures:
        name = _base(failure.criterion)
        if failure.criterion not in checks:
            found.judged.append(
                Candidate(
                    agent_id=failure.agent_instance_id,
                    agent_name=failure.agent_name,
                    method="checks",
                    criteria=[failure.criterion],
                    evidence=f"failed the judged criterion {failure.criterion!r} "
                    f"({failure.score:.2f}): {_first_line(failure.explanation)}",
                    confidence=CRITERION_CONFIDENCE,
                )
            )
            continue
        confidence = CONFIDENCE.get(name, OTHER_CHECK_CONFIDENCE)
        placed = False
        for position, step in enumerate(failure.steps):
            ref = steps.at(failure.agent_instance_id, step.interaction)
            if ref is None:
                continue
            placed = True
            candidate = Candidate(
                agent_id=failure.agent_instance_id,
                agent_name=failure.agent_name,
                method="checks",
                criteria=[failure.criterion],
                evidence=_evidence(failure, step.interaction, step.tool_call_id),
                confidence=confidence,
                step=step,
                index=ref.index,
                chained=True,
            )
            keyed.append(((ref.index, PRECEDENCE.get(name, len(PRECEDENCE)), position), candidate))
        if not placed:
            found.agents.append(
                Candidate(
                    agent_id=failure.agent_instance_id,
                    agent_name=failure.agent_name,
                    method="checks",
                    criteria=[failure.criterion],
                    evidence=f"{failure.criterion}: {_first_line(failure.explanation)}",
                    confidence=confidence,
                )
            )
    found.with_steps = [candidate for _, candidate in sorted(keyed, key=lambda item: item[0])]
    return found
