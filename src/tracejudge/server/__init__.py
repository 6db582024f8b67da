"""The tracejudge server: the Composo-compatible evaluation API, OTLP/HTTP trace intake,
a store (SQLite, or PostgreSQL for replicas), persistent background tasks and post-hoc
scoring of ingested traces.

Needs the `server` extra (`pip install 'tracejudge[server]'`; PostgreSQL also
`tracejudge[postgres]`). Run it with `tracejudge serve` or `python -m tracejudge.server`;
embed it with `create_app(ServerConfig(...))` under any ASGI server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["ServerConfig", "create_app", "main", "parse_config"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the config (the CLI's --help) must not need Starlette.
    if name in ("ServerConfig", "parse_config"):
        from tracejudge.server import config

        return getattr(config, name)
    if name == "create_app":
        from tracejudge.server.app import create_app

        return create_app
    if name == "main":
        from tracejudge.server.main import main

        return main
    raise AttributeError(f"module 'tracejudge.server' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from tracejudge.server.app import create_app
    from tracejudge.server.config import ServerConfig, parse_config
    from tracejudge.server.main import main
