"""Tests for tracejudge.testing.ScriptedLLMServer, driven by the real openai/anthropic clients."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer, ToolCall, token_logprobs

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def shared_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as srv:
        yield srv


@pytest.fixture
def server(shared_server: ScriptedLLMServer) -> ScriptedLLMServer:
    shared_server.reset()
    shared_server.default = None
    return shared_server


@pytest.fixture(scope="module")
def oai(shared_server: ScriptedLLMServer) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(base_url=shared_server.base_url, api_key="test", max_retries=0)
    yield client
    client.close()


@pytest.fixture(scope="module")
def claude(shared_server: ScriptedLLMServer) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(base_url=shared_server.url, api_key="test", max_retries=0)
    yield client
    client.close()


# -- lifecycle / bookkeeping -------------------------------------------------------------------


def test_urls_and_lifecycle() -> None:
    srv = ScriptedLLMServer([Reply.text("a")])
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    srv.start()
    try:
        assert srv.port > 0
        assert srv.url == f"http://127.0.0.1:{srv.port}"
        assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
        assert srv.start() is srv  # idempotent
    finally:
        srv.stop()
    srv.stop()  # idempotent


def test_stop_does_not_hang_on_open_keepalive_connection() -> None:
    srv = ScriptedLLMServer(default=Reply.text("x")).start()
    client = httpx.Client(base_url=srv.base_url)
    assert client.post("/chat/completions", json={"messages": []}).status_code == 200
    started = time.monotonic()
    srv.stop()  # the client still holds its keep-alive connection
    assert time.monotonic() - started < 2
    client.close()


def test_add_pending_reset(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    server.add(Reply.text("one"), Reply.text("two"))
    assert server.pending == 2
    assert oai.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content == (
        "one"
    )
    assert server.pending == 1
    server.reset()
    assert server.pending == 0
    assert server.requests == []
    assert server.max_in_flight == 0
    with pytest.raises(TypeError):
        server.add(42)  # type: ignore[arg-type]


def test_plain_strings_are_text_replies() -> None:
    with ScriptedLLMServer(["first"], default="again") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        server.add("second")
        answers = [
            client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content
            for _ in range(3)
        ]
        client.close()
    assert answers == ["first", "second", "again"]


# -- chat completions --------------------------------------------------------------------------


def test_chat_text_reply_and_recorded_request(
    server: ScriptedLLMServer, oai: openai.OpenAI
) -> None:
    server.add(Reply.text("It is sunny."))
    completion = oai.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "It is sunny."
    assert choice.finish_reason == "stop"
    assert choice.message.tool_calls is None
    assert completion.id == "chatcmpl-1"
    assert completion.object == "chat.completion"
    assert completion.model == "scripted-model"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == len(MESSAGES[0]["content"]) // 4
    assert completion.usage.completion_tokens == len("It is sunny.") // 4 + 1
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )

    (request,) = server.requests
    assert isinstance(request, RecordedRequest)
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test"
    assert request.json == {"model": "gpt-4o-mini", "messages": MESSAGES}
    assert json.loads(request.body) == request.json
    assert request.received_at <= time.time()


def test_chat_usage_override_and_finish_reason(
    server: ScriptedLLMServer, oai: openai.OpenAI
) -> None:
    server.add(
        Reply.text(
            "cut",
            model="m-1",
            usage={"prompt_tokens": 7, "completion_tokens": 3},
            finish_reason="length",
        )
    )
    completion = oai.chat.completions.create(model="x", messages=MESSAGES)
    assert completion.model == "m-1"
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (7, 3)
    assert completion.usage.total_tokens == 10


def test_chat_parallel_tool_calls(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    server.add(
        Reply.tool_calls(
            [
                ToolCall("get_weather", {"city": "Paris"}),
                ToolCall("get_time", '{"tz": "CET"}', id="call_custom"),
            ]
        ),
        Reply.tool_calls([ToolCall("get_weather", {"city": "Rome"})], content="Checking."),
    )
    first = oai.chat.completions.create(model="m", messages=MESSAGES)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert calls is not None and len(calls) == 2
    assert [c.type for c in calls] == ["function", "function"]
    assert [c.id for c in calls] == ["call_1", "call_custom"]
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}
    assert calls[1].function.arguments == '{"tz": "CET"}'

    second = oai.chat.completions.create(model="m", messages=MESSAGES)
    assert second.choices[0].message.content == "Checking."
    assert second.choices[0].message.tool_calls is not None
    assert second.choices[0].message.tool_calls[0].id == "call_2"


def test_chat_stream_text_with_usage(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    text = "The weather in Paris is sunny and warm today, around twenty-five degrees."
    server.add(Reply.text(text))
    stream = oai.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    content_deltas = [c.choices[0].delta.content for c in chunks if c.choices]
    assert sum(1 for d in content_deltas if d) > 2  # split into several deltas
    assert "".join(d or "" for d in content_deltas) == text
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == len(text) // 4 + 1


def test_chat_stream_without_usage_then_keepalive(
    server: ScriptedLLMServer, oai: openai.OpenAI
) -> None:
    server.add(Reply.text("hi there"), Reply.text("again"))
    chunks = list(oai.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert all(c.choices for c in chunks) and all(c.usage is None for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "hi there"
    # the same client keeps working on the (re-used) connection after a stream
    after = oai.chat.completions.create(model="m", messages=MESSAGES)
    assert after.choices[0].message.content == "again"


def test_chat_stream_tool_calls_reassembled(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    args_a = {"city": "Paris", "units": "metric", "days": [1, 2, 3]}
    args_b = {"query": "museums near the Louvre"}
    server.add(Reply.tool_calls([ToolCall("forecast", args_a), ToolCall("search", args_b)]))
    calls: dict[int, dict[str, str]] = {}
    finish = None
    fragments = 0
    for chunk in oai.chat.completions.create(model="m", messages=MESSAGES, stream=True):
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for delta in choice.delta.tool_calls or []:
            entry = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            if delta.id:
                entry["id"] = delta.id
            if delta.function and delta.function.name:
                entry["name"] = delta.function.name
            if delta.function and delta.function.arguments:
                entry["arguments"] += delta.function.arguments
                fragments += 1
    assert finish == "tool_calls"
    assert fragments > 2
    assert [calls[i]["name"] for i in sorted(calls)] == ["forecast", "search"]
    assert [calls[i]["id"] for i in sorted(calls)] == ["call_1", "call_2"]
    assert json.loads(calls[0]["arguments"]) == args_a
    assert json.loads(calls[1]["arguments"]) == args_b


def test_chat_stream_raw_sse_format(server: ScriptedLLMServer) -> None:
    server.add(Reply.text("ok"))
    with httpx.Client() as client:
        response = client.post(
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": MESSAGES, "stream": True},
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [e for e in response.text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"


def test_logprobs_passthrough(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    content = '{"reason": "good", "score": 4}'
    logprobs = token_logprobs(content, at="4", top={"4": -0.1, "5": -2.5, "3": -3.0})
    server.add(Reply.text(content, logprobs=logprobs))
    completion = oai.chat.completions.create(
        model="m", messages=MESSAGES, logprobs=True, top_logprobs=3
    )
    lp = completion.choices[0].logprobs
    assert lp is not None and lp.content is not None
    assert "".join(t.token for t in lp.content) == content
    scored = [t for t in lp.content if len(t.top_logprobs) > 1]
    assert len(scored) == 1
    assert scored[0].token == "4" and scored[0].logprob == -0.1
    assert [t.token for t in scored[0].top_logprobs] == ["4", "5", "3"]


def test_token_logprobs_helper() -> None:
    content = 'score 7 then "score": 7'
    entries = token_logprobs(content, at="7", top={"7": -0.2, "8": -1.7})
    tokens = [e["token"] for e in entries]
    assert "".join(tokens) == content
    marked = [i for i, e in enumerate(entries) if len(e["top_logprobs"]) > 1]
    assert marked == [len(tokens) - 1]  # the "7" after the last '"score"', not the first one
    other = entries[0]
    assert other["logprob"] == 0.0
    assert other["top_logprobs"] == [{"token": "score", "logprob": 0.0, "bytes": list(b"score")}]
    assert token_logprobs("a 5 b", at="5", top={"5": -0.5})[2]["logprob"] == -0.5
    with pytest.raises(ValueError):
        token_logprobs("no digits", at="5", top={"5": 0.0})


# -- responses API -----------------------------------------------------------------------------


def test_responses_text(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    server.add(Reply.text("Bonjour!"))
    response = oai.responses.create(model="m", input="Say hello in French", instructions="Be nice")
    assert response.id.startswith("resp_")
    assert response.object == "response"
    assert response.status == "completed"
    assert response.output_text == "Bonjour!"
    assert response.output[0].type == "message"
    assert response.usage is not None
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
    assert server.requests[0].path == "/v1/responses"


def test_responses_function_calls(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    server.add(
        Reply.tool_calls(
            [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {}, id="call_t")]
        )
    )
    response = oai.responses.create(
        model="m",
        input="weather?",
        tools=[
            {
                "type": "function",
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "strict": False,
            }
        ],
    )
    calls = [item for item in response.output if item.type == "function_call"]
    assert response.output_text == ""
    assert [c.call_id for c in calls] == ["call_1", "call_t"]
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    assert json.loads(calls[0].arguments) == {"city": "Paris"}
    assert calls[1].arguments == "{}"
    assert all(c.id and c.id.startswith("fc_") for c in calls)


def test_responses_stream(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    server.add(
        Reply.tool_calls([ToolCall("lookup", {"q": "eiffel tower height"})], content="Looking up.")
    )
    with oai.responses.stream(model="m", input="how tall?") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert "response.function_call_arguments.delta" in kinds
    assert final.output_text == "Looking up."
    call = final.output[1]
    assert call.type == "function_call"
    assert json.loads(call.arguments) == {"q": "eiffel tower height"}


# -- anthropic messages ------------------------------------------------------------------------


def test_anthropic_text(server: ScriptedLLMServer, claude: anthropic.Anthropic) -> None:
    server.add(Reply.text("Hello from Claude."))
    message = claude.messages.create(
        model="claude-x", max_tokens=100, system="be brief", messages=MESSAGES
    )
    assert message.id == "msg_1"
    assert message.role == "assistant"
    assert message.stop_reason == "end_turn"
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello from Claude."
    assert message.usage.input_tokens >= 1 and message.usage.output_tokens >= 1
    assert server.requests[0].path == "/v1/messages"
    assert "anthropic-version" in server.requests[0].headers


def test_anthropic_tool_use(server: ScriptedLLMServer, claude: anthropic.Anthropic) -> None:
    server.add(
        Reply.tool_calls(
            [ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", '{"tz": "CET"}')],
            content="Let me check.",
        )
    )
    message = claude.messages.create(model="claude-x", max_tokens=100, messages=MESSAGES)
    assert message.stop_reason == "tool_use"
    text, first, second = message.content
    assert text.type == "text" and text.text == "Let me check."
    assert first.type == "tool_use" and second.type == "tool_use"
    assert (first.id, first.name, first.input) == ("call_1", "get_weather", {"city": "Paris"})
    assert (second.name, second.input) == ("get_time", {"tz": "CET"})


def test_anthropic_stream(server: ScriptedLLMServer, claude: anthropic.Anthropic) -> None:
    server.add(
        Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"})], content="One moment please.")
    )
    with claude.messages.stream(model="claude-x", max_tokens=100, messages=MESSAGES) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "One moment please."
    assert final.stop_reason == "tool_use"
    assert final.content[1].type == "tool_use"
    assert final.content[1].input == {"city": "Paris"}


def test_anthropic_error_format(server: ScriptedLLMServer, claude: anthropic.Anthropic) -> None:
    server.add(Reply.error(529, message="overloaded"))
    with pytest.raises(anthropic.APIStatusError) as info:
        claude.messages.create(model="claude-x", max_tokens=10, messages=MESSAGES)
    assert info.value.status_code == 529
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "overloaded"},
    }


# -- Gemini (google-genai; skipped where it is not installed, as in CI) ------------------------


@pytest.fixture
def gemini(server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    genai = pytest.importorskip("google.genai")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "false")
    return genai.Client(api_key="dummy", http_options=genai.types.HttpOptions(base_url=server.url))


def _gemini_tool() -> Any:
    from google.genai import types

    weather = types.FunctionDeclaration(
        name="get_weather",
        description="The weather in a city.",
        parameters=types.Schema(
            type="OBJECT", properties={"city": types.Schema(type="STRING")}, required=["city"]
        ),
    )
    return types.GenerateContentConfig(
        system_instruction="be brief", tools=[types.Tool(function_declarations=[weather])]
    )


def test_gemini_text_usage_and_finish_reason(server: ScriptedLLMServer, gemini: Any) -> None:
    server.add(Reply.text("Bonjour.", usage={"prompt_tokens": 12, "completion_tokens": 3}))
    response = gemini.models.generate_content(
        model="gemini-2.5-flash", contents="Say hello in French.", config=_gemini_tool()
    )
    assert response.text == "Bonjour."
    assert response.candidates[0].finish_reason.value == "STOP"
    assert response.candidates[0].content.role == "model"
    usage = response.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count) == (12, 3)
    assert usage.total_token_count == 15
    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == "dummy"
    user = {"parts": [{"text": "Say hello in French."}], "role": "user"}
    assert request.json["contents"] == [user]
    assert request.json["systemInstruction"]["parts"] == [{"text": "be brief"}]
    assert request.json["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"


def test_gemini_parallel_function_calls(server: ScriptedLLMServer, gemini: Any) -> None:
    server.add(
        Reply.tool_calls(
            [
                ToolCall("get_weather", {"city": "Paris"}),
                ToolCall("get_weather", {"city": "Rome"}, id="fc-2"),
            ],
            content="Checking both.",
        ),
        Reply.text("x", finish_reason="length"),
    )
    response = gemini.models.generate_content(
        model="gemini-2.5-flash", contents="Weather in Paris and Rome?", config=_gemini_tool()
    )
    assert response.candidates[0].finish_reason.value == "STOP"
    text, first, second = response.candidates[0].content.parts
    assert text.text == "Checking both."
    assert first.function_call.name == "get_weather"
    assert first.function_call.args == {"city": "Paris"}
    assert first.function_call.id is None  # the real API sends none; clients make their own
    assert (second.function_call.args, second.function_call.id) == ({"city": "Rome"}, "fc-2")
    assert [call.args for call in response.function_calls] == [{"city": "Paris"}, {"city": "Rome"}]
    truncated = gemini.models.generate_content(model="gemini-2.5-flash", contents="More.")
    assert truncated.candidates[0].finish_reason.value == "MAX_TOKENS"


def test_gemini_stream(server: ScriptedLLMServer, gemini: Any) -> None:
    server.add(
        Reply.text("Paris is sunny and mild today.", usage={"prompt_tokens": 7}),
        Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"})], content="One moment."),
    )
    chunks = list(
        gemini.models.generate_content_stream(model="gemini-2.5-flash", contents="Weather?")
    )
    assert len(chunks) > 1
    assert "".join(chunk.text for chunk in chunks) == "Paris is sunny and mild today."
    assert [c.candidates[0].finish_reason for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1].candidates[0].finish_reason.value == "STOP"
    assert chunks[-1].usage_metadata.prompt_token_count == 7
    assert chunks[-1].usage_metadata.candidates_token_count >= 1
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert server.requests[0].path == path

    calls = list(
        gemini.models.generate_content_stream(
            model="gemini-2.5-flash", contents="Weather?", config=_gemini_tool()
        )
    )
    assert "".join(chunk.text or "" for chunk in calls) == "One moment."
    assert calls[-1].function_calls[0].args == {"city": "Paris"}


async def test_gemini_async_stream(server: ScriptedLLMServer, gemini: Any) -> None:
    server.add(Reply.text("async Gemini"))
    stream = await gemini.aio.models.generate_content_stream(model="gemini-x", contents="hi")
    assert "".join([chunk.text async for chunk in stream]) == "async Gemini"


def test_gemini_error_format(server: ScriptedLLMServer, gemini: Any) -> None:
    from google.genai import errors

    server.add(Reply.error(429, message="quota"))
    with pytest.raises(errors.ClientError) as info:
        gemini.models.generate_content(model="gemini-x", contents="hi")
    assert info.value.code == 429
    assert info.value.status == "RESOURCE_EXHAUSTED"
    assert info.value.message == "quota"


# -- errors, raw, defaults ---------------------------------------------------------------------


def test_rate_limit_error_with_retry_after(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    server.add(Reply.error(429, message="slow down", retry_after=2), Reply.error(429))
    response = httpx.post(f"{server.base_url}/chat/completions", json={"messages": MESSAGES})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"
    assert response.json() == {
        "error": {
            "message": "slow down",
            "type": "rate_limit_error",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    with pytest.raises(openai.RateLimitError):
        oai.chat.completions.create(model="m", messages=MESSAGES)


def test_server_error(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    server.add(Reply.error(500, message="boom", error_type="server_error"))
    with pytest.raises(openai.InternalServerError) as info:
        oai.chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.status_code == 500
    assert "boom" in str(info.value)


def test_empty_queue_is_obvious(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    response = httpx.post(f"{server.base_url}/chat/completions", json={"messages": []})
    assert response.status_code == 500
    assert response.json()["error"]["message"] == (
        "ScriptedLLMServer: no scripted reply left for POST /v1/chat/completions"
    )
    with pytest.raises(openai.InternalServerError, match="no scripted reply left"):
        oai.responses.create(model="m", input="hi")


def test_default_reply() -> None:
    with ScriptedLLMServer([Reply.text("first")], default=Reply.text("fallback")) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        texts = [
            client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content
            for _ in range(3)
        ]
        client.close()
    assert texts == ["first", "fallback", "fallback"]


def test_raw_reply(server: ScriptedLLMServer) -> None:
    server.add(
        Reply.raw(200, "not json {", headers={"X-Test": "1"}),
        Reply.raw(418, {"teapot": True}),
        Reply.raw(200, b"\x00\x01", headers={"Content-Type": "application/octet-stream"}),
    )
    with httpx.Client(base_url=server.url) as client:
        first = client.post("/v1/messages", json={})
        second = client.post("/v1/responses", json={"stream": True})
        third = client.post("/v1/chat/completions", json={})
    assert (first.status_code, first.text, first.headers["x-test"]) == (200, "not json {", "1")
    assert first.headers["content-type"] == "application/json"
    assert (second.status_code, second.json()) == (418, {"teapot": True})
    assert third.content == b"\x00\x01"
    assert third.headers["content-type"] == "application/octet-stream"


def test_callable_replies(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    seen: list[RecordedRequest] = []

    def echo(request: RecordedRequest) -> Reply:
        seen.append(request)
        return Reply.text("echo: " + request.json["messages"][-1]["content"])

    def broken(request: RecordedRequest) -> Reply:
        raise KeyError("oops")

    server.add(echo, broken)
    completion = oai.chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "echo: " + MESSAGES[0]["content"]
    assert seen[0].json["model"] == "m"
    with pytest.raises(openai.InternalServerError, match="reply callable raised KeyError"):
        oai.chat.completions.create(model="m", messages=MESSAGES)


def test_models_and_unknown_path(server: ScriptedLLMServer, oai: openai.OpenAI) -> None:
    server.add(Reply.text("unused"))
    assert "scripted-model" in [m.id for m in oai.models.list()]
    response = httpx.post(f"{server.url}/v2/unknown", json={})
    assert response.status_code == 404
    assert "error" in response.json()
    assert server.pending == 1  # neither consumed the queue
    assert [r.path for r in server.requests] == ["/v1/models", "/v2/unknown"]


# -- concurrency -------------------------------------------------------------------------------


def test_delay_and_max_in_flight(server: ScriptedLLMServer) -> None:
    server.add(*[Reply.text(f"r{i}", delay=1.0) for i in range(4)])
    barrier = threading.Barrier(4)
    results: list[int] = []

    def call() -> None:
        barrier.wait()
        response = httpx.post(f"{server.base_url}/chat/completions", json={"messages": []})
        results.append(response.status_code)

    started = time.monotonic()
    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 4
    assert server.max_in_flight == 4
    assert time.monotonic() - started >= 1.0


def test_delay_triggers_client_timeout_and_stop_wakes_delays() -> None:
    srv = ScriptedLLMServer([Reply.text("late", delay=0.3), Reply.text("later", delay=30)]).start()
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{srv.base_url}/chat/completions", json={}, timeout=0.1)
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{srv.base_url}/chat/completions", json={}, timeout=0.1)
    finally:
        started = time.monotonic()
        srv.stop()
    assert time.monotonic() - started < 2


async def test_async_openai(server: ScriptedLLMServer) -> None:
    server.add(Reply.text("async hello"), Reply.text("streamed async"))
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    try:
        completion = await client.chat.completions.create(model="m", messages=MESSAGES)
        assert completion.choices[0].message.content == "async hello"
        stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        assert text == "streamed async"
    finally:
        await client.close()
