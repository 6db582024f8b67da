"""Converter input read as a stream: a 1 GiB file costs no 1 GiB of memory, a gzip file of
many members inflates in linear time, and a directory means the OTLP files inside it.
Memory is measured in a fresh process (its peak resident size), with generous bounds."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.convert._helpers import fixture
from tracejudge.convert import traces_from_otlp

REPO = Path(__file__).resolve().parents[2]

_MEASURE = """
import resource, sys, time
from pathlib import Path
from tracejudge.convert import traces_from_otlp
started = time.perf_counter()
result = traces_from_otlp(Path(sys.argv[1]))
took = time.perf_counter() - started
try:  # this process's own high-water mark (ru_maxrss may carry the parent's over exec)
    status = open("/proc/self/status").read()
    peak = int(status.split("VmHWM:")[1].split()[0]) // 1024
except (OSError, IndexError):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(len(result), took, peak, repr(result.warnings[:1]))
"""


def _measure(path: Path) -> tuple[int, float, int, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    traces, took, peak, warning = done.stdout.split(" ", 3)
    return int(traces), float(took), int(peak), warning


def test_a_1_gib_file_is_not_read_into_memory(tmp_path: Path) -> None:
    # A sparse file: 1 GiB of zeros that costs no disk. Read whole it took 1,068 MB.
    path = tmp_path / "zeros.bin"
    with path.open("wb") as handle:
        handle.truncate(1 << 30)
    traces, took, peak_mb, warning = _measure(path)
    assert traces == 0 and "not OTLP" in warning
    assert peak_mb < 300, f"{peak_mb} MB peak for a 1 GiB input"
    assert took < 10


def test_a_large_otlp_file_after_valid_spans_keeps_them_and_stops_at_the_damage(
    tmp_path: Path,
) -> None:
    path = tmp_path / "damaged.pb"
    path.write_bytes(fixture("openllmetry", ".pb").read_bytes())
    with path.open("r+b") as handle:
        handle.truncate(1 << 30)  # 1 GiB: the spans, then zeros
    traces, took, peak_mb, warning = _measure(path)
    assert traces == 1 and "truncated or corrupt" in warning
    assert peak_mb < 300, f"{peak_mb} MB peak for a 1 GiB input"


def test_a_gzip_file_of_many_small_members_inflates_in_linear_time(tmp_path: Path) -> None:
    # A Collector appending tiny compressed batches: 100,000 members. Inflating them with a
    # copy of the rest per member took 22.6 s for twice as many.
    text = fixture("openllmetry", ".jsonl").read_bytes() * 25
    step = max(1, len(text) // 100_000)
    members = [gzip.compress(text[i : i + step], mtime=0) for i in range(0, len(text), step)]
    path = tmp_path / "many.jsonl.gz"
    path.write_bytes(b"".join(members))
    started = time.perf_counter()
    result = traces_from_otlp(path)
    took = time.perf_counter() - started
    assert len(members) >= 90_000
    assert len(result) == 1 and result.warnings == []
    assert took < 10, f"{took:.1f}s for {len(members)} members"


def test_a_directory_means_the_otlp_files_inside_it(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(fixture("openllmetry", ".jsonl").read_bytes())
    (tmp_path / "b.pb.gz").write_bytes(gzip.compress(fixture("genai_semconv", ".pb").read_bytes()))
    (tmp_path / "notes.txt").write_text("not OTLP")
    (tmp_path / ".hidden").write_text("skipped")
    (tmp_path / "sub").mkdir()
    result = traces_from_otlp(tmp_path)
    assert len(result) == 2
    assert result.has_llm_interactions
    assert [w for w in result.warnings if "not OTLP" in w] == [
        w for w in result.warnings if w.startswith("notes.txt: ")
    ]
    assert len(traces_from_otlp(str(tmp_path))) == 2  # a path as text too

    empty = tmp_path / "sub"
    assert traces_from_otlp(empty) == []
    assert any("holds no files" in w for w in traces_from_otlp(empty).warnings)


def test_one_json_document_over_many_lines_is_still_read(tmp_path: Path) -> None:
    line = fixture("openllmetry", ".jsonl").read_text().splitlines()[0]
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(json.loads(line), indent=2))
    assert len(traces_from_otlp(path)) == 1
