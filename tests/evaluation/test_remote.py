"""The remote path: `Composo(base_url=..., api_key=...)` speaks the Composo wire protocol.

A small capture server on loopback records each request and answers from a script.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.evaluation.test_client import CAPITAL, AnswerMentions
from tests.evaluation.test_render import TOOL_CONVERSATION, WEATHER_TOOL
from tests.evaluation.test_trace import multi_agent_trace
from tests.judges.helpers import no_resource_warnings
from tracejudge import (
    AsyncComposo,
    AuthenticationError,
    BadRequestError,
    Composo,
    EvaluationResponse,
    MultiAgentTraceResponse,
)
from tracejudge.errors import RateLimitError
from tracejudge.errors import TimeoutError as RequestTimeoutError


@dataclass
class Captured:
    method: str
    path: str
    headers: dict[str, str]
    json: Any


@dataclass
class Answer:
    status: int = 200
    body: Any = None
    headers: dict[str, str] | None = None
    delay: float = 0.0


class CaptureServer:
    """Records requests; answers each with the next scripted `Answer` (or `default`)."""

    def __init__(self, default: Answer | Callable[[Captured], Answer] | None = None) -> None:
        self.requests: list[Captured] = []
        self.answers: list[Answer] = []
        self.default = default
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keeps connections alive, as real servers do

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                captured = Captured(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    json.loads(raw) if raw else None,
                )
                with owner._lock:
                    owner.requests.append(captured)
                    answer = owner.answers.pop(0) if owner.answers else owner.default
                if callable(answer):
                    answer = answer(captured)
                if answer is None:
                    answer = Answer(500, {"detail": "nothing scripted"})
                time.sleep(answer.delay)
                data = json.dumps(answer.body).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (answer.headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout test)

            do_GET = do_POST = _serve

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> CaptureServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


SCORE = Answer(200, {"score": 0.9, "explanation": "Accurate.", "sources": None})


@pytest.fixture
def server() -> Iterator[CaptureServer]:
    with CaptureServer(default=SCORE) as capture:
        yield capture


def test_reward_request_matches_the_composo_sdk(server: CaptureServer) -> None:
    with Composo(api_key="ck-123", base_url=server.url) as client:
        result = client.evaluate(
            messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
            criteria="Reward accuracy",
            tags={"env": "prod"},
        )
    assert isinstance(result, EvaluationResponse)
    assert (result.score, result.explanation, result.criterion) == (
        0.9,
        "Accurate.",
        "Reward accuracy",
    )
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/api/v1/evals/reward")
    assert request.headers["api-key"] == "ck-123"
    assert request.headers["content-type"] == "application/json"
    assert request.json == {
        "evaluation_criteria": "Reward accuracy",
        "model_core": "align-20251111",
        "tags": {"env": "prod"},
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "evaluate_latest": True,
    }
    assert list(request.json) == [
        "evaluation_criteria",
        "model_core",
        "tags",
        "messages",
        "evaluate_latest",
    ]


def test_one_request_per_criterion_with_optional_fields(server: CaptureServer) -> None:
    with Composo(api_key="ck", base_url=server.url, model_core="align-20260109") as client:
        results = client.evaluate(
            messages=TOOL_CONVERSATION,
            tools=[WEATHER_TOOL],
            system="Be brief.",
            criteria=["Reward accuracy", "Passes if a tool was used"],
            evaluate_latest=False,
            explanation_cleaning="end_user",
            tags={"version": 2},
        )
    assert [r.criterion for r in results] == ["Reward accuracy", "Passes if a tool was used"]
    bodies = sorted((r.json for r in server.requests), key=lambda b: b["evaluation_criteria"])
    assert [b["evaluation_criteria"] for b in bodies] == [
        "Passes if a tool was used",
        "Reward accuracy",
    ]
    body = bodies[1]
    assert body["model_core"] == "align-20260109"
    assert body["system"] == "Be brief."
    assert body["tools"] == [WEATHER_TOOL]
    assert body["messages"] == TOOL_CONVERSATION
    assert body["evaluate_latest"] is False
    assert body["explanation_cleaning"] == "end_user"
    assert body["tags"] == {"version": "2"}


def test_responses_result_is_sent_as_chat_messages(server: CaptureServer) -> None:
    from openai.types.responses import Response

    from tests.evaluation.test_adapt import SPACEX_OUTPUT, response_json

    response = Response.model_validate(response_json(SPACEX_OUTPUT))
    with Composo(api_key="ck", base_url=server.url) as client:
        client.evaluate(input="Plot SpaceX launches", result=response, criteria="Reward research")
    messages = server.requests[0].json["messages"]
    assert messages[0] == {"role": "user", "content": "Plot SpaceX launches"}
    assert messages[1]["tool_calls"][0]["function"]["name"] == "web_search"
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "ws_1",
        "content": '{"status": "completed"}',
    }
    assert messages[-1]["content"].startswith("SpaceX launched Starship")


def test_background_reward_and_task_status(server: CaptureServer) -> None:
    server.answers = [
        Answer(200, {"task_id": "task-1"}),
        Answer(200, {"task_id": "task-1", "status": "done", "result": {"score": 1.0}}),
    ]
    with Composo(api_key="ck", base_url=server.url) as client:
        submitted = client.evaluate(messages=CAPITAL, criteria="Reward accuracy", block=False)
        assert submitted == {"task_id": "task-1"}
        task = client.get_task("task-1")
    assert task.status == "done" and task.result == {"score": 1.0}
    assert [(r.method, r.path) for r in server.requests] == [
        ("POST", "/api/v1/evals/reward/background"),
        ("GET", "/api/v1/tasks/task-1"),
    ]


def test_trace_request_and_flat_fields(server: CaptureServer) -> None:
    trace = multi_agent_trace()
    server.default = Answer(
        200,
        {
            "request_id": "req-1",
            "results_by_agent_name": {
                "orchestrator": {
                    "agent_name": "orchestrator",
                    "results_by_agent_instance_id": {"o1": {"score": 0.8, "explanation": "good"}},
                    "summary_statistics": {"median": 0.8, "min": 0.8, "max": 0.8, "std": 0.0},
                },
                "writer": {
                    "agent_name": "writer",
                    "results_by_agent_instance_id": {"w1": {"score": 0.4, "explanation": "meh"}},
                },
            },
        },
    )
    with Composo(api_key="ck", base_url=server.url) as client:
        result = client.evaluate_trace(
            trace, "Reward agents that work", model_core="align-20250529", tags={"env": "ci"}
        )
    assert isinstance(result, MultiAgentTraceResponse)
    assert result.request_id == "req-1"
    assert result.criterion == "Reward agents that work"
    assert result.agent_scores == {"o1": 0.8, "w1": 0.4}
    assert result.overall_score == pytest.approx(0.6)
    assert "- writer (w1): 0.40 - meh" in result.explanation
    (request,) = server.requests
    assert request.path == "/api/v1/evals/trace"
    assert request.json == {
        "evaluation_criteria": "Reward agents that work",
        "model_core": "align-20250529",
        "tags": {"env": "ci"},
        "trace": trace.to_wire(compat=True),
        "evaluate_latest": False,
    }


def test_background_trace(server: CaptureServer) -> None:
    server.default = Answer(200, {"task_id": "t-9"})
    with Composo(api_key="ck", base_url=server.url) as client:
        assert client.evaluate_trace(multi_agent_trace(), "Reward x", block=False) == {
            "task_id": "t-9"
        }
    assert server.requests[0].path == "/api/v1/evals/trace/background"
    assert server.requests[0].json["model_core"] == "align-20251111"


def test_checks_run_locally_even_with_a_server(server: CaptureServer) -> None:
    with Composo(api_key="ck", base_url=server.url) as client:
        result = client.evaluate_trace(multi_agent_trace(), AnswerMentions("sunny"))
    assert result.overall_score == pytest.approx(0.75)
    assert server.requests == []


def test_server_errors_are_retried(server: CaptureServer) -> None:
    server.answers = [Answer(503, {"detail": "busy"}), SCORE]
    with Composo(api_key="ck", base_url=server.url) as client:
        assert client.evaluate(messages=CAPITAL, criteria="Reward accuracy").score == 0.9
    assert len(server.requests) == 2


def test_rate_limit_honours_retry_after_then_gives_up(server: CaptureServer) -> None:
    server.default = Answer(429, {"detail": "slow down"}, headers={"Retry-After": "0"})
    with Composo(api_key="ck", base_url=server.url, num_retries=2) as client:
        with pytest.raises(RateLimitError, match="HTTP 429: slow down"):
            client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    assert len(server.requests) == 3  # the first try and two retries


def test_client_errors_are_not_retried(server: CaptureServer) -> None:
    server.default = Answer(401, {"detail": "Invalid API key"})
    with Composo(api_key="wrong", base_url=server.url) as client:
        with pytest.raises(AuthenticationError, match="Invalid API key"):
            client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    server.default = Answer(422, {"detail": [{"msg": "messages too short"}]})
    with Composo(api_key="ck", base_url=server.url) as client:
        with pytest.raises(BadRequestError, match="messages too short"):
            client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    assert len(server.requests) == 2


def test_timeout_covers_the_retries(server: CaptureServer) -> None:
    server.default = Answer(200, {"score": 1.0, "explanation": "late"}, delay=60.0)
    timeout = 1.5
    with Composo(api_key="ck", base_url=server.url, timeout=timeout) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
        # one deadline for every attempt: a timeout per attempt would take twice it or more
        assert time.monotonic() - started < 2 * timeout


def test_composo_api_key_from_the_environment(
    server: CaptureServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPOSO_API_KEY", "env-key")
    with Composo(base_url=server.url) as client:
        client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    assert server.requests[0].headers["api-key"] == "env-key"


async def test_async_client_remote(server: CaptureServer) -> None:
    async with AsyncComposo(api_key="ck", base_url=server.url) as client:
        results = await client.evaluate(messages=CAPITAL, criteria=["Reward a", "Reward b"])
    assert [r.score for r in results] == [0.9, 0.9]
    assert len(server.requests) == 2


def test_missing_endpoint_and_unexpected_status_say_what_to_check(server: CaptureServer) -> None:
    server.default = Answer(404, {"detail": "Not Found"})
    with Composo(api_key="ck", base_url=f"{server.url}/api/v1") as client:
        with pytest.raises(BadRequestError, match="HTTP 404: Not Found.*base_url") as missing:
            client.evaluate(messages=CAPITAL, criteria="Reward accuracy")
    assert missing.value.status_code == 404
    server.default = Answer(418, {"detail": "I'm a teapot"})
    with Composo(api_key="ck", base_url=server.url) as client:
        with pytest.raises(BadRequestError, match="HTTP 418: I'm a teapot"):
            client.evaluate(messages=CAPITAL, criteria="Reward accuracy")


def test_async_client_used_from_several_loops_closes_every_pool(server: CaptureServer) -> None:
    client = AsyncComposo(api_key="ck", base_url=server.url)
    with no_resource_warnings():
        for _ in range(3):  # three loops, each holding a kept-alive connection
            result = asyncio.run(client.evaluate(messages=CAPITAL, criteria="Reward accuracy"))
            assert result.score == 0.9
        asyncio.run(client.aclose())
        del client
