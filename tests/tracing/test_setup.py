"""ComposoTracer.init: provider reuse, idempotency, instrumentation, OTLP export, undo."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai
import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
import tracejudge.errors
from tracejudge import AgentTracer
from tracejudge.testing import Reply, ScriptedLLMServer
from tracejudge.tracing import (
    CaptureSpanProcessor,
    ComposoTracer,
    Instruments,
    IsolatingSpanProcessor,
    MissingDependencyError,
)

REPO = Path(__file__).resolve().parents[2]
OTLP_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def our_processors(provider: TracerProvider) -> list[SpanProcessor]:
    """What tracejudge attached to the provider and has not detached (test-only peek)."""
    attached = provider._active_span_processor._span_processors  # noqa: SLF001
    return [
        p.inner for p in attached if isinstance(p, IsolatingSpanProcessor) and p.inner is not None
    ]


def ask(client: openai.OpenAI, text: str) -> str:
    response = client.chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": text}]
    )
    return response.choices[0].message.content or ""


@pytest.fixture
def no_otlp_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTLP_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_init_reuses_the_global_sdk_provider(
    tracing: TracerProvider,
    client: openai.OpenAI,
    llm_server: ScriptedLLMServer,
    exported_spans: InMemorySpanExporter,
) -> None:
    # The session set its own SDK provider globally before init, as an application would.
    assert trace.get_tracer_provider() is tracing
    assert ComposoTracer.tracer_provider() is tracing
    llm_server.add(Reply.text("ok"))
    with AgentTracer(name="user_app"):
        ask(client, "hello")
    # The user's own processors still see every span, ours included.
    names = sorted(span.name for span in exported_spans.get_finished_spans())
    assert names == ["invoke_agent user_app", "openai.chat"]


def test_init_twice_adds_nothing_twice(
    tracing: TracerProvider,
    client: openai.OpenAI,
    llm_server: ScriptedLLMServer,
    exported_spans: InMemorySpanExporter,
    no_otlp_env: None,
) -> None:
    before = our_processors(tracing)
    assert ComposoTracer.init(instruments=Instruments.OPENAI) is tracing
    assert ComposoTracer.init(instruments=[Instruments.OPENAI]) is tracing
    assert ComposoTracer.init() is tracing
    after = our_processors(tracing)
    assert after == before
    assert sum(isinstance(p, CaptureSpanProcessor) for p in after) == 1
    assert Instruments.OPENAI in ComposoTracer.instrumented()

    llm_server.add(Reply.text("once"))
    with AgentTracer(name="single") as tracer:
        ask(client, "one call")
    assert [s.name for s in tracer.spans] == ["invoke_agent single", "openai.chat"]
    exported = [s.name for s in exported_spans.get_finished_spans() if s.name == "openai.chat"]
    assert exported == ["openai.chat"]


def test_init_with_another_provider_while_initialised_is_refused(tracing: TracerProvider) -> None:
    with pytest.raises(ValueError, match="reset"):
        ComposoTracer.init(tracer_provider=TracerProvider())
    assert ComposoTracer.tracer_provider() is tracing


@pytest.mark.parametrize(
    ("instrument", "module", "package", "extra"),
    [
        (
            Instruments.ANTHROPIC,
            "opentelemetry.instrumentation.anthropic",
            "opentelemetry-instrumentation-anthropic",
            "anthropic",
        ),
        (
            Instruments.GOOGLE_GENAI,
            "opentelemetry.instrumentation.google_generativeai",
            "opentelemetry-instrumentation-google-generativeai",
            "google-genai",
        ),
    ],
)
def test_missing_instrumentation_package_raises_import_error_naming_the_extra(
    tracing: TracerProvider,
    monkeypatch: pytest.MonkeyPatch,
    instrument: Instruments,
    module: str,
    package: str,
    extra: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes the import fail as if not installed
    before = our_processors(tracing)
    with pytest.raises(ImportError) as raised:
        ComposoTracer.init(instruments=[Instruments.OPENAI, instrument])
    assert isinstance(raised.value, MissingDependencyError)
    assert package in str(raised.value)
    assert f"tracejudge[{extra}]" in str(raised.value)
    assert our_processors(tracing) == before
    assert instrument not in ComposoTracer.instrumented()


def test_otlp_true_without_the_exporter_package_raises_naming_the_extra(
    tracing: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    before = our_processors(tracing)
    with pytest.raises(MissingDependencyError, match=r"pip install 'tracejudge\[otlp\]'"):
        ComposoTracer.init(otlp=True)
    assert our_processors(tracing) == before


def test_otlp_endpoint_variable_never_fails_init_on_a_provider_it_does_not_own(
    tracing: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session's provider is the application's own: the variable is its exporter's business.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    before = our_processors(tracing)
    assert ComposoTracer.init() is tracing
    assert our_processors(tracing) == before


def test_grpc_protocol_asks_for_the_grpc_exporter(
    tracing: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    before = our_processors(tracing)
    with pytest.raises(MissingDependencyError, match="opentelemetry-exporter-otlp-proto-grpc"):
        ComposoTracer.init(otlp=True)
    assert our_processors(tracing) == before


class _Collector(ThreadingHTTPServer):
    """A loopback OTLP/HTTP receiver that keeps each decoded export request."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector.paths.append(self.path)
                collector.requests.append(request)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    def span_names(self) -> list[str]:
        return [
            span.name
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_otlp_true_adds_one_exporter_that_sends_agent_spans(
    isolated_tracing: None,
    collector: _Collector,
    monkeypatch: pytest.MonkeyPatch,
    no_otlp_env: None,
) -> None:
    port = collector.server_address[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    provider = TracerProvider()
    assert ComposoTracer.init(tracer_provider=provider, otlp=True) is provider
    assert ComposoTracer.init(tracer_provider=provider, otlp=True) is provider
    assert ComposoTracer.init(tracer_provider=provider) is provider
    assert len(our_processors(provider)) == 2  # capture + one batch exporter

    with AgentTracer(name="exported", agent_id="e") as tracer:
        with AgentTracer(name="nested"):
            pass
    assert ComposoTracer.force_flush(5000)

    assert collector.paths == ["/v1/traces"]
    assert sorted(collector.span_names()) == ["invoke_agent exported", "invoke_agent nested"]
    assert tracer.trace.root_agent_instance_id == "e"


def test_a_failing_exporter_never_breaks_the_agent(
    isolated_tracing: None, monkeypatch: pytest.MonkeyPatch, no_otlp_env: None
) -> None:
    # Nothing listens on port 9 of loopback: every export is refused.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0.5")
    provider = TracerProvider()
    ComposoTracer.init(tracer_provider=provider, otlp=True)
    assert len(our_processors(provider)) == 2

    with AgentTracer(name="resilient") as tracer:
        result = sum(range(10))
    assert result == 45
    assert tracer.trace.root.name == "resilient"
    assert ComposoTracer.force_flush(3000) in (True, False)
    ComposoTracer.shutdown()
    assert ComposoTracer.tracer_provider() is None


def test_otlp_endpoint_variable_adds_no_exporter_to_a_provider_tracejudge_does_not_own(
    isolated_tracing: None,
    collector: _Collector,
    monkeypatch: pytest.MonkeyPatch,
    no_otlp_env: None,
) -> None:
    # The usual case: the application (or opentelemetry-instrument) set up its provider,
    # exporting to the endpoint the variable names. A second exporter would send it all twice.
    port = collector.server_address[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    provider = TracerProvider()
    assert ComposoTracer.init(tracer_provider=provider) is provider
    assert [type(p) for p in our_processors(provider)] == [CaptureSpanProcessor]

    with AgentTracer(name="exported once", agent_id="x") as tracer:
        pass
    assert ComposoTracer.force_flush(5000)
    assert collector.requests == []
    assert tracer.trace.root_agent_instance_id == "x"


def test_otlp_false_adds_no_exporter(
    isolated_tracing: None, monkeypatch: pytest.MonkeyPatch, no_otlp_env: None
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    provider = TracerProvider()
    ComposoTracer.init(tracer_provider=provider, otlp=False)
    assert [type(p) for p in our_processors(provider)] == [CaptureSpanProcessor]


_OWNED_PROVIDER_WITH_OTLP_VARIABLE = textwrap.dedent(
    """
    import logging
    import sys

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    from tracejudge import AgentTracer, ComposoTracer

    logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
    if sys.argv[1] == "without-exporter":
        sys.modules["opentelemetry.exporter.otlp.proto.http.trace_exporter"] = None

    provider = ComposoTracer.init()  # no SDK provider yet: tracejudge creates and owns one
    assert isinstance(provider, TracerProvider) and trace.get_tracer_provider() is provider
    with AgentTracer(name="started", agent_id="s") as tracer:
        pass
    assert tracer.trace.root_agent_instance_id == "s"
    assert ComposoTracer.force_flush(5000)
    ComposoTracer.shutdown()
    print("agent ran")
    """
)


def _run_fresh(script: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_otlp_endpoint_variable_exports_from_the_provider_tracejudge_creates(
    collector: _Collector,
) -> None:
    port = collector.server_address[1]
    result = _run_fresh(
        _OWNED_PROVIDER_WITH_OTLP_VARIABLE,
        "with-exporter",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"},
    )
    assert result.returncode == 0, result.stderr
    assert "agent ran" in result.stdout
    assert collector.span_names() == ["invoke_agent started"]


def test_otlp_endpoint_variable_without_the_exporter_package_warns_and_goes_on() -> None:
    result = _run_fresh(
        _OWNED_PROVIDER_WITH_OTLP_VARIABLE,
        "without-exporter",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
    )
    assert result.returncode == 0, result.stderr
    assert "agent ran" in result.stdout
    assert "OTLP export is not set up" in result.stdout
    assert "pip install 'tracejudge[otlp]'" in result.stdout


def test_isolating_processor_swallows_its_processors_errors() -> None:
    class Broken(SpanProcessor):
        def on_start(self, span: object, parent_context: object = None) -> None:
            raise RuntimeError("on_start")

        def on_end(self, span: ReadableSpan) -> None:
            raise RuntimeError("on_end")

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            raise RuntimeError("flush")

        def shutdown(self) -> None:
            raise RuntimeError("shutdown")

    provider = TracerProvider()
    wrapper = IsolatingSpanProcessor(Broken())
    provider.add_span_processor(wrapper)
    with provider.get_tracer("t").start_as_current_span("work"):
        pass
    assert provider.force_flush() is False
    provider.shutdown()
    assert isinstance(wrapper.detach(), Broken)
    assert wrapper.inner is None


def test_reset_removes_capture_and_init_restores_it(
    isolated_tracing: None,
    tracing: TracerProvider,
    client: openai.OpenAI,
    llm_server: ScriptedLLMServer,
    no_otlp_env: None,
) -> None:
    assert ComposoTracer.capture_processor() is None
    assert not any(isinstance(p, CaptureSpanProcessor) for p in our_processors(tracing))
    llm_server.add(Reply.text("unseen"), Reply.text("seen"))
    with AgentTracer(name="after_reset") as loose:
        ask(client, "q")
    assert loose.trace.root.interactions == []  # the agent still ran, nothing was captured

    assert ComposoTracer.init(instruments=Instruments.OPENAI) is tracing
    with AgentTracer(name="after_init") as tracer:
        ask(client, "q")
    assert [i.output_text for i in tracer.trace.root.llm_interactions] == ["seen"]


def test_instrumented_clients_follow_the_provider_of_a_new_init(
    isolated_tracing: None,
    client: openai.OpenAI,
    llm_server: ScriptedLLMServer,
    no_otlp_env: None,
) -> None:
    # OpenAI was instrumented (once per process) while the session's provider was in use.
    assert Instruments.OPENAI in ComposoTracer.instrumented()
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert ComposoTracer.init(instruments="openai", tracer_provider=provider) is provider

    llm_server.add(Reply.text("followed"))
    with AgentTracer(name="moved", agent_id="m") as tracer:
        ask(client, "q")
    assert [i.output_text for i in tracer.trace.root.llm_interactions] == ["followed"]
    names = sorted(span.name for span in exporter.get_finished_spans())
    assert names == ["invoke_agent moved", "openai.chat"]


def test_agent_spans_go_to_the_provider_of_each_init(
    isolated_tracing: None, no_otlp_env: None
) -> None:
    # AgentTracer keeps the tracer it got from the provider in use: a new init's provider
    # must still receive the next agent, also when it is the previous provider again.
    exporters: dict[str, InMemorySpanExporter] = {}
    providers: dict[str, TracerProvider] = {}
    for name in ("first", "second"):
        providers[name], exporters[name] = TracerProvider(), InMemorySpanExporter()
        providers[name].add_span_processor(SimpleSpanProcessor(exporters[name]))
    for run, name in enumerate(("first", "second", "first")):
        ComposoTracer.reset()
        ComposoTracer.init(tracer_provider=providers[name])
        with AgentTracer(name=f"run{run}") as tracer:
            pass
        assert [span.name for span in tracer.spans] == [f"invoke_agent run{run}"]

    def names(exporter: InMemorySpanExporter) -> list[str]:
        return [span.name for span in exporter.get_finished_spans()]

    assert names(exporters["first"]) == ["invoke_agent run0", "invoke_agent run2"]
    assert names(exporters["second"]) == ["invoke_agent run1"]


def test_reset_leaves_instrumented_clients_recording_into_the_last_provider(
    isolated_tracing: None,
    tracing: TracerProvider,
    client: openai.OpenAI,
    llm_server: ScriptedLLMServer,
    exported_spans: InMemorySpanExporter,
) -> None:
    llm_server.add(Reply.text("still recorded"))
    ask(client, "after reset")
    assert [s.name for s in exported_spans.get_finished_spans()] == ["openai.chat"]


@pytest.mark.parametrize("name", ["openai", "OPENAI", "OpenAI", " openai "])
def test_instruments_are_named_in_any_case(name: str, tracing: TracerProvider) -> None:
    assert Instruments(name) is Instruments.OPENAI
    assert ComposoTracer.init(instruments=name) is tracing
    assert ComposoTracer.init(instruments=[name, Instruments.OPENAI]) is tracing
    assert Instruments("GOOGLE_GENAI") is Instruments.GOOGLE_GENAI


def test_an_unknown_instrument_name_lists_the_valid_ones(tracing: TracerProvider) -> None:
    before = our_processors(tracing)
    with pytest.raises(ValueError, match="not a valid Instruments") as raised:
        ComposoTracer.init(instruments=["openai", "langchain"])
    message = str(raised.value)
    assert "'langchain'" in message
    assert all(repr(member.value) in message for member in Instruments)
    assert our_processors(tracing) == before
    with pytest.raises(TypeError, match="instruments"):
        ComposoTracer.init(instruments=[42])  # type: ignore[list-item]


def test_missing_dependency_error_lives_with_the_other_exceptions() -> None:
    assert MissingDependencyError is tracejudge.errors.MissingDependencyError
    assert tracejudge.MissingDependencyError is tracejudge.errors.MissingDependencyError
    assert issubclass(MissingDependencyError, ImportError)
    assert MissingDependencyError.__module__ == "tracejudge.errors"


_FRESH_PROCESS = textwrap.dedent(
    """
    import asyncio
    import sys
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from tracejudge import AgentTracer, ComposoTracer, agent_tracer

    # 1. No SDK provider anywhere: agents are no-ops that still run the user's code.
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)

    @agent_tracer
    def helper(x):
        return x * 2

    @agent_tracer
    async def ahelper(x):
        return x + 1

    with AgentTracer(name="solo", agent_id="s") as solo:
        with AgentTracer(name="child"):
            doubled = helper(21)
        incremented = asyncio.run(ahelper(1))
    assert (doubled, incremented) == (42, 2)
    assert not solo.span.is_recording()
    assert solo.spans == []
    t = solo.trace
    assert t.root_agent_instance_id == "s" and t.root.name == "solo"
    assert t.root.interactions == []
    try:
        with AgentTracer(name="raiser"):
            raise KeyError("k")
    except KeyError:
        pass
    else:
        raise AssertionError("the exception was swallowed")

    # 2. init creates an SDK provider, sets it globally, and is idempotent.
    provider = ComposoTracer.init()
    assert isinstance(provider, TracerProvider)
    assert trace.get_tracer_provider() is provider
    assert ComposoTracer.init() is provider
    with AgentTracer(name="now") as now:
        with trace.get_tracer("user").start_as_current_span("work"):
            pass
    assert [s.name for s in now.spans] == ["invoke_agent now", "work"]
    ComposoTracer.shutdown()
    assert "openai" not in sys.modules  # tracing alone never loads a client library
    print("fresh process ok")
    """
)


def test_fresh_process_without_provider_then_init_creates_one() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    result = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "fresh process ok" in result.stdout
