"""How much of the converter's time per producer is the least any conversion must do.

For each producer of `converter_throughput.py --producers` (300 traces of its framework
recordings as OTLP/JSON lines), four CPU times in this process, the best of three turns
of five runs each:

- `floor`: the stdlib `json` floor of `converter_throughput.py` (every line and every
  attribute holding JSON parsed);
- `decode`: the converter's reading of the file into span records;
- `minimum`: decode, group by trace, the table's reading of every span, each model call
  read and made into its interaction, one agent per trace holding them all: what any
  conversion of these spans must do, with none of the work that finds the agents, places
  the calls, joins tool results, answers and hand-offs;
- `full`: `traces_from_otlp`.

The gap `full - minimum` is what the walk's structure costs; the 3x target of
`--producers` leaves `3 * floor - minimum` for it.

    python benchmarks/converter_minimum.py                       # every producer (~1 min)
    python benchmarks/converter_minimum.py openllmetry_agents    # producers whose label starts so
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _converter_inputs as inputs  # noqa: E402
from converter_throughput import PRODUCER_TRACES, floor_json  # noqa: E402

from tracejudge.convert import _interactions, _merge, _tree, traces_from_otlp  # noqa: E402
from tracejudge.convert import _otlp_records as otlp_records  # noqa: E402
from tracejudge.convert._construct import build  # noqa: E402
from tracejudge.convert._gc import gc_paused  # noqa: E402
from tracejudge.convert._memo import ConversionMemo  # noqa: E402
from tracejudge.convert.conventions import Kind  # noqa: E402
from tracejudge.models import AgentInstance, MultiAgentTrace  # noqa: E402

_INFLATED = 1 << 28


def decode(path: Path) -> Any:
    with gc_paused():
        return otlp_records(path, None, _INFLATED)


def minimum(path: Path) -> list[MultiAgentTrace]:
    """The least a conversion does (see the module's docstring)."""
    with gc_paused():
        records, _ = otlp_records(path, None, _INFLATED)
        by_trace: dict[str, list[Any]] = {}
        for record in records:
            by_trace.setdefault(record.trace_id, []).append(record)
        memo = ConversionMemo()
        traces = []
        for spans in by_trace.values():
            spans = _tree._in_start_order(spans)
            readings = _tree.classify(spans, memo)
            warnings: list[str] = []
            readable = []
            for span in spans:
                reading = readings.get(span.span_id)
                if reading is not None and reading[2] is Kind.MODEL_CALL:
                    extraction = _interactions.read_call(reading[0], reading[1], warnings)
                    if extraction is not None:
                        readable.append((span, extraction))
            aliases: dict[str, str] = {}
            calls = _merge.group_calls(readable, lambda span: None)
            made = [_interactions.interaction(call, warnings, aliases) for call in calls]
            agent = build(
                AgentInstance,
                {
                    "id": "root",
                    "name": "root",
                    "interactions": made,
                    "output": None,
                    "handoff": None,
                    "span_id": None,
                    "evaluations": None,
                },
            )
            traces.append(
                build(
                    MultiAgentTrace,
                    {
                        "root_agent_instance_id": "root",
                        "agent_instance_by_id": {"root": agent},
                        "warnings": warnings,
                        "trace_id": spans[0].trace_id,
                    },
                )
            )
        return traces


def best_ms(run: Callable[[], Any]) -> float:
    run()  # (imports and first-use caches out of the figure)
    turns = []
    for _ in range(3):
        start = time.process_time()
        for _ in range(5):
            run()
        turns.append((time.process_time() - start) / 5)
    return min(turns) * 1e3


def main() -> None:
    wanted = sys.argv[1:]
    print(f"# converter_minimum: {PRODUCER_TRACES} traces each, CPU ms, best of 3 turns of 5")
    print(f"{'producer':<42} {'floor':>6} {'decode':>7} {'minimum':>8} {'full':>6}  min/floor")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "producer.jsonl"
        for label, recordings in inputs.producers().items():
            if wanted and not any(label.startswith(w) for w in wanted):
                continue
            inputs.write_json_traces(path, recordings, PRODUCER_TRACES)
            floor = best_ms(lambda: floor_json(str(path), "json"))  # noqa: B023 (run here)
            figures = [best_ms(lambda f=f: f(path)) for f in (decode, minimum, traces_from_otlp)]  # noqa: B023
            print(
                f"{label:<42} {floor:6.1f} {figures[0]:7.1f} {figures[1]:8.1f} {figures[2]:6.1f}"
                f"  {figures[1] / floor:5.2f}x"
            )


if __name__ == "__main__":
    main()
