"""Converter throughput and memory, against the decode floor measured in the same run.

Inputs are the recorded fixtures (tests/fixtures/*.jsonl: OpenLLMetry, OpenInference and
GenAI-semconv output of real runs) replicated with fresh trace ids (see
`_converter_inputs`), written as OTLP/JSON lines and as OTLP protobuf. Figures:

- `json`, `protobuf`: `traces_from_otlp(path)` on the file, against the floor: parsing
  every line (protobuf: every `ResourceSpans` with `ParseFromString`) plus the
  JSON-string attributes inside (`json.loads`; with msgspec installed, a second floor
  with msgspec's decoder, which the converter then uses too).
- `sdk`: `traces_from_spans` on in-process `ReadableSpan`s, against parsing their
  JSON-string attributes.
- `stream`: the converter as a batch reads a large file: `read_otlp_batches`, spans
  grouped by trace id, each trace converted with `traces_from_records` once its lines
  have passed (the input keeps a trace within two neighbouring lines); at every size, for
  linearity (the time ratio of the two largest sizes, 10x apart; target within 12x) and
  peak memory.
- `score` (with `--score`): `tracejudge score` (deterministic checks) on the largest
  file: time and peak RSS (target under 300 MB).

Every figure runs in a fresh child process (the SDK floor shares the conversion's, as
building the spans takes longer than either); peak memory is its VmHWM. The floors and
the whole-file conversions run `--repeat` times (default 2), taking turns, and the fastest
run of each counts, as timeit counts its best. Ratios compare figures of one run
(absolute times vary on a shared machine).

    python benchmarks/converter_throughput.py                 # 10k, 100k: under 2 min
    python benchmarks/converter_throughput.py --quick         # 2k, 20k, 200k spans
    python benchmarks/converter_throughput.py --full          # also 1M spans streamed
    python benchmarks/converter_throughput.py --full --score  # and `tracejudge score` on 1M
    python benchmarks/converter_throughput.py --producers     # per producer: 300 traces each

The default run measures linearity from 10k to 100k spans and prints what 1M would take
at the 100k rate; `--full` measures the 1M-span streamed run (a 1.95 GB file; under 4
minutes in all on a 2-core machine), `--score` the issue's `tracejudge score` figure on
the largest file (on 1M spans, several minutes more).

With `--producers`, one row per producer instead: 300 traces copied from that producer's
framework recordings (tests/fixtures/frameworks, in turn) as OTLP/JSON lines, converted
whole against the stdlib `json` floor (target: <= 3x on every producer, not only the mix),
by CPU time, the median of `--repeat` turns (see `per_producer`).

Prints one line per figure, then the targets, met or not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _converter_inputs as inputs  # noqa: E402

#: Span counts (default run, --full run, --quick run).
SIZES = (10_000, 100_000)
FULL_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (2_000, 20_000, 200_000)
#: Sizes converted whole (`traces_from_otlp`, `traces_from_spans` hold the input).
WHOLE = 2


def peak_mib() -> float:
    """This process's peak resident memory (VmHWM) in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


# --------------------------------------------------------------------------- floors


def _json_attributes(span: dict[str, Any], loads: Callable[[Any], Any]) -> None:
    for item in span.get("attributes", ()):
        text = item.get("value", {}).get("stringValue")
        if text and text[:1] in "[{":
            try:
                loads(text)
            except ValueError:
                pass


