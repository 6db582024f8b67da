"""Chat calls sent through the `openai` client's low-level ``post`` (LiteLLM's way) are
recorded by ``Instruments.OPENAI``, once each, as the span ``create`` makes; calls through
``create`` are still recorded once.

The first tests send exactly what LiteLLM 1.110 sends (``OpenAIChatCompletion.
make_sync_openai_chat_completion_request`` in litellm/llms/openai/openai.py) with the bare
`openai` client, so they run wherever the `test` extra is installed; the last ones run
LiteLLM itself (the `litellm` package, about 200 MB and seconds to import: installed by the
``record-litellm`` extra, not ``test``) and are skipped without it.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import openai
import pytest
from openai._base_client import make_request_options
from openai._constants import RAW_RESPONSE_HEADER
from openai._legacy_response import LegacyAPIResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracejudge.models import LLMInteraction, LLMToolCall
from tracejudge.testing import Reply, ScriptedLLMServer, ToolCall
from tracejudge.tracing import AgentTracer, _openai_post

MODEL = "scripted-model"
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def chat_spans(exporter: InMemorySpanExporter) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.name == "openai.chat"]


def only_interaction(tracer: AgentTracer) -> LLMInteraction:
    (interaction,) = tracer.trace.root.llm_interactions
    return interaction


def answer_text(interaction: LLMInteraction) -> str:
    return "".join(o.content for o in interaction.output_messages if isinstance(o.content, str))


def raw_post(client: openai.OpenAI, *, stream: bool = False, **body: Any) -> Any:
    """What LiteLLM sends: the request body as is, a raw response, through ``post``."""
    return client.post(
        "/chat/completions",
        body={"model": MODEL, "messages": QUESTION, **body, **({"stream": True} if stream else {})},
        cast_to=ChatCompletion,
        options=make_request_options(extra_headers={RAW_RESPONSE_HEADER: "true"}),
        stream=stream,
        stream_cls=openai.Stream[ChatCompletionChunk],
    )


async def araw_post(client: openai.AsyncOpenAI, *, stream: bool = False, **body: Any) -> Any:
    return await client.post(
        "/chat/completions",
        body={"model": MODEL, "messages": QUESTION, **body, **({"stream": True} if stream else {})},
        cast_to=ChatCompletion,
        options=make_request_options(extra_headers={RAW_RESPONSE_HEADER: "true"}),
        stream=stream,
        stream_cls=openai.AsyncStream[ChatCompletionChunk],
    )


def test_installed_once_with_the_openai_instrumentation() -> None:
    assert _openai_post._installed
    assert not _openai_post.install(None)  # type: ignore[arg-type]  # wraps nothing twice


def test_a_low_level_post_is_one_model_call(
    client: openai.OpenAI, llm_server: ScriptedLLMServer, exported_spans: InMemorySpanExporter
) -> None:
    llm_server.add(Reply.text("Sunny in Paris."))
    with AgentTracer("app") as tracer:
        raw = raw_post(client)
        assert isinstance(raw, LegacyAPIResponse)  # LiteLLM asserts this
        assert raw.headers.get("content-type", "").startswith("application/json")
        assert raw.parse().choices[0].message.content == "Sunny in Paris."
    (span,) = chat_spans(exported_spans)
    assert span.instrumentation_scope.name == "opentelemetry.instrumentation.openai.v1"
    interaction = only_interaction(tracer)
    assert interaction.input_messages[0].content == QUESTION[0]["content"]
    assert answer_text(interaction) == "Sunny in Paris."
    assert interaction.usage is not None and interaction.usage.output_tokens


def test_a_streamed_low_level_post_is_one_model_call_with_the_whole_answer(
    client: openai.OpenAI, llm_server: ScriptedLLMServer, exported_spans: InMemorySpanExporter
) -> None:
    llm_server.add(Reply.text("Sunny and 22 C in Paris."))
    with AgentTracer("app") as tracer:
        raw = raw_post(client, stream=True)
        assert isinstance(raw, LegacyAPIResponse)
        text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    assert text == "Sunny and 22 C in Paris."
    assert len(chat_spans(exported_spans)) == 1
    assert answer_text(only_interaction(tracer)) == text


def test_a_low_level_post_with_tools_records_the_call_and_the_tools(
    client: openai.OpenAI, llm_server: ScriptedLLMServer, exported_spans: InMemorySpanExporter
) -> None:
    llm_server.add(Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"}, id="call_w")]))
    with AgentTracer("app") as tracer:
        raw_post(client, tools=TOOLS).parse()
    assert len(chat_spans(exported_spans)) == 1
    interaction = only_interaction(tracer)
    (call,) = [o.content for o in interaction.output_messages]
    assert isinstance(call, LLMToolCall)
    assert (call.id, call.name, json.loads(call.parameters)) == (
        "call_w",
        "get_weather",
        {"city": "Paris"},
    )
    assert [t.name for t in interaction.tools_available or []] == ["get_weather"]


async def test_async_low_level_posts_streamed_or_not_are_one_model_call_each(
    aclient: openai.AsyncOpenAI,
    llm_server: ScriptedLLMServer,
    exported_spans: InMemorySpanExporter,
) -> None:
    llm_server.add(Reply.text("first"), Reply.text("second, streamed"))
    with AgentTracer("app") as tracer:
        first = (await araw_post(aclient)).parse()
        raw = await araw_post(aclient, stream=True)
        assert isinstance(raw, LegacyAPIResponse)
        streamed = [c.choices[0].delta.content or "" async for c in raw.parse() if c.choices]
    assert first.choices[0].message.content == "first"
    assert "".join(streamed) == "second, streamed"
    assert len(chat_spans(exported_spans)) == 2
    calls = tracer.trace.root.llm_interactions
    assert [answer_text(c) for c in calls] == ["first", "second, streamed"]


def test_calls_through_create_are_still_recorded_once(
    client: openai.OpenAI, llm_server: ScriptedLLMServer, exported_spans: InMemorySpanExporter
) -> None:
    llm_server.add(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    with AgentTracer("app") as tracer:
        client.chat.completions.create(model=MODEL, messages=QUESTION)
        client.chat.completions.with_raw_response.create(model=MODEL, messages=QUESTION).parse()
        stream = client.chat.completions.create(model=MODEL, messages=QUESTION, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "three"
    assert len(chat_spans(exported_spans)) == 3
    calls = tracer.trace.root.llm_interactions
    assert [answer_text(c) for c in calls] == ["one", "two", "three"]


def test_other_low_level_posts_pass_through(
    client: openai.OpenAI, llm_server: ScriptedLLMServer, exported_spans: InMemorySpanExporter
) -> None:
    llm_server.add(Reply.text("a response"))
    client.post(
        "/responses", body={"model": MODEL, "input": "hi"}, cast_to=openai.types.responses.Response
    )
    assert chat_spans(exported_spans) == []


# --------------------------------------------------------------------------- LiteLLM itself


@pytest.fixture(scope="module")
def litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of its prices
    return pytest.importorskip("litellm", reason="LiteLLM is in the record-litellm extra")


def completion_args(server: ScriptedLLMServer, **extra: Any) -> dict[str, Any]:
    return {
        "model": f"openai/{MODEL}",
        "api_base": server.base_url,
        "api_key": "test-key",
        "messages": QUESTION,
        **extra,
    }


def test_litellm_completion_sync_async_streamed_and_with_tools(
    litellm: Any, llm_server: ScriptedLLMServer, exported_spans: InMemorySpanExporter
) -> None:
    llm_server.add(
        Reply.text("sync answer"),
        Reply.text("async answer"),
        Reply.text("streamed answer"),
        Reply.text("async streamed answer"),
        Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"}, id="call_w")]),
    )

    async def async_calls() -> tuple[str, str]:
        response = await litellm.acompletion(**completion_args(llm_server))
        stream = await litellm.acompletion(**completion_args(llm_server, stream=True))
        chunks = [c.choices[0].delta.content or "" async for c in stream]
        return response.choices[0].message.content, "".join(chunks)

    with AgentTracer("app") as tracer:
        sync = litellm.completion(**completion_args(llm_server))
        answers = asyncio.run(async_calls())
        # (the async stream came before this one on the server: order the replies so)
        streamed = "".join(
            c.choices[0].delta.content or ""
            for c in litellm.completion(**completion_args(llm_server, stream=True))
        )
        tools = litellm.completion(**completion_args(llm_server, tools=TOOLS))
    assert sync.choices[0].message.content == "sync answer"
    assert answers == ("async answer", "streamed answer")
    assert streamed == "async streamed answer"
    assert tools.choices[0].message.tool_calls[0].id == "call_w"

    assert len(chat_spans(exported_spans)) == 5  # one span per call, none twice
    calls = tracer.trace.root.llm_interactions
    texts = [answer_text(c) for c in calls[:4]]
    assert texts == ["sync answer", "async answer", "streamed answer", "async streamed answer"]
    for call in calls:
        assert call.input_messages[0].content == QUESTION[0]["content"]
    (tool_call,) = [o.content for o in calls[4].output_messages]
    assert isinstance(tool_call, LLMToolCall)
    assert (tool_call.id, tool_call.name, json.loads(tool_call.parameters)) == (
        "call_w",
        "get_weather",
        {"city": "Paris"},
    )
    assert [t.name for t in calls[4].tools_available or []] == ["get_weather"]
