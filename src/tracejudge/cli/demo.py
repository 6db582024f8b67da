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
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracejudge import _env
from tracejudge.cli._demo_program import MODEL, export_traced_run, scripted_replies
from tracejudge.cli._errors import UsageError
from tracejudge.errors import ComposoError, ConfigurationError, MissingDependencyError
from tracejudge.models import MultiAgentTrace, MultiAgentTraceResponse
from tracejudge.report import format_agent_tree, format_results, render_trace_page

__all__ = ["add_parser", "run", "run_demo", "scripted_replies"]

#: How long the demo waits for the server to score the trace (and the judge to answer).
SCORE_TIMEOUT = 60.0

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
Tracing your own program: see "Trace a multi-agent program" in the README."""


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


class _ReadBack:
    """The demo's calls to the server's read API."""

    def __init__(self, url: str, key: str) -> None:
        import httpx

        self.http = httpx.Client(base_url=url, headers={"API-Key": key}, timeout=30)

    def close(self) -> None:
        self.http.close()

    def _poll(self, path: str, done: Any, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + SCORE_TIMEOUT
        while True:
            answer = self.http.get(path)
            if answer.status_code == 200 and done(body := answer.json()):
                found: dict[str, Any] = body
                return found
            if answer.status_code not in (200, 404):
                raise ComposoError(f"the demo server answered {answer.status_code} to {path}")
            if time.monotonic() > deadline:
                raise ComposoError(f"the demo server did not {what} within {SCORE_TIMEOUT:g} s")
            time.sleep(0.05)

    def scored(self, trace_id: str) -> dict[str, Any]:
        """The stored trace once the server has converted and scored it."""
        body = self._poll(
            f"/api/v1/traces/{trace_id}",
            lambda b: b["status"] in ("scored", "unscorable"),
            "score the trace",
        )
        if body["status"] != "scored":
            raise ComposoError(f"the server could not score the trace: {body.get('error')}")
        return body

    def judge(self, trace_id: str, criteria: Sequence[str]) -> str | None:
        """Score the stored trace again with `criteria` (the server's judge); the task's
        error, or None when it succeeded."""
        answer = self.http.post(f"/api/v1/traces/{trace_id}/score", json={"criteria": criteria})
        if answer.status_code != 202:
            return f"HTTP {answer.status_code}: {answer.json().get('detail')}"
        task = self._poll(
            f"/api/v1/tasks/{answer.json()['task_id']}",
            lambda b: b["status"] in ("done", "failed"),
            "hear back from the judge",
        )
        return task.get("error") if task["status"] == "failed" else None

    def trace(self, trace_id: str) -> tuple[MultiAgentTrace, list[MultiAgentTraceResponse]]:
        """The converted trace and its evaluations, oldest first."""
        answer = self.http.get(f"/api/v1/traces/{trace_id}")
        answer.raise_for_status()
        body = answer.json()
        trace = MultiAgentTrace.from_json(json.dumps(body["trace"]))
        responses = [
            MultiAgentTraceResponse.model_validate(e["response"])
            for e in body["evaluations"]
            if e["kind"] == "trace"
        ]
        return trace, responses


def _model_error(error: Exception, base_url: str) -> ComposoError:
    # The provider's message can quote part of the key: say only what kind of failure it was.
    status = getattr(error, "status_code", None)
    answered = f" (HTTP {status})" if status else ""
    return ComposoError(
        f"the model at {base_url} failed{answered}: {type(error).__name__}; check --base-url, "
        "--model and OPENAI_API_KEY"
    )


def _scored_through_server(
    *, judge: str | None, base_url: str | None, model: str
) -> tuple[str, str | None, str | None, MultiAgentTrace, list[MultiAgentTraceResponse]]:
    """Steps 1-4 of the module docstring: (trace id, judge label, judge error, trace,
    responses). Everything started here is stopped before it returns."""
    try:
        from tracejudge.server.background import BackgroundServer
        from tracejudge.server.config import ServerConfig
    except ImportError as error:
        raise MissingDependencyError(
            error.name or "starlette", "demo", "the demo's tracejudge server"
        ) from None
    from tracejudge.testing import ScriptedLLMServer

    key = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="tracejudge-demo-") as scratch:
        try:
            config = ServerConfig(
                host="127.0.0.1",
                port=0,
                db=str(Path(scratch) / "demo.db"),
                judge=judge,
                api_keys=(key,),
                trace_quiet_seconds=0.2,
                poll_seconds=0.05,
                rate_limit=0,
                log_level="warning",
            )
            server = BackgroundServer(config, criteria=_ingest_criteria())
        except ConfigurationError as error:
            raise UsageError(str(error)) from None
        with server:
            try:
                if base_url is None:
                    with ScriptedLLMServer(scripted_replies()) as scripted:
                        trace_id = export_traced_run(
                            model_url=scripted.base_url,
                            model_key="scripted",
                            model=model,
                            server_url=server.url,
                            server_key=key,
                        )
                else:
                    trace_id = export_traced_run(
                        model_url=base_url,
                        model_key=_env.read("OPENAI_API_KEY") or "unused",
                        model=model,
                        server_url=server.url,
                        server_key=key,
                    )
            except ImportError:
                raise
            except ComposoError:
                raise
            except Exception as error:
                if type(error).__module__.startswith("openai"):
                    raise _model_error(error, base_url or "the scripted server") from None
                raise
            reader = _ReadBack(server.url, key)
            try:
                reader.scored(trace_id)
                judge_error = None
                if server.judge_label is not None:
                    judge_error = reader.judge(trace_id, _judged_criteria())
                trace, responses = reader.trace(trace_id)
            finally:
                reader.close()
            return (
                trace_id,
                server.judge_label,
                judge_error,
                trace,
                _in_criteria_order(responses),
            )


def run_demo(
    *,
    judge: str | None = None,
    as_json: bool = False,
    save_trace: str | None = None,
    html: str | None = None,
    base_url: str | None = None,
    model: str = MODEL,
) -> int:
    """Run the loop (see the module docstring); print the tree, the scores and the
    findings (or, with `as_json`, one JSON line per criterion's response); write the HTML
    report to `html` (default: a new file in the temporary folder; with `as_json`, only
    when `html` is given) and the converted trace to `save_trace`."""
    for path in (save_trace, html):
        _check_writable(path)
    trace_id, judge_label, judge_error, trace, responses = _scored_through_server(
        judge=judge, base_url=base_url, model=model
    )
    if judge_error:
        print(f"judge {judge_label} failed: {judge_error}", file=sys.stderr)
    if save_trace:
        _write(save_trace, trace.to_json(indent=2))
    report = html
    if report is None and not as_json:
        handle, report = tempfile.mkstemp(prefix="tracejudge-demo-", suffix=".html")
        os.close(handle)
    if report is not None:
        _write(report, render_trace_page(trace, responses, trace_id=trace_id))

    if as_json:
        for response in responses:
            print(response.model_dump_json())
        return 0
    scripted = base_url is None
    print(_INTRO.format(model="a scripted model" if scripted else base_url))
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
    print(f"HTML report: {report}")
    print("The server has stopped; its temporary store is deleted.")
    if scripted:
        print()
        print(_SCRIPTED)
    return 0


def run(args: argparse.Namespace) -> int:
    """The command."""
    return run_demo(
        judge=args.judge,
        as_json=args.json,
        save_trace=args.save_trace,
        html=args.html,
        base_url=args.base_url,
        model=args.model,
    )


def add_parser(commands: Any) -> None:
    """Register `demo` on the `tracejudge` command's subparsers."""
    demo = commands.add_parser(
        "demo",
        help="trace a scripted multi-agent program offline, score it through a local server",
        description="Run a scripted multi-agent program (the real openai client against a "
        "local scripted model: no network, no key), trace it, export the spans to a "
        "tracejudge server started on loopback for the run, and print how the server scored "
        "each agent. Writes an HTML report.",
    )
    demo.add_argument(
        "--judge",
        help="also score natural-language criteria with this judge, e.g. openai:gpt-4.1-mini "
        "(default: TRACEJUDGE_JUDGE / OPENAI_API_KEY / OPENAI_BASE_URL when set)",
    )
    demo.add_argument("--json", action="store_true", help="print results as JSON lines")
    demo.add_argument("--save-trace", metavar="PATH", help="write the scored trace as JSON")
    demo.add_argument(
        "--html",
        metavar="PATH",
        help="write the HTML report here (default: a new file in the temporary folder)",
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
    demo.set_defaults(run=run)