def floor_json(path: str, decoder: str) -> int:
    """Parse every OTLP/JSON line and the JSON-string attributes of its spans."""
    loads = _loads(decoder)
    spans = 0
    with open(path, "rb") as lines:
        for line in lines:
            for resource in loads(line)["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        spans += 1
                        _json_attributes(span, loads)
    return spans


def _resource_spans(path: str) -> Iterator[bytes]:
    """The serialized `ResourceSpans` (field 1 entries) of a protobuf file."""
    data = Path(path).read_bytes()
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        size, position = _varint(data, position)
        if key >> 3 == 1:
            yield data[position : position + size]
        position += size


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def floor_protobuf(path: str, decoder: str) -> int:
    """Parse every `ResourceSpans` and the JSON-string attributes of its spans."""
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

    loads = _loads(decoder)
    spans = 0
    for payload in _resource_spans(path):
        message = ResourceSpans()
        message.ParseFromString(payload)
        for scope in message.scope_spans:
            for span in scope.spans:
                spans += 1
                for item in span.attributes:
                    text = item.value.string_value
                    if text and text[:1] in "[{":
                        try:
                            loads(text)
                        except ValueError:
                            pass
    return spans


def _loads(decoder: str) -> Callable[[Any], Any]:
    if decoder == "msgspec":
        import msgspec

        return msgspec.json.Decoder().decode
    return json.loads


# --------------------------------------------------------------------------- SDK spans


def sdk_spans(path: str) -> list[Any]:
    """The file's spans as SDK `ReadableSpan`s, as an in-process exporter receives them."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

    from tracejudge.convert._otlp import _json_attributes as attributes

    kinds = {1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT}
    found = []
    with open(path, "rb") as lines:
        for line in lines:
            for resource in json.loads(line)["resourceSpans"]:
                for scope_spans in resource["scopeSpans"]:
                    scope = InstrumentationScope(scope_spans["scope"].get("name", ""))
                    for raw in scope_spans["spans"]:
                        trace_id = int(raw["traceId"], 16)
                        parent = raw.get("parentSpanId")
                        found.append(
                            ReadableSpan(
                                name=raw["name"],
                                context=SpanContext(trace_id, int(raw["spanId"], 16), False),
                                parent=SpanContext(trace_id, int(parent, 16), False)
                                if parent
                                else None,
                                kind=kinds.get(raw.get("kind", 1), SpanKind.INTERNAL),
                                attributes=attributes(raw.get("attributes")),
                                start_time=int(raw["startTimeUnixNano"]),
                                end_time=int(raw["endTimeUnixNano"]),
                                status=Status(StatusCode.UNSET),
                                instrumentation_scope=scope,
                            )
                        )
    return found


def floor_sdk(spans: list[Any], decoder: str) -> int:
    """Parse the JSON-string attributes of the spans (their only encoded content)."""
    loads = _loads(decoder)
    for span in spans:
        for value in span.attributes.values():
            if isinstance(value, str) and value[:1] in "[{":
                try:
                    loads(value)
                except ValueError:
                    pass
    return len(spans)


# --------------------------------------------------------------------------- conversions


def convert_whole(path: str) -> int:
    from tracejudge.convert import traces_from_otlp

    traces = traces_from_otlp(Path(path))
    return traces.spans_read


def convert_stream(path: str) -> int:
    """Stream the file: a trace is converted once two lines have passed without it."""
    from tracejudge.convert import ConversionMemo, read_otlp_batches, traces_from_records

    memo = ConversionMemo()  # what is learnt of the keys serves every trace of the stream
    pending: dict[str, list[Any]] = {}
    last_seen: dict[str, int] = {}
    spans = converted = 0
    for number, batch in enumerate(read_otlp_batches(path)):
        for span in batch.spans:
            pending.setdefault(span.trace_id, []).append(span)
            last_seen[span.trace_id] = number
            spans += 1
        done = [t for t, seen in last_seen.items() if seen < number - 1]
        for trace_id in done:
            converted += len(traces_from_records(pending.pop(trace_id), memo=memo))
            del last_seen[trace_id]
    for records in pending.values():
        converted += len(traces_from_records(records, memo=memo))
    return spans


def child(task: str, path: str, decoder: str) -> dict[str, Any]:
    """Run one figure in this (fresh) process: seconds, spans, peak MiB."""
    import tracejudge.convert  # imported before the clock starts, as a running program has

    prepared: Any = None
    floor: dict[str, Any] | None = None
    if task == "sdk":  # the floor first, in this process: building the spans takes long
        prepared = sdk_spans(path)
        start = time.perf_counter()
        spans = floor_sdk(prepared, decoder)
        floor = {"seconds": time.perf_counter() - start, "spans": spans, "peak_mib": peak_mib()}
    del tracejudge
    start = time.perf_counter()
    cpu_start = time.process_time()
    if task == "floor_json":
        spans = floor_json(path, decoder)
    elif task == "floor_protobuf":
        spans = floor_protobuf(path, decoder)
    elif task == "sdk":
        from tracejudge.convert import traces_from_spans

        spans = traces_from_spans(prepared).spans_read
    elif task == "whole":
        spans = convert_whole(path)
    elif task == "stream":
        spans = convert_stream(path)
    else:
        raise SystemExit(f"unknown task {task}")
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    return {"seconds": seconds, "cpu": cpu, "spans": spans, "peak_mib": peak_mib(), "floor": floor}


def run_child(task: str, path: Path, decoder: str = "json") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", task, str(path), decoder],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


_SCORE_SHIM = """\
import atexit, runpy, sys
peak_file = sys.argv.pop(1)
def report():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(peak_file, "w").write(line.split()[1])
atexit.register(report)
runpy.run_module("tracejudge", run_name="__main__", alter_sys=True)
"""


def run_score(path: Path, directory: str) -> dict[str, Any]:
    """`tracejudge score` on the file (deterministic checks only): seconds, peak MiB
    (the VmHWM of the process, written at its exit), result lines."""
    peak_file = Path(directory) / "peak"
    out = Path(directory) / "out.jsonl"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _SCORE_SHIM, str(peak_file), "score", str(path), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - start
    peak = int(peak_file.read_text()) / 1024 if peak_file.exists() else float("nan")
    with open(out) if out.exists() else open(os.devnull) as lines:
        count = sum(1 for _ in lines)
    return {"seconds": seconds, "peak_mib": peak, "exit": done.returncode, "lines": count}


def _interleaved(
    tasks: list[tuple[str, str]], path: Path, repeat: int
) -> dict[tuple[str, str], dict[str, Any]]:
    """Each (task, decoder) run `repeat` times, the tasks taking turns, and the fastest run
    of each kept (as timeit keeps its best: a slower run is the machine's doing, and the
    floors and conversions are treated alike)."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {task: [] for task in tasks}
    for _ in range(repeat):
        for task, decoder in tasks:
            runs[(task, decoder)].append(run_child(task, path, decoder))
    return {task: min(figures, key=lambda f: f["seconds"]) for task, figures in runs.items()}


# --------------------------------------------------------------------------- the run


def _line(name: str, figure: dict[str, Any], floor: dict[str, Any] | None = None) -> str:
    rate = figure["spans"] / figure["seconds"] if figure["seconds"] else float("inf")
    text = (
        f"{name:<28} {figure['spans']:>9} spans {figure['seconds']:8.2f} s "
        f"{rate:>9,.0f} spans/s  peak {figure['peak_mib']:7.1f} MiB"
    )
    if floor is not None:
        text += f"  {figure['seconds'] / floor['seconds']:5.2f}x floor"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2k, 20k, 200k spans")
    parser.add_argument("--full", action="store_true", help="10k, 100k, 1M spans")
    parser.add_argument(
        "--score", action="store_true", help="also time `tracejudge score` on the largest file"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        metavar="N",
        help="runs of each floor and whole conversion, taking turns; the fastest is kept "
        "(default 2)",
    )
    parser.add_argument(
        "--producers",
        action="store_true",
        help="one row per producer: 300 traces of its recordings, against the json floor",
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(*options.child)))
        return
    if options.producers:
        per_producer(options.repeat)
        return
    sizes = QUICK_SIZES if options.quick else FULL_SIZES if options.full else SIZES
    try:
        import msgspec  # noqa: F401

        decoders = ["json", "msgspec"]
    except ImportError:
        decoders = ["json"]
    print(
        f"# converter_throughput: python {sys.version.split()[0]}, {os.cpu_count()} cores, "
        f"decoders {'+'.join(decoders)}, sizes {', '.join(f'{n:,}' for n in sizes)}"
    )
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as directory:
        for size in sizes:
            json_path = Path(directory) / f"spans-{size}.jsonl"
            megabytes = inputs.write_json(json_path, size) / 2**20
            print(f"# {size:,} spans: OTLP/JSON {megabytes:,.0f} MiB")
            whole_size = size in sizes[:WHOLE]
            json_runs = _interleaved(
                [("floor_json", d) for d in decoders] + ([("whole", "json")] if whole_size else []),
                json_path,
                options.repeat,
            )
            floors = {d: json_runs[("floor_json", d)] for d in decoders}
            for decoder, figure in floors.items():
                results[f"floor_json_{decoder}_{size}"] = figure
                print(_line(f"floor json ({decoder})", figure))
            stream = results[f"stream_{size}"] = run_child("stream", json_path)
            print(_line("stream json", stream, floors["json"]))
            if whole_size:
                whole = results[f"json_{size}"] = json_runs[("whole", "json")]
                print(_line("traces_from_otlp json", whole, floors["json"]))
                sdk = results[f"sdk_{size}"] = run_child("sdk", json_path)
                sdk_floor = sdk["floor"]
                print(_line("floor sdk attributes", sdk_floor))
                print(_line("traces_from_spans sdk", sdk, sdk_floor))
                pb_path = Path(directory) / f"spans-{size}.pb"
                inputs.write_protobuf(pb_path, size)
                pb_runs = _interleaved(
                    [("floor_protobuf", d) for d in decoders] + [("whole", "json")],
                    pb_path,
                    options.repeat,
                )
                pb_floors = {d: pb_runs[("floor_protobuf", d)] for d in decoders}
                for decoder, figure in pb_floors.items():
                    results[f"floor_protobuf_{decoder}_{size}"] = figure
                    print(_line(f"floor protobuf ({decoder})", figure))
                pb = results[f"protobuf_{size}"] = pb_runs[("whole", "json")]
                print(_line("traces_from_otlp protobuf", pb, pb_floors["json"]))
                pb_path.unlink()
            if options.score and size == sizes[-1]:
                score = run_score(json_path, directory)
                print(
                    f"tracejudge score             {size:>9} spans {score['seconds']:8.2f} s  "
                    f"peak {score['peak_mib']:7.1f} MiB  exit {score['exit']}  "
                    f"{score['lines']} result lines"
                )
                results["score"] = score
            json_path.unlink()
    _targets(results, sizes, decoders)


