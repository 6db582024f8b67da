"""Evaluation clients: `Composo` (sync) and `AsyncComposo`, in process or remote.

- `_clients`: the public classes, thin over the engine.
- `_engine`: which backend judges (in-process service, remote server, or none), and how a
  call runs (blocking, or background tasks).
- `_remote`: the remote backend, sending the wire models.
- `_inputs`: what `evaluate()` / `evaluate_trace()` accept, coerced for the service.
"""

from tracejudge.client._clients import AsyncComposo, Composo
from tracejudge.client._engine import DEFAULT_BASE_URL, DEFAULT_MODEL_CORE

__all__ = ["Composo", "AsyncComposo", "DEFAULT_BASE_URL", "DEFAULT_MODEL_CORE"]
