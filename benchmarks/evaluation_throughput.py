"""Evaluation throughput against a judge that answers after a fixed delay, as ratios
against the floor for that judge server, measured in the same run.

TRACES traces (two agents each: an orchestrator with two LLM calls and a writer it hands
to) are each evaluated against 3 criteria (so 6 judge calls a trace), at concurrency 16
and 64, by:

- bare        an httpx.AsyncClient sending the very requests tracejudge sends (captured
              first from a run against a recording judge) at the same concurrency, and
              reading each verdict: the floor for that judge server
- tracejudge  `AsyncComposo(judge=OpenAICompatibleJudge(...))`: rendering, prompts,
              judge calls, reply parsing, result models (verdict cache off)
- composo     the published `composo` SDK's AsyncComposo (its own virtualenv) against
              `tracejudge serve` (SQLite) doing the same judging; skipped, saying why,
              when it cannot be installed

The judge is a ScriptedLLMServer in its own process. The arms take turns for ROUNDS
rounds; each figure is the median. Target: tracejudge at least 85% of the bare client's
throughput.

    python benchmarks/evaluation_throughput.py [--traces 500] [--delay 0.05] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _composo
from _judge import VERDICT, JudgeProcess, bare_client, median, timed

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.server.harness, the server process

from tests.server.harness import API_KEY, ServerProcess  # noqa: E402

from tracejudge import AsyncComposo  # noqa: E402
from tracejudge.judges import OpenAICompatibleJudge  # noqa: E402
from tracejudge.testing import Reply, ScriptedLLMServer  # noqa: E402

CRITERIA = [
    "Reward agents that answer exactly what was asked",
    "Penalize agents that repeat work another agent already did",
    "Reward agents that hand over clear instructions",
]
CONCURRENCIES = (16, 64)


def make_traces(count: int) -> list[dict[str, Any]]:
    """`count` distinct two-agent traces in the Composo wire format."""
    traces = []
    for n in range(count):
        question = f"Write a short note on city number {n} and its history."
        traces.append(
            {
                "root_agent_instance_id": f"o{n}",
                "agent_instance_by_id": {
                    f"o{n}": {
                        "id": f"o{n}",
                        "name": "orchestrator",
                        "interactions": [
                            {
                                "input_messages": [{"role": "user", "content": question}],
                                "output_messages": [
                                    {"type": "text", "content": f"Plan for city {n}: research."}
                                ],
                            },
                            f"w{n}",
                            {
                                "input_messages": [
                                    {"role": "user", "content": question},
                                    {"role": "assistant", "content": "The writer has a draft."},
                                    {"role": "user", "content": "Check the draft and finish."},
                                ],
                                "output_messages": [
                                    {"type": "text", "content": f"City {n} was founded long ago."}
                                ],
                            },
                        ],
                    },
                    f"w{n}": {
                        "id": f"w{n}",
                        "name": "writer",
                        "interactions": [
                            {
                                "input_messages": [
                                    {"role": "system", "content": "You write short notes."},
                                    {"role": "user", "content": f"Draft a note on city {n}."},
                                ],
                                "output_messages": [
                                    {"type": "text", "content": f"City {n}: a draft note."}
                                ],
                            }
                        ],
                    },
                },
            }
        )
    return traces


def _judge(base_url: str, concurrency: int) -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge(
        "judge-model", base_url=base_url, api_key="bench", cache=False, max_concurrency=concurrency
    )


async def tracejudge_run(base_url: str, traces: list[dict[str, Any]], concurrency: int) -> int:
    """Evaluate every trace; returns the number of results (criterion x trace)."""
    judge = _judge(base_url, concurrency)
    client = AsyncComposo(judge=judge, max_concurrency=concurrency)
    try:
        outcomes = await asyncio.gather(
            *(client.evaluate_trace(t, criteria=CRITERIA) for t in traces)
        )
    finally:
        await client.aclose()
        await judge.aclose()
    for results in outcomes:
        for result in results:
            if len(result.agent_scores) != 2 or None in result.agent_scores.values():
                raise AssertionError(f"an agent was not scored: {result.agent_scores}")
    return sum(len(results) for results in outcomes)


def capture_requests(traces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The judge request bodies tracejudge sends for these traces (a recording judge)."""
    with ScriptedLLMServer(default=Reply.text(VERDICT)) as recorder:
        asyncio.run(tracejudge_run(recorder.base_url, traces, 16))
        bodies = [r.json for r in recorder.requests if r.json is not None]
    expected = len(traces) * len(CRITERIA) * 2
    if len(bodies) != expected:
        raise AssertionError(f"captured {len(bodies)} judge requests, expected {expected}")
    return bodies


