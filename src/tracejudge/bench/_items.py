"""A labelled item of the attribution benchmark: a failed trace and where its fault is."""

from __future__ import annotations

from dataclasses import dataclass, field

from tracejudge.models import MultiAgentTrace

__all__ = ["BenchItem"]


@dataclass(frozen=True)
class BenchItem:
    """One failed trace with its labels.

    `agents`: the names of the agents labelled at fault (any of them is right); `steps`:
    the labelled step indexes (the trace's step order, `tracejudge.evaluation.attribution.
    trace_steps`; any of them is right, and together they are the relevant set of
    nDCG@k); `outcome`: what went wrong, as the judge methods are told it.
    """

    id: str
    split: str
    trace: MultiAgentTrace
    agents: tuple[str, ...] = ()
    steps: tuple[int, ...] = ()
    outcome: str | None = None
    source: str = ""
    notes: tuple[str, ...] = field(default=())
