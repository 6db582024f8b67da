"""Score the traces an OpenTelemetry Collector wrote to a file (its `file` exporter:
OTLP/JSON, one export request per line; protobuf and gzip are read too).

    python examples/score_collector_file.py traces.jsonl [more files ...]

A Collector pipeline for this: add to exporters/tracejudge.yaml

    exporters:
      file:
        path: ./traces.jsonl

and list `file` in the traces pipeline. Without arguments the example first writes such a
file itself, from a traced two-agent run against a ScriptedLLMServer on 127.0.0.1. The
deterministic checks need no judge; set TRACEJUDGE_JUDGE (or OPENAI_API_KEY) to add a
natural-language criterion. `tracejudge score FILE` does the same from the command line.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

from tracejudge import Composo, checks
from tracejudge.convert import traces_from_otlp


def write_collector_file(path: Path) -> None:
    """A traced run, written as the Collector's file exporter writes it."""
    from google.protobuf.json_format import MessageToDict
    from openai import OpenAI
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracejudge import AgentTracer, ComposoTracer, Instruments
    from tracejudge.testing import Reply, ScriptedLLMServer, ToolCall

    exporter = InMemorySpanExporter()
    # tracejudge's provider: it also exports over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    provider = ComposoTracer.init(instruments=Instruments.OPENAI)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    replies = [
        Reply.tool_calls([ToolCall("lookup_order", {"order_id": "A-17"}, id="call_1")]),
        Reply.text("Order A-17 ships tomorrow."),
        Reply.text("Your order A-17 ships tomorrow."),
    ]
    tool = {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Find an order.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
    with ScriptedLLMServer(replies) as model:
        client = OpenAI(base_url=model.base_url, api_key="offline")
        with AgentTracer(name="support"):
            with AgentTracer(name="orders"):
                messages = [{"role": "user", "content": "Where is order A-17?"}]
                first = client.chat.completions.create(model="m", messages=messages, tools=[tool])
                call = first.choices[0].message.tool_calls[0]
                messages += [
                    first.choices[0].message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call.id, "content": '{"ships": "tomorrow"}'},
                ]
                client.chat.completions.create(model="m", messages=messages, tools=[tool])
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Answer the customer."}]
            )
    request = MessageToDict(encode_spans(exporter.get_finished_spans()))
    path.write_text(json.dumps(request) + "\n")


paths = [Path(p) for p in sys.argv[1:]]
if not paths:
    paths = [Path(tempfile.mkdtemp()) / "traces.jsonl"]
    write_collector_file(paths[0])
    print(f"wrote {paths[0]}")

criteria = [checks.tool_arguments, checks.tool_results, checks.final_answer]
if any(os.environ.get(v) for v in ("TRACEJUDGE_JUDGE", "OPENAI_API_KEY", "OPENAI_BASE_URL")):
    criteria.append("Reward answers that resolve the customer's question")

with Composo() as client:
    for path in paths:
        for trace in traces_from_otlp(path).require_llm_interactions():
            print(f"trace {trace.trace_id}: {' > '.join(a.name for a in trace.iter_agents())}")
            for result in client.evaluate_trace(trace, criteria=criteria):
                scores = {
                    trace.agent_instance_by_id[i].name: s for i, s in result.agent_scores.items()
                }
                print(f"  Overall Score: {result.overall_score} {result.criterion} {scores}")