def composo_run(
    python: Path, judge: JudgeProcess, traces_file: str, concurrency: int, results: int
) -> float:
    """Seconds the composo SDK takes against a fresh tracejudge server (SQLite)."""
    folder = tempfile.mkdtemp(prefix="tracejudge-bench-")
    server = ServerProcess(
        str(Path(folder) / "bench.db"),
        judge=judge,  # type: ignore[arg-type]  # any object with base_url
        args=["--max-concurrency", str(concurrency), "--rate-limit", "0", "--log-level", "error"],
    ).start()
    try:
        done = subprocess.run(
            [
                str(python),
                str(Path(__file__).with_name("_composo_evaluate.py")),
                server.url,
                API_KEY,
                traces_file,
                json.dumps(CRITERIA),
                str(concurrency),
            ],
            capture_output=True,
            text=True,
            env=_composo.clean_env(),
            cwd=tempfile.gettempdir(),
            timeout=600,
        )
    finally:
        server.stop()
    if done.returncode != 0:
        raise SystemExit(f"the composo run failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if out["failures"] or out["results"] != results:
        raise SystemExit(f"the composo run got {out['results']} results: {out['failures'][:3]}")
    return float(out["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.05, help="judge seconds per answer")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    traces = make_traces(args.traces)
    bodies = capture_requests(traces)
    results = len(traces) * len(CRITERIA)
    python, why = _composo.composo_python()
    if python is None:
        print(f"composo: skipped ({why})")
    traces_file = Path(tempfile.mkdtemp(prefix="tracejudge-bench-")) / "traces.json"
    traces_file.write_text(json.dumps(traces))

    seconds: dict[tuple[str, int], list[float]] = {}
    with JudgeProcess(args.delay) as judge:
        for round_number in range(args.rounds):
            for concurrency in CONCURRENCIES:
                arms = ["bare", "tracejudge", "composo"] if python else ["bare", "tracejudge"]
                shift = round_number % len(arms)
                for arm in arms[shift:] + arms[:shift]:
                    if arm == "bare":

                        async def bare(c: int = concurrency) -> None:
                            failures = await bare_client(judge.base_url, bodies, c)
                            if failures:
                                raise AssertionError(f"{failures} bare requests failed")

                        took = asyncio.run(timed(bare))
                    elif arm == "tracejudge":

                        async def ours(c: int = concurrency) -> None:
                            await tracejudge_run(judge.base_url, traces, c)

                        took = asyncio.run(timed(ours))
                    else:
                        assert python is not None
                        took = composo_run(python, judge, str(traces_file), concurrency, results)
                    seconds.setdefault((arm, concurrency), []).append(took)

    calls = len(bodies)
    print(
        f"{args.traces} traces x {len(CRITERIA)} criteria = {calls} judge calls "
        f"(judge delay {1000 * args.delay:g} ms), median of {args.rounds} interleaved rounds, "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    for concurrency in CONCURRENCIES:
        floor = calls / median(seconds[("bare", concurrency)])
        floor_line = f"concurrency {concurrency}: bare httpx client {floor:,.0f} judge calls/s"
        print(f"{floor_line} (floor; ideal {concurrency / args.delay:,.0f})")
        for arm in ("tracejudge", "composo"):
            if (arm, concurrency) not in seconds:
                continue
            rate = calls / median(seconds[(arm, concurrency)])
            line = (
                f"concurrency {concurrency}: {arm} {rate:,.0f} judge calls/s, "
                f"{rate / floor:.2f}x the bare client"
            )
            if arm == "tracejudge":
                line += f" (target at least 0.85x): {'met' if rate / floor >= 0.85 else 'NOT met'}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
