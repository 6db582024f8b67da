"""`tracejudge demo`: the whole loop offline, in a few seconds.

1. A tracejudge server starts in a thread of this process, on a free loopback port,
   with its SQLite store in a temporary directory and a random API key.
2. The multi-agent program of `_demo_program` (orchestrator -> researcher with tools,
   writer) runs with the real `openai` client against a ScriptedLLMServer on loopback,
   traced by `ComposoTracer` / `AgentTracer`; its spans go to the server over OTLP/HTTP.
3. The server converts the spans and scores the trace once it is complete (the quiet
   period is shortened to a fraction of a second): the deterministic checks, and, when
   a judge is configured, two natural-language criteria through the re-score API.
4. The demo reads the scored trace back through the read API, prints the agent tree,
   the scores per agent and the findings, and writes the HTML report.

The server, its thread, the model server and the temporary directory are gone when the
command returns; only the report (and `--save-trace`) stay. `--base-url` / `--model`
run the same program against a real OpenAI-compatible model instead.

`--serve` keeps the server (on `--port`, default 8000, no key: loopback only) running
after step 4 and prints the trace's page on it, until Ctrl-C or SIGTERM (exit 0).
`--to URL` runs only step 2, sending the spans to a tracejudge server that is already
running (`--api-key` / TRACEJUDGE_API_KEY for a keyed one), and prints the trace's page
there.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge import _env
from tracejudge.cli._demo_program import MODEL, export_traced_run, scripted_replies
from tracejudge.cli._errors import UsageError
from tracejudge.cli._judging import JudgingLine, add_quiet
from tracejudge.cli._settings import JUDGE, TOKENS, add_settings, flags_given
from tracejudge.errors import ComposoError, ConfigurationError, MissingDependencyError
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.report import format_agent_tree, format_results, render_trace_page

if TYPE_CHECKING:
    from tracejudge.server.background import BackgroundServer

__all__ = ["add_parser", "run", "run_demo", "scripted_replies", "send_demo", "serve_demo"]

#: Seconds the demo waits for the judge beyond the judge's own timeouts.
SCORE_MARGIN = 30.0

#: The port `demo --serve` listens on unless `--port` says otherwise (as `serve`'s).
DEFAULT_PORT = 8000

#: The judge settings the demo's server takes besides `--judge` (`ServerConfig` fields).
_JUDGE_OPTIONS = tuple(name for name in (*JUDGE, *TOKENS) if name != "judge")

_NO_JUDGE = (
    "No judge configured: the checks only. To add natural-language criteria: --judge "
    "openai:gpt-4.1-mini (key in OPENAI_API_KEY), or a local model: "
    "OPENAI_BASE_URL=http://localhost:11434/v1 tracejudge demo --judge openai:llama3.1"
)

_INTRO = """\
A multi-agent program (an orchestrator delegating to a researcher with tools and to a
writer) ran with the openai client against {model}, traced by AgentTracer;
its spans went over OTLP/HTTP to a tracejudge server on loopback, which scored them.
"""

_SCRIPTED = """\
The model's replies were scripted (a ScriptedLLMServer on loopback: no network, no key),
with two planted faults. The same program against a real model:
  OPENAI_API_KEY=... tracejudge demo --base-url https://api.openai.com/v1 --model gpt-4.1-mini
  tracejudge demo --base-url http://localhost:11434/v1 --model llama3.1      (Ollama)
