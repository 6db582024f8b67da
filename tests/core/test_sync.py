"""The one sync-over-async runner: fork-safe, one thread for every client, interruptible."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest

from tests.evaluation.test_client import CAPITAL
from tracejudge import Composo, evaluate_rubric
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.testing import Reply, ScriptedLLMServer

VERDICT = json.dumps({"explanation": "Fine.", "applicable": True, "score": 8})


@pytest.fixture()
def judge_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(default=Reply.text(VERDICT)) as server:
        yield server


def _wait(pid: int, seconds: float) -> int:
    """The child's exit status; kill it and fail when it runs longer than `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child hung for more than {seconds} s")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_client_used_before_fork_works_in_the_child(judge_server: ScriptedLLMServer) -> None:
    judge = OpenAICompatibleJudge(
        "scripted", base_url=judge_server.base_url, api_key="k", cache=False, timeout=10
    )
    with Composo(judge=judge) as client:
        assert client.evaluate(messages=CAPITAL, criteria="Reward accuracy").score is not None
        pid = os.fork()
        if pid == 0:  # the child: only this thread exists here
            code = 1
            try:
                result = client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
                code = 0 if result.score is not None else 2
            finally:
                os._exit(code)
        assert _wait(pid, 20) == 0
        # The parent's client is untouched by the child's.
        assert client.evaluate(messages=CAPITAL, criteria="Reward accuracy").score is not None
    assert len(judge_server.requests) == 3


def rubric_score(base_url: str, item: int = 0) -> float:
    """A reward worker's job (module level, so spawned workers can import it)."""
    info = {"provider": "openai", "model": "scripted", "base_url": base_url, "api_key": "k"}
    # A different solution per item: the verdict cache would answer a repeated one.
    score = evaluate_rubric("Evaluate accuracy", f"Paris {item}", info)
    assert isinstance(score, float)
    return score


@pytest.mark.parametrize("method", ["fork", "spawn"])
@pytest.mark.heavy("process pools (fork and spawn)")
def test_evaluate_rubric_in_pool_workers(judge_server: ScriptedLLMServer, method: str) -> None:
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    # Used in the parent first: the forked workers inherit its cached judge and loop.
    assert rubric_score(judge_server.base_url) == pytest.approx(7 / 9)
    context = multiprocessing.get_context(method)
    with context.Pool(2) as pool:
        outcome = pool.starmap_async(
            rubric_score, [(judge_server.base_url, i) for i in (1, 2, 3, 4)]
        )
        scores = outcome.get(timeout=60)
    assert scores == [pytest.approx(7 / 9)] * 4
    assert len(judge_server.requests) == 5


def test_every_client_shares_one_loop_thread(judge_server: ScriptedLLMServer) -> None:
    def make() -> Composo:
        return Composo(
            judge=OpenAICompatibleJudge(
                "scripted", base_url=judge_server.base_url, api_key="k", cache=False
            )
        )

    clients = [make() for _ in range(5)]
    for client in clients:
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    names = [thread.name for thread in threading.enumerate()]
    assert names.count("tracejudge-loop") == 1
    for client in clients:
        client.close()


INTERRUPTED = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    from tracejudge import Composo
    from tracejudge.judges import OpenAICompatibleJudge
    from tracejudge.testing import Reply, ScriptedLLMServer

    # A shell may start this process with SIGINT ignored (a background job): ask for
    # Python's own handler, the one an interactive program has.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    verdict = json.dumps({"explanation": "late", "applicable": True, "score": 5})
    with ScriptedLLMServer(default=Reply.text(verdict, delay=30)) as server:
        judge = OpenAICompatibleJudge("m", base_url=server.base_url, api_key="k", cache=False)
        client = Composo(judge=judge, timeout=60)
        messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        try:
            client.evaluate(messages=messages, criteria="Reward accuracy")
        except KeyboardInterrupt:
            print("interrupted after", round(time.monotonic() - started, 2))
        # The abandoned call leaves nothing in flight: closing is prompt.
        closing = time.monotonic()
        client.close()
        print("closed after", round(time.monotonic() - closing, 2))
    """
)


def test_keyboard_interrupt_surfaces_at_once_and_abandons_the_call() -> None:
    finished = subprocess.run(
        [sys.executable, "-c", INTERRUPTED], capture_output=True, text=True, timeout=60
    )
    assert finished.returncode == 0, finished.stderr
    assert "interrupted after" in finished.stdout, finished.stdout + finished.stderr
    lines = dict(line.rsplit(" ", 1) for line in finished.stdout.splitlines())
    assert float(lines["interrupted after"]) < 3
    assert float(lines["closed after"]) < 3
