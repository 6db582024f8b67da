"""The first pass of a bulk run, without a cluster: files listed from paths, globs,
directories and file:// URIs; traces grouped across files and by span links as
`tracejudge score` groups them; shards the same on every run of the same input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tracejudge.bulk._files import list_files
from tracejudge.bulk._plan import FileIndex, index_file, plan_shards
from tracejudge.bulk._shard import criterion_key

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_inputs_are_listed_from_paths_globs_directories_and_uris(tmp_path: Path) -> None:
    (tmp_path / "day1").mkdir()
    (tmp_path / "day1" / "_tracejudge").mkdir()
    for name in ("day1/b.jsonl", "day1/a.pb", "day1/.hidden", "day1/_tracejudge/run.json"):
        (tmp_path / name).write_bytes(b"{}")
    listed = list_files([str(tmp_path / "day1")])
    assert listed == [str(tmp_path / "day1" / "a.pb"), str(tmp_path / "day1" / "b.jsonl")]
    assert list_files([str(tmp_path / "day1" / "*.jsonl")]) == [str(tmp_path / "day1/b.jsonl")]
    assert list_files([f"file://{tmp_path}/day1"]) == [
        f"file://{tmp_path}/day1/a.pb",
        f"file://{tmp_path}/day1/b.jsonl",
    ]
    with pytest.raises(ValueError, match="no such file"):
        list_files([str(tmp_path / "missing")])
    with pytest.raises(ValueError, match="no file matches"):
        list_files([str(tmp_path / "*.gz")])


def test_a_trace_in_two_files_is_one_trace_and_the_shards_are_stable(tmp_path: Path) -> None:
    for name in ("openllmetry.jsonl", "openllmetry.pb", "genai_semconv.jsonl"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    files = list_files([str(tmp_path)])
    indexes = [index_file(uri) for uri in files]
    plan = plan_shards(indexes, traces_per_shard=1)
    # the same recording as JSON and protobuf: one trace id in two files
    assert plan.traces == 2
    assert [sorted(files) for _, files in plan.shared] == [
        sorted(str(tmp_path / n) for n in ("openllmetry.jsonl", "openllmetry.pb"))
    ]
    again = plan_shards([index_file(uri) for uri in files], traces_per_shard=1)
    assert [s.traces for s in again.shards] == [s.traces for s in plan.shards]
    assert plan.fingerprint(["final_answer"]) == again.fingerprint(["final_answer"])
    assert plan.fingerprint(["final_answer"]) != again.fingerprint(["loops"])


def test_linked_traces_are_one_trace_under_the_first_key() -> None:
    first = FileIndex("a", {"t1": (3, 10, ()), "t2": (2, 20, ("t1",))})
    second = FileIndex("b", {"t3": (1, 5, ()), "t2": (1, 25, ())})
    plan = plan_shards([first, second], traces_per_shard=10)
    assert plan.traces == 2
    (shard,) = plan.shards
    assert shard.keys == {"t1": "t1", "t2": "t1", "t3": "t3"}
    assert shard.traces == {"t1": ("a", 10), "t3": ("b", 5)}
    assert shard.files == {"a": ("t1", "t2"), "b": ("t2", "t3")}


def test_criteria_are_partition_names_that_do_not_collide() -> None:
    assert criterion_key("final_answer") == "final_answer"
    a = criterion_key("Reward agents that stay on task")
    b = criterion_key("Reward agents that stay on task!")
    assert a.startswith("reward-agents-that-stay-on-task-") and a != b
    assert "/" not in criterion_key("Penalize a/b answers")
