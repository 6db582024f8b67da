"""Chat calls sent through the `openai` client's low-level ``post``, recorded once.

OpenLLMetry's openai instrumentation wraps the resource methods
(``Completions.create``, ``AsyncCompletions.create``, ``.parse``): a library that builds its
request itself and sends it with the client's ``post`` is never seen. LiteLLM does exactly
that for OpenAI and the OpenAI-compatible providers it routes through the `openai` client
(``OpenAIChatCompletion.make_sync_openai_chat_completion_request`` and
``make_openai_chat_completion_request`` in litellm/llms/openai/openai.py, 1.110)::

    openai_client.post("/chat/completions", body=body, cast_to=ChatCompletion,
                       options=make_request_options(extra_headers={RAW_RESPONSE_HEADER: "true"}),
                       stream=..., stream_cls=Stream[ChatCompletionChunk])

and with it Google ADK's ``LiteLlm`` model, CrewAI's LiteLLM path and smolagents'
``LiteLLMModel``. (OpenInference's openai instrumentation sees these calls because it wraps
the client's ``request``, one level lower still.)

`install()` wraps ``post`` of the `openai` sync and async clients. A ``post`` to
``/chat/completions`` made while OpenLLMetry's span of a chat call is current is the inside
of ``chat.completions.create`` (or ``parse``, or ``with_raw_response.create``), already
recorded: it passes through untouched. Any other is recorded through OpenLLMetry's own chat
wrapper, given the request body as the ``create`` arguments it holds, so the span is the one
``create`` would have made (same scope, attributes, streaming aggregation): every call is
recorded once, by one convention.

A raw response (LiteLLM asks for one with ``RAW_RESPONSE_HEADER``) is handed to the wrapper
parsed; when the wrapper hands back something else (its stream proxy, which records the
chunks as they are read and ends the span), the raw response's ``parse()`` returns that.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import wrapt
from opentelemetry import trace as otel_trace

__all__ = ["install"]

logger = logging.getLogger("tracejudge.tracing")

#: The request path of a chat completion (the client's base URL ends in ``/v1``).
_CHAT_PATH = "/chat/completions"
#: Whether `install` wrapped ``post`` (once per process, like the instrumentation).
_installed = False


def install(tracer_provider: otel_trace.TracerProvider) -> bool:
    """Record low-level chat ``post`` calls of the `openai` clients through OpenLLMetry's
    chat wrapper with a tracer of `tracer_provider` (see the module's docstring). False when
    the installed openai or OpenLLMetry is not laid out as this expects (nothing changes)."""
    global _installed
    try:
        from openai._base_client import AsyncAPIClient, SyncAPIClient
        from opentelemetry.instrumentation.openai import v1
        from opentelemetry.instrumentation.openai.shared.chat_wrappers import (
            achat_wrapper,
            chat_wrapper,
        )
        from opentelemetry.instrumentation.openai.version import __version__
    except ImportError:
        return False
    if _installed:
        return False
    # The tracer OpenLLMetry's own `_instrument` makes (its v1 module's name and version),
    # and no metric instruments: the spans are the same as those of `create`.
    scope_name = v1.__name__
    tracer = tracer_provider.get_tracer(scope_name, __version__)
    record = chat_wrapper(tracer, None, None, None, None, None, None)
    arecord = achat_wrapper(tracer, None, None, None, None, None, None)
    sync_hook = _sync_hook(record, scope_name)
    async_hook = _async_hook(arecord, scope_name)
    wrapt.wrap_function_wrapper(SyncAPIClient, "post", sync_hook)
    wrapt.wrap_function_wrapper(AsyncAPIClient, "post", async_hook)
    _installed = True
    return True


def _chat_body(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], scope: str
) -> dict[str, Any] | None:
    """The request body of a low-level chat ``post`` nobody records yet, else None."""
    path = args[0] if args else kwargs.get("path")
    if path != _CHAT_PATH:
        return None
    body = kwargs.get("body")
    if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
        return None
    span = otel_trace.get_current_span()
    current_scope = getattr(span, "instrumentation_scope", None)
    if getattr(current_scope, "name", None) == scope and span.is_recording():
        return None  # inside OpenLLMetry's `create`: recorded there
    return dict(body)


def _resource(client: Any) -> Any:
    """What OpenLLMetry's wrapper gets as `instance` from ``create``: the chat completions
    resource (it reads the client's base URL through it)."""
    try:
        return client.chat.completions
    except Exception:  # an OpenAI-like client without that resource
        return None


class _Parsed(wrapt.ObjectProxy):  # type: ignore[type-arg]  # wrapt 1.x: no ObjectProxy[...]
    """A raw response whose ``parse()`` (to its own type) gives `parsed`: OpenLLMetry's
    stream proxy instead of the bare stream. Still an instance of the raw response's class
    (LiteLLM asserts it is a ``LegacyAPIResponse``)."""

    def __init__(self, raw: Any, parsed: Any) -> None:
        super().__init__(raw)
        self._self_parsed = parsed

    def parse(self, *, to: Any = None) -> Any:
        if to is None:
            return self._self_parsed
        return self.__wrapped__.parse(to=to)


def _is_raw(response: Any) -> bool:
    from openai._legacy_response import LegacyAPIResponse

    return isinstance(response, LegacyAPIResponse)


def _returned(raw: Any, parsed: Any, recorded: Any) -> Any:
    """What the caller of ``post`` gets back: its raw response when it asked for one."""
    if raw is None:
        return recorded
    if recorded is parsed:
        return raw
    return _Parsed(raw, recorded)


def _sync_hook(record: Callable[..., Any], scope: str) -> Callable[..., Any]:
    def post(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        body = _chat_body(args, kwargs, scope)
        if body is None:
            return wrapped(*args, **kwargs)
        sent: dict[str, Any] = {}

        def send(*_: Any, **__: Any) -> Any:  # the body was sent as given
            response = wrapped(*args, **kwargs)
            if _is_raw(response):
                sent["raw"] = response
                sent["parsed"] = response = response.parse()
            return response

        recorded = record(send, _resource(instance), (), body)
        return _returned(sent.get("raw"), sent.get("parsed"), recorded)

    return post


def _async_hook(record: Callable[..., Any], scope: str) -> Callable[..., Any]:
    async def post(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        body = _chat_body(args, kwargs, scope)
        if body is None:
            return await wrapped(*args, **kwargs)
        sent: dict[str, Any] = {}

        async def send(*_: Any, **__: Any) -> Any:
            response = await wrapped(*args, **kwargs)
            if _is_raw(response):  # its parse() is synchronous (an AsyncStream when streamed)
                sent["raw"] = response
                sent["parsed"] = response = response.parse()
            return response

        recorded = await record(send, _resource(instance), (), body)
        return _returned(sent.get("raw"), sent.get("parsed"), recorded)

    return post
