"""How fast the trace viewer draws a 5,000-span trace in headless Chromium.

The trace is recorded by running real code: an orchestrator that hands work to
`--workers` worker agents (150), each making `--rounds` model calls (33) with the real
`openai` client against a ScriptedLLMServer, traced by `ComposoTracer` / `AgentTracer`
(one span per agent and per model call: 5,000+ spans); every 10th worker sends arguments
its tool's schema rejects, so the verdict has findings to show. The deterministic checks
score it, the trace and its answers are stored as the server stores them, and the real
server (`python -m tracejudge.server` under uvicorn, its own process, SQLite) serves
/ui/traces/{id}.

Chromium (Debian's, over the DevTools protocol: tests/cdp.py) loads, in `--rounds-measured`
interleaved rounds (5), three pages, each timed from navigation start to the first frame
after the load event (the viewer's script runs before the load event):

1. baseline: the same page with the viewer's script blanked (same bytes, data inert): what
   this much HTML costs the browser with nothing drawn;
2. the trace page from a file: what the viewer adds;
3. the trace page from the server: what a user waits for, the server's work included.

    python benchmarks/trace_page.py [--workers 150] [--rounds 33] [--rounds-measured 5]

Target: the served page under 2 s; the ratios against the baseline are printed beside it.

`--at-cap` measures the server's part instead (issue #32 item 5), on two shapes of trace
at 2,000 and at 20,000 spans (the default `--max-trace-spans`): many agents (workers of
33 model calls) and long agents (workers of `--long-rounds` calls, 100: a conversation of
200 messages at the end, each call resending it). A few workers are recorded by running
the program; the trace is then made as large as wanted by repeating them under the
orchestrator (new ids, the same calls). For each: the stored JSON's size, the server's
render (`ui._render`: read the stored trace, draw the page) and the served page over
HTTP (median of 3), and the time per span at 20,000 against 2,000 (target: within 1.5x,
linear; and under 2 s served at 20,000).

    python benchmarks/trace_page.py --at-cap [--long-rounds 100] [--quick]

Each line gives the machine's load average at the time, and the served page's CPU time
in the server process (from /proc) beside its wall time. `--quick` measures the long
agents only (the larger stored trace): about 3 minutes instead of 13.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.cdp import Browser  # noqa: E402
from tests.server.harness import ServerProcess  # noqa: E402

TARGET_SECONDS = 2.0
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "day": {"type": "integer"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
USAGE = {"prompt_tokens": 40, "completion_tokens": 10}


def _replies(workers: int, rounds: int) -> list[Any]:
    from tracejudge.testing import Reply, ToolCall

    replies = [Reply.text("Plan: split the cities among the workers.", usage=USAGE)]
    for w in range(workers):
        for r in range(rounds - 1):
            city: Any = 42 if w % 10 == 0 and r == 0 else f"City {r}"  # planted: not a string
            call = ToolCall("get_weather", {"city": city, "day": r}, id=f"call_{w}_{r}")
            replies.append(Reply.tool_calls([call], usage=USAGE))
        replies.append(Reply.text(f"Worker {w}: {rounds - 1} forecasts gathered.", usage=USAGE))
    replies.append(Reply.text("All forecasts are in.", usage=USAGE))
    return replies


def record(workers: int, rounds: int) -> tuple[Any, int]:
    """Run the program; returns its trace and how many spans recorded it."""
    import openai

    from tracejudge import AgentTracer, ComposoTracer, Instruments
    from tracejudge.testing import ScriptedLLMServer

    ComposoTracer.init(instruments=Instruments.OPENAI, max_spans_per_trace=100_000)
    with (
        ScriptedLLMServer() as llm,
        openai.OpenAI(base_url=llm.base_url, api_key="bench", max_retries=0) as client,
    ):
        llm.add(*_replies(workers, rounds))
        ask = [{"role": "user", "content": "Get the forecasts of every city."}]
        with AgentTracer(name="orchestrator") as root:
            client.chat.completions.create(model="gpt-4.1-mini", messages=ask)
            for w in range(workers):
                with AgentTracer(name=f"worker-{w}"):
                    _work(client, w)
            client.chat.completions.create(model="gpt-4.1-mini", messages=ask)
        return root.trace, len(root.spans)


def _work(client: Any, worker: int) -> None:
    """One worker's tool loop: call the model until it answers, running its tool calls."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"You are worker {worker}; use get_weather."},
        {"role": "user", "content": "Gather the forecasts."},
    ]
    while True:
        response = client.chat.completions.create(
            model="gpt-4.1-mini", messages=messages, tools=[WEATHER]
        )
        message = response.choices[0].message
        if not message.tool_calls:
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            city = json.loads(call.function.arguments).get("city")
            result = {"city": city, "temperature": 20, "conditions": "sunny"}
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )


