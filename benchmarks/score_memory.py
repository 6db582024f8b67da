"""Peak memory and time of `tracejudge score` on a generated OTLP/JSON lines input.

The input is made of the recorded fixtures (tests/fixtures/*.jsonl, real instrumentation
output), copied with fresh trace ids until it holds TRACES traces; every line holds spans
of 8 traces and each trace's spans are split over two lines, as a Collector's file
exporter interleaves them. The command runs in a child process; its peak resident memory
comes from `getrusage(RUSAGE_CHILDREN)` of a fresh parent.

    python benchmarks/score_memory.py --traces 10000          # the issue's 167 MB case
    python benchmarks/score_memory.py --traces 2000 --gzip    # the same input, gzip

Prints one JSON object: traces, input bytes, seconds, peak RSS in MiB.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
TEMPLATES = (
    "openllmetry.jsonl",
    "genai_semconv.jsonl",
    "openinference.jsonl",
    "openllmetry_responses.jsonl",
    "genai_semconv_events.jsonl",
)
PER_LINE = 8


def _templates() -> list[list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]]:
    """Each fixture's spans as (resource, scope, span) triples."""
    found = []
    for name in TEMPLATES:
        spans = []
        for line in (FIXTURES / name).read_text().splitlines():
            if not line.strip():
                continue
            request = json.loads(line)
            for resource in request.get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        spans.append((resource.get("resource", {}), scope.get("scope", {}), span))
        if spans:
            found.append(spans)
    return found


def _request(spans: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]) -> str:
    resource_spans = [
        {"resource": resource, "scopeSpans": [{"scope": scope, "spans": [span]}]}
        for resource, scope, span in spans
    ]
    return json.dumps({"resourceSpans": resource_spans}, separators=(",", ":"))


def generate_lines(traces: int) -> Iterator[str]:
    """OTLP/JSON lines holding `traces` traces with distinct trace ids."""
    templates = _templates()
    for start in range(0, traces, PER_LINE):
        firsts, seconds = [], []
        for number in range(start, min(start + PER_LINE, traces)):
            trace_id = f"{number + 1:032x}"
            spans = [
                (resource, scope, {**span, "traceId": trace_id})
                for resource, scope, span in templates[number % len(templates)]
            ]
            half = len(spans) // 2
            firsts += spans[:half]
            seconds += spans[half:]
        yield _request(firsts)
        yield _request(seconds)


def write_input(path: Path, traces: int, *, compress: bool = False) -> int:
    """Write the input; return its size in bytes."""
    opener: Any = gzip.open if compress else open
    with opener(path, "wt", encoding="utf-8") as out:
        for line in generate_lines(traces):
            out.write(line + "\n")
    return path.stat().st_size


def measure(arguments: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(seconds, peak RSS of the child in MiB, exit status) of `tracejudge ARGUMENTS`."""
    code = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        "done = subprocess.run([sys.executable, '-m', 'tracejudge', *sys.argv[1:]],"
        " stdout=subprocess.DEVNULL)\n"
        "seconds = time.perf_counter() - start\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(seconds, peak, done.returncode)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *arguments],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    seconds, peak_kib, status = done.stdout.split()
    return float(seconds), int(peak_kib) / 1024, int(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--html", action="store_true", help="also write the HTML report")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / ("input.jsonl.gz" if options.gzip else "input.jsonl")
        size = write_input(source, options.traces, compress=options.gzip)
        arguments = ["score", str(source), "--out", os.path.join(directory, "out.jsonl")]
        if options.html:
            arguments += ["--html", os.path.join(directory, "report.html")]
        seconds, peak, status = measure(arguments)
        html_size = (
            os.path.getsize(os.path.join(directory, "report.html")) if options.html else None
        )
    print(
        json.dumps(
            {
                "traces": options.traces,
                "input_bytes": size,
                "gzip": options.gzip,
                "seconds": round(seconds, 2),
                "peak_rss_mib": round(peak, 1),
                "exit_status": status,
                "html_bytes": html_size,
            }
        )
    )


if __name__ == "__main__":
    main()
