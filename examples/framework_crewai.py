"""A CrewAI program (a researcher with a search tool, then a writer), traced and scored.

OpenInference's CrewAI and OpenAI instrumentations record the crew, its agents and the
model calls; tracejudge converts them into the agent tree and scores each agent.

    pip install crewai openinference-instrumentation-crewai openinference-instrumentation-openai
    python examples/framework_crewai.py

Offline by default: a ScriptedLLMServer on 127.0.0.1 plays the model, with the replies
listed below. Set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible
server; AGENT_MODEL names the model) to run the agents against a real model; a judge
configured the same way (TRACEJUDGE_JUDGE, OPENAI_*) also scores a natural-language
criterion. Without CrewAI installed, it exits with status 1 and one line on stderr
saying what to install. With OTEL_EXPORTER_OTLP_ENDPOINT set, the spans are also sent
there over OTLP (a `tracejudge serve` shows the trace).
"""

# requires: crewai

import os
import sys

try:  # what the example needs: without it, one line on stderr and exit status 1
    import crewai  # noqa: F401
    import openinference.instrumentation.crewai  # noqa: F401
    import openinference.instrumentation.openai  # noqa: F401
except ImportError as missing:
    sys.exit(
        f"{os.path.basename(__file__)} needs {missing.name or 'a module'}, which is not installed: "
        "pip install crewai openinference-instrumentation-crewai"
        " openinference-instrumentation-openai"
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
    Reply.tool_calls([ToolCall("search", {"query": "Paris weather"}, id="call_search")]),
    Reply.text("Thought: I have the facts.\nFinal Answer: Paris is sunny, 22 C."),
    Reply.text("Thought: I can write it.\nFinal Answer: Report: sunny and 22 C in Paris."),
]


def instrument(provider: TracerProvider) -> None:
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    CrewAIInstrumentor().instrument(tracer_provider=provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)  # the model calls


def run(base_url: str, api_key: str) -> str:
    from crewai import LLM, Agent, Crew, Process, Task
    from crewai.tools import tool

    @tool("search")
    def search(query: str) -> str:
        """Search the web."""
        return "Paris today: sunny, 22 C, light wind."

    llm = LLM(model=f"openai/{MODEL}", base_url=base_url, api_key=api_key)
    researcher = Agent(
        role="researcher",
        goal="Find facts",
        backstory="A careful researcher.",
        tools=[search],
        llm=llm,
        max_iter=3,
    )
    writer = Agent(role="writer", goal="Write reports", backstory="A writer.", llm=llm, max_iter=2)
    research = Task(description=QUESTION, expected_output="facts", agent=researcher)
    report = Task(description="Write a report.", expected_output="a report", agent=writer)
    crew = Crew(agents=[researcher, writer], tasks=[research, report], process=Process.sequential)
    return str(crew.kickoff())


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
