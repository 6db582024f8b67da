"""A traced three-agent run, exported as an application (or a Collector) would send it.

Without arguments, `ComposoTracer.init` adds the standard OTLP/HTTP exporter from the
OTEL_EXPORTER_OTLP_* variables (the sdk.env recipe). Each `--exporter YAML`
(`{endpoint, headers, compression}`, a Collector exporter's resolved settings) adds one
standard OTLP/HTTP exporter instead: several make a fan-out. Run in its own process (one
TracerProvider per process).
"""

from __future__ import annotations

import argparse

import yaml
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.scenario import run_scenario, scripted_replies
from tracejudge import ComposoTracer, Instruments
from tracejudge.testing import ScriptedLLMServer

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--exporter", action="append", default=[])
    args = parser.parse_args()
    provider = None
    if args.exporter:
        provider = TracerProvider()
        for text in args.exporter:
            target = yaml.safe_load(text)
            exporter = OTLPSpanExporter(
                endpoint=target["endpoint"],
                headers=target.get("headers") or {},
                compression=Compression(target.get("compression", "none")),
            )
            provider.add_span_processor(BatchSpanProcessor(exporter))
    with ScriptedLLMServer(scripted_replies()) as model:
        provider = ComposoTracer.init(instruments=Instruments.OPENAI, tracer_provider=provider)
        run_scenario(OpenAI(base_url=model.base_url, api_key="agent-key"))
        provider.force_flush()
        provider.shutdown()
