"""`tracejudge serve`: the evaluation API and OTLP/HTTP trace intake (`tracejudge.server`).

Every flag is also read from its environment variable (`TRACEJUDGE_<NAME>`, see
`tracejudge serve --help`). Needs the `server` extra; the flags are registered
without it, so that `--help` works everywhere.
"""

from __future__ import annotations

import argparse
from typing import Any

from tracejudge import _env
from tracejudge.cli._errors import UsageError
from tracejudge.errors import ConfigurationError
from tracejudge.server.config import DESCRIPTION, add_arguments, config_from


def add_parser(commands: Any) -> None:
    """Register `serve` on the `tracejudge` command's subparsers."""
    serve = commands.add_parser(
        "serve",
        help="serve the evaluation API and OTLP trace intake",
        description=f"{DESCRIPTION} Exit status: 0 stopped, 2 bad configuration.",
        epilog="Every flag can also be set in the environment variable named in its help.",
    )
    add_arguments(serve)
    serve.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Build the configuration (flags, then the environment) and serve until interrupted."""
    from tracejudge.server.main import serve

    try:
        config = config_from(vars(args), _env.environ())
    except ConfigurationError as error:
        raise UsageError(str(error)) from None
    return serve(config)
