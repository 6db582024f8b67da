"""How an agent's run ends: a hand-off to a child agent, or a dangling tool call."""

from __future__ import annotations

import openai
from opentelemetry.sdk.trace import TracerProvider

from tracejudge import AgentTracer, checks
from tracejudge.models import MultiAgentTrace
from tracejudge.testing import Reply, ScriptedLLMServer, ToolCall

TRANSFER = {
    "type": "function",
    "function": {
        "name": "transfer_to_researcher",
        "description": "Hand the conversation to the researcher.",
        "parameters": {"type": "object", "properties": {}},
    },
}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def _run(server: ScriptedLLMServer, *, hand_off: bool) -> MultiAgentTrace:
    """The triage agent asks for a transfer; with `hand_off` its code runs the researcher
    and stops, without it the code just stops (the call is left dangling)."""
    server.reset()
    server.add(Reply.tool_calls([ToolCall("transfer_to_researcher", {}, id="call_t1")]))
    if hand_off:
        server.add(Reply.text("Paris is sunny today."))
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
        with AgentTracer(name="triage") as triage:
            client.chat.completions.create(model="m", messages=QUESTION, tools=[TRANSFER])
            if hand_off:
                with AgentTracer(name="researcher"):
                    client.chat.completions.create(model="m", messages=QUESTION)
    return triage.trace


def test_a_hand_off_is_not_scored_as_an_ending(
    composo_tracing: TracerProvider, checks_server: ScriptedLLMServer
) -> None:
    trace = _run(checks_server, hand_off=True)
    triage = trace.root
    assert triage.name == "triage" and len(triage.child_ids) == 1
    final = checks.final_answer.evaluate(trace)[triage.id]
    assert final is not None and final.score is None
    assert "handed off to researcher" in final.explanation and "call_t1" in final.explanation
    results = checks.tool_results.evaluate(trace)[triage.id]
    assert results.score is None  # nothing to count: the hand-off is final_answer's
    assert "call_t1" in results.explanation and "see final_answer" in results.explanation
    assert checks.tool_arguments.evaluate(trace)[triage.id].score == 1.0


def test_a_dangling_tool_call_fails_the_ending_only(
    composo_tracing: TracerProvider, checks_server: ScriptedLLMServer
) -> None:
    trace = _run(checks_server, hand_off=False)
    triage = trace.root.id
    final = checks.final_answer.evaluate(trace)[triage]
    assert final.score == 0.0
    assert "triage call 1" in final.explanation and "call_t1" in final.explanation
    # One fault, one check: tool_results leaves the unanswered last call to final_answer.
    results = checks.tool_results.evaluate(trace)[triage]
    assert results.score is None and "see final_answer" in results.explanation


def test_calls_without_recorded_tools_skip_the_availability_check_and_say_so(
    composo_tracing: TracerProvider, checks_server: ScriptedLLMServer
) -> None:
    # The agent code offers no tools, yet the model answers with a tool call.
    checks_server.reset()
    checks_server.add(
        Reply.tool_calls(
            [ToolCall("lookup", {"q": "x"}, id="call_a"), ToolCall("lookup", "[1]", id="call_b")]
        )
    )
    with openai.OpenAI(base_url=checks_server.base_url, api_key="test", max_retries=0) as client:
        with AgentTracer(name="bare") as bare:
            client.chat.completions.create(model="m", messages=QUESTION)
    trace = bare.trace
    result = checks.tool_arguments.evaluate(trace)[trace.root.id]
    assert result.score == 0.5  # call_b's arguments are a JSON array, not an object
    assert "bare call 1, tool call call_b (lookup)" in result.explanation
    assert "no tools were recorded for call 1" in result.explanation
