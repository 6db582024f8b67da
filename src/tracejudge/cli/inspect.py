"""`tracejudge inspect INPUT...`: what the converter made of each trace's spans.

Run it first when a converted trace looks wrong. For each trace of the inputs (files,
directories, globs, `-` for standard input; OTLP/JSON lines or OTLP protobuf, gzip too,
as `tracejudge score` reads them): the producers found (instrumentation scope and
version, and which conventions of the table read their spans), the spans read (by kind)
and those ignored with the reason, each agent with its calls (the agent tree: name, id,
parent, model calls, tool calls, the start of its answer), and every warning. `--spans`
adds every span as a tree; `--json` prints the same as one JSON object
(`tracejudge.models.Inspection`: a stable shape, documented there); `--trace ID` keeps
the traces whose id starts with ID.

The spans of all inputs are read together, so a trace split over several files is one
trace. Exit status: 0 read; 2 bad input (no such file, data that is not OTLP, an input
without any span, a `--trace` that matches nothing: one line naming the problem).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tracejudge.cli._errors import UsageError
from tracejudge.cli._sources import Source, expand_inputs
from tracejudge.models import Inspection

__all__ = ["add_parser", "read_inputs", "run"]


def add_parser(commands: Any) -> None:
    """Register `inspect` on the `tracejudge` command's subparsers."""
    inspect = commands.add_parser(
        "inspect",
        help="show what the converter reads of each trace's spans (run it first "
        "when a trace looks wrong)",
        description="For each trace: the producers found (instrumentation scope, version, "
        "convention), the spans read and those ignored with the reason, the agents with "
        "their calls, and every warning. Exit status: 0 read, 2 bad input.",
    )
    inspect.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="OTLP file, directory, glob or - (stdin)"
    )
    inspect.add_argument(
        "--json", action="store_true", help="print one JSON object (a stable, documented shape)"
    )
    inspect.add_argument("--spans", action="store_true", help="also list every span, as a tree")
    inspect.add_argument(
        "--trace", metavar="ID", help="only the traces whose id starts with ID (hex)"
    )
    inspect.set_defaults(run=run)


def read_inputs(sources: list[Source]) -> Inspection:
    """The inspection of every span of `sources`, read together (each trace lists the
    inputs its spans came from). Raises `UsageError` naming the input and the problem."""
    from tracejudge.convert import OTLPDecodeError, inspect_records, read_otlp_batches

    spans: list[Any] = []
    events: list[Any] = []
    warnings: list[str] = []
    origins: dict[str, list[str]] = {}
    for source in sources:
        before = len(spans)
        try:
            with source.open() as stream:
                for batch in read_otlp_batches(stream):
                    if batch.documents:
                        where, document = batch.documents[0]
                        what = (
                            "a MultiAgentTrace (already converted: nothing to inspect)"
                            if isinstance(document, dict) and "agent_instance_by_id" in document
                            else "not OTLP (no resourceSpans)"
                        )
                        raise UsageError(f"{source.name}, {where}: {what}")
                    spans.extend(batch.spans)
                    events.extend(batch.events)
                    warnings.extend(f"{source.name}: {w}" for w in batch.warnings)
        except OTLPDecodeError as error:
            raise UsageError(f"{source.name}: cannot read it as OTLP ({error})") from None
        except OSError as error:
            raise UsageError(f"cannot read {source.name}: {error.strerror or error}") from None
        if len(spans) == before and len(sources) > 1:
            warnings.append(f"{source.name}: holds no span")
        for trace_id in {span.trace_id for span in spans[before:]}:
            origins.setdefault(trace_id, []).append(source.name)
    if not spans:
        names = ", ".join(source.name for source in sources[:3])
        why = f" ({warnings[0].split(': ', 1)[-1]})" if warnings else ""
        raise UsageError(f"{names}: no span in the input{why}")
    inspection = inspect_records(spans, events, warnings=warnings)
    for trace in inspection.traces:
        trace.sources = origins.get(trace.trace_id, [])
    return inspection


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring for what it does and its exit status."""
    from tracejudge.report import format_inspection

    inspection = read_inputs(expand_inputs(args.inputs))
    if args.trace:
        wanted = args.trace.strip().lower()
        kept = [t for t in inspection.traces if t.trace_id.startswith(wanted)]
        if not kept:
            raise UsageError(
                f"--trace {args.trace}: no trace id starts with it "
                f"(the input holds {len(inspection.traces)} traces)"
            )
        inspection.traces = kept
    if args.json:
        sys.stdout.write(inspection.model_dump_json(indent=2) + "\n")
    else:
        print(format_inspection(inspection, spans=args.spans))
    return 0
