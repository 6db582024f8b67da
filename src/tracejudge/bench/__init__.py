"""The attribution benchmark: how well an attribution method (and its judge) finds the
agent and the step at fault, on labelled failed traces.

- `read_items(paths)`: Who&When's JSON (both splits, a directory or files), MP-Bench's
  multi-label form and tracejudge's own labelled traces (a MultiAgentTrace JSON with
  `labels: [{agent, step}]`) as `BenchItem`s; chat histories become traces by
  `history_trace` (one agent per speaker, step i is history entry i).
- `run_bench(service, items, methods)`: each item attributed by each method through the
  evaluation service, scored (`score_item`: exact integer step match, ±k, nDCG@k) and
  summed up per split and method with bootstrap intervals: a `tracejudge.models.BenchReport`.

`tracejudge bench attribution DATA --judge SPEC --method M` runs it from the shell.
"""

from __future__ import annotations

from tracejudge.bench._history import history_trace, speaker
from tracejudge.bench._items import BenchItem
from tracejudge.bench._metrics import ndcg_at, score_item
from tracejudge.bench._read import read_items
from tracejudge.bench._run import estimate, rows_of, run_bench

__all__ = [
    "BenchItem",
    "estimate",
    "history_trace",
    "ndcg_at",
    "read_items",
    "rows_of",
    "run_bench",
    "score_item",
    "speaker",
]
