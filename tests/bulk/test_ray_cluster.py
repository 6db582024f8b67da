"""`tracejudge score --ray` on a real Ray cluster (a head and a worker node on loopback):
the results equal `tracejudge score`'s on the same input, trace for trace; a trace split
over two files is one trace; the judge's calls in flight are bounded across the cluster;
a finished run resumes without one more judge call, a run missing a shard pays for that
shard only; an output directory of another run is refused."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.bulk.cluster import RayCluster
from tracejudge.cli import main
from tracejudge.testing import Reply, ScriptedLLMServer

pytestmark = [
    pytest.mark.heavy("a Ray cluster of two node processes; the work crosses processes"),
    pytest.mark.xdist_group("ray"),
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CRITERION = "Reward agents that stay on task"
VERDICT = {"explanation": "On task.", "applicable": True, "score": 8}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Recorded OTLP files as a Collector leaves them: JSON lines, protobuf, gzip, and
    one recording's spans split over two files."""
    folder = tmp_path_factory.mktemp("archive")
    (folder / "a.jsonl").write_bytes((FIXTURES / "genai_semconv.jsonl").read_bytes())
    (folder / "b.pb").write_bytes((FIXTURES / "openllmetry_responses.pb").read_bytes())
    (folder / "c.jsonl.gz").write_bytes(
        gzip.compress((FIXTURES / "openinference_responses.jsonl").read_bytes())
    )
    # one trace over two files: the recording's spans dealt alternately
    document = json.loads((FIXTURES / "openinference.jsonl").read_text().splitlines()[0])
    halves: list[dict[str, Any]] = [{"resourceSpans": []}, {"resourceSpans": []}]
    dealt = 0
    for resource in document["resourceSpans"]:
        parts = [dict(resource, scopeSpans=[]), dict(resource, scopeSpans=[])]
        for scope in resource["scopeSpans"]:
            sides: list[list[Any]] = [[], []]
            for span in scope["spans"]:
                sides[dealt % 2].append(span)
                dealt += 1
            for side, spans in zip(parts, sides, strict=True):
                if spans:
                    side["scopeSpans"].append(dict(scope, spans=spans))
        for half, part in zip(halves, parts, strict=True):
            if part["scopeSpans"]:
                half["resourceSpans"].append(part)
    for name, half in zip(("d1.jsonl", "d2.jsonl"), halves, strict=True):
        (folder / name).write_text(json.dumps(half) + "\n")
    return [str(folder / n) for n in ("a.jsonl", "b.pb", "c.jsonl.gz", "d1.jsonl", "d2.jsonl")]


@pytest.fixture(scope="module")
def judge() -> Any:
    with ScriptedLLMServer(default=Reply.text(json.dumps(VERDICT), delay=0.05)) as server:
        yield server


def _judging(judge: ScriptedLLMServer) -> list[str]:
    return [
        "--criterion",
        CRITERION,
        "--judge",
        "openai:gpt-4.1-mini",
        "--judge-base-url",
        judge.base_url,
        "--max-concurrency",
        "2",
    ]


def _on_ray(cluster: RayCluster, out: Path, *args: str) -> dict[str, Any]:
    """`tracejudge score --ray` as a user runs it; its JSON summary."""
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "score", "--ray", cluster.address]
        + ["--parquet", str(out), "--shard-traces", "1", "--json", *args],
        capture_output=True,
        text=True,
        env=cluster.env,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])["summary"]
    summary["exit"] = done.returncode
    summary["stderr"] = done.stderr
    return summary


def _rows(out: Path) -> dict[tuple[str, str], tuple[float | None, dict[str, Any]]]:
    """(trace id, criterion) -> (overall score, agent instance -> score) of a Parquet run."""
    import pyarrow.dataset as ds

    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    return {
        (row["trace_id"], row["criterion"]): (
            row["overall_score"],
            {agent: v["score"] for agent, v in json.loads(row["agents"]).items()},
        )
        for row in table.to_pylist()
    }


