"""A span of the program's own inside an agent that `AgentTracer` declares is a step of
that agent, not an agent: `AgentTracer` says which spans are agents."""

from __future__ import annotations

import openai
from opentelemetry import trace

from tracejudge.testing import Reply, ScriptedLLMServer
from tracejudge.tracing import AgentTracer

QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def agent_calls(app: AgentTracer) -> list[tuple[str, int]]:
    """(name, model calls) of each agent of the traced run, depth first."""
    return [(agent.name, len(agent.llm_interactions)) for agent in app.trace.iter_agents()]


def test_a_plain_span_inside_a_declared_agent_is_a_step_of_it(
    llm_server: ScriptedLLMServer, client: openai.OpenAI
) -> None:
    llm_server.add(Reply.text("Sunny."), Reply.text("Sunny, 22 C."))
    tracer = trace.get_tracer("my_app")
    with AgentTracer(name="app") as app:
        with tracer.start_as_current_span("retrieve"):
            client.chat.completions.create(model="scripted-model", messages=QUESTION)
        with tracer.start_as_current_span("summarise"):
            client.chat.completions.create(model="scripted-model", messages=QUESTION)
    assert agent_calls(app) == [("app", 2)]


def test_a_plain_span_inside_a_declared_agent_that_says_agent_is_its_child(
    llm_server: ScriptedLLMServer, client: openai.OpenAI
) -> None:
    # (A program that groups an agent's calls in a span of its own naming an agent: the
    # one exception, as a trace's root span so named is an agent where none is declared.)
    llm_server.add(Reply.text("Sunny."), Reply.text("Sunny, 22 C."))
    tracer = trace.get_tracer("my_app")
    with AgentTracer(name="app") as app:
        with tracer.start_as_current_span("weather_agent"):
            client.chat.completions.create(model="scripted-model", messages=QUESTION)
        client.chat.completions.create(model="scripted-model", messages=QUESTION)
    assert agent_calls(app) == [("app", 1), ("weather_agent", 1)]


def test_a_plain_span_about_agents_inside_a_declared_agent_is_a_step(
    llm_server: ScriptedLLMServer, client: openai.OpenAI
) -> None:
    # ("agent" in its name, not as its last word: a step about agents, not an agent's run)
    llm_server.add(Reply.text("Sunny."), Reply.text("Sunny, 22 C."))
    tracer = trace.get_tracer("my_app")
    with AgentTracer(name="app") as app:
        with tracer.start_as_current_span("summarise_agent_memory"):
            client.chat.completions.create(model="scripted-model", messages=QUESTION)
        client.chat.completions.create(model="scripted-model", messages=QUESTION)
    assert agent_calls(app) == [("app", 2)]
