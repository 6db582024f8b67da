"""Does `compare --fail-on-regression` catch a real regression and leave an unchanged agent
alone? (issue #34's figures)

First, end to end: the adder agent of tests/experiments (the real openai client, traced by
tracejudge, asking a ScriptedLLMServer what N plus one is) is run over 100 rows three
times with `tracejudge.experiment`: as it is (twice) and with a change planted that makes
it answer wrong on 30 of the rows; each run is scored with the exact `correct` comparison
and with a judged criterion whose judge (a ScriptedLLMServer) flips a seeded tenth of its
verdicts. The two comparisons of those real runs are printed.

Then the trials, on the per-row verdicts those runs recorded (the true verdict of each row,
from `correct`): in each of `--trials` seeded trials a judge flips each row's verdict in
each run with probability `--flip`, and `compare_runs` (the default policy: p < 0.05 and a
drop of at least 5 points) is asked about the planted change (baseline vs broken) and
about an A/A pair (the unchanged agent twice). Reported: how often the planted
regression is flagged (target >= 90%), how often the A/A pair is (false fails, target
<= 5%), and what the other A/A trials were (unchanged or inconclusive).

    python benchmarks/experiments_gate.py [--trials 100] [--flip 0.1] [--rows 100]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.experiments.conftest, the agent and judge

from opentelemetry import trace as otel_trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from tests.experiments.conftest import (  # noqa: E402
    adder_model,
    correct,
    make_task,
    noisy_judge,
    rows,
)

import tracejudge  # noqa: E402
from tracejudge.experiments import (  # noqa: E402
    AgentScore,
    GatePolicy,
    RowResult,
    RunRecord,
    StoredRun,
    compare_runs,
)
from tracejudge.judges import OpenAICompatibleJudge  # noqa: E402
from tracejudge.testing import ScriptedLLMServer  # noqa: E402
from tracejudge.tracing import ComposoTracer, Instruments  # noqa: E402

JUDGED = "Reward a correct sum"


def real_run(broken: set[int], salt: str, n: int, where: Path) -> StoredRun:
    with (
        ScriptedLLMServer(default=adder_model(broken)) as agent,
        ScriptedLLMServer(default=noisy_judge(0, salt)) as judge_server,
    ):
        judge = OpenAICompatibleJudge(
            "judge", base_url=judge_server.base_url, api_key="k", cache=False
        )
        return tracejudge.experiment(
            rows(n),
            make_task(agent),
            [correct, JUDGED],
            judge=judge,
            directory=where / salt,
            concurrency=16,
        )


def truth(run: StoredRun) -> dict[str, bool]:
    return {r.id: bool(s.passed) for r in run.results for s in r.scores if s.criterion == "correct"}


def noisy(verdicts: dict[str, bool], rng: random.Random, flip: float) -> StoredRun:
    results = []
    for row, passed in verdicts.items():
        seen = passed != (rng.random() < flip)
        score = AgentScore("adder", JUDGED, 0.9 if seen else 0.2, 0.5, seen)
        results.append(RowResult(row, 0, None, None, None, 0.0, scores=[score]))
    return StoredRun(RunRecord(name="trial", started_at=""), results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--flip", type=float, default=0.1)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--broken", type=float, default=0.3, help="share of rows the change breaks")
    args = parser.parse_args(argv)

    otel_trace.set_tracer_provider(TracerProvider())
    ComposoTracer.init(instruments=Instruments.OPENAI)
    broken = set(random.Random(34).sample(range(args.rows), round(args.broken * args.rows)))
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        baseline = real_run(set(), "baseline", args.rows, where)
        again = real_run(set(), "again", args.rows, where)
        candidate = real_run(broken, "candidate", args.rows, where)
    seconds = time.perf_counter() - began
    print(f"end to end: 3 runs of {args.rows} rows (agent + judge on loopback) in {seconds:.1f} s")
    for label, other in (("planted change", candidate), ("A/A", again)):
        for item in compare_runs(baseline, other).criteria:
            print(f"  {label:15} {item.criterion:22} {item.verdict:12} {item.reason}")

    policy = GatePolicy(resamples=200)  # the verdict needs no interval: keep the trials quick
    base_truth, broken_truth, again_truth = truth(baseline), truth(candidate), truth(again)
    flagged, aa = 0, Counter[str]()
    began = time.perf_counter()
    for seed in range(args.trials):
        rng = random.Random(seed)
        planted = compare_runs(
            noisy(base_truth, rng, args.flip), noisy(broken_truth, rng, args.flip), policy
        )
        flagged += planted.criteria[0].verdict == "regressed"
        same = compare_runs(
            noisy(base_truth, rng, args.flip), noisy(again_truth, rng, args.flip), policy
        )
        aa[same.criteria[0].verdict] += 1
    seconds = time.perf_counter() - began
    print(
        f"trials: {args.trials} seeded, the judge flipping {args.flip:.0%} of verdicts, "
        f"{len(broken)} of {args.rows} rows broken ({seconds:.1f} s)"
    )
    print(
        f"  planted regression flagged: {flagged}/{args.trials} = "
        f"{flagged / args.trials:.0%} (target >= 90%)"
    )
    false_fails = aa["regressed"]
    print(
        f"  A/A flagged (false fails):  {false_fails}/{args.trials} = "
        f"{false_fails / args.trials:.0%} (target <= 5%)"
    )
    print(f"  A/A verdicts: {dict(sorted(aa.items()))}")
    met = flagged >= 0.9 * args.trials and false_fails <= 0.05 * args.trials
    print("met" if met else "NOT met")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
