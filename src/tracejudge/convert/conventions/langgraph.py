"""LangGraph: a graph's nodes are its agents, and the graph the root agent.

Neither LangChain instrumentation marks a node as an agent; `convert.langgraph` finds the
node runs by the node metadata both record (see there). This convention comes first in
the table, since the spans it claims are also OpenInference CHAIN or OpenLLMetry task
spans. A node nested in another node (a subgraph's, or a prebuilt ReAct agent's per-step
`agent` and `tools` nodes) is a step of the outer node's agent: the tree walk's layout
applies that rule (`NODE` spans with a `NODE` ancestor).
"""

from __future__ import annotations

from tracejudge import semconv
from tracejudge.convert import langgraph
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind

__all__ = ["LANGGRAPH", "LangGraph"]


class LangGraph(Convention):
    name = "langgraph"
    # OpenLLMetry's node runs name their task; OpenInference's carry LangChain metadata.
    marker_keys = frozenset({semconv.GEN_AI_TASK_NAME, semconv.OPENINFERENCE_METADATA})

    def kind(self, span: SpanView) -> str | None:
        if langgraph.node_name(span) is not None:
            return Kind.AGENT
        attrs = span.attributes
        if (
            attrs.get(semconv.OPENINFERENCE_SPAN_KIND) != semconv.OPENINFERENCE_KIND_AGENT
            and attrs.get(semconv.GEN_AI_OPERATION_NAME) is None
            and langgraph.is_graph(span)
        ):
            return Kind.WORKFLOW
        return None

    def agent(self, span: SpanView) -> Identity:
        return None, langgraph.node_name(span) or span.name

    def is_node(self, span: SpanView) -> bool:
        return langgraph.node_name(span) is not None


LANGGRAPH = LangGraph()
