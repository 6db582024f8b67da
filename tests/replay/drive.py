"""Replay recorded cassettes through the real clients under one instrumentation setup.

Run from the repository root, one process per setup (instrumenting patches the clients
for the whole process); several setups joined by commas run side by side, each in a
process forked after the clients are imported:

    python tests/replay/drive.py openllmetry --out /tmp/replayed [CASSETTE ...]
    python tests/replay/drive.py openllmetry,openinference,contrib --out /tmp/replayed

Every recorded model call of every cassette (all of `shared/cassettes/`, see
`cassette_dir`, by default) is
sent again, with the recorded request body, by the real `openai` or `anthropic` client
to a `CassetteServer` answering with the recorded response; streams are read to the
end, API errors are caught. Each call runs in its own trace under a plain `replay`
span (not an agent), so each converts to one trace. Writes `<out>/<setup>.pb` and
`<out>/<setup>.jsonl` (the spans, protobuf OTLP and OTLP/JSON) and `<out>/<setup>.json`
(trace id -> cassette, exchange index, and what the client saw: the error class, or
the response id / number of stream events it read).

Setups (SETUPS): `openllmetry` (OpenLLMetry for openai and anthropic), `openinference`
(OpenInference for both), `contrib` (contrib openai-v2; the anthropic SDK's own spans
with content for Anthropic), `composed` (OpenLLMetry and OpenInference together). The
anthropic SDK's own spans (metadata only, its default) are on in every setup, as they
are for its users.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import ssl
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

ROOT = Path(__file__).resolve().parents[2]
CASSETTES_ENV = "TRACEJUDGE_CASSETTES"


def cassette_dir() -> Path | None:
    """Where the recorded cassettes are: $TRACEJUDGE_CASSETTES, else the copy in
    `tests/fixtures/cassettes` (Apache-2.0, see its SOURCES.md), else the nearest
    `shared/cassettes` folder beside the checkout or above it; None when none exists."""
    named = os.environ.get(CASSETTES_ENV)
    if named:
        return Path(named)
    bundled = ROOT / "tests" / "fixtures" / "cassettes"
    if bundled.is_dir():
        return bundled
    for folder in (ROOT, *ROOT.parents):
        candidate = folder / "shared" / "cassettes"
        if candidate.is_dir():
            return candidate
    return None


SETUPS = ("openllmetry", "openinference", "contrib", "composed")
_CONTENT_ENV = {
    "TRACELOOP_TRACE_CONTENT": "true",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
}


def _instrument(setup: str, provider: Any) -> None:
    if setup in ("openllmetry", "composed"):
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
        AnthropicInstrumentor().instrument(tracer_provider=provider)
    if setup in ("openinference", "composed"):
        from openinference.instrumentation.anthropic import AnthropicInstrumentor
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
        AnthropicInstrumentor().instrument(tracer_provider=provider)
    if setup == "contrib":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)


def _call(create: Callable[..., Any], body: dict[str, Any]) -> Any:
    """`create(**body)`, with the fields this client version does not name in extra_body."""
    names = set(inspect.signature(create).parameters)
    known = {k: v for k, v in body.items() if k in names}
    extra = {k: v for k, v in body.items() if k not in names}
    return create(**known, **({"extra_body": extra} if extra else {}))


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: each client would otherwise load the CA bundle
    again (a tenth of a second each on a loaded machine, for ~120 clients per setup); the
    cassette servers speak plain HTTP, so it is never used."""
    return ssl.create_default_context()


def _method(exchange: Any, server_url: str) -> Callable[..., Any] | None:
    """The SDK method that sends this exchange's request, on a client aimed at the server."""
    import anthropic
    import openai

    url = urlsplit(exchange.url)
    path, query = url.path, dict(parse_qsl(url.query))
    for suffix in ("/chat/completions", "/completions", "/responses"):
        if path.endswith(suffix):
            client = openai.OpenAI(
                base_url=server_url + path[: -len(suffix)],
                api_key="test",
                max_retries=0,
                default_query=query or None,
                http_client=openai.DefaultHttpxClient(verify=_ssl_context()),
            )
            return {
                "/chat/completions": client.chat.completions.create,
                "/completions": client.completions.create,
                "/responses": client.responses.create,
            }[suffix]
    if path.endswith("/messages"):
        client = anthropic.Anthropic(
            base_url=server_url + path[: -len("/v1/messages")],
            api_key="test",
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(verify=_ssl_context()),
        )
        return client.beta.messages.create if query.get("beta") else client.messages.create
    return None  # not a model call (the Agents SDK's trace ingest, say)


