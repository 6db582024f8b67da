"""Refusals, answers cut off at the token limit and answers stopped by a content filter:
`final_answer` fails them by name (unless refusing is allowed), the judge's transcript
marks them, and `Composo.evaluate(result=...)` keeps them from what the real SDKs return.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import anthropic
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.replay.drive import cassette_dir
from tracejudge import AgentTracer, Composo, checks
from tracejudge.evaluation import adapt_result
from tracejudge.evaluation.render import conversation_agent, render_agent, render_conversation
from tracejudge.models import AgentInstance, LLMInput, LLMInteraction, LLMOutput, MultiAgentTrace
from tracejudge.testing import Cassette, CassetteServer, Reply, ScriptedLLMServer

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as scripted:
        yield scripted


def _final(result: Any) -> Any:
    """`final_answer`'s verdict on `result`, the answer to QUESTION."""
    with Composo() as client:
        return client.evaluate(messages=QUESTION, result=result, criteria=checks.final_answer)


# --------------------------------------------------------------------------- refusals


def _recorded_refusal() -> tuple[list[dict[str, Any]], Any]:
    """The request and the real ChatCompletion of a recorded refusal (gpt-4o)."""
    folder = cassette_dir()
    if folder is None:
        pytest.skip("no cassette folder")
    cassette = Cassette.load(folder / "openllmetry-chat-refusal.yaml")
    exchange = cassette.exchanges[0]
    path = urlsplit(exchange.url).path
    with CassetteServer(cassette) as recorded:
        base_url = recorded.url + path[: -len("/chat/completions")]
        with openai.OpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
            completion = client.chat.completions.create(**exchange.request_json)
    return exchange.request_json["messages"], completion


def test_an_openai_refusal_stays_a_refusal_and_fails_final_answer() -> None:
    messages, completion = _recorded_refusal()
    assert completion.choices[0].message.refusal  # what the API returned
    (message,) = adapt_result(completion).messages
    assert message["refusal"] == completion.choices[0].message.refusal
    assert not message["content"]

    with Composo() as client:
        refused, allowed = client.evaluate(
            messages=messages,
            result=completion,
            criteria=[checks.final_answer, checks.final_answer_with(allow_refusal=True)],
        )
    assert refused.score == 0.0
    assert "the agent refused: \"I'm very sorry, but I can't assist" in refused.explanation
    assert allowed.score == 1.0 and "allow_refusal permits" in allowed.explanation

    agent = conversation_agent([*messages, message])
    assert agent.llm_interactions[-1].refusal == message["refusal"]
    transcript = render_conversation(agent).content
    assert "assistant refuses [judged]:\nI'm very sorry" in transcript


def test_an_anthropic_refusal_keeps_its_stop_reason(server: ScriptedLLMServer) -> None:
    server.reset()
    server.add(Reply.text("I can't help with that.", finish_reason="refusal"))
    with anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0) as client:
        message = client.messages.create(model="claude", max_tokens=100, messages=QUESTION)
    assert message.stop_reason == "refusal"

    final = _final(message)
    assert (
        final.score == 0.0 and 'the agent refused: "I can\'t help with that."' in final.explanation
    )
    (adapted,) = adapt_result(message).messages
    transcript = render_conversation(conversation_agent([*QUESTION, adapted])).content
    assert "--- The model call above was refused by the model (finish reason 'refusal') ---" in (
        transcript
    )


def test_a_worded_refusal_passes_when_refusing_is_allowed() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    messages = [
        *QUESTION,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"capital": "Paris"}'},
        {"role": "assistant", "content": "I'm sorry, but I can't share that."},
    ]
    agent = AgentInstance.from_chat_session(messages, name="guard")
    trace = MultiAgentTrace.from_agent(agent)
    assert checks.final_answer.evaluate(trace)[agent.id].score == 0.0
    allowed = checks.final_answer_with(allow_refusal=True).evaluate(trace)[agent.id]
    assert allowed.score == 1.0 and "allow_refusal permits" in allowed.explanation


def test_allow_refusal_is_named_and_checked() -> None:
    assert checks.final_answer_with(allow_refusal=True).name == "final_answer(allow_refusal=True)"
    assert checks.final_answer_with().name == "final_answer"
    with pytest.raises(ValueError, match="allow_refusal must be True or False"):
        checks.final_answer_with(allow_refusal="yes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- cut off


@pytest.mark.parametrize(
    ("text", "reason", "named"),
    [
        ("The capital of France is", "length", "cut off at the output token limit"),
        ("", "content_filter", "stopped by the provider's content filter"),
    ],
)
def test_a_traced_answer_cut_short_fails_by_name(
    composo_tracing: TracerProvider, server: ScriptedLLMServer, text: str, reason: str, named: str
) -> None:
    server.reset()
    server.add(Reply.text(text, finish_reason=reason))
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
        with AgentTracer(name="geographer") as agent:
            client.chat.completions.create(model="m", messages=QUESTION)
    trace = agent.trace
    (call,) = trace.root.llm_interactions
    assert call.finish_reason == reason
    final = checks.final_answer.evaluate(trace)[trace.root.id]
    assert final.score == 0.0
    assert f"{named} (finish reason {reason!r})" in final.explanation
    transcript = render_agent(trace, trace.root.id).content
    assert f"--- The model call above was {named} (finish reason {reason!r}) ---" in transcript


def test_a_chat_completion_cut_off_fails_through_evaluate_result(server: ScriptedLLMServer) -> None:
    server.reset()
    server.add(Reply.text("The capital of France is", finish_reason="length"))
    server.add(Reply.text("The capital of France is Paris."))
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
        cut = client.chat.completions.create(model="m", messages=QUESTION)
        whole = client.chat.completions.create(model="m", messages=QUESTION)
    final = _final(cut)
    assert final.score == 0.0 and "finish reason 'length'" in final.explanation
    final = _final(whole)
    assert final.score == 1.0


def test_an_incomplete_response_fails_through_evaluate_result(server: ScriptedLLMServer) -> None:
    server.reset()
    server.add(Reply.text("The capital of France is", finish_reason="length"))
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
        response = client.responses.create(model="m", input="What is the capital of France?")
    assert response.status == "incomplete"
    final = _final(response)
    assert final.score == 0.0 and "cut off at the output token limit" in final.explanation


def test_a_normal_stop_is_not_noted() -> None:
    interaction = LLMInteraction(
        input_messages=[LLMInput(role="user", type="text", content="Capital of France?")],
        output_messages=[LLMOutput(type="text", content="Paris.")],
        finish_reason="stop",
    )
    trace = MultiAgentTrace.from_agent(
        AgentInstance(id="a", name="geographer", interactions=[interaction])
    )
    assert checks.final_answer.evaluate(trace)["a"].score == 1.0
    assert "The model call above was" not in render_agent(trace, "a").content