Tracing your own program: see docs/guides/tracing.md ("Trace a multi-agent program")."""


def _ingest_criteria() -> list[Any]:
    from tracejudge import checks

    return [*checks.ALL, checks.budgets(max_tokens=2000, max_seconds=30)]


def _judged_criteria() -> list[str]:
    from tracejudge import criteria

    return [criteria.agent_tool_use, criteria.agent_goal_pursuit]


def _in_criteria_order(
    responses: list[MultiAgentTraceResponse],
) -> list[MultiAgentTraceResponse]:
    """The server lists evaluations by time; show them in the order they were asked for."""
    order = [getattr(c, "name", c) for c in [*_ingest_criteria(), *_judged_criteria()]]

    def rank(response: MultiAgentTraceResponse) -> int:
        return order.index(response.criterion) if response.criterion in order else len(order)

    return sorted(responses, key=rank)


def _check_writable(path: str | None) -> None:
    """Fail before the work when `path` cannot be written (missing folder, no permission)."""
    if path is None:
        return
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise UsageError(f"cannot write {path}: Is a directory")
    if not folder.is_dir():
        raise UsageError(f"cannot write {path}: No such file or directory")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"cannot write {path}: Permission denied")


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None


def _model_error(error: Exception, base_url: str) -> ComposoError:
    # The provider's message can quote part of the key: say only what kind of failure it was.
    status = getattr(error, "status_code", None)
    answered = f" (HTTP {status})" if status else ""
    return ComposoError(
        f"the model at {base_url} failed{answered}: {type(error).__name__}; check --base-url, "
        "--model and OPENAI_API_KEY"
    )


def _demo_server(
    *,
    judge: str | None,
    db: str,
    port: int = 0,
    key: str | None = None,
    quiet: float = 0.2,
    judge_options: Mapping[str, Any] | None = None,
) -> BackgroundServer:
    """The demo's server (not started): loopback, `db`, the checks and `judge`, with
    `judge_options` (`ServerConfig` fields: the judge's base URL, timeout, calls in flight,
    token limits)."""
    try:
        from tracejudge.server.background import BackgroundServer
        from tracejudge.server.config import ServerConfig
    except ImportError as error:
        raise MissingDependencyError(
            error.name or "starlette", "demo", "the demo's tracejudge server"
        ) from None
    try:
        config = ServerConfig(
            host="127.0.0.1",
            port=port,
            db=db,
            judge=judge,
            api_keys=(key,) if key else (),
            trace_quiet_seconds=quiet,
            poll_seconds=0.05,
            rate_limit=0,
            log_level="warning",
            **(judge_options or {}),
        )
        return BackgroundServer(config, criteria=_ingest_criteria())
    except ConfigurationError as error:
        raise UsageError(str(error)) from None


def _start(server: BackgroundServer) -> None:
    try:
        server.start()
    except OSError as error:
        raise UsageError(
            f"cannot listen on {server.config.host}:{server.config.port}: "
            f"{error.strerror or error} (choose another --port)"
        ) from None


def _export_run(*, base_url: str | None, model: str, server_url: str, key: str | None) -> str:
    """Step 2 of the module docstring: the program against the scripted model (or the one
    at `base_url`), its spans sent to `server_url`; the trace id."""
    from tracejudge.testing import ScriptedLLMServer

    try:
        if base_url is None:
            with ScriptedLLMServer(scripted_replies()) as scripted:
                return export_traced_run(
                    model_url=scripted.base_url,
                    model_key="scripted",
                    model=model,
                    server_url=server_url,
                    server_key=key,
                )
        return export_traced_run(
            model_url=base_url,
            model_key=_env.read("OPENAI_API_KEY") or "unused",
            model=model,
            server_url=server_url,
            server_key=key,
        )
    except (ImportError, ComposoError):
        raise
    except Exception as error:
        if type(error).__module__.startswith("openai"):
            raise _model_error(error, base_url or "the scripted server") from None
        raise


def _scored_on(
    server: BackgroundServer, key: str | None, trace_id: str
) -> tuple[str | None, MultiAgentTrace, list[MultiAgentTraceResponse]]:
    """Steps 3-4: wait for the server's scores (and the judge's); (judge error, trace,
    responses in criteria order)."""
    from tracejudge.cli._demo_reader import ServerReader

    with ServerReader(server.url, key) as reader:
        reader.scored(trace_id)
        judge_error = None
        if server.judge_label is not None:
            judge_error = reader.judge(trace_id, _judged_criteria(), _judge_wait(server))
        trace, responses = reader.trace(trace_id)
    if judge_error:
        why = f"the judge {server.judge_label} failed: {' '.join(judge_error.split())}"
        responses += _not_evaluated(trace, responses, why)
    return judge_error, trace, _in_criteria_order(responses)


def _judge_wait(server: BackgroundServer) -> float:
    """How long the demo waits for the judge's verdicts: each of the six judgements (two
    criteria, three agents) may take the judge's timeout, so many at a time, plus a margin
    for the server; then the judged criteria are not evaluated and the checks shown."""
    config = server.config
    rounds = -(-2 * 3 // max(1, config.max_concurrency))  # ceil(judgements / in flight)
    return rounds * config.judge_timeout_seconds + SCORE_MARGIN


def _not_evaluated(
    trace: MultiAgentTrace, responses: list[MultiAgentTraceResponse], why: str
) -> list[MultiAgentTraceResponse]:
    """An answer for each judged criterion the server has none for: every agent with
    something to judge not evaluated, for `why`."""
    from tracejudge.evaluation.evaluator import trace_response
    from tracejudge.models import ScoreResponse

    answered = {r.criterion for r in responses}
    judged = [a.id for a in trace.iter_agents() if a.llm_interactions or a.child_ids]
    result = ScoreResponse(score=None, explanation=f"Not evaluated: {why}.", not_evaluated=why)
    return [
        trace_response(trace, criterion, dict.fromkeys(judged, result))
        for criterion in _judged_criteria()
        if criterion not in answered
    ]


def _scored_through_server(
    *,
    judge: str | None,
    base_url: str | None,
    model: str,
    judge_options: Mapping[str, Any] | None = None,
) -> tuple[str, str | None, str | None, MultiAgentTrace, list[MultiAgentTraceResponse]]:
    """Steps 1-4 of the module docstring: (trace id, judge label, judge error, trace,
    responses). Everything started here is stopped before it returns."""
    key = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="tracejudge-demo-") as scratch:
        server = _demo_server(
            judge=judge, db=str(Path(scratch) / "demo.db"), key=key, judge_options=judge_options
        )
        with server:
            trace_id = _export_run(base_url=base_url, model=model, server_url=server.url, key=key)
            judge_error, trace, responses = _scored_on(server, key, trace_id)
            return trace_id, server.judge_label, judge_error, trace, responses


def _print_scores(
    trace_id: str,
    trace: MultiAgentTrace,
    responses: list[MultiAgentTraceResponse],
    *,
    judge_label: str | None,
    base_url: str | None,
) -> None:
    print(_INTRO.format(model="a scripted model" if base_url is None else base_url))
    print(f"Trace {trace_id}, agents (depth first):")
    print(format_agent_tree(trace))
    print()
    if judge_label is None:
        print(_NO_JUDGE + "\n")
    else:
        print(f"Judge: {judge_label} (two natural-language criteria), plus the checks.\n")
    print("Scores per agent (1.00 = no problem found):")
    print(format_results(trace, responses))
    print()


def _write_outputs(
    trace_id: str,
    trace: MultiAgentTrace,
    responses: list[MultiAgentTraceResponse],
    *,
    save_trace: str | None,
    html: str | None,
) -> None:
    if save_trace:
        _write(save_trace, trace.to_json(indent=2))
    if html is not None:
        from tracejudge.evaluation.attribution import from_answers

        attribution = from_answers(trace, responses)  # shown when a fault failed the trace
        _write(
            html,
            render_trace_page(trace, responses, trace_id=trace_id, attribution=attribution),
        )


def run_demo(
    *,
    judge: str | None = None,
    as_json: bool = False,
    save_trace: str | None = None,
    html: str | None = None,
    base_url: str | None = None,
    model: str = MODEL,
    judge_options: Mapping[str, Any] | None = None,
) -> int:
    """Run the loop (see the module docstring); print the tree, the scores and the
    findings (or, with `as_json`, one JSON line per criterion's response); write the HTML
    report to `html` (default: a new file in the temporary folder; with `as_json`, only
    when `html` is given) and the converted trace to `save_trace`. `judge_options`: the
    judge's `ServerConfig` fields (base URL, timeout, calls in flight, token limits)."""
    for path in (save_trace, html):
        _check_writable(path)
    trace_id, judge_label, judge_error, trace, responses = _scored_through_server(
        judge=judge, base_url=base_url, model=model, judge_options=judge_options
    )
    if judge_error:
        print(f"judge {judge_label} failed: {judge_error}", file=sys.stderr)
    report = html
    if report is None and not as_json:
        handle, report = tempfile.mkstemp(prefix="tracejudge-demo-", suffix=".html")
        os.close(handle)
    _write_outputs(trace_id, trace, responses, save_trace=save_trace, html=report)

    if as_json:
        for response in responses:
            print(response.model_dump_json())
        return 0
    _print_scores(trace_id, trace, responses, judge_label=judge_label, base_url=base_url)
    print(f"HTML report: {report}")
    print("The server has stopped; its temporary store is deleted.")
    if base_url is None:
        print()
        print(_SCRIPTED)
    return 0


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _wait_for_a_stop_signal(stop_signals: tuple[signal.Signals, ...]) -> None:
    """Sleep until one of `stop_signals` (whose handlers raise KeyboardInterrupt) arrives,
    then ignore them, so that a second Ctrl-C cannot cut the shutdown short."""
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    for number in stop_signals:
        signal.signal(number, signal.SIG_IGN)


def serve_demo(
    *,
    judge: str | None = None,
    save_trace: str | None = None,
    html: str | None = None,
    base_url: str | None = None,
    model: str = MODEL,
    port: int = DEFAULT_PORT,
    db: str | None = None,
    judge_options: Mapping[str, Any] | None = None,
) -> int:
    """`demo --serve`: the loop, then the server keeps running (store `db`, default a
    temporary one) with the trace's page printed, until SIGINT or SIGTERM; 0 then. A
    signal before the page is printed interrupts the demo (130)."""
    for path in (save_trace, html, db):
        _check_writable(path)
    # Both signals, also when SIGINT came ignored (a shell's background job): --serve
    # promises to stop on either.
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, _raise_interrupt) for number in stop_signals}
    try:
        with tempfile.TemporaryDirectory(prefix="tracejudge-demo-") as scratch:
            # A quiet period short enough for a quick demo; a trace of the user's own
            # program whose spans come later still gets scored again with them.
            server = _demo_server(
                judge=judge,
                db=db or str(Path(scratch) / "demo.db"),
                port=port,
                quiet=1.0,
                judge_options=judge_options,
            )
            _start(server)
            try:
                trace_id = _export_run(
                    base_url=base_url, model=model, server_url=server.url, key=None
                )
                judge_error, trace, responses = _scored_on(server, None, trace_id)
                if judge_error:
                    print(f"judge {server.judge_label} failed: {judge_error}", file=sys.stderr)
                _write_outputs(trace_id, trace, responses, save_trace=save_trace, html=html)
                _print_scores(
                    trace_id, trace, responses, judge_label=server.judge_label, base_url=base_url
                )
                if html:
                    print(f"HTML report: {html}")
                kept = f"in {db}" if db else "temporary, deleted when it stops"
                print(f"The tracejudge server keeps running on {server.url} (store {kept}).")
                print(f"Send your own traces: OTEL_EXPORTER_OTLP_ENDPOINT={server.url}")
                print(f"All traces: {server.url}/ui")
                print(f"This trace: {server.url}/ui/traces/{trace_id}")
                print("Ctrl-C stops the server.", flush=True)
                _wait_for_a_stop_signal(stop_signals)
                print("Stopping the server.", flush=True)
            finally:
                server.stop()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 0


