"""How one attribution is scored against its labels (see `tracejudge.models._bench`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tracejudge.bench._items import BenchItem
from tracejudge.models import Attribution, BenchItemResult, JudgeUsage

__all__ = ["ndcg_at", "score_item"]


def _same_agent(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def ndcg_at(ranked: Sequence[int], relevant: Sequence[int], k: int) -> float | None:
    """nDCG@k of the `ranked` steps against the `relevant` ones (binary relevance)."""
    if not relevant:
        return None
    wanted = set(relevant)
    dcg = sum(1.0 / math.log2(rank + 2) for rank, step in enumerate(ranked[:k]) if step in wanted)
    ideal = sum(1.0 / math.log2(rank + 2) for rank in range(min(k, len(wanted))))
    return dcg / ideal


def score_item(
    item: BenchItem,
    method: str,
    attribution: Attribution | None,
    *,
    k: int,
    ndcg_k: int,
    seconds: float,
    error: str | None = None,
) -> BenchItemResult:
    """The item's result: what was predicted (the top cause's agent; the first step the
    causes rank), and whether it is right, exactly and within `k` steps."""
    ranked = attribution.ranked_indexes() if attribution is not None else []
    top = attribution.top if attribution is not None else None
    predicted_agent = top.agent_name if top is not None else None
    predicted_step = ranked[0] if ranked else None
    agent_correct = step_correct = within = None
    if item.agents:
        agent_correct = predicted_agent is not None and any(
            _same_agent(predicted_agent, a) for a in item.agents
        )
    if item.steps:
        step_correct = predicted_step is not None and predicted_step in item.steps
        within = predicted_step is not None and any(
            abs(predicted_step - s) <= k for s in item.steps
        )
    return BenchItemResult(
        item=item.id,
        split=item.split,
        method=method,
        true_agents=list(item.agents),
        true_steps=list(item.steps),
        predicted_agent=predicted_agent,
        predicted_step=predicted_step,
        ranked_steps=ranked,
        agent_correct=agent_correct,
        step_correct=step_correct,
        within_k=within,
        ndcg=ndcg_at(ranked, item.steps, ndcg_k),
        seconds=seconds,
        usage=attribution.usage if attribution is not None else JudgeUsage(),
        error=error,
    )
