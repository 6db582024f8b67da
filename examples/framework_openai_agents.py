"""An OpenAI Agents SDK program (a triage agent handing off to a specialist), traced and scored.

OpenInference's instrumentation records the agents, the hand-off, the tool call and the
model calls; tracejudge converts those spans into the agent tree and scores each agent.

    pip install openai-agents openinference-instrumentation-openai-agents
    python examples/framework_openai_agents.py

Offline by default: a ScriptedLLMServer on 127.0.0.1 plays the model, with the replies
listed below. Set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible
server; AGENT_MODEL names the model) to run the agents against a real model; a judge
configured the same way (TRACEJUDGE_JUDGE, OPENAI_*) also scores a natural-language
criterion. Without the OpenAI Agents SDK installed, it exits with status 1 and one line
on stderr saying what to install. With OTEL_EXPORTER_OTLP_ENDPOINT set, the spans are
also sent there over OTLP (a `tracejudge serve` shows the trace).
"""

# requires: agents

import os
import sys

try:  # what the example needs: without it, one line on stderr and exit status 1
    import agents  # noqa: F401
    import openinference.instrumentation.openai_agents  # noqa: F401
except ImportError as missing:
    sys.exit(
        f"{os.path.basename(__file__)} needs {missing.name or 'a module'}, which is not installed: "
        "pip install openai-agents openinference-instrumentation-openai-agents"
    )

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracejudge import Composo, ComposoTracer, checks
from tracejudge.convert import traces_from_spans
from tracejudge.testing import Reply, ScriptedLLMServer, ToolCall

REAL = bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))
MODEL = os.environ.get("AGENT_MODEL", "gpt-4.1-mini" if REAL else "scripted-model")
QUESTION = "What is the weather in Paris?"

REPLIES = [
    Reply.tool_calls([ToolCall("transfer_to_weather_specialist", {}, id="call_handoff")]),
    Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"}, id="call_weather")]),
    Reply.text("It is sunny and 22 C in Paris."),
]


def instrument(provider: TracerProvider) -> None:
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)


def run(base_url: str, api_key: str) -> str:
    import asyncio

    import openai
    from agents import Agent, Runner, function_tool, set_default_openai_client

    set_default_openai_client(openai.AsyncOpenAI(base_url=base_url, api_key=api_key), False)

    @function_tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"Sunny, 22 C in {city}"

    specialist = Agent(
        name="weather_specialist",
        instructions="You answer weather questions with the get_weather tool.",
        tools=[get_weather],
        model=MODEL,
    )
    triage = Agent(
        name="triage",
        instructions="You route each question to the right specialist.",
        handoffs=[specialist],
        model=MODEL,
    )
    return str(asyncio.run(Runner.run(triage, QUESTION)).final_output)


def score(spans: list) -> None:
    """Convert the framework's spans, print the agents, score them."""
    trace = traces_from_spans(spans).require_llm_interactions()[0]
    for agent in trace.iter_agents():
        print(f"agent {agent.name}: {len(agent.llm_interactions)} model calls")
    print(f"answer: {trace.final_output}")
    criteria = [checks.tool_results, checks.final_answer]
    if REAL or os.environ.get("TRACEJUDGE_JUDGE"):
        criteria.append("Reward agents that answer the user's question accurately")
    with Composo() as client:
        for result in client.evaluate_trace(trace, criteria=criteria):
            print(f"Overall Score: {result.overall_score} ({result.criterion})")


exporter = InMemorySpanExporter()
provider = ComposoTracer.init()  # exports over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set
provider.add_span_processor(SimpleSpanProcessor(exporter))
instrument(provider)
if REAL:
    base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    print(run(base_url, os.environ.get("OPENAI_API_KEY", "local")))
else:
    with ScriptedLLMServer(REPLIES) as model:
        print(run(model.base_url, "offline"))
score(list(exporter.get_finished_spans()))
