"""`ComposoTracer.init`: one TracerProvider, the capture processor, instrumentation, export."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tracejudge.tracing._processors import CaptureSpanProcessor, IsolatingSpanProcessor

__all__ = ["ComposoTracer", "Instruments", "MissingDependencyError"]

logger = logging.getLogger("tracejudge.tracing")

_OTLP_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_OTLP_PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
# (exporter module, package, tracejudge extra or None)
_OTLP_HTTP = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry-exporter-otlp-proto-http",
    "otlp",
)
_OTLP_GRPC = (
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry-exporter-otlp-proto-grpc",
    None,
)


class MissingDependencyError(ImportError):
    """Raised by `ComposoTracer.init` when an optional package it needs is not installed:
    the instrumentation for a requested `Instruments` member, or the OTLP exporter when an
    OTLP endpoint is configured. The message says what to install."""

    def __init__(
        self, package: str, extra: str | None, purpose: str, *, core: bool = False
    ) -> None:
        if extra is not None:
            hint = f"pip install 'tracejudge[{extra}]' (or pip install {package})"
        elif core:
            hint = f"pip install {package} (a dependency of tracejudge; reinstall tracejudge)"
        else:
            hint = f"pip install {package}"
        super().__init__(f"{purpose} needs the package {package!r}, which is not installed: {hint}")
        self.package = package
        self.extra = extra


class Instruments(Enum):
    """LLM client libraries `ComposoTracer.init` can instrument (through OpenLLMetry)."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GOOGLE_GENAI = "google_genai"


@dataclass(frozen=True)
class _Instrumentation:
    module: str
    class_name: str
    package: str
    extra: str | None


_INSTRUMENTATIONS: dict[Instruments, _Instrumentation] = {
    Instruments.OPENAI: _Instrumentation(
        "opentelemetry.instrumentation.openai",
        "OpenAIInstrumentor",
        "opentelemetry-instrumentation-openai",
        None,
    ),
    Instruments.ANTHROPIC: _Instrumentation(
        "opentelemetry.instrumentation.anthropic",
        "AnthropicInstrumentor",
        "opentelemetry-instrumentation-anthropic",
        "anthropic",
    ),
    Instruments.GOOGLE_GENAI: _Instrumentation(
        "opentelemetry.instrumentation.google_generativeai",
        "GoogleGenerativeAiInstrumentor",
        "opentelemetry-instrumentation-google-generativeai",
        "google-genai",
    ),
}

# Instrumenting is process-wide and never undone: OpenLLMetry's uninstrument() leaves chat
# completions wrapped, so instrumenting again would wrap twice (two spans per call).
_instrumented: set[Instruments] = set()


@dataclass
class _Setup:
    """What one `init` put in place; `reset` takes it away again."""

    provider: TracerProvider
    owns_provider: bool
    capture: CaptureSpanProcessor
    attached: list[IsolatingSpanProcessor] = field(default_factory=list)
    exporter: SpanProcessor | None = None


_lock = threading.RLock()
_setup: _Setup | None = None


def current_setup() -> _Setup | None:
    """The live setup, or None before `init` (and after `reset`/`shutdown`)."""
    return _setup


def _as_list(
    instruments: Instruments | str | Iterable[Instruments | str] | None,
) -> list[Instruments]:
    if instruments is None:
        return []
    if isinstance(instruments, (Instruments, str)):
        instruments = [instruments]
    return [item if isinstance(item, Instruments) else Instruments(item) for item in instruments]


def _instrumentor_class(instrument: Instruments) -> type:
    spec = _INSTRUMENTATIONS[instrument]
    try:
        module = importlib.import_module(spec.module)
    except ImportError as error:
        raise MissingDependencyError(
            spec.package, spec.extra, f"Instruments.{instrument.name}", core=spec.extra is None
        ) from error
    return getattr(module, spec.class_name)


def _instrument(instrument: Instruments, cls: type, provider: TracerProvider) -> None:
    if instrument in _instrumented:
        return
    instrumentor = cls()
    # Someone (the user, another library) may have instrumented already: do not wrap twice.
    if not getattr(instrumentor, "is_instrumented_by_opentelemetry", False):
        instrumentor.instrument(tracer_provider=provider)
    if getattr(instrumentor, "is_instrumented_by_opentelemetry", True):
        _instrumented.add(instrument)
    else:
        logger.warning(
            "tracejudge: %s instrumentation did not apply (is the client library installed?)",
            instrument.name,
        )


def _otlp_configured() -> bool:
    return any(os.environ.get(name, "").strip() for name in _OTLP_ENDPOINT_VARIABLES)


def _otlp_protocol() -> str:
    for name in _OTLP_PROTOCOL_VARIABLES:
        value = os.environ.get(name, "").strip().lower()
        if value:
            return value
    return "http/protobuf"


def _otlp_processor() -> SpanProcessor:
    if _otlp_protocol() == "grpc":
        module, package, extra = _OTLP_GRPC
    else:  # http/protobuf, the default (http/json is not offered by the Python SDK)
        module, package, extra = _OTLP_HTTP
    try:
        exporter_class = importlib.import_module(module).OTLPSpanExporter
    except ImportError as error:
        raise MissingDependencyError(package, extra, "OTLP export") from error
    # The exporter reads endpoint, headers, timeout and compression from the OTEL_* variables.
    return BatchSpanProcessor(exporter_class())


