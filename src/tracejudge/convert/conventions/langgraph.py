"""LangGraph: a graph's nodes are its agents, and the graph the root agent.

Neither LangChain instrumentation marks a LangGraph node as an agent, so the node
spans are found by what the instrumentations record about the node a span runs in:

- OpenInference (`openinference-instrumentation-langchain`): every span's `metadata`
  JSON carries `langgraph_node`; the node's own span is the CHAIN span named after it.
- OpenLLMetry (`opentelemetry-instrumentation-langchain`): `execute_task <node>` spans
  (`gen_ai.operation.name=execute_task`, `gen_ai.task.name`) carry
  `traceloop.association.properties.langgraph_node`, as do the model-call spans.

This convention comes first in the table, since the spans it claims are also
OpenInference CHAIN or OpenLLMetry task spans. A node span whose ancestors hold no other
node span is an agent named after the node; node spans nested in it (a subgraph's nodes,
such as a prebuilt ReAct agent's per-step `agent` and `tools` nodes) are steps of that
agent, whatever their span kind: the tree walk's layout applies that rule (`NODE` spans
with a `NODE` ancestor). The graph itself is the root agent, named after the graph
(`compile(name=...)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracejudge import semconv
from tracejudge.convert import _json
from tracejudge.convert._common import as_str
from tracejudge.convert._records import SpanRecord
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Convention, Identity, Kind

__all__ = ["LANGGRAPH", "LangGraph", "is_graph", "node_name"]


class LangGraph(Convention):
    name = "langgraph"
    # OpenLLMetry's node runs name their task; OpenInference's carry LangChain metadata.
    marker_keys = frozenset({semconv.GEN_AI_TASK_NAME, semconv.OPENINFERENCE_METADATA})

    def kind(self, span: SpanView) -> str | None:
        if node_name(span) is not None:
            return Kind.AGENT
        attrs = span.attributes
        if (
            attrs.get(semconv.OPENINFERENCE_SPAN_KIND) != semconv.OPENINFERENCE_KIND_AGENT
            and attrs.get(semconv.GEN_AI_OPERATION_NAME) is None
            and is_graph(span)
        ):
            return Kind.WORKFLOW
        return None

    def agent(self, span: SpanView) -> Identity:
        return None, node_name(span) or span.name

    def is_node(self, span: SpanView) -> bool:
        return node_name(span) is not None


LANGGRAPH = LangGraph()


_LANGGRAPH_INTEGRATION = "langgraph"


def _metadata(span: SpanRecord | SpanView) -> Mapping[str, Any] | None:
    raw = span.attributes.get(semconv.OPENINFERENCE_METADATA)
    if raw is None:  # most spans (and `isinstance` against an ABC is slow to say no)
        return None
    if isinstance(raw, Mapping):
        return raw
    if not isinstance(raw, str) or semconv.LANGGRAPH_NODE not in raw and "langgraph" not in raw:
        return None
    try:
        parsed = _json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, Mapping) else None


def node_name(span: SpanRecord | SpanView) -> str | None:
    """The LangGraph node this span is the run of (not merely a span inside it), or None."""
    attrs = span.attributes
    if attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OPERATION_EXECUTE_TASK:
        task = as_str(attrs.get(semconv.GEN_AI_TASK_NAME))
        node = as_str(attrs.get(semconv.TRACELOOP_LANGGRAPH_NODE))
        return task if task is not None and task == node else None
    metadata = _metadata(span)
    if metadata is None:
        return None
    node = as_str(metadata.get(semconv.LANGGRAPH_NODE))
    return node if node is not None and node == span.name else None


def is_graph(span: SpanRecord | SpanView) -> bool:
    """Whether the span is an OpenInference run of a whole graph: LangGraph metadata
    without a node (OpenLLMetry records the graph as an `invoke_agent` span already)."""
    if span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) is None:
        return False
    metadata = _metadata(span)
    return (
        metadata is not None
        and metadata.get("ls_integration") == _LANGGRAPH_INTEGRATION
        and semconv.LANGGRAPH_NODE not in metadata
    )