#: Traces per producer row.
PRODUCER_TRACES = 300


def per_producer(repeat: int) -> None:
    """The converter against the stdlib json floor on each producer's recordings: the
    median, over `repeat` turns, of each turn's ratio of CPU times (the child's
    `process_time`: on a shared machine, wall time counts the other processes' turns,
    which moved these small figures by 30-50% from run to run), and the fastest wall
    times for reference."""
    print(
        f"# converter_throughput --producers: {PRODUCER_TRACES} traces each, json floor, "
        f"median of {repeat} turns"
    )
    worst: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory() as directory:
        for label, recordings in inputs.producers().items():
            path = Path(directory) / "producer.jsonl"
            spans = inputs.write_json_traces(path, recordings, PRODUCER_TRACES)
            turns = [
                (run_child("floor_json", path), run_child("whole", path)) for _ in range(repeat)
            ]
            ratio = statistics.median(whole["cpu"] / floor["cpu"] for floor, whole in turns)
            floor_ms = statistics.median(floor["cpu"] for floor, _ in turns) * 1e3
            whole_ms = statistics.median(whole["cpu"] for _, whole in turns) * 1e3
            wall = min(w["seconds"] for _, w in turns) / min(f["seconds"] for f, _ in turns)
            worst.append((ratio, label))
            print(
                f"{label:<34} {spans:>6} spans  floor {floor_ms:7.1f} ms  "
                f"convert {whole_ms:7.1f} ms  {ratio:5.2f}x  (wall, best of each: {wall:5.2f}x)"
            )
    ratio, label = max(worst)
    over = [name for r, name in sorted(worst, reverse=True) if r > 3]
    print("# targets")
    print(
        f"every producer <= 3x its json floor: {'met' if not over else 'NOT met'} "
        f"(highest {label} {ratio:.2f}x" + (f"; over: {', '.join(over)})" if over else ")")
    )


