"""A smolagents program (a manager delegating to a web agent), traced and scored.

OpenInference's smolagents instrumentation records the agents, their tool calls and the
`final_answer` each gives; tracejudge converts them into the agent tree and scores it.

    pip install smolagents openinference-instrumentation-smolagents
    python examples/framework_smolagents.py

Offline by default: a ScriptedLLMServer on 127.0.0.1 plays the model, with the replies
listed below. Set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible
server; AGENT_MODEL names the model) to run the agents against a real model; a judge
configured the same way (TRACEJUDGE_JUDGE, OPENAI_*) also scores a natural-language
criterion. Without smolagents installed, it exits with status 1 and one line on stderr
saying what to install. With OTEL_EXPORTER_OTLP_ENDPOINT set, the spans are also sent
there over OTLP (a `tracejudge serve` shows the trace).
"""

# requires: smolagents

import os
import sys

try:  # what the example needs: without it, one line on stderr and exit status 1
    import openinference.instrumentation.smolagents  # noqa: F401
    import smolagents  # noqa: F401
except ImportError as missing:
    sys.exit(
        f"{os.path.basename(__file__)} needs {missing.name or 'a module'}, which is not installed: "
        "pip install smolagents openinference-instrumentation-smolagents"
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
    Reply.tool_calls([ToolCall("web_agent", {"task": "Find the weather in Paris."}, id="c1")]),
    Reply.tool_calls([ToolCall("web_search", {"query": "Paris weather"}, id="c2")]),
    Reply.tool_calls([ToolCall("final_answer", {"answer": "Paris is sunny, 22 C."}, id="c3")]),
    Reply.tool_calls([ToolCall("final_answer", {"answer": "It is sunny and 22 C."}, id="c4")]),
]


def instrument(provider: TracerProvider) -> None:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    SmolagentsInstrumentor().instrument(tracer_provider=provider)


def run(base_url: str, api_key: str) -> str:
    from smolagents import OpenAIModel, ToolCallingAgent, tool

    @tool
    def web_search(query: str) -> str:
        """Search the web.

        Args:
            query: What to search for.
        """
        return "Paris today: sunny, 22 C, light wind."

    model = OpenAIModel(model_id=MODEL, api_base=base_url, api_key=api_key)
    web_agent = ToolCallingAgent(
        tools=[web_search],
        model=model,
        name="web_agent",
        description="Searches the web for facts.",
        max_steps=4,
        verbosity_level=0,
    )
    manager = ToolCallingAgent(
        tools=[], model=model, managed_agents=[web_agent], name="manager", verbosity_level=0
    )
    return str(manager.run(QUESTION))


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