def store(db: str, trace: Any, responses: Any) -> str:
    """Save the trace and its answers as the server saves a scored trace."""
    from tracejudge.server.store import EvaluationRow, TraceRow, open_store
    from tracejudge.server.store.trace_text import stored_text

    trace_id, now = uuid.uuid4().hex, time.time()
    rows = [
        EvaluationRow(
            id=str(uuid.uuid4()),
            kind="trace",
            criterion=r.criterion,
            response=r.model_dump_json(),
            overall_score=r.overall_score,
            created_at=now,
            trace_id=trace_id,
            source="api",
        )
        for r in responses
    ]
    saved = store_ = open_store(db)
    try:
        store_.traces.save(
            TraceRow(
                trace_id=trace_id,
                source="api",
                status="scored",
                first_seen=now,
                last_span_at=now,
                root_agent=trace.root.name,
                agents=[a.name for a in trace.iter_agents()],
                trace_json=stored_text(trace),
            ),
            rows,
        )
    finally:
        saved.close()
    return trace_id


def repeated(trace: Any, spans: int) -> Any:
    """`trace` (an orchestrator and its workers) with its workers repeated, in order, under
    the orchestrator (new ids, the same calls) until it has about `spans` spans (one per
    agent and per model call)."""
    from tracejudge.models import LLMInteraction, MultiAgentTrace

    root = trace.root
    calls = [i for i in root.interactions if isinstance(i, LLMInteraction)]
    workers = [trace.agent_instance_by_id[i] for i in root.child_ids]
    kept: dict[str, Any] = {}
    children: list[str] = []
    total = 1 + len(calls)
    while total < spans:
        # the recorded worker's validated calls, shared: validating copies of the same
        # calls again costs a minute at 20,000 spans and changes nothing
        worker = workers[len(children) % len(workers)].model_copy(
            update={"id": uuid.uuid4().hex, "name": f"worker-{len(children)}"}
        )
        kept[worker.id] = worker
        children.append(worker.id)
        total += 1 + len(worker.interactions)
    top = root.model_copy(update={"interactions": [calls[0], *children, *calls[1:]]})
    return MultiAgentTrace.model_construct(
        root_agent_instance_id=top.id,
        agent_instance_by_id={top.id: top, **kept},
        warnings=[],
        trace_id=trace.trace_id,
    )