def _read(result: Any) -> str:
    """Read a stream to its end; the text the client got, for the manifest."""
    if hasattr(result, "__iter__") and not hasattr(result, "model_dump"):
        return f"{sum(1 for _ in result)} events"
    return str(getattr(result, "id", "") or "")


def replay(setup: str, out: Path, names: list[str], folder: Path) -> None:
    for key, value in _CONTENT_ENV.items():
        os.environ.setdefault(key, value)
    if setup == "contrib":
        os.environ["ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE"] = "content"
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _instrument(setup, provider)

    from tracejudge.testing import Cassette, CassetteServer

    tracer = trace.get_tracer("tracejudge.replay")
    manifest: dict[str, Any] = {}
    for name in names:
        cassette = Cassette.load(folder / name)
        with CassetteServer(cassette) as server:
            for index, exchange in enumerate(cassette.exchanges):
                method = _method(exchange, server.url)
                if method is None or not isinstance(exchange.request_json, dict):
                    continue
                with tracer.start_as_current_span("replay") as span:
                    entry: dict[str, Any] = {"cassette": name, "index": index}
                    try:
                        entry["read"] = _read(_call(method, exchange.request_json))
                    except Exception as exc:  # API errors are part of what is replayed
                        entry["error"] = type(exc).__name__
                    manifest[format(span.get_span_context().trace_id, "032x")] = entry
    provider.force_flush()

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tests.fixtures.record import otlp_json

    out.mkdir(parents=True, exist_ok=True)
    request = encode_spans(exporter.get_finished_spans())
    (out / f"{setup}.pb").write_bytes(request.SerializeToString())
    (out / f"{setup}.jsonl").write_text(otlp_json(request) + "\n")
    (out / f"{setup}.json").write_text(json.dumps(manifest, indent=1) + "\n")


def replay_forked(setups: list[str], out: Path, names: list[str], folder: Path) -> list[str]:
    """Replay under several setups, each in a child process forked once the clients are
    imported; the setups that failed. Instrumenting patches the clients for good, so each
    setup needs a process of its own, but the clients' imports (about 2 s of CPU, most of
    a setup's start) are then made once for all of them. POSIX only (os.fork)."""
    import anthropic  # noqa: F401 - imported before the fork, shared by every setup
    import openai  # noqa: F401
    import opentelemetry.sdk.trace  # noqa: F401

    import tracejudge.testing  # noqa: F401

    children = {}
    for setup in setups:
        pid = os.fork()
        if pid == 0:  # the child: one setup, then out without the parent's cleanup
            code = 1
            try:
                replay(setup, out, names, folder)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children[pid] = setup
    failed = []
    for pid, setup in children.items():
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(setup)
    return failed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "setups",
        help=f"one of {', '.join(SETUPS)}, or several joined by commas (a process each)",
    )
    parser.add_argument("cassettes", nargs="*", help="file names in the cassette folder")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    setups = args.setups.split(",")
    unknown = [s for s in setups if s not in SETUPS]
    if unknown:
        parser.error(f"unknown setup {', '.join(unknown)}: choose from {', '.join(SETUPS)}")
    folder = cassette_dir()
    if folder is None:
        parser.error(f"no cassette folder: set {CASSETTES_ENV}")
    names = args.cassettes or sorted(p.name for p in folder.glob("*.yaml"))
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    if len(setups) == 1:
        replay(setups[0], args.out, names, folder)
        return
    failed = replay_forked(setups, args.out, names, folder)
    if failed:
        sys.exit(f"replaying under {', '.join(failed)} failed (tracebacks above)")


if __name__ == "__main__":
    main()