def send_demo(
    *, to: str, api_key: str | None = None, base_url: str | None = None, model: str = MODEL
) -> int:
    """`demo --to URL`: the program's spans sent to the tracejudge server at `to` (with
    `api_key`); prints the trace's page there once the server has stored it."""
    from tracejudge.cli._demo_reader import ServerReader

    url = _server_url(to)
    with ServerReader(url, api_key) as reader:
        reader.check_reachable()
        trace_id = _export_run(base_url=base_url, model=model, server_url=url, key=api_key)
        stored = reader.arrived(trace_id)
    scripted = "a scripted model" if base_url is None else base_url
    print(f"The demo's three-agent program ran against {scripted}; its trace {trace_id} went")
    print(f"over OTLP/HTTP to the tracejudge server at {url} (status {stored['status']}).")
    print("The server scores it once complete, with its own checks and judge.")
    print(f"This trace: {url}/ui/traces/{trace_id}", flush=True)
    return 0


def _server_url(text: str) -> str:
    """The base URL `--to` names, without a trailing slash; UsageError if it is none."""
    parts = urllib.parse.urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--to {text!r} is not a server's URL: give its base URL, such as http://127.0.0.1:8000"
        )
    if parts.path.rstrip("/").endswith("/v1/traces"):
        raise UsageError(
            f"--to {text!r} names the OTLP path: give the server's base URL, without /v1/traces"
        )
    if parts.username or parts.password or parts.query:
        raise UsageError("--to takes the server's base URL; pass the key with --api-key")
    return text.strip().rstrip("/")