def _targets(
    results: dict[str, dict[str, Any]], sizes: tuple[int, ...], decoders: list[str]
) -> None:
    def mark(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print("# targets")
    middle = sizes[1]
    for kind in ("json", "protobuf"):
        for decoder in decoders:
            ratio = (
                results[f"{kind}_{middle}"]["seconds"]
                / results[f"floor_{kind}_{decoder}_{middle}"]["seconds"]
            )
            print(
                f"{kind} conversion / {decoder} decode floor at {middle:,}: {ratio:.2f}x "
                f"(target <= 3x): {mark(ratio <= 3)}"
            )
    big, mid = results[f"stream_{sizes[-1]}"], results[f"stream_{sizes[-2]}"]
    linear = big["seconds"] / mid["seconds"]
    print(
        f"linearity stream {sizes[-1]:,}/{sizes[-2]:,}: {linear:.2f}x for "
        f"{big['spans'] / mid['spans']:.0f}x the spans (target <= 12x): {mark(linear <= 12)}"
    )
    if sizes[-1] < 1_000_000:
        estimate = big["seconds"] * 1_000_000 / big["spans"]
        print(
            f"stream 1,000,000 spans estimated at {estimate:.0f} s at the {sizes[-1]:,} rate "
            "(not measured; --full measures it)"
        )
    peaks = [results[f"stream_{n}"]["peak_mib"] for n in sizes]
    print(
        f"stream peak memory {' / '.join(f'{p:.0f}' for p in peaks)} MiB at "
        f"{' / '.join(f'{n:,}' for n in sizes)} spans "
        f"(bounded: the largest {big['peak_mib'] <= 2 * mid['peak_mib']})"
    )
    if "score" in results:
        megabytes = results["score"]["peak_mib"] * 1.048576
        verdict = mark(megabytes < 300)
        print(f"tracejudge score peak RSS {megabytes:.0f} MB (target < 300 MB): {verdict}")


if __name__ == "__main__":
    main()
