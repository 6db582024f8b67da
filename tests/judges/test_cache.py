"""The judge-call cache: hits make no request; files are shared across judges; errors not kept."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.judges.helpers import graded
from tracejudge.errors import APIError
from tracejudge.judges import JudgeRequest, MemoryCache, SQLiteCache
from tracejudge.testing import Reply, ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")


async def test_memory_cache_hit_makes_no_request(server: ScriptedLLMServer, make_judge) -> None:
    server.add(graded(8, explanation="Right."), graded(2))
    judge = make_judge(cache=None)  # the default: in memory
    assert isinstance(judge.cache, MemoryCache)
    first = await judge.judge(REQUEST)
    second = await judge.judge(REQUEST)
    assert len(server.requests) == 1
    assert second.score == first.score == pytest.approx(7 / 9)
    assert second.explanation == "Right."
    assert (first.usage.calls, first.usage.cached_calls) == (1, 0)
    assert (second.usage.calls, second.usage.cached_calls) == (0, 1)
    assert second.usage.total_tokens == 0
    assert second.raw["cached"] is True and first.raw["cached"] is False


async def test_a_different_prompt_or_kind_is_a_miss(server: ScriptedLLMServer, make_judge) -> None:
    server.add(graded(8), graded(3), graded(5))
    judge = make_judge(cache=None)
    await judge.judge(REQUEST)
    await judge.judge(JudgeRequest.of("Reward accurate answers", "user: 2+3?\nassistant: 5"))
    await judge.judge(JudgeRequest.of("Reward brevity", "user: 2+2?\nassistant: 4"))
    assert len(server.requests) == 3


async def test_sqlite_cache_is_shared_by_two_judges_on_the_same_file(
    server: ScriptedLLMServer, make_judge, tmp_path: Path
) -> None:
    path = tmp_path / "cache" / "judge-cache.sqlite"
    server.add(graded(9, explanation="From the model."), graded(1))
    writer = make_judge(cache=str(path))
    assert isinstance(writer.cache, SQLiteCache)
    assert not path.exists()  # created on first use
    first = await writer.judge(REQUEST)
    await writer.aclose()
    assert path.exists()

    reader = make_judge(cache=path)
    second = await reader.judge(REQUEST)
    assert len(server.requests) == 1
    assert second.score == first.score == pytest.approx(8 / 9)
    assert second.explanation == "From the model."
    assert second.usage.cached_calls == 1 and second.usage.calls == 0


async def test_judges_of_different_models_do_not_share_entries(
    server: ScriptedLLMServer, make_judge, tmp_path: Path
) -> None:
    path = tmp_path / "judge-cache.sqlite"
    server.add(graded(9), graded(2))
    await make_judge(model="a", cache=path).judge(REQUEST)
    other = await make_judge(model="b", cache=path).judge(REQUEST)
    assert len(server.requests) == 2
    assert other.score == pytest.approx(1 / 9)


async def test_errors_are_never_cached(server: ScriptedLLMServer, make_judge) -> None:
    server.add(Reply.error(500), Reply.error(500), graded(6))
    judge = make_judge(cache=None)
    with pytest.raises(APIError):
        await judge.judge(REQUEST)
    verdict = await judge.judge(REQUEST)
    assert verdict.score == pytest.approx(5 / 9)
    assert verdict.usage.cached_calls == 0
    assert len(server.requests) == 3


def test_memory_cache_is_bounded_lru() -> None:
    cache = MemoryCache(max_entries=2)
    cache.set("a", {"v": 1})
    cache.set("b", {"v": 2})
    assert cache.get("a") == {"v": 1}  # "a" is now the most recent
    cache.set("c", {"v": 3})
    assert cache.get("b") is None
    assert cache.get("a") == {"v": 1} and cache.get("c") == {"v": 3}
    assert len(cache) == 2


async def test_a_shared_sqlite_cache_tells_two_servers_of_one_model_apart(
    make_judge, tmp_path: Path
) -> None:
    path = tmp_path / "judge-cache.sqlite"
    with (
        ScriptedLLMServer(default=graded(9)) as first,
        ScriptedLLMServer(default=graded(2)) as second,
    ):
        await make_judge(base_url=first.base_url, cache=path).judge(REQUEST)
        verdict = await make_judge(base_url=second.base_url, cache=path).judge(REQUEST)
    assert len(second.requests) == 1  # asked, not answered from the other server's verdict
    assert verdict.score == pytest.approx(1 / 9)


async def test_the_cache_key_leaves_out_credentials_in_the_url(
    server: ScriptedLLMServer, make_judge, tmp_path: Path
) -> None:
    # A rotated key in the URL is the same server: its verdicts still apply.
    path = tmp_path / "judge-cache.sqlite"
    server.add(graded(9))
    url = server.base_url.replace("http://", "http://user:one@")
    await make_judge(base_url=f"{url}?key=one", cache=path).judge(REQUEST)
    url = server.base_url.replace("http://", "http://user:two@")
    again = await make_judge(base_url=f"{url}?key=two", cache=path).judge(REQUEST)
    assert len(server.requests) == 1
    assert again.usage.cached_calls == 1


async def test_a_cached_row_without_a_score_is_a_miss_not_not_applicable(
    server: ScriptedLLMServer, make_judge, tmp_path: Path
) -> None:
    """Before: a row whose value has no `score` key (written by something else, or cut)
    was served as a verdict with score None, "not applicable". Now it is a miss: the
    model is asked, and its verdict replaces the row. A row that says score null (the
    judge found the criterion not applicable) is still a hit."""
    path = tmp_path / "judge-cache.sqlite"
    server.add(graded(8), graded(4))
    writer = make_judge(cache=path)
    await writer.judge(REQUEST)
    await writer.aclose()
    with sqlite3.connect(path) as connection:
        (value,) = connection.execute("SELECT value FROM judge_cache").fetchone()
        entry = json.loads(value)
        del entry["score"]
        connection.execute("UPDATE judge_cache SET value = ?", (json.dumps(entry),))
    reader = make_judge(cache=path)
    verdict = await reader.judge(REQUEST)
    assert len(server.requests) == 2
    assert verdict.score == pytest.approx(3 / 9) and verdict.usage.cached_calls == 0
    await reader.aclose()
    with sqlite3.connect(path) as connection:
        (value,) = connection.execute("SELECT value FROM judge_cache").fetchone()
        entry = json.loads(value)
        entry["score"] = None
        connection.execute("UPDATE judge_cache SET value = ?", (json.dumps(entry),))
    again = await make_judge(cache=path).judge(REQUEST)
    assert len(server.requests) == 2 and again.score is None and again.usage.cached_calls == 1