def run(args: argparse.Namespace) -> int:
    """The command: the demo on its own server, `--serve` or `--to`."""
    judge_options = {name: getattr(args, name) for name in _JUDGE_OPTIONS}
    if args.to is not None:
        given = [
            flag
            for flag, value in (
                ("--judge", args.judge),
                ("--json", args.json),
                ("--save-trace", args.save_trace),
                ("--html", args.html),
                ("--port", args.port),
                ("--db", args.db),
            )
            if value not in (None, False)
        ]
        given += flags_given(args, _JUDGE_OPTIONS)
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise UsageError(
                f"--to sends the trace to a running server, which scores it itself: "
                f"{', '.join(given)} {verb} to the demo's own server only"
            )
        api_key = args.api_key or _env.read(_env.TRACEJUDGE_API_KEY)
        return send_demo(to=args.to, api_key=api_key, base_url=args.base_url, model=args.model)
    if args.api_key:
        raise UsageError("--api-key is the key of the server --to names; give --to URL")
    if args.serve:
        if args.json:
            raise UsageError("--json prints the scores and ends: leave it out with --serve")
        return serve_demo(
            judge=args.judge,
            save_trace=args.save_trace,
            html=args.html,
            base_url=args.base_url,
            model=args.model,
            port=DEFAULT_PORT if args.port is None else args.port,
            db=args.db,
            judge_options=judge_options,
        )
    for flag, value in (("--port", args.port), ("--db", args.db)):
        if value is not None:
            raise UsageError(f"{flag} sets the server --serve keeps running; add --serve")
    with JudgingLine(enabled=not args.quiet):  # the demo's server judges in this process
        return run_demo(
            judge=args.judge,
            as_json=args.json,
            save_trace=args.save_trace,
            html=args.html,
            base_url=args.base_url,
            model=args.model,
            judge_options=judge_options,
        )


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0..65535)")
    return port