CHECKS = ["--check", "final_answer", "--check", "tool_results"]


@pytest.fixture(scope="module")
def first_run(
    ray_cluster: RayCluster,
    archive: list[str],
    judge: ScriptedLLMServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, Any], int]:
    """The archive scored on the cluster: (its Parquet directory, its summary, the judge
    calls it made)."""
    out = tmp_path_factory.mktemp("run") / "parquet"
    before = len(judge.requests)
    summary = _on_ray(ray_cluster, out, *archive, *CHECKS, *_judging(judge))
    return out, summary, len(judge.requests) - before


def test_the_cluster_scores_as_score_does_trace_for_trace(
    first_run: tuple[Path, dict[str, Any], int],
    archive: list[str],
    judge: ScriptedLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out, summary, paid = first_run
    assert summary["exit"] == 0, summary["stderr"]
    assert summary["failed"] == 0 and summary["judge_failures"] == 0
    assert summary["traces"] == summary["scored"] == summary["shards"] == 4  # one split trace
    # the judge's calls in flight never passed the bound, over both nodes
    assert 1 <= summary["most_judge_calls_in_flight"] <= 2
    assert paid > 0

    monkeypatch.setenv("OPENAI_API_KEY", "scripted")
    lines_file = tmp_path / "score.jsonl"
    assert main(["score", *archive, *CHECKS, *_judging(judge), "--out", str(lines_file)]) == 0
    lines = [json.loads(line) for line in lines_file.read_text().splitlines()]
    expected = {
        (x["trace_id"], x["criterion"]): (
            x["overall_score"],
            {agent: v["score"] for agent, v in x["agents"].items()},
        )
        for x in lines
    }
    assert _rows(out) == expected


def test_a_finished_run_resumes_without_paying_again_and_a_lost_shard_is_paid_once(
    ray_cluster: RayCluster,
    first_run: tuple[Path, dict[str, Any], int],
    archive: list[str],
    judge: ScriptedLLMServer,
) -> None:
    out, first, paid = first_run
    args = [*archive, *CHECKS, *_judging(judge)]
    rows = _rows(out)
    before = len(judge.requests)
    again = _on_ray(ray_cluster, out, *args)
    assert again["resumed_shards"] == first["shards"] and len(judge.requests) == before
    assert _rows(out) == rows
    # a shard whose marker is gone (a worker died after writing) is scored again, alone,
    # and its files are overwritten, not added to
    done = sorted((out / "_tracejudge" / "done").iterdir())
    done[0].unlink()
    third = _on_ray(ray_cluster, out, *args)
    assert third["resumed_shards"] == first["shards"] - 1
    assert 0 < len(judge.requests) - before < paid  # that shard's judgements only
    assert _rows(out) == rows


def test_an_output_directory_of_another_run_is_refused(
    ray_cluster: RayCluster, first_run: tuple[Path, dict[str, Any], int], archive: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "score", "--ray", ray_cluster.address]
        + ["--parquet", str(first_run[0]), archive[0], "--check", "loops"],
        capture_output=True,
        text=True,
        env=ray_cluster.env,
        timeout=600,
    )
    assert done.returncode == 2
    assert "another run" in done.stderr


def test_a_key_given_to_the_python_api_is_never_sent_through_ray(tmp_path: Path) -> None:
    from tracejudge.bulk import score_archive
    from tracejudge.errors import ConfigurationError
    from tracejudge.evaluation import EvaluationSettings

    settings = EvaluationSettings(judge="openai:gpt-4.1-mini", api_key="sk-secret-123")
    with pytest.raises(ConfigurationError) as caught:
        score_archive(
            [str(FIXTURES / "openllmetry.jsonl")], [CRITERION], str(tmp_path), settings=settings
        )
    assert "sk-secret-123" not in str(caught.value)
    assert "OPENAI_API_KEY" in str(caught.value)
