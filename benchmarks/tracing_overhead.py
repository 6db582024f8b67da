"""What tracing costs per LLM call, as ratios against arms measured in the same run.

Each arm runs in a process of its own (instrumentation is once per process; see
_overhead_worker.py) and makes chat completions with the real `openai` client over an
in-memory transport, so the time is the client's and the tracing's, without network:

- none           no tracing at all (the floor)
- openllmetry    OpenLLMetry (opentelemetry-instrumentation-openai) alone, spans dropped
- openllmetry-loopfree
                 OpenLLMetry with the request hook tracejudge installs (its chat request
                 recorded in one step, not on a new event loop per call: see
                 tracejudge/tracing/_openllmetry_hook.py), so that the layer's own cost shows
- tracejudge     ComposoTracer.init + one AgentTracer per agent + `tracer.trace` read;
                 built on OpenLLMetry, so this is the arm it is held against
- tracejudge-noread
                 the same without reading `tracer.trace`: the tracing alone (agent span,
                 capture), so that the converter's share of the tracejudge arm shows
- openinference  OpenInference (openinference-instrumentation-openai) alone
- composo        the published `composo` SDK's ComposoTracer + AgentTracer + `.trace`
                 (built on OpenInference), in its own virtualenv (skipped, saying why,
                 when it cannot be installed)

An agent is CALLS_PER_AGENT completions. The arms take turns (a block of AGENTS agents
each, about a tenth of a second, in a rotating order) for ROUNDS rounds, so that a slow
spell of a shared machine falls on all of them alike; the figure is the median time per
call over every agent. Time is each arm process's CPU time by default: nothing in an arm
waits (the transport is in memory), so on an idle machine it equals the wall clock, and on
a busy one it leaves out the time an arm stood waiting for a core (though not the slowdown
other processes cause by sharing caches and cores, so figures from a loaded machine still
scatter by several percent). `--clock wall` measures the wall clock instead.

    python benchmarks/tracing_overhead.py [--rounds 25] [--agents 20] [--calls-per-agent 5]
                                          [--clock cpu|wall]

Targets: tracejudge at most 10% over OpenLLMetry alone; tracejudge cheaper than composo.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _composo

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_overhead_worker.py"
ARMS = (
    "none",
    "openllmetry",
    "openllmetry-loopfree",
    "tracejudge",
    "tracejudge-noread",
    "openinference",
    "composo",
)


class Worker:
    """One arm's process: `block(n)` runs n agents there and returns seconds per call."""

    def __init__(
        self, arm: str, python: Path, env: dict[str, str] | None, calls: int, clock: str
    ) -> None:
        self.arm = arm
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [str(python), str(WORKER), arm, str(calls), clock],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),  # the composo arm must not import this checkout
        )

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.log.seek(0)
            tail = self.log.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"the {self.arm} worker failed:\n{tail}")
        return line

    def ready(self) -> None:
        self._line()

    def block(self, agents: int) -> list[float]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{agents}\n")
        self.process.stdin.flush()
        return json.loads(self._line())

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def start_workers(calls: int, clock: str) -> dict[str, Worker]:
    workers: dict[str, Worker] = {}
    for arm in ARMS:
        if arm == "composo":
            python, why = _composo.composo_python()
            if python is None:
                print(f"composo: skipped ({why})")
                continue
            workers[arm] = Worker(arm, python, _composo.clean_env(), calls, clock)
        else:
            workers[arm] = Worker(arm, Path(sys.executable), None, calls, clock)
    for worker in workers.values():
        worker.ready()
    return workers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--agents", type=int, default=20, help="agents per arm per round")
    parser.add_argument("--calls-per-agent", type=int, default=5)
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu", help="each arm's CPU time, or wall"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    workers = start_workers(args.calls_per_agent, args.clock)
    times: dict[str, list[float]] = {arm: [] for arm in workers}
    order = list(workers)
    try:
        for round_number in range(args.rounds):
            shift = round_number % len(order)
            for arm in order[shift:] + order[:shift]:
                times[arm] += workers[arm].block(args.agents)
    finally:
        for worker in workers.values():
            worker.stop()

    ms = {arm: 1000 * statistics.median(values) for arm, values in times.items()}
    calls = args.rounds * args.agents * args.calls_per_agent
    print(
        f"{calls} chat completions per arm ({args.rounds} interleaved rounds of "
        f"{args.agents} agents x {args.calls_per_agent} calls), median {args.clock} time per "
        f"call, {time.perf_counter() - started:.0f} s in all"
    )
    for arm in workers:
        line = f"{arm}: {ms[arm]:.3f} ms per call, {ms[arm] / ms['none']:.2f}x no tracing"
        if arm != "none":
            line += f", adds {ms[arm] - ms['none']:.3f} ms"
        print(line)
    over = ms["tracejudge"] / ms["openllmetry"] - 1
    verdict = "met" if over <= 0.10 else "NOT met"
    print(
        f"tracejudge over OpenLLMetry alone: {100 * over:+.1f}% "
        f"({ms['tracejudge'] / ms['openllmetry']:.3f}x; target at most +10%): {verdict}"
    )
    alone = ms["tracejudge-noread"] / ms["openllmetry"] - 1
    print(
        f"tracejudge without reading tracer.trace over OpenLLMetry alone: {100 * alone:+.1f}% "
        f"(reading the trace adds {ms['tracejudge'] - ms['tracejudge-noread']:.3f} ms per call)"
    )
    layer = ms["tracejudge"] / ms["openllmetry-loopfree"] - 1
    print(
        f"tracejudge over OpenLLMetry with the same loop-free hook: {100 * layer:+.1f}% "
        f"(the hook saves {ms['openllmetry'] - ms['openllmetry-loopfree']:.3f} ms per call; "
        "the layer and the trace read cost the rest)"
    )
    if "composo" in ms:
        ratio = ms["tracejudge"] / ms["composo"]
        verdict = "met" if ratio < 1 else "NOT met"
        print(f"tracejudge vs composo tracer: {ratio:.3f}x (target below 1.0x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
