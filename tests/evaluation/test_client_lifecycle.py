"""Closing a `Composo`: calls in flight elsewhere, a release that fails, clients nobody closed."""

from __future__ import annotations

import gc
import json
import threading
import time
import weakref
from typing import Any

import pytest

from tests.evaluation.test_client import CAPITAL, MakeJudge
from tests.judges.helpers import no_resource_warnings
from tracejudge import Composo, ComposoError
from tracejudge.judges import MemoryCache
from tracejudge.testing import Reply, ScriptedLLMServer


def wait_for_requests(server: ScriptedLLMServer, count: int) -> None:
    deadline = time.monotonic() + 5
    while len(server.requests) < count:
        assert time.monotonic() < deadline, "the judge was never asked"
        time.sleep(0.01)


def test_closing_fails_a_call_in_flight_in_another_thread_at_once(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    slow = json.dumps({"explanation": "late", "applicable": True, "score": 5})
    judge_server.default = Reply.text(slow, delay=60.0)
    client = Composo(judge=make_judge(judge_server))
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["result"] = client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
        except BaseException as error:  # noqa: BLE001 - recorded for the assertions
            outcome["error"] = error

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    wait_for_requests(judge_server, 1)
    started = time.monotonic()
    client.close()
    caller.join(timeout=15)
    assert not caller.is_alive(), "the caller still waits on the closed client"
    assert time.monotonic() - started < 60 / 4  # at once, not when the reply came
    assert isinstance(outcome.get("error"), ComposoError)
    assert "closed" in str(outcome["error"])


class BrokenCache(MemoryCache):
    """A judge cache whose release fails, as a file on a vanished disk would."""

    def close(self) -> None:
        raise OSError("disk gone")


def test_close_releases_the_client_even_when_releasing_the_judge_fails(
    judge_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch, make_judge: MakeJudge
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    client = Composo(judge="openai:scripted-model", cache=BrokenCache())  # the client owns it
    client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    with pytest.raises(OSError, match="disk gone"):
        client.close()
    with pytest.raises(RuntimeError, match="closed"):
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    client.close()  # already closed: nothing more to report
    # The event loop the clients share goes on serving the others.
    with Composo(judge=make_judge(judge_server)) as other:
        assert other.evaluate(messages=CAPITAL, criteria="Reward accuracy").score is not None


def test_a_client_nobody_closed_releases_its_engine_and_connections(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    with no_resource_warnings():
        client = Composo(judge=make_judge(judge_server))
        assert client.evaluate(messages=CAPITAL, criteria="Reward accuracy").score is not None
        engine = weakref.ref(client._engine)
        judge = weakref.ref(client.judge)
        del client
        gc.collect()
        deadline = time.monotonic() + 5
        while (engine() is not None or judge() is not None) and time.monotonic() < deadline:
            time.sleep(0.01)
            gc.collect()
        assert engine() is None and judge() is None


def test_a_closed_client_refuses_new_calls_and_closes_once(
    judge_server: ScriptedLLMServer, make_judge: MakeJudge
) -> None:
    client = Composo(judge=make_judge(judge_server))
    client.close()  # never used: nothing to wait for
    with pytest.raises(RuntimeError, match="closed"):
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    client.close()