def _resolve_provider(tracer_provider: TracerProvider | None) -> tuple[TracerProvider, bool]:
    if tracer_provider is not None:
        if not isinstance(tracer_provider, TracerProvider):
            raise TypeError(
                "tracer_provider must be an opentelemetry.sdk.trace.TracerProvider, "
                f"got {type(tracer_provider).__name__}"
            )
        return tracer_provider, False
    existing = otel_trace.get_tracer_provider()
    if isinstance(existing, TracerProvider):
        return existing, False
    provider = TracerProvider(resource=Resource.create())
    otel_trace.set_tracer_provider(provider)
    if otel_trace.get_tracer_provider() is not provider:
        # A non-SDK provider is set globally and cannot be replaced: use ours explicitly.
        logger.warning(
            "tracejudge: the global TracerProvider is not an OpenTelemetry SDK provider; "
            "tracejudge uses its own provider for agents and instrumented clients"
        )
    return provider, True


def _attach(setup: _Setup, processor: SpanProcessor) -> None:
    wrapper = IsolatingSpanProcessor(processor)
    setup.provider.add_span_processor(wrapper)
    setup.attached.append(wrapper)


class ComposoTracer:
    """Sets up tracing once per process: a TracerProvider, the capture processor that
    `AgentTracer` reads, the LLM client instrumentation, and OTLP export when configured."""

    @classmethod
    def init(
        cls,
        instruments: Instruments | list[Instruments] | None = None,
        *,
        tracer_provider: TracerProvider | None = None,
        otlp: bool | None = None,
    ) -> TracerProvider:
        """Initialise tracing; returns the TracerProvider in use. Safe to call again.

        The provider is `tracer_provider` when given, else the SDK TracerProvider already set
        globally (never replaced), else a new one that is set globally. Each member of
        `instruments` is instrumented with OpenLLMetry once per process; a missing
        instrumentation package raises :class:`MissingDependencyError` before anything is
        changed. When ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
        is set (or `otlp` is True), spans are also exported with the standard OTLP exporter
        behind a BatchSpanProcessor: OTLP/HTTP (extra ``tracejudge[otlp]``), or gRPC when
        ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL=grpc`` (``opentelemetry-exporter-otlp-proto-grpc``);
        pass ``otlp=False`` when your own provider already exports there. Calling `init`
        again adds no processor or exporter twice and instruments nothing twice; it
        instruments members not instrumented yet.
        """
        global _setup
        wanted = _as_list(instruments)
        with _lock:
            # Check every package first, so a missing one leaves nothing half set up.
            classes = {instrument: _instrumentor_class(instrument) for instrument in wanted}
            export = _otlp_configured() if otlp is None else otlp
            setup = _setup
            if setup is not None and tracer_provider not in (None, setup.provider):
                raise ValueError(
                    "ComposoTracer is already initialised with another TracerProvider; "
                    "call ComposoTracer.reset() before initialising with a new one"
                )
            has_exporter = setup is not None and setup.exporter is not None
            exporter = _otlp_processor() if export and not has_exporter else None
            if setup is None:
                provider, owns = _resolve_provider(tracer_provider)
                setup = _Setup(
                    provider=provider, owns_provider=owns, capture=CaptureSpanProcessor()
                )
                _attach(setup, setup.capture)
                _setup = setup
            if exporter is not None:
                setup.exporter = exporter
                _attach(setup, exporter)
            for instrument, instrumentor_class in classes.items():
                _instrument(instrument, instrumentor_class, setup.provider)
            return setup.provider

    @classmethod
    def force_flush(cls, timeout_millis: int = 30000) -> bool:
        """Export what is buffered now; True when everything was exported in time."""
        setup = _setup
        if setup is None:
            return True
        if setup.owns_provider:
            return setup.provider.force_flush(timeout_millis)
        return all(wrapper.force_flush(timeout_millis) for wrapper in setup.attached)

    @classmethod
    def flush(cls, timeout_millis: int = 30000) -> bool:
        """The same as :meth:`force_flush`."""
        return cls.force_flush(timeout_millis)

    @classmethod
    def shutdown(cls) -> None:
        """Flush and stop: shuts down the provider if `init` created it, else only the
        processors tracejudge added to yours. Instrumentation stays in place."""
        global _setup
        with _lock:
            setup, _setup = _setup, None
        if setup is None:
            return
        if setup.owns_provider:
            setup.provider.shutdown()  # shuts our processors down with the rest
        else:
            for wrapper in setup.attached:
                wrapper.shutdown()
        for wrapper in setup.attached:
            wrapper.detach()

    @classmethod
    def reset(cls) -> None:
        """Undo `init` (mostly for tests): switch off and shut down the processors tracejudge
        added, and forget the provider, which is left as it is. Instrumented clients stay
        instrumented (OpenLLMetry cannot be cleanly undone) and record into that provider."""
        global _setup
        with _lock:
            setup, _setup = _setup, None
        if setup is None:
            return
        for wrapper in setup.attached:
            inner = wrapper.detach()
            if inner is not None:
                try:
                    inner.shutdown()
                except Exception:
                    logger.debug("tracejudge: processor failed to shut down", exc_info=True)

    @classmethod
    def tracer_provider(cls) -> TracerProvider | None:
        """The provider `init` set up, or None when not initialised."""
        setup = _setup
        return None if setup is None else setup.provider

    @classmethod
    def capture_processor(cls) -> CaptureSpanProcessor | None:
        """The capture processor `init` added, or None when not initialised."""
        setup = _setup
        return None if setup is None else setup.capture

    @classmethod
    def instrumented(cls) -> frozenset[Instruments]:
        """The client libraries instrumented in this process."""
        return frozenset(_instrumented)
