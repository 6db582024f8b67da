"""The context a local inference server gives one request, asked of the server itself.

The model table (`_budget.CONTEXT_WINDOWS`) knows what a model was trained on, not what
the server was started with: llama.cpp started with `-c 4096 -np 2` gives each request
2,048 tokens, whatever the model's name says. So an OpenAI-compatible judge asks its
server once, with a short timeout, and takes the smaller of the two figures. Servers
that can say, and where:

- llama.cpp's server: `GET /props`, `default_generation_settings.n_ctx` (already per
  slot: the context given with `-c` divided among `total_slots`);
- vLLM: `GET /v1/models`, each model card's `max_model_len`;
- Ollama: `POST /api/show {"model": ...}`, `model_info["<arch>.context_length"]` (the
  model's, `<arch>` from `general.architecture`) and `num_ctx` in `parameters` (the one
  the Modelfile sets: what the server runs it with), the smaller when both are there.

An answer that is not one of these shapes, an error or a timeout means "the server
cannot say": never a failure of the judgement.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = [
    "PROBE_HEADER",
    "PROBE_TIMEOUT",
    "ServerContext",
    "ask_server_context",
    "llama_cpp_context",
    "ollama_context",
    "server_root",
    "vllm_context",
]

#: The header every question about the context carries (a test double of a model server,
#: `tracejudge.testing.ScriptedLLMServer`, keeps them apart from the judge's calls).
PROBE_HEADER = "x-tracejudge-probe"

#: Seconds the questions to the server may take in all (three at most, once per judge).
PROBE_TIMEOUT = 2.0

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ServerContext:
    """The tokens one request may hold on the server, and where the figure comes from."""

    tokens: int
    source: str


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def llama_cpp_context(props: Any) -> ServerContext | None:
    """The context per slot from llama.cpp's `/props` body (None: not that shape)."""
    if not isinstance(props, Mapping):
        return None
    settings = props.get("default_generation_settings")
    tokens = _positive(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
    if tokens is None:
        return None
    slots = _positive(props.get("total_slots"))
    per = f", per slot of {slots}" if slots is not None else ""
    return ServerContext(tokens, f"llama.cpp /props n_ctx {tokens:,}{per}")


def vllm_context(models: Any, model: str) -> ServerContext | None:
    """`max_model_len` of `model` (or of the only model served) from vLLM's `/v1/models`
    body (None: not that shape, or no such model)."""
    cards = models.get("data") if isinstance(models, Mapping) else None
    if not isinstance(cards, list):
        return None
    cards = [c for c in cards if isinstance(c, Mapping)]
    named = [c for c in cards if c.get("id") == model or c.get("root") == model]
    card = named[0] if named else cards[0] if len(cards) == 1 else None
    tokens = _positive(card.get("max_model_len")) if card is not None else None
    if tokens is None:
        return None
    return ServerContext(tokens, f"vLLM /v1/models max_model_len {tokens:,}")


def ollama_context(show: Any) -> ServerContext | None:
    """The context from Ollama's `/api/show` body: the model's `<arch>.context_length`
    and the `num_ctx` its parameters set, the smaller (None: neither is there)."""
    if not isinstance(show, Mapping):
        return None
    info = show.get("model_info")
    trained = None
    if isinstance(info, Mapping) and isinstance(arch := info.get("general.architecture"), str):
        trained = _positive(info.get(f"{arch}.context_length"))
    parameters = show.get("parameters")
    found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    num_ctx = int(found.group(1)) if found is not None and int(found.group(1)) > 0 else None
    candidates: list[tuple[int, str]] = []
    if num_ctx is not None:
        candidates.append((num_ctx, f"num_ctx {num_ctx:,}"))
    if trained is not None:
        candidates.append((trained, f"context_length {trained:,}"))
    if not candidates:
        return None
    tokens, why = min(candidates)
    return ServerContext(tokens, f"Ollama /api/show {why}")


def server_root(base_url: str) -> str:
    """The server's root URL from an OpenAI-compatible base URL (".../v1" dropped)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


async def ask_server_context(
    client: httpx.AsyncClient,
    base_url: str,
    model: str,
    headers: Mapping[str, str],
    timeout: float = PROBE_TIMEOUT,
) -> ServerContext | None:
    """Ask the server at `base_url` the context of one request of `model`: llama.cpp's
    `/props`, then vLLM's `/models`, then Ollama's `/api/show`; None when none says, or
    when the questions take more than `timeout` seconds in all."""
    try:
        return await asyncio.wait_for(_ask(client, base_url, model, headers), timeout)
    except asyncio.TimeoutError:
        return None


async def _ask(
    client: httpx.AsyncClient,
    base_url: str,
    model: str,
    headers: Mapping[str, str],
) -> ServerContext | None:
    root = server_root(base_url)
    questions: list[
        tuple[str, str, dict[str, Any] | None, Callable[[Any], ServerContext | None]]
    ] = [
        ("GET", f"{root}/props", None, llama_cpp_context),
        ("GET", f"{base_url.rstrip('/')}/models", None, lambda body: vllm_context(body, model)),
        ("POST", f"{root}/api/show", {"model": model}, ollama_context),
    ]
    for method, url, body, read in questions:
        try:
            answer = await client.request(
                method, url, json=body, headers={**headers, PROBE_HEADER: "context"}
            )
            if answer.status_code != 200:
                continue
            found = read(answer.json())
        except (httpx.HTTPError, ValueError):
            continue  # this server cannot say it this way
        if found is not None:
            return found
    return None
