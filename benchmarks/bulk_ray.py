"""Bulk scoring on Ray (issue #36): a real cluster on this machine (tests/bulk/cluster.py).

1. Judge-bound scoring with 1 and 2 worker nodes (one CPU each; the head takes no task),
   the judge a ScriptedLLMServer answering after `--judge-latency` seconds. Target: 2
   nodes score at least 1.8x as fast as 1 (the scoring phase: both runs pay the same
   cluster connection and index pass, which are reported apart).
2. Checks only: `tracejudge score --ray` with 2 worker nodes against `tracejudge score`
   in one process, on the same archive.
3. Memory per worker: the largest worker's peak RSS on an archive and on one 4x its size,
   at the same shard size: bounded by the shard (the largest traces), not the input.

The archive: recorded OTLP files (tests/fixtures), each copied `--copies` times with new
trace and span ids, as a Collector's file exporter would have written many runs.

    python benchmarks/bulk_ray.py [--copies 40] [--judge-latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.bulk.cluster import ray_cluster  # noqa: E402

from tracejudge.testing import Reply, ScriptedLLMServer  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
SOURCES = [
    "genai_semconv.jsonl",
    "openinference.jsonl",
    "openllmetry.jsonl",
    "openinference_responses.jsonl",
]
VERDICT = {"explanation": "On task.", "applicable": True, "score": 8}


def write_archive(folder: Path, copies: int) -> list[str]:
    """`copies` runs of each recording, one file per copy, each with its own trace id."""
    files = []
    for source in SOURCES:
        lines = (FIXTURES / source).read_text().splitlines()
        for n in range(copies):
            out = folder / f"{Path(source).stem}-{n:05d}.jsonl"
            with out.open("w") as handle:
                for line in lines:
                    document = json.loads(line)
                    for resource in document.get("resourceSpans", []):
                        for scope in resource.get("scopeSpans", []):
                            for span in scope.get("spans", []):
                                span["traceId"] = f"{n:08x}" + span["traceId"][8:]
                    handle.write(json.dumps(document) + "\n")
            files.append(str(out))
    return files


def on_ray(cluster: Any, out: Path, files: list[str], *args: str) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "score", "--ray", cluster.address, "--json"]
        + ["--parquet", str(out), *args, *files],
        capture_output=True,
        text=True,
        env=cluster.env,
        timeout=3600,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])["summary"]
    summary["wall"] = time.monotonic() - started
    return summary


def in_one_process(files: list[str], *args: str) -> float:
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "tracejudge", "score", "--json", *args, *files],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=3600,
    )
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--judge-latency", type=float, default=0.3)
    args = parser.parse_args()
    results: dict[str, Any] = {"load_at_start": os.getloadavg()[0], "cpus": os.cpu_count()}
    with (
        tempfile.TemporaryDirectory() as work,
        ScriptedLLMServer(
            default=Reply.text(json.dumps(VERDICT), delay=args.judge_latency)
        ) as judge,
    ):
        folder = Path(work)
        small = folder / "small"
        small.mkdir()
        files = write_archive(small, args.copies)
        judged = [
            "--check",
            "final_answer",
            "--criterion",
            "Reward agents that stay on task",
            "--judge",
            "openai:gpt-4.1-mini",
            "--judge-base-url",
            judge.base_url,
            "--max-concurrency",
            "256",
            # one trace at a time per worker: the judge's latency bounds each worker
            "--concurrency",
            "1",
            "--shard-traces",
            "10",
        ]
        for nodes in (1, 2):
            with ray_cluster(nodes, head_cpus=0, OPENAI_API_KEY="scripted") as cluster:
                summary = on_ray(cluster, folder / f"judged-{nodes}", files, *judged)
                results[f"judged_{nodes}_node"] = {
                    k: summary[k]
                    for k in ("traces", "scored", "scoring_seconds", "seconds", "wall")
                }
                if nodes == 2:
                    checks = [
                        "--check",
                        "final_answer",
                        "--check",
                        "tool_results",
                        "--check",
                        "loops",
                    ]
                    ray_checks = on_ray(
                        cluster, folder / "checks", files, *checks, "--shard-traces", "50"
                    )
                    results["checks_ray_2_nodes"] = {
                        k: ray_checks[k] for k in ("traces", "scoring_seconds", "seconds", "wall")
                    }
                    results["checks_one_process_wall"] = in_one_process(files, *checks)
                    large = folder / "large"
                    large.mkdir()
                    big_files = write_archive(large, args.copies * 4)
                    for name, inputs in (("1x", files), ("4x", big_files)):
                        summary = on_ray(
                            cluster, folder / f"mem-{name}", inputs, *checks, "--shard-traces", "10"
                        )
                        results[f"worker_peak_rss_mib_{name}"] = summary["worker_peak_rss_mib"]
                        results[f"traces_{name}"] = summary["traces"]
    one = results["judged_1_node"]["scoring_seconds"]
    two = results["judged_2_node"]["scoring_seconds"]
    results["judged_speedup_2_over_1"] = one / two if two else None
    results["checks_ray_over_one_process"] = (
        results["checks_one_process_wall"] / results["checks_ray_2_nodes"]["wall"]
    )
    results["memory_4x_over_1x"] = (
        results["worker_peak_rss_mib_4x"] / results["worker_peak_rss_mib_1x"]
    )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
