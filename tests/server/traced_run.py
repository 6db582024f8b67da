"""A traced multi-agent run exported with the standard OTLP/HTTP exporter, as an application
would: `ComposoTracer.init` adds it because OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
(headers and gzip from OTEL_EXPORTER_OTLP_HEADERS / _COMPRESSION). Run as a script by
the tests, in its own process (one TracerProvider per process)."""

from __future__ import annotations

from openai import OpenAI

from tests.scenario import run_scenario, scripted_replies
from tracejudge import ComposoTracer, Instruments
from tracejudge.testing import ScriptedLLMServer

if __name__ == "__main__":
    with ScriptedLLMServer(scripted_replies()) as model:
        provider = ComposoTracer.init(instruments=Instruments.OPENAI)
        run_scenario(OpenAI(base_url=model.base_url, api_key="agent-key"))
        provider.force_flush()
        provider.shutdown()
