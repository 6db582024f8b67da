"""The testing package's seams: a new route is one Renderer subclass, and the package stays a
leaf that imports nothing else of tracejudge."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import openai

from tracejudge.testing import Reply, ScriptedLLMServer
from tracejudge.testing._rendered import Rendered, json_response
from tracejudge.testing._renderer import Renderer
from tracejudge.testing._server import RENDERERS


class _EchoRenderer(Renderer):
    """A made-up API: the reply text and the request's ``prompt`` back, with its own errors."""

    route = "/echo"

    def complete(self, reply: Reply, body: dict[str, Any]) -> Rendered:
        payload = {"id": self.next_id("echo_"), "text": reply.content, "prompt": body["prompt"]}
        return json_response(200, payload)

    def error(
        self,
        status: int,
        message: str,
        error_type: str | None,
        extra_headers: list[tuple[str, str]] | None = None,
    ) -> Rendered:
        return json_response(status, {"failure": message}, extra_headers)


class _EchoServer(ScriptedLLMServer):
    renderers = (*RENDERERS, _EchoRenderer)


def test_a_renderer_subclass_serves_a_new_route_through_the_core() -> None:
    with _EchoServer([Reply.text("one"), Reply.error(429, retry_after=2), "two", "three"]) as srv:
        base = srv.url
        first = httpx.post(f"{base}/v1/echo", json={"prompt": "hi"})
        assert first.json() == {"id": "echo_1", "text": "one", "prompt": "hi"}

        limited = httpx.post(f"{base}/v1/echo", json={"prompt": "hi"})
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "2"
        assert limited.json() == {"failure": "scripted error"}

        # The base class answers a stream request on a route that does not stream.
        streamed = httpx.post(f"{base}/v1/echo", json={"prompt": "hi", "stream": True})
        assert streamed.status_code == 400
        assert "/echo does not stream" in streamed.json()["failure"]

        # The built-in routes still answer on the subclass, from the same queue.
        client = openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        chat = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
        assert chat.choices[0].message.content == "three"
        client.close()

        empty = httpx.post(f"{base}/v1/echo", json={"prompt": "hi"})
        assert empty.status_code == 500
        assert "no scripted reply left for POST /v1/echo" in empty.json()["failure"]
        assert [r.path for r in srv.requests][:3] == ["/v1/echo"] * 3


def test_plain_server_does_not_serve_the_new_route() -> None:
    with ScriptedLLMServer(["unused"]) as srv:
        response = httpx.post(f"{srv.url}/v1/echo", json={"prompt": "hi"})
        assert response.status_code == 404
        assert srv.pending == 1


def test_testing_imports_nothing_else_of_tracejudge() -> None:
    code = (
        "import json, sys, tracejudge.testing; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tracejudge'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    assert "tracejudge.testing" in loaded
    assert [m for m in loaded if m != "tracejudge" and not m.startswith("tracejudge.testing")] == []