def add_parser(commands: Any) -> None:
    """Register `demo` on the `tracejudge` command's subparsers."""
    demo = commands.add_parser(
        "demo",
        help="trace a scripted multi-agent program offline, score it through a local server",
        description="Run a scripted multi-agent program (the real openai client against a "
        "local scripted model: no network, no key), trace it, export the spans to a "
        "tracejudge server started on loopback for the run, and print how the server scored "
        "each agent. Writes an HTML report. With --serve the server keeps running with the "
        "trace stored (Ctrl-C stops it); with --to the spans go to a server already running.",
    )
    add_quiet(demo)
    add_settings(demo, (*JUDGE, *TOKENS))
    demo.add_argument("--json", action="store_true", help="print results as JSON lines")
    demo.add_argument("--save-trace", metavar="PATH", help="write the scored trace as JSON")
    demo.add_argument(
        "--html",
        metavar="PATH",
        help="write the HTML report here (default: a new file in the temporary folder; "
        "none with --serve, whose trace page shows the same)",
    )
    demo.add_argument(
        "--base-url",
        metavar="URL",
        help="run the program against this OpenAI-compatible endpoint instead of the "
        "scripted model (key from OPENAI_API_KEY)",
    )
    demo.add_argument(
        "--model", default=MODEL, help=f"the model the program asks for (default {MODEL})"
    )
    where = demo.add_mutually_exclusive_group()
    where.add_argument(
        "--serve",
        action="store_true",
        help="keep the demo's server running afterwards, with the trace stored, and print "
        "its page; Ctrl-C (or SIGTERM) stops it",
    )
    where.add_argument(
        "--to",
        metavar="URL",
        help="send the demo's spans to the tracejudge server running at URL (its base URL, "
        "e.g. http://127.0.0.1:8000) instead, and print the trace's page there",
    )
    demo.add_argument(
        "--port",
        type=_port,
        help=f"with --serve: the loopback port to listen on (default {DEFAULT_PORT}; 0 picks "
        "a free one)",
    )
    demo.add_argument(
        "--db",
        metavar="PATH",
        help="with --serve: keep the store in this SQLite file (default: a temporary one, "
        "deleted when the server stops)",
    )
    demo.add_argument(
        "--api-key",
        metavar="KEY",
        help="with --to: the server's API key (default: TRACEJUDGE_API_KEY)",
    )
    demo.set_defaults(run=run)
