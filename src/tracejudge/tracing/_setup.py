"""`ComposoTracer.init`: one TracerProvider, the capture processor, instrumentation, export."""

from __future__ import annotations

import importlib
import logging
import threading
import warnings
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from tracejudge import _env
from tracejudge.errors import MissingDependencyError
from tracejudge.tracing import _openai_post, _openllmetry_hook
from tracejudge.tracing._export import otlp_processor
from tracejudge.tracing._processors import (
    DEFAULT_MAX_SPANS_PER_TRACE,
    CaptureSpanProcessor,
    IsolatingSpanProcessor,
)

__all__ = ["ComposoTracer", "Instruments", "MissingDependencyError"]

logger = logging.getLogger("tracejudge.tracing")


class Instruments(Enum):
    """LLM client libraries `ComposoTracer.init` can instrument (through OpenLLMetry).

    ``OPENAI`` records every chat call made with the `openai` client: through
    ``chat.completions.create`` / ``parse`` / ``with_raw_response``, and through the
    client's low-level ``post("/chat/completions", ...)``, which is how LiteLLM sends its
    ``openai/...`` models and the OpenAI-compatible providers it routes through the `openai`
    client (``litellm.completion`` / ``acompletion``, streamed or not, and the frameworks
    built on LiteLLM: Google ADK's ``LiteLlm``, CrewAI, smolagents' ``LiteLLMModel``). Each
    call is recorded once, as the same OpenLLMetry span ``create`` makes. LiteLLM's other
    providers (``anthropic/...``, ``gemini/...``) send with their own HTTP client and are not
    recorded by any of these.

    ``Instruments("openai")`` also accepts a member's name, in any case (``"OPENAI"``,
    ``"OpenAI"``); an unknown name raises a ValueError that lists the valid ones.
    """

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GOOGLE_GENAI = "google_genai"

    @classmethod
    def _missing_(cls, value: object) -> Instruments:
        if isinstance(value, str):
            wanted = value.strip().lower().replace("-", "_")
            for member in cls:
                if wanted in (member.value, member.name.lower()):
                    return member
        valid = ", ".join(repr(member.value) for member in cls)
        raise ValueError(
            f"{value!r} is not a valid Instruments: use one of {valid} (any case) "
            f"or a member such as Instruments.OPENAI"
        )


#: What `ComposoTracer.init(instruments=...)` accepts for one client library.
InstrumentsLike = Instruments | str


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


class _FollowingTracer(otel_trace.Tracer):
    """A tracer that starts each span with the tracer of the provider its source points at
    now (fetched again only when that provider changes)."""

    def __init__(self, source: _FollowingTracerProvider, args: tuple[Any, ...]) -> None:
        self._source = source
        self._args = args
        self._bound: tuple[otel_trace.TracerProvider, otel_trace.Tracer] | None = None

    def _tracer(self) -> otel_trace.Tracer:
        provider = self._source.target
        if provider is None:
            provider = otel_trace.get_tracer_provider()
        bound = self._bound
        if bound is None or bound[0] is not provider:
            bound = (provider, provider.get_tracer(*self._args))
            self._bound = bound
        return bound[1]

    def start_span(self, *args: Any, **kwargs: Any) -> otel_trace.Span:
        return self._tracer().start_span(*args, **kwargs)

    def start_as_current_span(  # type: ignore[override]  # forwards whatever the target takes
        self, *args: Any, **kwargs: Any
    ) -> AbstractContextManager[otel_trace.Span]:
        return self._tracer().start_as_current_span(*args, **kwargs)


