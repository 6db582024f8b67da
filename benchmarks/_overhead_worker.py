"""One arm of benchmarks/tracing_overhead.py, in a process of its own.

    python _overhead_worker.py ARM CALLS_PER_AGENT [cpu|wall]

ARM is none, openllmetry, tracejudge, tracejudge-noread, openinference or composo. The
worker sets up that arm's tracing (instrumentation is once per process), warms up, prints
"ready", then for each line "N" on stdin runs N agents of CALLS_PER_AGENT chat completions
each and prints one JSON list: the seconds per LLM call of each agent, by the process's CPU
time (`cpu`, the default) or by the wall clock (`wall`). The openai client talks to an
in-memory transport (`httpx2.MockTransport`: openai 3.x is built on httpx2), so the
figures hold the client's and the tracing's work and no network; nothing waits, so on an
idle machine the two clocks agree, and on a shared one the CPU time leaves out the time the
process spent waiting for a core.

It imports only openai, httpx2, OpenTelemetry and the arm's own package, so the
published `composo` SDK's virtualenv can run it too.
"""

from __future__ import annotations

import json
import sys
import time

import httpx2
from openai import OpenAI

# The body of a real chat completion (the recorded exchange in
# /work/shared/cassettes/contrib-chat-with-content.yaml), with this benchmark's answer.
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-ASYMQRl3A3DXL9FWCK9tnGRcKIO7q",
        "object": "chat.completion",
        "created": 1731368630,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Paris is the capital of France.",
                    "refusal": None,
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 24,
            "completion_tokens": 8,
            "total_tokens": 32,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "system_fingerprint": "fp_0ba0d124f1",
    }
).encode()
MESSAGES = [
    {"role": "system", "content": "You are a concise assistant."},
    {"role": "user", "content": "What is the capital of France?"},
]


def _answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, content=COMPLETION, headers={"content-type": "application/json"})


def _client() -> OpenAI:
    transport = httpx2.MockTransport(_answer)
    return OpenAI(
        base_url="http://llm.invalid/v1",
        api_key="bench",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def _plain_provider():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()  # spans are made and dropped: the instrumentation's cost
    trace.set_tracer_provider(provider)
    return provider


def setup(arm: str, client: OpenAI, calls: int):
    """Instrument for `arm`; return one agent's work: `calls` completions (and, for the
    agent tracers, the trace read back), raising if the tracing recorded nothing."""

    def completions() -> None:
        for _ in range(calls):
            client.chat.completions.create(model="gpt-4.1-mini", messages=MESSAGES)

    if arm == "none":
        return completions
    if arm == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=_plain_provider())
        return completions
    if arm == "openllmetry-loopfree":  # what tracejudge's hook alone changes (see below)
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        from tracejudge.tracing import _openllmetry_hook

        OpenAIInstrumentor().instrument(tracer_provider=_plain_provider())
        if not _openllmetry_hook.install():
            raise AssertionError("the loop-free request hook did not install")
        return completions
    if arm == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=_plain_provider())
        return completions
    if arm == "tracejudge-noread":  # the tracing alone: what the spans cost, no conversion
        from tracejudge import AgentTracer, ComposoTracer, Instruments

        ComposoTracer.init(instruments=Instruments.OPENAI)

        def agent_spans() -> None:
            with AgentTracer(name="agent") as tracer:
                completions()
            found = len(tracer.spans)
            if found != calls + 1:
                raise AssertionError(f"tracejudge captured {found} spans for {calls} calls")

        return agent_spans
    if arm == "tracejudge":
        from tracejudge import AgentTracer, ComposoTracer, Instruments

        ComposoTracer.init(instruments=Instruments.OPENAI)

        def agent() -> None:
            with AgentTracer(name="agent") as tracer:
                completions()
            trace = tracer.trace
            found = len(trace.agent_instance_by_id[trace.root_agent_instance_id].interactions)
            if found != calls:
                raise AssertionError(f"tracejudge recorded {found} of {calls} calls")

        return agent
    if arm == "composo":
        import logging

        from composo import AgentTracer, ComposoTracer, Instruments

        # Importing composo calls logging.basicConfig(level=INFO), which then logs every
        # HTTP request; put the root logger back so that only the tracing is compared.
        logging.getLogger().setLevel(logging.WARNING)
        ComposoTracer.init(instruments=Instruments.OPENAI)

        def composo_agent() -> None:
            with AgentTracer(name="agent") as tracer:
                completions()
            trace = tracer.trace
            found = len(trace.agent_instance_by_id[trace.root_agent_instance_id].interactions)
            if found != calls:
                raise AssertionError(f"composo recorded {found} of {calls} calls")

        return composo_agent
    raise SystemExit(f"unknown arm {arm!r}")


def main() -> None:
    arm, calls = sys.argv[1], int(sys.argv[2])
    clock = time.perf_counter if sys.argv[3:4] == ["wall"] else time.process_time
    agent = setup(arm, _client(), calls)
    for _ in range(50):  # imports, connection pools and caches warm
        agent()
    print("ready", flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        per_call = []
        for _ in range(int(line)):
            start = clock()
            agent()
            per_call.append((clock() - start) / calls)
        print(json.dumps(per_call), flush=True)


if __name__ == "__main__":
    main()
