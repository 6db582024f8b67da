"""How often `attribute` with no judge puts a planted fault first, on real framework traces.

Every framework recording in tests/fixtures/frameworks (converted with tracejudge.convert)
that no check flags gets one fault of each kind planted into its converted trace
(tests/attribution/inject.py: bad tool arguments, a tool error the agent went on from, an
invented number, a loop, a cut-off answer), at a place chosen by a seeded draw. Prints,
per kind and in total: traces, the right agent ranked first, the right step (the agent's
model call) ranked first, and the time per attribution.

    python benchmarks/attribution_planted.py
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.attribution.inject

from tests.attribution import inject  # noqa: E402
from tests.attribution.conftest import RECORDINGS, is_clean, recording  # noqa: E402

from tracejudge.evaluation.attribution import AttributionRequest  # noqa: E402
from tracejudge.evaluation.service import EvaluationService  # noqa: E402


async def main() -> None:
    service = EvaluationService()
    totals: Counter[str] = Counter()
    agent_right: Counter[str] = Counter()
    step_right: Counter[str] = Counter()
    seconds = 0.0
    clean = 0
    for name in RECORDINGS:
        trace = recording(name)
        if not is_clean(trace):
            continue
        clean += 1
        for kind, plant in inject.PLANTERS.items():
            planted = plant(trace, random.Random(zlib.crc32(f"{name}:{kind}".encode())))
            if planted is None:
                continue
            started = time.perf_counter()
            top = (await service.attribute(AttributionRequest(trace=planted.trace))).top
            seconds += time.perf_counter() - started
            totals[kind] += 1
            if top is not None and top.agent_instance_id == planted.agent_id:
                agent_right[kind] += 1
                if top.step is not None and top.step.interaction == planted.interaction:
                    step_right[kind] += 1
    print(f"{clean} clean recordings of {len(RECORDINGS)}; one fault planted per kind")
    print(f"{'fault':<16} {'traces':>6} {'agent first':>12} {'step first':>11}")
    for kind in inject.PLANTERS:
        n = totals[kind]
        print(f"{kind:<16} {n:>6} {agent_right[kind] / n:>12.1%} {step_right[kind] / n:>11.1%}")
    n = sum(totals.values())
    print(
        f"{'all':<16} {n:>6} {sum(agent_right.values()) / n:>12.1%} "
        f"{sum(step_right.values()) / n:>11.1%}   ({seconds / n * 1000:.1f} ms per attribution)"
    )


if __name__ == "__main__":
    asyncio.run(main())
