"""The judge's own calls as OpenTelemetry GenAI spans, on request (`spans=` on a judge).

They go to a tracer provider of their own (resource `service.name = tracejudge-judge`),
never to the process's global provider, and every judgement starts a trace of its own (no
parent taken from the caller's context): the judge's calls never land in the traces of the
agents it judges. Each judgement is an `invoke_agent tracejudge-judge` span; under it, one
`chat {model}` span per model call (re-asks and exploring rounds included) and one
`execute_tool {tool}` span per read of an exploring judgement. Attributes only: the
prompts (which hold the user's trace) are not recorded.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Union

import httpx
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tracejudge import semconv
from tracejudge.errors import ConfigurationError

if TYPE_CHECKING:
    from tracejudge.judges._exchange import Answer

__all__ = ["JUDGE_SERVICE_NAME", "JudgeSpans", "SpansOption", "make_spans"]

#: The `service.name` of the judge's own tracer provider.
JUDGE_SERVICE_NAME = "tracejudge-judge"

#: What a judge's `spans=` accepts: None or False (off), True (OTLP/HTTP, configured by
#: the standard OTEL_EXPORTER_OTLP_* variables; needs `tracejudge[otlp]`), a SpanExporter
#: (a provider of the judge's own sends to it), a TracerProvider (used as it is: keep it
#: apart from the one your agents use), or a JudgeSpans.
SpansOption = Union["JudgeSpans", TracerProvider, SpanExporter, bool, None]

# The span of the judgement in progress in this task (an explicit parent: the global
# OpenTelemetry context is never read nor changed).
_judgement: contextvars.ContextVar[Span | None] = contextvars.ContextVar(
    "tracejudge_judgement_span", default=None
)


def make_spans(option: SpansOption) -> JudgeSpans | None:
    """The spans a `spans=` option names; None when they are off."""
    if option is None or option is False:
        return None
    if isinstance(option, JudgeSpans):
        return option
    if option is True:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:  # pragma: no cover - depends on the installed extras
            raise ConfigurationError(
                "spans=True sends the judge's spans over OTLP/HTTP: pip install "
                "'tracejudge[otlp]', or pass a SpanExporter or a TracerProvider"
            ) from None
        return JudgeSpans(exporter=OTLPSpanExporter())
    if isinstance(option, TracerProvider):
        return JudgeSpans(provider=option)
    if isinstance(option, SpanExporter):
        return JudgeSpans(exporter=option)
    raise TypeError(
        "spans must be None/False (off), True (OTLP/HTTP), a SpanExporter, a TracerProvider "
        f"or a JudgeSpans, got {type(option).__name__}"
    )


class JudgeSpans:
    """Where a judge's spans go: `provider` (one of its own, made with `service.name =
    tracejudge-judge` and a batch processor on `exporter` when not given)."""

    def __init__(
        self,
        *,
        exporter: SpanExporter | None = None,
        provider: TracerProvider | None = None,
    ) -> None:
        if provider is None:
            provider = TracerProvider(
                resource=Resource.create({semconv.SERVICE_NAME: JUDGE_SERVICE_NAME})
            )
            if exporter is not None:
                provider.add_span_processor(BatchSpanProcessor(exporter))
        elif exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        self.provider = provider
        self._tracer = provider.get_tracer("tracejudge.judges")

    def _start(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Span:
        parent = _judgement.get()
        # Never the caller's context: a judgement is a trace of its own.
        context = trace.set_span_in_context(parent, Context()) if parent else Context()
        return self._tracer.start_span(name, context=context, kind=kind, attributes=attributes)

    @contextlib.contextmanager
    def judgement(self, model: str, criterion: str) -> Iterator[Span]:
        """The span of one judgement; the calls made inside it are its children."""
        span = self._start(
            f"{semconv.OPERATION_INVOKE_AGENT} {JUDGE_SERVICE_NAME}",
            SpanKind.INTERNAL,
            {
                semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_INVOKE_AGENT,
                semconv.GEN_AI_AGENT_NAME: JUDGE_SERVICE_NAME,
                semconv.GEN_AI_REQUEST_MODEL: model,
                semconv.TRACEJUDGE_JUDGE_CRITERION: criterion[:1000],
            },
        )
        token = _judgement.set(span)
        try:
            yield span
        except BaseException as error:
            _failed(span, type(error).__name__)
            raise
        finally:
            _judgement.reset(token)
            span.end()

    @contextlib.contextmanager
    def call(
        self, judge_name: str, model: str, base_url: str, body: dict[str, Any]
    ) -> Iterator[CallSpan]:
        """The span of one model call (retries included) of judge `judge_name`
        ("provider:model")."""
        url = httpx.URL(base_url)
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_CHAT,
            semconv.GEN_AI_PROVIDER_NAME: judge_name.split(":", 1)[0],
            semconv.GEN_AI_REQUEST_MODEL: model,
            semconv.SERVER_ADDRESS: url.host or "",
        }
        if url.port is not None:
            attributes[semconv.SERVER_PORT] = url.port
        for key, attribute in (
            ("max_tokens", semconv.GEN_AI_REQUEST_MAX_TOKENS),
            ("max_completion_tokens", semconv.GEN_AI_REQUEST_MAX_TOKENS),
            ("temperature", semconv.GEN_AI_REQUEST_TEMPERATURE),
        ):
            if isinstance(body.get(key), (int, float)):
                attributes[attribute] = body[key]
        span = self._start(f"{semconv.OPERATION_CHAT} {model}", SpanKind.CLIENT, attributes)
        handle = CallSpan(span)
        try:
            yield handle
        except BaseException as error:
            _failed(span, type(error).__name__)
            raise
        finally:
            span.end()

    @contextlib.contextmanager
    def tool(self, name: str, call_id: str) -> Iterator[Span]:
        """The span of one read of an exploring judgement."""
        span = self._start(
            f"{semconv.OPERATION_EXECUTE_TOOL} {name}",
            SpanKind.INTERNAL,
            {
                semconv.GEN_AI_OPERATION_NAME: semconv.OPERATION_EXECUTE_TOOL,
                semconv.GEN_AI_TOOL_NAME: name,
                semconv.GEN_AI_TOOL_CALL_ID: call_id,
            },
        )
        try:
            yield span
        except BaseException as error:
            _failed(span, type(error).__name__)
            raise
        finally:
            span.end()

    def flush(self, timeout_millis: int = 5_000) -> None:
        """Send what is buffered (a judge's `aclose()` calls it)."""
        self.provider.force_flush(timeout_millis)


class CallSpan:
    """The span of one model call, told how it went."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def answered(self, answer: Answer, data: Any) -> None:
        set_attribute = self.span.set_attribute
        set_attribute(semconv.GEN_AI_USAGE_INPUT_TOKENS, answer.input_tokens)
        set_attribute(semconv.GEN_AI_USAGE_OUTPUT_TOKENS, answer.output_tokens)
        set_attribute(semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, answer.cached_input_tokens)
        set_attribute(semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, answer.cache_write_tokens)
        if answer.finish_reason:
            set_attribute(semconv.GEN_AI_RESPONSE_FINISH_REASONS, [answer.finish_reason])
        if isinstance(data, dict):
            if isinstance(data.get("id"), str):
                set_attribute(semconv.GEN_AI_RESPONSE_ID, data["id"])
            if isinstance(data.get("model"), str):
                set_attribute(semconv.GEN_AI_RESPONSE_MODEL, data["model"])

    def failed(self, status: int) -> None:
        _failed(self.span, str(status))


def _failed(span: Span, error_type: str) -> None:
    span.set_attribute(semconv.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR))