class _FollowingTracerProvider(otel_trace.TracerProvider):
    """The provider tracejudge instruments client libraries with: it hands out tracers that
    follow :attr:`target`, the provider the latest `ComposoTracer.init` set up.

    An instrumentor asks for its tracer once, when it instruments, and a client library can
    be instrumented only once per process; given a real provider, its spans would go there
    for good, so after ``reset()`` and ``init(tracer_provider=other)`` LLM calls would miss
    the new provider (and every ``tracer.trace`` would come back empty)."""

    def __init__(self) -> None:
        self.target: otel_trace.TracerProvider | None = None  # None: the global provider

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Any = None,
    ) -> otel_trace.Tracer:
        args = (instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        return _FollowingTracer(self, args)


_instrumentation_provider = _FollowingTracerProvider()


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


def _as_list(instruments: InstrumentsLike | Iterable[InstrumentsLike] | None) -> list[Instruments]:
    if instruments is None:
        return []
    if isinstance(instruments, (Instruments, str)):
        instruments = [instruments]
    if not isinstance(instruments, Iterable):
        raise TypeError(
            "instruments must be an Instruments member, its name, or a list of them; "
            f"got {type(instruments).__name__}"
        )
    wanted: list[Instruments] = []
    for item in instruments:
        if not isinstance(item, (Instruments, str)):
            raise TypeError(f"instruments must be Instruments members or their names, got {item!r}")
        member = Instruments(item)
        if member not in wanted:
            wanted.append(member)
    return wanted


def _instrumentor_class(instrument: Instruments) -> type:
    spec = _INSTRUMENTATIONS[instrument]
    try:
        module = importlib.import_module(spec.module)
    except ImportError as error:
        raise MissingDependencyError(
            spec.package, spec.extra, f"Instruments.{instrument.name}", core=spec.extra is None
        ) from error
    instrumentor: type = getattr(module, spec.class_name)
    return instrumentor


def _instrument(instrument: Instruments, cls: type) -> None:
    if instrument in _instrumented:
        return
    instrumentor = cls()
    # Someone (the user, another library) may have instrumented already: do not wrap twice.
    if getattr(instrumentor, "is_instrumented_by_opentelemetry", False):
        logger.info(
            "tracejudge: %s was instrumented before ComposoTracer.init; its spans go to the "
            "provider it was instrumented with",
            instrument.name,
        )
    else:
        with warnings.catch_warnings():
            # Instrumenting imports the instrumentation's modules, which can warn about
            # their own code (OpenLLMetry's pydantic models use class-based config): not
            # the user's to act on, so not shown to them.
            warnings.simplefilter("ignore", DeprecationWarning)
            instrumentor.instrument(tracer_provider=_instrumentation_provider)
            if instrument is Instruments.OPENAI:
                _openllmetry_hook.install()  # no event loop per call (see the module)
                # LiteLLM and other callers of the client's low-level `post` (see the module)
                _openai_post.install(_instrumentation_provider)
    if getattr(instrumentor, "is_instrumented_by_opentelemetry", True):
        _instrumented.add(instrument)
    else:
        logger.warning(
            "tracejudge: %s instrumentation did not apply (is the client library installed?)",
            instrument.name,
        )


def _otlp_configured() -> bool:
    return any(_env.read(name) for name in _env.OTLP_ENDPOINT_VARIABLES)


def _existing_provider(tracer_provider: TracerProvider | None) -> TracerProvider | None:
    """The provider to use that is not tracejudge's to create; None when `init` creates one."""
    if tracer_provider is not None:
        if not isinstance(tracer_provider, TracerProvider):
            raise TypeError(
                "tracer_provider must be an opentelemetry.sdk.trace.TracerProvider, "
                f"got {type(tracer_provider).__name__}"
            )
        return tracer_provider
    existing = otel_trace.get_tracer_provider()
    return existing if isinstance(existing, TracerProvider) else None


def _resolve_provider(existing: TracerProvider | None) -> tuple[TracerProvider, bool]:
    if existing is not None:
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


def _new_exporter(otlp: bool | None, owns_provider: bool) -> SpanProcessor | None:
    """The OTLP export processor `init` should add, or None.

    ``otlp=True`` forces it (a missing exporter package raises); ``otlp=None`` adds it when an
    OTLP endpoint variable is set and tracejudge created the provider (a provider someone
    else set up exports where they decided; adding ours would send every span twice), and
    only warns when the exporter package is missing.
    """
    if otlp is False or (otlp is None and not (owns_provider and _otlp_configured())):
        if otlp is None and _otlp_configured():
            logger.info(
                "tracejudge: an OTLP endpoint is configured, but the TracerProvider is not "
                "tracejudge's, so tracejudge adds no exporter of its own (pass otlp=True to "
                "add one)"
            )
        return None
    try:
        return otlp_processor()
    except MissingDependencyError as error:
        if otlp:
            raise
        logger.warning("tracejudge: OTLP export is not set up: %s", error)
        return None


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
        instruments: InstrumentsLike | Iterable[InstrumentsLike] | None = None,
        *,
        tracer_provider: TracerProvider | None = None,
        otlp: bool | None = None,
        max_spans_per_trace: int | None = None,
    ) -> TracerProvider:
        """Initialise tracing; returns the TracerProvider in use. Safe to call again.

        The provider is `tracer_provider` when given, else the SDK TracerProvider already set
        globally (never replaced), else a new one that is set globally.

        `instruments` names the client libraries to instrument with OpenLLMetry, once per
        process: `Instruments` members or their names in any case (``"openai"``,
        ``"OPENAI"``), alone or in a list. A missing instrumentation package raises
        :class:`~tracejudge.errors.MissingDependencyError` before anything is changed. The
        instrumented clients record into whichever provider the latest `init` set up, also
        after :meth:`reset` and ``init(tracer_provider=other)``.

        OTLP export (the standard exporter behind a BatchSpanProcessor: OTLP/HTTP, extra
        ``tracejudge[otlp]``, or gRPC when ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL=grpc``,
        package ``opentelemetry-exporter-otlp-proto-grpc``; endpoint, headers and the rest
        from the ``OTEL_EXPORTER_OTLP_*`` variables):

        * ``otlp=None`` (default): added when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
          ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set *and* `init` created the provider. A
          provider you (or ``opentelemetry-instrument``) set up exports as you configured it;
          tracejudge adds nothing, so no span is exported twice. When the exporter package is
          missing, a WARNING is logged and tracing goes on without export.
        * ``otlp=True``: added to whatever provider is in use; a missing exporter package
          raises :class:`~tracejudge.errors.MissingDependencyError`.
        * ``otlp=False``: never added.

        A collector that is down or never answers cannot hold the program at exit: each
        export request times out after 2 s, and the flush at shutdown gives up after 3 s,
        counting the spans it could not send in one WARNING. ``OTEL_EXPORTER_OTLP_TIMEOUT``
        (or ``..._TRACES_TIMEOUT``, seconds) and ``OTEL_BSP_EXPORT_TIMEOUT`` (milliseconds)
        replace those bounds when set.

        `max_spans_per_trace` bounds the in-process capture that ``AgentTracer.trace`` reads:
        each root agent keeps at most that many spans (10,000 unless an `init` since the last
        :meth:`reset` set another value); later ones are dropped and reported in
        ``tracer.trace.warnings``.
        Agent spans are always kept, so the agent tree stays whole. It does not limit what
        the provider exports.

        Calling `init` again adds no processor or exporter twice and instruments nothing
        twice; it instruments members not instrumented yet, and applies a
        `max_spans_per_trace` that is given.
        """
        global _setup
        wanted = _as_list(instruments)
        if max_spans_per_trace is not None:
            CaptureSpanProcessor(max_spans_per_trace)  # validates before anything changes
        with _lock:
            # Check every package first, so a missing one leaves nothing half set up.
            classes = {instrument: _instrumentor_class(instrument) for instrument in wanted}
            setup = _setup
            if setup is not None and tracer_provider not in (None, setup.provider):
                raise ValueError(
                    "ComposoTracer is already initialised with another TracerProvider; "
                    "call ComposoTracer.reset() before initialising with a new one"
                )
            if setup is None:
                existing = _existing_provider(tracer_provider)
                owns = existing is None
            else:
                existing, owns = setup.provider, setup.owns_provider
            has_exporter = setup is not None and setup.exporter is not None
            exporter = None if has_exporter else _new_exporter(otlp, owns)
            if setup is None:
                provider, owns = _resolve_provider(existing)
                setup = _Setup(
                    provider=provider,
                    owns_provider=owns,
                    capture=CaptureSpanProcessor(
                        max_spans_per_trace or DEFAULT_MAX_SPANS_PER_TRACE
                    ),
                )
                _attach(setup, setup.capture)
                _setup = setup
            elif max_spans_per_trace is not None:
                setup.capture.max_spans_per_trace = max_spans_per_trace
            if exporter is not None:
                setup.exporter = exporter
                _attach(setup, exporter)
            _instrumentation_provider.target = setup.provider
            for instrument, instrumentor_class in classes.items():
                _instrument(instrument, instrumentor_class)
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
        instrumented (OpenLLMetry cannot be cleanly undone) and record into that provider
        until the next `init`, whose provider they follow."""
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
