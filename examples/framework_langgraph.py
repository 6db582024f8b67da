"""A LangGraph program (a supervisor routing to a ReAct researcher and a writer), traced and scored.

OpenInference's LangChain instrumentation records the graph; tracejudge reads each node
that calls a model as an agent named after the node, the graph as the root.

    pip install langgraph langchain-openai openinference-instrumentation-langchain
    python examples/framework_langgraph.py

Offline by default: a ScriptedLLMServer on 127.0.0.1 plays the model, with the replies
listed below. Set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible
server; AGENT_MODEL names the model) to run the agents against a real model; a judge
configured the same way (TRACEJUDGE_JUDGE, OPENAI_*) also scores a natural-language
criterion. Without LangGraph installed, it exits with status 1 and one line on stderr
saying what to install. With OTEL_EXPORTER_OTLP_ENDPOINT set, the spans are also sent
there over OTLP (a `tracejudge serve` shows the trace).
"""

# requires: langgraph

import os
import sys

try:  # what the example needs: without it, one line on stderr and exit status 1
    import langchain_openai  # noqa: F401
    import langgraph  # noqa: F401
    import openinference.instrumentation.langchain  # noqa: F401
except ImportError as missing:
    sys.exit(
        f"{os.path.basename(__file__)} needs {missing.name or 'a module'}, which is not installed: "
        "pip install langgraph langchain-openai openinference-instrumentation-langchain"
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
    Reply.text('{"next": "researcher"}'),
    Reply.tool_calls([ToolCall("search", {"query": "weather in Paris"}, id="call_search")]),
    Reply.text("Paris is sunny, 22 C."),
    Reply.text('{"next": "writer"}'),
    Reply.text("Report: Paris is sunny and 22 C today, with a light wind."),
    Reply.text('{"next": "FINISH"}'),
]


def instrument(provider: TracerProvider) -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)


def run(base_url: str, api_key: str) -> str:
    from typing import Literal

    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import create_react_agent
    from typing_extensions import TypedDict

    llm = ChatOpenAI(model=MODEL, base_url=base_url, api_key=api_key)

    @tool
    def search(query: str) -> str:
        """Search the web."""
        return "Paris today: sunny, 22 C, light wind."

    researcher = create_react_agent(
        llm, tools=[search], prompt="You research with the search tool.", name="researcher"
    )

    class Router(TypedDict):
        next: Literal["researcher", "writer", "FINISH"]

    class State(MessagesState):
        next: str

    def supervisor(state: State) -> dict:
        system = "Route to researcher, then writer, then FINISH. Answer as JSON."
        decision = llm.with_structured_output(Router).invoke(
            [{"role": "system", "content": system}, *state["messages"]]
        )
        return {"next": decision["next"]}

    def writer(state: State) -> dict:
        system = "You write a short report from the research."
        reply = llm.invoke([{"role": "system", "content": system}, *state["messages"]])
        return {"messages": [AIMessage(content=reply.content, name="writer")]}

    builder = StateGraph(State)
    builder.add_node("supervisor", supervisor)
    builder.add_node("researcher", researcher)
    builder.add_node("writer", writer)
    builder.add_edge(START, "supervisor")
    builder.add_conditional_edges(
        "supervisor", lambda state: END if state["next"] == "FINISH" else state["next"]
    )
    builder.add_edge("researcher", "supervisor")
    builder.add_edge("writer", "supervisor")
    graph = builder.compile(name="supervisor_graph")
    result = graph.invoke({"messages": [("user", QUESTION)]})
    return str(result["messages"][-1].content)


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
