"""A pydantic-ai program (a lead agent delegating to a weather agent), traced and scored.

pydantic-ai's built-in OpenTelemetry instrumentation records the agents, tools and
model calls; tracejudge converts them into the agent tree and scores each agent.

    pip install 'pydantic-ai-slim[openai]'
    python examples/framework_pydantic_ai.py

Offline by default: a ScriptedLLMServer on 127.0.0.1 plays the model, with the replies
listed below. Set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible
server; AGENT_MODEL names the model) to run the agents against a real model; a judge
configured the same way (TRACEJUDGE_JUDGE, OPENAI_*) also scores a natural-language
criterion. Without pydantic-ai installed, it exits with status 1 and one line on stderr
saying what to install. With OTEL_EXPORTER_OTLP_ENDPOINT set, the spans are also sent
there over OTLP (a `tracejudge serve` shows the trace).
"""

# requires: pydantic_ai

import os
import sys

try:  # what the example needs: without it, one line on stderr and exit status 1
    import pydantic_ai  # noqa: F401
    import pydantic_ai.models.openai  # noqa: F401
except ImportError as missing:
    sys.exit(
        f"{os.path.basename(__file__)} needs {missing.name or 'a module'}, which is not installed: "
        "pip install 'pydantic-ai-slim[openai]'"
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
    Reply.tool_calls([ToolCall("ask_weather_agent", {"question": QUESTION}, id="call_ask")]),
    Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"}, id="call_weather")]),
    Reply.text("It is sunny and 22 C in Paris."),
    Reply.text("The weather agent says: sunny and 22 C in Paris."),
]


def instrument(provider: TracerProvider) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))


def run(base_url: str, api_key: str) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key=api_key))
    weather_agent = Agent(model, name="weather_agent", instructions="Use get_weather.")

    @weather_agent.tool_plain
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"Sunny, 22 C in {city}"

    lead = Agent(model, name="lead", instructions="Delegate weather questions.")

    @lead.tool_plain
    async def ask_weather_agent(question: str) -> str:
        """Ask the weather agent."""
        return (await weather_agent.run(question)).output

    return str(lead.run_sync(QUESTION).output)


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
