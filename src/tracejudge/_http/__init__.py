"""HTTP plumbing shared by the judges, the remote client and the reward API.

- `send_with_retries`: one request with retries, full-jitter backoff, Retry-After and one
  total deadline; `error_from_response` turns a failed answer into a typed error.
- `LoopClients`: one `httpx.AsyncClient` and one concurrency limit per event loop, each
  closed on its own loop.
- `split_credentials` / `redact`: a key written into a URL taken out of it (to be sent as
  a header), and keys kept out of every text shown.
- `pooled_transport`: the transport for many connections (several small httpx pools:
  one large pool is slow).
- `HTTPOptions`: the settings every HTTP caller takes (timeout, retries, concurrency), as
  one validated value.
"""

from tracejudge._http._loops import LoopClient, LoopClients
from tracejudge._http._options import HTTPOptions
from tracejudge._http._retry import (
    DEFAULT_MAX_RESPONSE_BYTES,
    MODEL_NOT_FOUND_HINT,
    RETRYABLE,
    Endpoint,
    error_from_response,
    error_message,
    retry_after_seconds,
    send_with_retries,
)
from tracejudge._http._secrets import redact, split_credentials
from tracejudge._http._sharded import pooled_transport

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MODEL_NOT_FOUND_HINT",
    "RETRYABLE",
    "Endpoint",
    "HTTPOptions",
    "LoopClient",
    "LoopClients",
    "error_from_response",
    "error_message",
    "pooled_transport",
    "redact",
    "retry_after_seconds",
    "send_with_retries",
    "split_credentials",
]
