"""Precision and recall of the deterministic checks on a planted-fault suite, and their speed.

Builds the suite by running scripted two-agent runs (an orchestrator and a tool-using
researcher, see tests/checks/faults.py) through the real openai client and tracejudge's
tracing against a ScriptedLLMServer: clean runs, and each fault kind several times with
variations, each planted in one agent. A check "flags" an agent instance when it scores
it below 1.0; every (trace, agent instance) pair is one item, and the ground truth is the
planted (check, agent). Then prints, per check: planted and flagged counts, precision,
recall and the mean time to evaluate one trace, and the totals over all checks; then the
same for harder cases that show the checks' known limits; then the precision and recall of
the plain-text refusal detector (`final_answer`'s reading of refusals written as text) on
the answers of tests/checks/refusal_answers.py and on every answer text the recorded real
API exchanges hold (tests/fixtures/cassettes); then the time each check takes on one
agent with a long history.

    python benchmarks/checks_precision.py [--variants 4] [--repeat 20] [--long 2000]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.checks.faults, the scripted scenarios

from opentelemetry import trace as otel_trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from tests.checks import faults, refusal_answers  # noqa: E402

from tracejudge import checks  # noqa: E402
from tracejudge.evaluation import TraceCheck  # noqa: E402
from tracejudge.evaluation._checks.text import declines  # noqa: E402
from tracejudge.models import MultiAgentTrace  # noqa: E402
from tracejudge.testing import Cassette, ScriptedLLMServer  # noqa: E402
from tracejudge.tracing import ComposoTracer, Instruments  # noqa: E402

CHECKS: list[TraceCheck] = [
    *checks.ALL,
    checks.budgets(max_tokens=faults.TOKEN_BUDGET, max_seconds=30),
]


@dataclass
class Tally:
    """Counts for one check over (trace, agent instance) items."""

    planted: int = 0
    flagged: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    seconds: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        return self.tp / self.flagged if self.flagged else None

    @property
    def recall(self) -> float | None:
        return self.tp / self.planted if self.planted else None


def _timed(check: TraceCheck, trace: MultiAgentTrace, repeat: int) -> tuple[dict, float]:
    start = time.perf_counter()
    for _ in range(repeat):
        results = check.evaluate(trace)
    return results, (time.perf_counter() - start) / repeat


def score(recorded: list[tuple[faults.Scenario, MultiAgentTrace]], repeat: int) -> dict[str, Tally]:
    tallies = {check.name: Tally() for check in CHECKS}
    for scenario, trace in recorded:
        for check in CHECKS:
            tally = tallies[check.name]
            results, seconds = _timed(check, trace, repeat)
            tally.seconds.append(seconds)
            for agent in trace.iter_agents():
                result = results.get(agent.id)
                flagged = result is not None and result.score is not None and result.score < 1.0
                planted = scenario.fault == (faults.base_name(check.name), agent.name)
                tally.planted += planted
                tally.flagged += flagged
                tally.tp += planted and flagged
                if flagged and not planted:
                    tally.fp += 1
                    tally.false_alarms.append(f"{scenario.name} ({agent.name})")
                if planted and not flagged:
                    tally.fn += 1
                    tally.misses.append(f"{scenario.name} ({agent.name})")
    return tallies


def _ratio(value: float | None) -> str:
    return "   -" if value is None else f"{value:.2f}"


def table(title: str, tallies: dict[str, Tally], traces: int) -> str:
    width = max([len("check"), *map(len, tallies)])
    header = (
        f"{'check':<{width}} {'planted':>7} {'flagged':>7} {'TP':>4} {'FP':>4} {'FN':>4} "
        f"{'precision':>9} {'recall':>6} {'ms/trace':>8}"
    )
    lines = [f"{title} ({traces} traces)", header, "-" * len(header)]
    for name, t in tallies.items():
        mean_ms = 1000 * sum(t.seconds) / len(t.seconds) if t.seconds else 0.0
        lines.append(
            f"{name:<{width}} {t.planted:>7} {t.flagged:>7} {t.tp:>4} {t.fp:>4} {t.fn:>4} "
            f"{_ratio(t.precision):>9} {_ratio(t.recall):>6} {mean_ms:>8.3f}"
        )
    total = Tally()
    for t in tallies.values():
        total.planted += t.planted
        total.flagged += t.flagged
        total.tp += t.tp
    lines.append("-" * len(header))
    lines.append(
        f"{'all checks':<{width}} {total.planted:>7} {total.flagged:>7} {total.tp:>4} "
        f"{total.flagged - total.tp:>4} {total.planted - total.tp:>4} "
        f"{_ratio(total.precision):>9} {_ratio(total.recall):>6}"
    )
    for name, t in tallies.items():
        if t.misses:
            lines.append(f"  {name} missed: {', '.join(t.misses)}")
        if t.false_alarms:
            lines.append(f"  {name} false alarms: {', '.join(t.false_alarms)}")
    return "\n".join(lines)


def long_agent_timings(rounds: int) -> str:
    """Milliseconds per check on one agent with `rounds` tool-call rounds (the complexity
    check: a chat agent resends its whole history on every call)."""
    agent = faults.long_agent(rounds)
    trace = MultiAgentTrace.from_agent(agent)
    parts = []
    for check in CHECKS:
        start = time.perf_counter()
        check.evaluate(trace)
        parts.append(f"{faults.base_name(check.name)} {1000 * (time.perf_counter() - start):.0f}")
    return f"One agent with {rounds} LLM interactions, ms per check: " + ", ".join(parts)


def _recorded_answers() -> list[str]:
    """Every answer text in the recorded real API exchanges (Chat Completions, Responses,
    Anthropic Messages; non-streamed bodies)."""
    texts: list[str] = []
    for path in sorted((ROOT / "tests" / "fixtures" / "cassettes").glob("*.yaml")):
        for exchange in Cassette.load(path).exchanges:
            try:
                body = exchange.response_json
            except ValueError:
                continue
            if not isinstance(body, dict):
                continue
            for choice in body.get("choices") or []:
                content = (choice.get("message") or {}).get("content")
                if isinstance(content, str):
                    texts.append(content)
            for block in body.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "text":
                    texts.append(block.get("text", ""))
            for item in body.get("output") or []:
                for part in item.get("content") or [] if isinstance(item, dict) else []:
                    if isinstance(part, dict) and part.get("type") == "output_text":
                        texts.append(part.get("text", ""))
    return [t for t in texts if t.strip()]


def refusal_table() -> str:
    """Precision and recall of the written-refusal detector, and its time per answer."""
    sets = [
        ("corpus", refusal_answers.REFUSALS, refusal_answers.ANSWERS),
        ("held out", refusal_answers.HELD_OUT_REFUSALS, refusal_answers.HELD_OUT_ANSWERS),
        ("recorded API answers", [], _recorded_answers()),
    ]
    header = (
        f"{'answers':<22} {'refusals':>8} {'others':>6} {'TP':>4} {'FP':>4} {'FN':>4} "
        f"{'precision':>9} {'recall':>6} {'us/answer':>9}"
    )
    lines = ["Refusals written as text (final_answer's detector)", header, "-" * len(header)]
    notes = []
    for title, refusals, others in sets:
        start = time.perf_counter()
        found = [bool(declines(a)) for a in refusals]
        false = [a for a in others if declines(a)]
        micros = 1e6 * (time.perf_counter() - start) / max(1, len(refusals) + len(others))
        tp = sum(found)
        flagged = tp + len(false)
        lines.append(
            f"{title:<22} {len(refusals):>8} {len(others):>6} {tp:>4} {len(false):>4} "
            f"{len(refusals) - tp:>4} {_ratio(tp / flagged if flagged else None):>9} "
            f"{_ratio(tp / len(refusals) if refusals else None):>6} {micros:>9.1f}"
        )
        missed = [a for a, hit in zip(refusals, found, strict=True) if not hit]
        notes += [f"  {title} missed: {a!r}" for a in missed]
        notes += [f"  {title} false alarm: {a!r}" for a in false]
    return "\n".join(lines + notes)


def record(
    scenarios: list[faults.Scenario], server: ScriptedLLMServer
) -> tuple[list[tuple[faults.Scenario, MultiAgentTrace]], float]:
    start = time.perf_counter()
    recorded = [(s, faults.run(s, server)) for s in scenarios]
    return recorded, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=4, help="variations per fault kind")
    parser.add_argument("--repeat", type=int, default=20, help="timed evaluations per trace")
    parser.add_argument(
        "--long", type=int, default=2000, help="LLM interactions of the long agent timed"
    )
    args = parser.parse_args(argv)

    if not isinstance(otel_trace.get_tracer_provider(), TracerProvider):
        otel_trace.set_tracer_provider(TracerProvider())
    ComposoTracer.init(instruments=Instruments.OPENAI)

    suite = faults.suite(variants=args.variants)
    hard = faults.hard_cases()
    with ScriptedLLMServer() as server:
        core, core_seconds = record(suite, server)
        edge, _ = record(hard, server)

    kinds: dict[str, int] = {}
    for scenario in suite:
        kinds[scenario.kind] = kinds.get(scenario.kind, 0) + 1
    print(
        f"Recorded {len(core)} traces in {core_seconds:.1f} s through the real tracer: "
        + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    )
    print()
    print(table("Planted-fault suite", score(core, args.repeat), len(core)))
    print()
    print(table("Hard cases (known limits)", score(edge, args.repeat), len(edge)))
    print()
    print(refusal_table())
    print()
    print(long_agent_timings(args.long))
    return 0


if __name__ == "__main__":
    sys.exit(main())
