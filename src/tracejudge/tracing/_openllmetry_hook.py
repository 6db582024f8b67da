"""OpenLLMetry's chat request hook, run without a new event loop on every call.

OpenLLMetry's synchronous chat wrapper records each request through a coroutine
(`_handle_request`) that it runs with `asyncio.run()`: a new event loop per call or, when
the calling thread already runs a loop, a new thread running one. That was about half of
what OpenLLMetry cost per call (benchmarks/tracing_overhead.py). The coroutine awaits nothing
but the image uploader, and with OpenLLMetry's default uploader nothing it awaits ever
suspends: it finishes in one step. `install()` replaces the runner with one that takes that
step in a copy of the caller's context (the isolation `asyncio.run` gives it; the new
thread's empty context lost the caller's span for events), and leaves the request to
OpenLLMetry's own runner whenever a user's uploader is configured, which may need a loop.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["install"]

logger = logging.getLogger("tracejudge.tracing")

#: Marks our runner, so that installing twice wraps once.
_MARK = "_tracejudge_loop_free"


def install() -> bool:
    """Run OpenLLMetry's chat request hook loop-free (see the module's docstring); False
    when the installed OpenLLMetry is not laid out as this expects (nothing is changed)."""
    try:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.instrumentation.openai.shared import chat_wrappers
        from opentelemetry.instrumentation.openai.shared.config import Config
    except ImportError:
        return False
    original = getattr(chat_wrappers, "run_async", None)
    if not callable(original) or getattr(original, _MARK, False):
        return False
    try:
        parameter = inspect.signature(OpenAIInstrumentor.__init__).parameters
        default_uploader = parameter["upload_base64_image"].default
    except (KeyError, TypeError, ValueError):
        return False
    runner = _loop_free_runner(original, Config, default_uploader)
    chat_wrappers.run_async = runner  # type: ignore[attr-defined]  # imported there from utils
    return True


def _loop_free_runner(
    original: Callable[[Coroutine[Any, Any, Any]], None], config: Any, default_uploader: Any
) -> Callable[[Coroutine[Any, Any, Any]], None]:
    fallback = False  # set for good once a hook did suspend

    def run_async(coroutine: Coroutine[Any, Any, Any]) -> None:
        nonlocal fallback
        if fallback or config.upload_base64_image is not default_uploader:
            original(coroutine)  # a user's uploader may await real I/O on a loop
            return
        try:
            contextvars.copy_context().run(coroutine.send, None)
        except StopIteration:
            return
        # It waited on something after all (a newer OpenLLMetry?): this request's hook
        # stops here, and every later one runs on OpenLLMetry's own runner.
        coroutine.close()
        fallback = True
        logger.warning(
            "tracejudge: OpenLLMetry's request hook waited on an event loop; its own "
            "runner is used from now on"
        )

    setattr(run_async, _MARK, True)
    return run_async
