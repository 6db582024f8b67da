"""The prompt tokens a provider read from (or wrote to) its prompt cache reach the verdict's
usage, as the provider reports them, over a real HTTP exchange."""

from __future__ import annotations

import json
from typing import Any

from tracejudge.judges import JudgeRequest
from tracejudge.testing import Reply, ScriptedLLMServer

REQUEST = JudgeRequest.of("Reward accurate answers", "user: 2+2?\nassistant: 4")
VERDICT = json.dumps({"explanation": "Correct.", "applicable": True, "score": 10})


def chat_completion(content: str, usage: dict[str, Any]) -> Reply:
    """A chat completion exactly as OpenAI sends it, with this `usage` object."""
    return Reply.raw(
        200,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4.1-mini-2025-04-14",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        },
    )


def anthropic_message(text: str, usage: dict[str, Any]) -> Reply:
    return Reply.raw(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": usage,
        },
    )


async def test_openai_cached_prompt_tokens_are_read(server: ScriptedLLMServer, make_judge) -> None:
    server.add(
        chat_completion(
            VERDICT,
            {
                "prompt_tokens": 12_000,
                "completion_tokens": 80,
                "total_tokens": 12_080,
                "prompt_tokens_details": {"cached_tokens": 11_264, "audio_tokens": 0},
            },
        )
    )
    verdict = await make_judge(model="gpt-4.1-mini").judge(REQUEST)
    usage = verdict.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (
        12_000,
        11_264,
        80,
    )
    assert usage.cache_write_tokens == 0


async def test_openai_usage_without_details_counts_no_cached_tokens(
    server: ScriptedLLMServer, make_judge
) -> None:
    # vLLM and llama.cpp answer without prompt_tokens_details (or with null in it).
    server.add(chat_completion(VERDICT, {"prompt_tokens": 500, "completion_tokens": 20}))
    server.add(
        chat_completion(
            VERDICT,
            {"prompt_tokens": 500, "completion_tokens": 20, "prompt_tokens_details": None},
        )
    )
    judge = make_judge()
    for _ in range(2):
        usage = (await judge.judge(REQUEST)).usage
        assert (usage.input_tokens, usage.cached_input_tokens) == (500, 0)


async def test_cached_tokens_of_a_re_ask_are_summed(server: ScriptedLLMServer, make_judge) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010}
    for content, cached in (("not json", 0), (VERDICT, 900)):
        details = {"prompt_tokens_details": {"cached_tokens": cached}}
        server.add(chat_completion(content, {**usage, **details}))
    verdict = await make_judge().judge(REQUEST)
    assert verdict.usage.calls == 2
    assert (verdict.usage.input_tokens, verdict.usage.cached_input_tokens) == (2000, 900)


async def test_anthropic_cache_reads_and_writes_are_read(
    server: ScriptedLLMServer, make_anthropic
) -> None:
    server.add(
        anthropic_message(
            VERDICT,
            {
                "input_tokens": 40,
                "cache_creation_input_tokens": 9_000,
                "cache_read_input_tokens": 3_000,
                "output_tokens": 60,
            },
        )
    )
    verdict = await make_anthropic(model="claude-sonnet-4-5").judge(REQUEST)
    usage = verdict.usage
    # Anthropic's input_tokens leaves the cached ones out; ours counts every prompt token.
    assert usage.input_tokens == 12_040
    assert (usage.cached_input_tokens, usage.cache_write_tokens) == (3_000, 9_000)
    assert usage.total_tokens == 12_100
