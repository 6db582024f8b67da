"""Batch rewards throughput: `evaluate_rubric_batch` against a judge that answers after a
fixed delay, as a ratio against the floor for that judge server, measured in the same run.

ITEMS (solution, reference answer) pairs are scored against one rubric at concurrency 16
and 64 by:

- bare        httpx alone sending the very judge requests `evaluate_rubric_batch` sends
              (captured first from a run against a recording judge), same concurrency,
              each verdict read: the floor for that judge server
- tracejudge  `tracejudge.rewards.evaluate_rubric_batch(items, rubric=..., model_info=...,
              concurrency=C)`, from synchronous code as a reward worker calls it

The judge is a ScriptedLLMServer in its own process. Every round's items are new (the
verdict cache, on by default, would otherwise answer from memory). The arms take turns
for ROUNDS rounds; each figure is the median. Target: tracejudge at least 85% of the
bare client's throughput. (The published `composo` SDK has no batch reward API.)

    python benchmarks/batch_rewards.py [--items 2000] [--delay 0.05] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from _judge import VERDICT, JudgeProcess, bare_client, median

from tracejudge.rewards import evaluate_rubric_batch
from tracejudge.testing import Reply, ScriptedLLMServer

RUBRIC = "Reward answers that state the same result as the reference answer"
CONCURRENCIES = (16, 64)


def make_items(count: int, salt: int) -> list[dict[str, Any]]:
    return [
        {
            "solution_str": f"The total is {n * 7 + salt} apples (round {salt}).",
            "ground_truth": str(n * 7 + salt),
            "original_input": f"Seven crates of {n} apples plus {salt}: how many apples?",
        }
        for n in range(count)
    ]


def model_info(base_url: str) -> dict[str, Any]:
    return {"provider": "openai", "model": "judge-model", "base_url": base_url, "api_key": "b"}


def tracejudge_run(base_url: str, items: list[dict[str, Any]], concurrency: int) -> None:
    results = evaluate_rubric_batch(
        items, rubric=RUBRIC, model_info=model_info(base_url), concurrency=concurrency
    )
    failed = [r.error for r in results if not r.ok]
    if failed:
        raise AssertionError(f"{len(failed)} items failed: {failed[:3]}")


def capture_requests(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The judge request bodies evaluate_rubric_batch sends for these items."""
    with ScriptedLLMServer(default=Reply.text(VERDICT)) as recorder:
        tracejudge_run(recorder.base_url, items, 16)
        bodies = [r.json for r in recorder.requests if r.json is not None]
    if len(bodies) != len(items):
        raise AssertionError(f"captured {len(bodies)} judge requests for {len(items)} items")
    return bodies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.05, help="judge seconds per answer")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    bodies = capture_requests(make_items(args.items, salt=0))
    seconds: dict[tuple[str, int], list[float]] = {}
    salt = 0
    with JudgeProcess(args.delay) as judge:
        for round_number in range(args.rounds):
            for concurrency in CONCURRENCIES:
                arms = ["bare", "tracejudge"][:: -1 if round_number % 2 else 1]
                for arm in arms:
                    if arm == "bare":
                        start = time.perf_counter()
                        failures = asyncio.run(bare_client(judge.base_url, bodies, concurrency))
                        if failures:
                            raise AssertionError(f"{failures} bare requests failed")
                    else:
                        salt += 1
                        items = make_items(args.items, salt)
                        start = time.perf_counter()
                        tracejudge_run(judge.base_url, items, concurrency)
                    took = time.perf_counter() - start
                    seconds.setdefault((arm, concurrency), []).append(took)

    print(
        f"{args.items} items, one rubric (judge delay {1000 * args.delay:g} ms), median of "
        f"{args.rounds} interleaved rounds, {time.perf_counter() - started:.0f} s in all"
    )
    for concurrency in CONCURRENCIES:
        floor = args.items / median(seconds[("bare", concurrency)])
        rate = args.items / median(seconds[("tracejudge", concurrency)])
        print(
            f"concurrency {concurrency}: bare httpx client {floor:,.0f} items/s (floor; ideal "
            f"{concurrency / args.delay:,.0f})"
        )
        verdict = "met" if rate / floor >= 0.85 else "NOT met"
        print(
            f"concurrency {concurrency}: evaluate_rubric_batch {rate:,.0f} items/s, "
            f"{rate / floor:.2f}x the bare client (target at least 0.85x): {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
