"""What the capture keeps: every LLM call started beneath an agent, wherever it ran.

These are the cases the hosted Composo tracer loses (CONVENTIONS.md, section 5): calls in
asyncio tasks and context-carrying threads, streams, spans that end after the agent's block,
Responses API calls. Real openai clients talk HTTP to a ScriptedLLMServer.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading

import openai
import pytest
from opentelemetry.instrumentation.openai.v1 import responses_wrappers
from opentelemetry.trace import StatusCode

from tracejudge import AgentTracer, context_propagating_executor
from tracejudge.models import LLMToolCall, MultiAgentTrace
from tracejudge.testing import Reply, ScriptedLLMServer, ToolCall
from tracejudge.tracing import ComposoTracer

MODEL = "gpt-4.1-mini"


def ask(client: openai.OpenAI, text: str) -> str:
    response = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": text}]
    )
    return response.choices[0].message.content or ""


async def aask(client: openai.AsyncOpenAI, text: str) -> str:
    response = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": text}]
    )
    return response.choices[0].message.content or ""


def tracked_spans() -> int:
    processor = ComposoTracer.capture_processor()
    assert processor is not None
    return processor.span_count


def llm_span_names(tracer: AgentTracer) -> list[str]:
    return [span.name for span in tracer.spans if span.name.startswith("openai.")]


def outputs(trace: MultiAgentTrace, agent_id: str) -> list[str]:
    agent = trace.agent_instance_by_id[agent_id]
    return [interaction.output_text for interaction in agent.llm_interactions]


def user_inputs(trace: MultiAgentTrace, agent_id: str) -> list[str]:
    agent = trace.agent_instance_by_id[agent_id]
    return [
        message.content
        for interaction in agent.llm_interactions
        for message in interaction.input_messages
        if message.role == "user" and isinstance(message.content, str)
    ]


def test_calls_in_the_block_become_the_agents_interactions(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("one"), Reply.text("two"))
    with AgentTracer(name="solo", agent_id="solo-1") as tracer:
        ask(client, "first")
        ask(client, "second")

    trace = tracer.trace
    assert trace.root_agent_instance_id == "solo-1"
    assert list(trace.agent_instance_by_id) == ["solo-1"]
    assert trace.root.name == "solo"
    assert outputs(trace, "solo-1") == ["one", "two"]
    assert user_inputs(trace, "solo-1") == ["first", "second"]


def test_calls_outside_any_agent_are_not_captured(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("before"), Reply.text("inside"), Reply.text("after"))
    ask(client, "before")
    with AgentTracer(name="solo") as tracer:
        ask(client, "inside")
    ask(client, "after")

    assert outputs(tracer.trace, tracer.agent_id) == ["inside"]
    assert tracked_spans() == 0


def test_stream_consumed_inside_the_block_is_one_interaction(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("streamed words arrive in pieces"))
    with AgentTracer(name="streamer") as tracer:
        stream = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "stream it"}], stream=True
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

    assert text == "streamed words arrive in pieces"
    [llm_span] = [span for span in tracer.spans if span.name == "openai.chat"]
    assert llm_span.end_time is not None
    assert outputs(tracer.trace, tracer.agent_id) == [text]


def test_streamed_parallel_tool_calls_all_survive(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(
        Reply.tool_calls(
            [
                ToolCall("search", {"query": "a"}, id="call_a"),
                ToolCall("search", {"query": "b"}, id="call_b"),
            ]
        )
    )
    with AgentTracer(name="streamer") as tracer:
        stream = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "search twice"}], stream=True
        )
        for _ in stream:
            pass

    [interaction] = tracer.trace.root.llm_interactions
    calls = interaction.tool_calls
    assert [(c.id, c.name, json.loads(c.parameters)) for c in calls] == [
        ("call_a", "search", {"query": "a"}),
        ("call_b", "search", {"query": "b"}),
    ]


def test_span_ending_after_the_block_is_kept(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("finished late"))
    with AgentTracer(name="lazy") as tracer:
        stream = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "later"}], stream=True
        )
    # The agent has ended and the processor forgot it; the stream is read only now.
    assert tracked_spans() == 0
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

    [llm_span] = [span for span in tracer.spans if span.name == "openai.chat"]
    assert llm_span.end_time is not None
    assert llm_span.end_time > tracer.span.end_time  # type: ignore[attr-defined]
    assert outputs(tracer.trace, tracer.agent_id) == [text]


def test_trace_is_readable_during_the_block(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("so far"), Reply.text("then more"))
    with AgentTracer(name="live") as tracer:
        ask(client, "one")
        during = tracer.trace
        ask(client, "two")

    assert outputs(during, tracer.agent_id) == ["so far"]
    assert outputs(tracer.trace, tracer.agent_id) == ["so far", "then more"]


async def test_async_client_calls_in_spawned_tasks_are_captured(
    aclient: openai.AsyncOpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(*(Reply.text(f"answer {i}") for i in range(5)))
    async with AgentTracer(name="async_agent") as tracer:
        first = await aask(aclient, "awaited")
        gathered = await asyncio.gather(aask(aclient, "g1"), aask(aclient, "g2"))
        task = asyncio.create_task(aask(aclient, "task"))
        grouped = asyncio.ensure_future(aask(aclient, "group"))
        await asyncio.wait([task, grouped])

    answers = {first, *gathered, task.result(), grouped.result()}
    assert answers == {f"answer {i}" for i in range(5)}
    trace = tracer.trace
    assert set(outputs(trace, tracer.agent_id)) == answers
    assert sorted(user_inputs(trace, tracer.agent_id)) == ["awaited", "g1", "g2", "group", "task"]


async def test_child_agents_in_concurrent_tasks_are_children_of_the_spawner(
    aclient: openai.AsyncOpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(*(Reply.text(f"r{i}") for i in range(3)))

    async def worker(name: str) -> str:
        async with AgentTracer(name=name, agent_id=name):
            return await aask(aclient, name)

    async with AgentTracer(name="boss", agent_id="boss") as boss:
        await asyncio.gather(worker("w1"), worker("w2"), worker("w3"))

    trace = boss.trace
    assert trace.root_agent_instance_id == "boss"
    assert sorted(trace.root.child_ids) == ["w1", "w2", "w3"]
    for name in ("w1", "w2", "w3"):
        assert user_inputs(trace, name) == [name]


def test_threads_of_a_context_propagating_executor_are_captured(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(*(Reply.text(f"t{i}") for i in range(4)))
    with AgentTracer(name="threaded") as tracer:
        with context_propagating_executor(max_workers=4) as pool:
            answers = list(pool.map(lambda q: ask(client, q), ["a", "b", "c", "d"]))

    assert sorted(answers) == ["t0", "t1", "t2", "t3"]
    assert sorted(outputs(tracer.trace, tracer.agent_id)) == sorted(answers)
    assert sorted(user_inputs(tracer.trace, tracer.agent_id)) == ["a", "b", "c", "d"]


def test_child_agents_in_executor_threads_nest_under_the_submitter(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("x"), Reply.text("y"))

    def sub_agent(name: str) -> str:
        with AgentTracer(name=name, agent_id=name):
            return ask(client, name)

    with AgentTracer(name="parent", agent_id="parent") as parent:
        with context_propagating_executor(max_workers=2) as pool:
            list(pool.map(sub_agent, ["left", "right"]))

    trace = parent.trace
    assert sorted(trace.root.child_ids) == ["left", "right"]
    assert {name: user_inputs(trace, name) for name in ("left", "right")} == {
        "left": ["left"],
        "right": ["right"],
    }


def test_copy_context_run_carries_a_thread_into_the_agent(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("carried"))
    with AgentTracer(name="manual") as tracer:
        thread = threading.Thread(target=contextvars.copy_context().run, args=(ask, client, "q"))
        thread.start()
        thread.join()

    assert outputs(tracer.trace, tracer.agent_id) == ["carried"]


def test_a_bare_thread_has_no_context_and_is_not_captured(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    # Documented limitation: a plain Thread starts with an empty context, so its call has
    # no parent span and belongs to no agent. The capture must not grab it by accident.
    llm_server.add(Reply.text("orphan"))
    with AgentTracer(name="manual") as tracer:
        thread = threading.Thread(target=ask, args=(client, "q"))
        thread.start()
        thread.join()

    assert llm_span_names(tracer) == []
    assert tracer.trace.root.interactions == []


@pytest.fixture
def forget_openllmetry_responses() -> None:
    """OpenLLMetry keeps every Responses API response in a module-global dict keyed by
    response id, and merges a new response with a stored one of the same id, parent context
    included. Each ScriptedLLMServer numbers its responses from ``resp_1`` again, so without
    this a test's call would be parented to an earlier test's (ended) agent."""
    responses_wrappers.responses.clear()


@pytest.mark.usefixtures("forget_openllmetry_responses")
def test_responses_api_calls_are_captured(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("Paris."))
    with AgentTracer(name="responder") as tracer:
        response = client.responses.create(
            model=MODEL, instructions="Answer briefly.", input="Capital of France?"
        )

    assert response.output_text == "Paris."
    assert llm_span_names(tracer) == ["openai.response"]
    [interaction] = tracer.trace.root.llm_interactions
    assert interaction.output_text == "Paris."
    contents = [(m.role, m.content) for m in interaction.input_messages]
    assert ("system", "Answer briefly.") in contents
    assert ("user", "Capital of France?") in contents


@pytest.mark.usefixtures("forget_openllmetry_responses")
def test_responses_api_tool_call_is_captured(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.tool_calls([ToolCall("lookup", {"city": "Paris"}, id="call_r1")]))
    tool = {
        "type": "function",
        "name": "lookup",
        "description": "Look a city up.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    with AgentTracer(name="responder") as tracer:
        client.responses.create(model=MODEL, input="Look up Paris", tools=[tool])

    [interaction] = tracer.trace.root.llm_interactions
    [call] = interaction.tool_calls
    assert isinstance(call, LLMToolCall)
    assert call.name == "lookup"
    assert json.loads(call.parameters) == {"city": "Paris"}
    assert [t.name for t in interaction.tools_available or []] == ["lookup"]


def test_a_failed_llm_call_is_still_an_interaction_of_the_agent(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.error(500))
    with AgentTracer(name="unlucky") as tracer:
        try:
            ask(client, "fail please")
        except openai.InternalServerError:
            pass

    [llm_span] = [span for span in tracer.spans if span.name == "openai.chat"]
    assert llm_span.status.status_code is StatusCode.ERROR
    assert tracer.span.status.status_code is not StatusCode.ERROR  # type: ignore[attr-defined]
    assert tracer.trace.root_agent_instance_id == tracer.agent_id