def _cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def at_cap(long_rounds: int, quick: bool) -> None:
    """The server's part of the trace page on two shapes at 2,000 and 20,000 spans (with
    `quick`, long agents only: the larger stored trace)."""
    import gc

    import httpx

    from tracejudge import checks
    from tracejudge._sync import run
    from tracejudge.evaluation.service import EvaluationService
    from tracejudge.server.pages import ui
    from tracejudge.server.store import open_store

    shapes = {"many agents": (6, 33), "long agents": (2, long_rounds)}
    if quick:
        del shapes["many agents"]
    rows: list[tuple[str, int, int, float, float, int, float, float, list[float]]] = []
    print(f"load average at the start: {_load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tracejudge-trace-cap-") as folder:
        db = str(Path(folder) / "bench.db")
        for shape, (workers, rounds) in shapes.items():
            recorded, _ = record(workers, rounds)
            for spans in (2_000, 20_000):
                trace = repeated(recorded, spans)
                count = sum(1 + len(a.llm_interactions) for a in trace.iter_agents())
                responses = run(EvaluationService().score_trace(trace, list(checks.ALL)))
                trace_id = store(db, trace, responses)
                del trace, responses
                gc.collect()
                saved = open_store(db)
                try:
                    row = saved.traces.get(trace_id)
                    assert row is not None and row.trace_json is not None
                    evaluations = saved.evaluations.of_trace(trace_id)
                    renders, cpu = [], []
                    for _ in range(3):
                        began, used = time.perf_counter(), time.process_time()
                        ui._render(row, evaluations, [], None, None)
                        renders.append(time.perf_counter() - began)
                        cpu.append(time.process_time() - used)
                    size = len(row.trace_json.encode())
                    del row
                finally:
                    saved.close()
                # each round a new server: the first view draws the page (cold), the
                # second is the page kept (warm)
                answers, served_cpu, warm = [], [], []
                for _ in range(3):
                    server = ServerProcess(db, api_key=None).start()
                    try:
                        assert server.process is not None
                        pid = server.process.pid
                        began, used = time.perf_counter(), _cpu_seconds(pid)
                        got = httpx.get(server.url + f"/ui/traces/{trace_id}", timeout=300)
                        assert got.status_code == 200, got.status_code
                        answers.append(time.perf_counter() - began)
                        served_cpu.append(_cpu_seconds(pid) - used)
                        began = time.perf_counter()
                        kept = httpx.get(server.url + f"/ui/traces/{trace_id}", timeout=300)
                        assert 'desc="kept"' in kept.headers.get("server-timing", "")
                        warm.append(time.perf_counter() - began)
                    finally:
                        server.stop()
                render, served = statistics.median(renders), statistics.median(answers)
                used, server_used = statistics.median(cpu), statistics.median(served_cpu)
                page = len(got.content)
                rows.append((shape, count, size, render, served, page, used, server_used, warm))
                print(
                    f"{shape}: {count:,} spans, stored {size / 1e6:.1f} MB, page "
                    f"{page / 1e6:.1f} MB; render {render:.2f} s "
                    f"({render / count * 1e6:.0f} µs a span; CPU {used:.2f} s), "
                    f"served {served:.2f} s (server CPU {server_used:.2f} s), again "
                    f"{statistics.median(warm):.3f} s; "
                    f"load average {_load()}",
                    flush=True,
                )
    print(
        "\n| shape | spans | stored trace | page | server render, wall (CPU) | per span, "
        "wall | served, wall (server CPU) | served again (kept) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for shape, count, size, render, served, page, used, server_used, warm in rows:
        print(
            f"| {shape} | {count:,} | {size / 1e6:.1f} MB | {page / 1e6:.1f} MB | "
            f"{render:.2f} s ({used:.2f} s) | {render / count * 1e6:.0f} µs | "
            f"{served:.2f} s ({server_used:.2f} s) | {statistics.median(warm):.3f} s |"
        )
    for small, big in zip(rows[::2], rows[1::2], strict=True):
        ratio = (big[3] / big[1]) / (small[3] / small[1])
        cpu_ratio = (big[6] / big[1]) / (small[6] / small[1])
        fine = "met" if ratio <= 1.5 and big[4] < TARGET_SECONDS else "NOT met"
        print(
            f"{small[0]}: per span at {big[1]:,} / at {small[1]:,} = {ratio:.2f}x "
            f"(CPU {cpu_ratio:.2f}x; target within 1.5x); served at {big[1]:,}: "
            f"{big[4]:.2f} s (target under {TARGET_SECONDS:g} s): {fine}"
        )
    print(f"load average at the end: {_load()}")


def _load() -> str:
    """The machine's load averages (1, 5, 15 minutes) and its processor count."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count()} cores"


# Milliseconds from navigation start to the first frame after the load event.
FIRST_FRAME = (
    "new Promise(function(done){requestAnimationFrame(function(){"
    "requestAnimationFrame(function(){done(performance.now());});});})"
)


def measure(tab: Browser, url: str) -> float:
    tab.load(url)
    if tab.console:
        raise AssertionError(f"{url}: {tab.console}")
    return float(tab.evaluate(FIRST_FRAME)) / 1000


def _measure_pages(
    served: str, viewer: Path, inert: Path, here: Path, options: argparse.Namespace
) -> tuple[dict[str, list[float]], list[float], int, str]:
    """The three arms' times (interleaved rounds), the server's answer times, and what
    the timeline drew."""
    import httpx

    answers = []
    for _ in range(3):
        began = time.perf_counter()
        assert httpx.get(served, timeout=60).status_code == 200
        answers.append(time.perf_counter() - began)
    arms: dict[str, list[float]] = {"baseline": [], "file": [], "server": []}
    with Browser(here / "profile") as tab:
        measure(tab, served)  # warm-up: the browser's caches of code, fonts
        for _ in range(options.rounds_measured):
            arms["baseline"].append(measure(tab, inert.as_uri()))
            arms["file"].append(measure(tab, viewer.as_uri()))
            arms["server"].append(measure(tab, served))
        rows = tab.evaluate("document.querySelectorAll('.tl-row:not(.head)').length")
        note = tab.evaluate("(document.querySelector('.tl .pager span')||{}).textContent")
    return arms, answers, rows, note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=33)
    parser.add_argument("--rounds-measured", type=int, default=5)
    parser.add_argument("--at-cap", action="store_true", help="the server's part at the cap")
    parser.add_argument("--long-rounds", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="with --at-cap: long agents only")
    options = parser.parse_args()
    if options.at_cap:
        at_cap(options.long_rounds, options.quick)
        return

    from tracejudge import checks
    from tracejudge._sync import run
    from tracejudge.evaluation.service import EvaluationService
    from tracejudge.report import render_trace_page
    from tracejudge.report.page import SCRIPT

    began = time.perf_counter()
    trace, spans = record(options.workers, options.rounds)
    recorded = time.perf_counter() - began
    agents = list(trace.iter_agents())
    calls = sum(len(a.llm_interactions) for a in agents)
    began = time.perf_counter()
    responses = run(EvaluationService().score_trace(trace, list(checks.ALL)))
    scored = time.perf_counter() - began
    print(
        f"trace: {spans:,} spans ({len(agents)} agents, {calls:,} model calls), "
        f"recorded in {recorded:.1f} s, checks scored it in {scored:.1f} s"
    )
    renders = []
    for _ in range(3):
        began = time.perf_counter()
        page = render_trace_page(trace, responses, trace_id="bench")
        renders.append(time.perf_counter() - began)
    print(
        f"page: {len(page.encode()) / 1e6:.2f} MB of HTML, made by render_trace_page in "
        f"{statistics.median(renders):.2f} s (median of 3)"
    )

    with tempfile.TemporaryDirectory(prefix="tracejudge-trace-page-") as folder:
        here = Path(folder)
        viewer = here / "trace.html"
        viewer.write_text(page, encoding="utf-8")
        inert = here / "baseline.html"
        inert.write_text(page.replace(SCRIPT, " " * len(SCRIPT)), encoding="utf-8")
        db = str(here / "bench.db")
        trace_id = store(db, trace, responses)
        server = ServerProcess(db, api_key=None).start()
        try:
            arms, answers, rows, note = _measure_pages(
                server.url + f"/ui/traces/{trace_id}", viewer, inert, here, options
            )
        finally:
            server.stop()

    base, drawn, whole = (statistics.median(arms[k]) for k in ("baseline", "file", "server"))
    print(f"timeline: {rows} rows drawn; {note}")
    print(f"baseline (the same bytes, the viewer's script blanked): {base * 1000:.0f} ms")
    print(f"trace page from a file: {drawn * 1000:.0f} ms, {drawn / base:.2f}x the baseline")
    verdict = "met" if whole < TARGET_SECONDS else "NOT met"
    print(
        f"trace page from the server: {whole * 1000:.0f} ms ({whole / base:.2f}x the baseline; "
        f"the server answers in {statistics.median(answers) * 1000:.0f} ms); "
        f"target under {TARGET_SECONDS:g} s: {verdict}"
    )
    print(
        "each: median of "
        + str(options.rounds_measured)
        + " rounds, navigation start to the first frame after load; all rounds (ms): "
        + "; ".join(f"{k} {', '.join(f'{v * 1000:.0f}' for v in arms[k])}" for k in arms)
    )


if __name__ == "__main__":
    main()
