"""The `tracejudge` command.

    tracejudge demo                  trace a scripted multi-agent program offline and score it
    tracejudge score INPUT...        score every trace of OTLP or MultiAgentTrace files,
                                     directories, globs or stdin, at any size
    tracejudge inspect INPUT...      what the converter reads of each trace's spans: producers,
                                     spans read and ignored (why), agents, warnings
    tracejudge attribute INPUT...    which agent and step caused each failed trace, ranked
    tracejudge bench attribution DATA  measure attribution methods and a judge on labelled
                                     failed traces (Who&When, MP-Bench, your own)
    tracejudge calibrate LABELS      how far a judge agrees with people's labels (kappa,
                                     alpha, intervals, the band it supports)
    tracejudge rubric DATASET.jsonl  score a dataset against a rubric with a judge model
    tracejudge run FILE.py           run an experiment: your task on every row of a dataset,
                                     scored and recorded in a run directory
    tracejudge compare BASE CAND     compare two runs row by row; --fail-on-regression gates
                                     CI only on a significant drop
    tracejudge serve                 the evaluation API and OTLP/HTTP trace intake
    tracejudge rules check FILE      check a rules file as serve --rules reads it
    tracejudge rules backfill NAME   run a rule on a server's stored traces (capped)
    tracejudge export --since DATE   a store's scores and verdicts as Parquet or CSV

One module per command (`demo`, `score`, `inspect`, `attribute`, `bench`,
`calibrate`, `rubric`, `run`, `compare`, `serve`, `rules`, `export`), each with
`add_parser(commands)`, which registers the command's arguments and its
`run(args) -> exit status`. Reports are
printed through `tracejudge.report`. Exit status: 0 done, 1 the work failed (a judge
error, a score below `--fail-under`), 2 bad usage or input, including a configuration
problem such as no judge for a criterion (one line on stderr naming the problem), 130
interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from tracejudge.cli._errors import UsageError
from tracejudge.cli._settings import resolve

__all__ = ["UsageError", "build_parser", "main"]

#: The commands, in the order `--help` lists them: each a module beside this one, of the
#: same name. A new command (`rubric`, `serve`) is a module with the same `add_parser`,
#: added here. A command's module is imported when the command is run (or `--help` lists
#: them all): one command does not start by importing every other one.
COMMANDS = (
    "demo",
    "score",
    "inspect",
    "attribute",
    "bench",
    "calibrate",
    "rubric",
    "run",
    "compare",
    "serve",
    "rules",
    "export",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of `tracejudge` and all its commands (`only`: that one alone,
    the parser `main` uses to run it)."""
    from tracejudge import __version__

    parser = argparse.ArgumentParser(
        prog="tracejudge", description="Trace LLM agents with OpenTelemetry and score the traces."
    )
    parser.add_argument("--version", action="version", version=f"tracejudge {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log what the converter and judges do"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"tracejudge.cli.{name}").add_parser(commands)
    return parser


def _named_command(argv: Sequence[str]) -> str | None:
    """The command `argv` runs: its first argument that is not an option (the options
    before a command take no value), when that is a command's name."""
    for argument in argv:
        if argument == "--":
            return None
        if not argument.startswith("-"):
            return argument if argument in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run `tracejudge` with `argv` (default: the process's arguments); return the exit
    status. Bad arguments and `--help` / `--version` exit through argparse
    (`SystemExit`, status 2 and 0)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_named_command(argv)).parse_args(argv)
    # Problems the commands report themselves are also logged; show the log only on request.
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, format="%(name)s: %(message)s"
    )
    from tracejudge._advice import Surface, reworded
    from tracejudge.errors import (
        ComposoError,
        ConfigurationError,
        MissingAPIKeyError,
        ProviderRequestError,
    )

    prefix = f"tracejudge {args.command}:"
    try:
        resolve(args)  # the settings' flags, then their variables, then the defaults
        return int(args.run(args))
    except UsageError as error:  # may quote a judge's error, worded for Python
        print(prefix, reworded(str(error), Surface.CLI), file=sys.stderr)
        for detail in error.details:
            print(f"  {detail}", file=sys.stderr)
        return error.exit_code
    except (ConfigurationError, MissingAPIKeyError, ProviderRequestError) as error:
        # No judge, no key, an unknown provider or model: the command was set up wrong.
        print(prefix, reworded(str(error), Surface.CLI), file=sys.stderr)
        return 2
    except ComposoError as error:
        print(prefix, reworded(str(error), Surface.CLI), file=sys.stderr)
        return 1
    except ImportError as error:  # an optional dependency, e.g. opentelemetry-proto
        print(prefix, error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
