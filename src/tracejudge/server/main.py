"""`tracejudge serve` (also `python -m tracejudge.server`): configure, say so in one line, serve."""

from __future__ import annotations

import dataclasses
import gc
import sys
from collections.abc import Sequence
from typing import TextIO

from tracejudge.errors import ConfigurationError
from tracejudge.server._listen import listen
from tracejudge.server.config import ServerConfig, is_loopback, parse_config
from tracejudge.server.store import describe_store
from tracejudge.server.work.heap import map_large_blocks

__all__ = ["main", "serve", "startup_line", "check_bind"]


def check_bind(config: ServerConfig) -> None:
    """Refuse a non-loopback address without API keys unless --allow-no-auth says so."""
    if config.api_keys or config.allow_no_auth or is_loopback(config.host):
        return
    raise ConfigurationError(
        f"refusing to listen on {config.host} without an API key: anyone who reaches it could "
        "use the judge. Give a key in TRACEJUDGE_API_KEY (or a file of keys with "
        "--api-key-file FILE), or pass --allow-no-auth to accept that"
    )


def startup_line(config: ServerConfig, judge_label: str | None, criteria_count: int) -> str:
    """One line: where it listens, what it scores with, how to point a collector at it."""
    url = f"http://{config.host}:{config.port}"
    if judge_label is None:
        judging = "no judge configured: only deterministic checks run (set --judge to add one)"
    else:
        judging = f"judge {judge_label}, {criteria_count} criteria plus the checks"
        budgets = config.budgets_text()
        if budgets:
            judging += f", judge budget {budgets}"
    if config.api_keys:
        access = "API key required (API-Key header or Authorization: Bearer)"
    elif is_loopback(config.host):
        access = "no API key: loopback only"
    else:
        access = "no API key: open to anyone who reaches it"
    return (
        f"tracejudge server on {url} ({describe_store(config.db)}); {judging}; {access}; "
        f"collectors: OTEL_EXPORTER_OTLP_ENDPOINT={url} (otlphttp exporter endpoint {url}); "
        f"traces in a browser: {url}/ui"
    )


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """`python -m tracejudge.server`: parse the flags (and the environment), then `serve`."""
    try:
        config = parse_config(argv)
    except ConfigurationError as exc:
        print(f"tracejudge serve: {exc}", file=sys.stderr)
        return 2
    return serve(config, out=out)


def serve(config: ServerConfig, *, out: TextIO | None = None) -> int:
    """Run the server until interrupted. Returns the exit status (2: bad configuration or
    the server extra is not installed)."""
    out = out or sys.stdout
    try:
        import uvicorn

        from tracejudge.server.app import create_app
        from tracejudge.server.http.connections import connection_limits, uvicorn_config
        from tracejudge.server.store import open_store
    except ImportError as exc:
        print(
            f"tracejudge serve needs the server extra ({exc.name} is missing): "
            "pip install 'tracejudge[server]'",
            file=sys.stderr,
        )
        return 2
    try:
        check_bind(config)
        # The store is opened (and migrated) once before the app starts: a database that
        # is down is one line and status 2, not a traceback from the app's start-up.
        open_store(config.db).close()
        app = create_app(config)
    except ConfigurationError as exc:
        print(f"tracejudge serve: {exc}", file=sys.stderr)
        return 2
    # Listen before saying where: a port in use is one line and status 2, not a claim
    # that the server runs followed by uvicorn's own failure.
    try:
        listening = listen(config.host, config.port)
    except OSError as exc:
        print(
            f"tracejudge serve: cannot listen on {config.host}:{config.port}: "
            f"{exc.strerror or exc} (choose another --port)",
            file=sys.stderr,
        )
        return 2
    config = dataclasses.replace(config, port=listening.getsockname()[1])
    limits = connection_limits(config)
    line = startup_line(config, app.state.judge_label, app.state.text_criteria)
    print(line, file=out, flush=True)
    if app.state.budget_note:
        print(f"tracejudge serve: {app.state.budget_note}", file=sys.stderr, flush=True)
    if limits.note:
        print(f"tracejudge serve: {limits.note}", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn_config(app, config, limits))
    # A full collection holds the interpreter while it walks every tracked object: with
    # the start-up heap (modules, the app) frozen out of it, it walks only what requests
    # made (benchmarks/RESULTS.md section 11: the pass during a 10 MiB reward held
    # /health 120 ms). This process is the server's own, so nothing else's heap is frozen.
    gc.collect()
    gc.freeze()
    # Large blocks mapped on their own: what a large request frees goes back to the
    # system when freed (benchmarks/RESULTS.md section 19).
    map_large_blocks()
    server.run(sockets=[listening])
    return 0
