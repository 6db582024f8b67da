"""What tracing an agent costs, as ratios against a baseline measured in the same run.

Each configuration runs in its own process (OpenLLMetry instruments once per process)
and makes the same N chat completions with the real `openai` client against a
ScriptedLLMServer on 127.0.0.1:

- baseline      OpenLLMetry instrumented, an SDK TracerProvider with no processor
- tracejudge    ComposoTracer.init + one AgentTracer per call + `tracer.trace` read
- composo       the hosted SDK's tracer doing the same (when `composo` is installed)

Printed: time per call, the ratio to the baseline, and the
memory still allocated after a second pass of N calls (tracemalloc, current - start).
Run:

    python benchmarks/tracing_overhead.py [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import gc, json, sys, time, tracemalloc
    from openai import OpenAI
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from tracejudge.testing import Reply, ScriptedLLMServer

    mode, calls = sys.argv[1], int(sys.argv[2])
    server = ScriptedLLMServer(default=Reply.text("ok")).start()
    client = OpenAI(base_url=server.base_url, api_key="bench", max_retries=0)
    messages = [{"role": "user", "content": "hello"}]

    if mode == "baseline":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        trace.set_tracer_provider(TracerProvider())
        OpenAIInstrumentor().instrument()

        def one():
            client.chat.completions.create(model="m", messages=messages)
    elif mode == "tracejudge":
        from tracejudge import AgentTracer, ComposoTracer, Instruments
        ComposoTracer.init(instruments=Instruments.OPENAI)

        def one():
            with AgentTracer(name="agent") as tracer:
                client.chat.completions.create(model="m", messages=messages)
            assert tracer.trace.has_llm_interactions
    else:
        from composo import AgentTracer, ComposoTracer, Instruments
        ComposoTracer.init(instruments=Instruments.OPENAI)

        def one():
            with AgentTracer(name="agent") as tracer:
                client.chat.completions.create(model="m", messages=messages)
            tracer.trace

    for _ in range(20):  # warm up connections, imports and caches
        one()
    # Time without tracemalloc (it slows allocation-heavy code unevenly), then measure
    # what stays allocated over a second, traced pass.
    started = time.perf_counter()
    for _ in range(calls):
        one()
    elapsed = time.perf_counter() - started
    gc.collect()
    tracemalloc.start()
    start_memory = tracemalloc.get_traced_memory()[0]
    for _ in range(calls):
        one()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - start_memory
    server.stop()
    print(json.dumps({"per_call_ms": 1000 * elapsed / calls, "kept_kib": kept / 1024}))
    """
)


def run(mode: str, calls: int) -> dict[str, float] | None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(calls)], capture_output=True, text=True
    )
    if done.returncode != 0:
        if mode == "composo" and "No module named 'composo'" in done.stderr:
            return None
        raise SystemExit(f"{mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    results = {mode: run(mode, args.calls) for mode in ("baseline", "tracejudge", "composo")}
    base = results["baseline"]
    assert base is not None
    print(f"{args.calls} chat completions per configuration")
    print(f"{'configuration':<14}{'ms/call':>9}{'vs baseline':>13}{'kept KiB':>10}")
    for mode, result in results.items():
        if result is None:
            print(f"{mode:<14}{'(not installed: pip install composo)':>32}")
            continue
        ratio = result["per_call_ms"] / base["per_call_ms"]
        print(f"{mode:<14}{result['per_call_ms']:>9.2f}{ratio:>12.2f}x{result['kept_kib']:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
