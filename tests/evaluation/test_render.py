"""What the judge reads: transcripts of conversations and of agent instances."""

from __future__ import annotations

import pytest

from tests.checks import faults
from tests.timing import LINEAR, growth
from tracejudge import checks
from tracejudge.evaluation._history import new_messages
from tracejudge.evaluation.render import (
    JUDGED_MARK,
    conversation_agent,
    render_agent,
    render_conversation,
)
from tracejudge.models import (
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
    MultiAgentTrace,
)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get current weather for a location",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    },
}

TOOL_CONVERSATION = [
    {"role": "user", "content": "What's the weather in SF?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_123",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"location": "San Francisco"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_123", "content": '{"temp": 65, "condition": "sunny"}'},
    {"role": "assistant", "content": "It's 65°F and sunny in San Francisco!"},
]


def _looping_agent(turns: int) -> AgentInstance:
    """An agent loop as instrumentation records it: every call's input repeats all history."""
    history: list[LLMInput] = [
        LLMInput(role="system", content="You are a careful researcher."),
        LLMInput(role="user", content="Find the answer."),
    ]
    interactions: list[LLMInteraction | str] = []
    for i in range(turns):
        call = LLMToolCall(id=f"call_{i}", name="search", parameters={"query": f"query number {i}"})
        interactions.append(
            LLMInteraction(
                input_messages=list(history),
                output_messages=[
                    LLMOutput(type="text", content=f"thinking step {i}"),
                    LLMOutput(type="tool_call", content=call),
                ],
            )
        )
        history.append(LLMInput(role="assistant", type="text", content=f"thinking step {i}"))
        history.append(LLMInput(role="assistant", type="tool_call", content=call))
        history.append(
            LLMInput(
                role="tool",
                type="tool_response",
                content=LLMToolResponse(id=f"call_{i}", response=f"search result {i}"),
            )
        )
    return AgentInstance(id="a1", name="researcher", interactions=interactions)


def test_agent_transcript_writes_each_message_once_and_grows_linearly() -> None:
    sizes = {}
    for turns in (10, 20, 40):
        trace = MultiAgentTrace.from_agent(_looping_agent(turns))
        content = render_agent(trace, "a1").content
        sizes[turns] = len(content)
        assert content.count("You are a careful researcher.") == 1
        assert content.count("Find the answer.") == 1
        for i in range(turns - 1):
            assert content.count(f"thinking step {i}\n") == 1
            assert content.count(f"search result {i}\n") == 1
            assert content.count(f"(id call_{i})") == 1
        assert "a new model call whose context" not in content
    # Twice the turns, about twice the text (a quadratic rendering would be ~4x).
    assert 1.7 < sizes[40] / sizes[20] < 2.3
    assert 1.7 < sizes[20] / sizes[10] < 2.4


def test_agent_outputs_listed_in_another_order_still_count_as_repeated() -> None:
    call = LLMToolCall(id="c1", name="search", parameters='{"q": "x"}')
    first = LLMInteraction(
        input_messages=[LLMInput(role="user", content="go")],
        output_messages=[LLMOutput(content="I will search."), LLMOutput(content=call)],
    )
    second = LLMInteraction(
        input_messages=[
            LLMInput(role="user", content="go"),
            # The converter wrote the call before the text, and re-spaced the arguments.
            LLMInput(
                role="assistant",
                content=LLMToolCall(id="c1", name="search", parameters='{ "q":"x" }'),
            ),
            LLMInput(role="assistant", content="I will search."),
            LLMInput(role="tool", content=LLMToolResponse(id="c1", response="found")),
        ],
        output_messages=[LLMOutput(content="Done.")],
    )
    agent = AgentInstance(id="a", name="agent", interactions=[first, second])
    content = render_agent(MultiAgentTrace.from_agent(agent), "a").content
    assert content.count("I will search.") == 1
    assert content.count("calls tool search") == 1
    assert "a new model call whose context" not in content


def test_a_fresh_context_is_announced_rather_than_merged() -> None:
    agent = AgentInstance(
        id="a",
        name="agent",
        interactions=[
            LLMInteraction(
                input_messages=[LLMInput(role="user", content="first task")],
                output_messages=[LLMOutput(content="first answer")],
            ),
            LLMInteraction(
                input_messages=[LLMInput(role="user", content="summarise: first answer")],
                output_messages=[LLMOutput(content="summary")],
            ),
        ],
    )
    content = render_agent(MultiAgentTrace.from_agent(agent), "a").content
    assert "--- call 2: a new model call whose context repeats nothing written above ---" in (
        content
    )
    # every model call headed as the page and the explanations name it
    assert content.index("--- call 1 ---") < content.index("first task")
    assert content.index("first answer") < content.index("summarise: first answer")


def test_conversation_shows_tool_definitions_calls_and_results_matched_by_id() -> None:
    agent = conversation_agent(TOOL_CONVERSATION, tools=[WEATHER_TOOL], system="Be brief.")
    content = render_conversation(agent).content
    assert "TOOLS AVAILABLE" in content
    assert "- get_weather: Get current weather for a location" in content
    assert '"location": {"type": "string"}' in content
    assert "system:\nBe brief." in content
    assert "calls tool get_weather (id call_123)" in content
    assert 'arguments: {"location": "San Francisco"}' in content
    assert "tool result (get_weather, id call_123)" in content
    assert '{"temp": 65, "condition": "sunny"}' in content


def test_tool_result_without_a_call_is_flagged() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "ghost", "content": "orphan result"},
        {"role": "assistant", "content": "hello"},
    ]
    content = render_conversation(conversation_agent(messages)).content
    assert "tool result (id ghost, no matching call above)" in content


def test_evaluate_latest_marks_only_the_last_turn() -> None:
    messages = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        *TOOL_CONVERSATION,
    ]
    agent = conversation_agent(messages, tools=[WEATHER_TOOL])
    latest = render_conversation(agent, evaluate_latest=True)
    every = render_conversation(agent, evaluate_latest=False)
    assert f"assistant {JUDGED_MARK}:\nfirst answer" not in latest.content
    assert "assistant:\nfirst answer" in latest.content
    # The latest turn: the tool call and the final answer, both after the last user message.
    assert f"assistant {JUDGED_MARK} calls tool get_weather" in latest.content
    assert f"assistant {JUDGED_MARK}:\nIt's 65°F" in latest.content
    assert latest.judged == 2
    assert f"assistant {JUDGED_MARK}:\nfirst answer" in every.content
    assert every.judged == 3
    assert "latest response" in latest.target
    assert "every assistant response" in every.target


def test_child_agents_appear_as_calls_with_their_final_output() -> None:
    trace = MultiAgentTrace(
        root_agent_instance_id="o1",
        agent_instance_by_id={
            "o1": AgentInstance(
                id="o1",
                name="orchestrator",
                interactions=[
                    LLMInteraction(
                        input_messages=[LLMInput(role="user", content="Report the weather")],
                        output_messages=[LLMOutput(content="Delegating to the researcher.")],
                    ),
                    "r1",
                ],
            ),
            "r1": AgentInstance(
                id="r1",
                name="researcher",
                interactions=[
                    LLMInteraction(
                        input_messages=[LLMInput(role="user", content="secret research prompt")],
                        output_messages=[LLMOutput(content="It is sunny.")],
                        tools_available=[LLMToolDefinition(name="search", parameters={})],
                    )
                ],
            ),
        },
    )
    parent = render_agent(trace, "o1")
    assert f'calls sub-agent "researcher" (instance r1) {JUDGED_MARK}; its final output:' in (
        parent.content
    )
    assert "It is sunny." in parent.content
    assert "secret research prompt" not in parent.content  # the child's own work is not shown
    assert "TOOLS AVAILABLE" not in parent.content
    child = render_agent(trace, "r1")
    assert 'called by agent "orchestrator" (instance o1)' in child.content
    assert "- search" in child.content
    assert 'the agent "researcher" (instance r1)' in child.target


def test_anthropic_server_tool_blocks_become_calls_and_results() -> None:
    messages = [
        {"role": "user", "content": "Latest SpaceX news?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching."},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "SpaceX news"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": [
                        {
                            "type": "web_search_result",
                            "title": "Starship flies",
                            "url": "https://example.org/starship",
                            "encrypted_content": "xyz",
                        }
                    ],
                },
                {
                    "type": "text",
                    "text": "Starship flew again.",
                    "citations": [
                        {
                            "type": "web_search_result_location",
                            "url": "https://example.org/starship",
                            "title": "Starship flies",
                            "cited_text": "...",
                        }
                    ],
                },
            ],
        },
    ]
    content = render_conversation(conversation_agent(messages)).content
    assert "calls tool web_search (id srvtoolu_1)" in content
    assert "tool result (web_search, id srvtoolu_1)" in content
    assert "- Starship flies <https://example.org/starship>" in content
    assert "Cited sources:" in content
    assert "xyz" not in content


# --------------------------------------------------------------------------- new messages


def _rewritten_system_agent(turns: int) -> AgentInstance:
    """Like `_looping_agent`, but every call's system prompt carries the time of the call."""
    agent = _looping_agent(turns)
    for i, interaction in enumerate(agent.llm_interactions):
        interaction.input_messages[0] = LLMInput(
            role="system", content=f"You are a careful researcher. It is 10:{i:02d}."
        )
    return agent


def test_a_rewritten_system_prompt_does_not_repeat_the_history() -> None:
    content = render_agent(MultiAgentTrace.from_agent(_rewritten_system_agent(10)), "a1").content
    assert content.count("Find the answer.") == 1
    for i in range(9):
        assert content.count(f"search result {i}\n") == 1
        assert content.count(f"It is 10:{i:02d}.") == 1  # each new system prompt, once


def test_the_judge_and_the_checks_read_the_same_new_messages() -> None:
    agent = _rewritten_system_agent(6)
    turns = list(new_messages(agent.llm_interactions))
    results = [
        [m.content.response for m in t.new if isinstance(m.content, LLMToolResponse)] for t in turns
    ]
    assert results == [[], *([f"search result {i}"] for i in range(5))]
    assert [t.complete for t in turns] == [True] + [False] * 5  # the system prompt changed
    # The checks find every result where the transcript shows it.
    run = checks.tool_results.evaluate(MultiAgentTrace.from_agent(agent))["a1"]
    assert "5 of 5 tool calls got a result" in run.explanation


def test_new_messages_tolerate_respaced_arguments_and_reordered_outputs() -> None:
    call = LLMToolCall(id="c1", name="search", parameters='{"q": "x", "n": 1}')
    first = LLMInteraction(
        input_messages=[LLMInput(role="user", content="go")],
        output_messages=[LLMOutput(content="I will search."), LLMOutput(content=call)],
    )
    result = LLMInput(role="tool", content=LLMToolResponse(id="c1", response="found"))
    second = LLMInteraction(
        input_messages=[
            LLMInput(role="user", content=" go "),
            LLMInput(
                role="assistant",
                content=LLMToolCall(id="c1", name="search", parameters='{ "n":1, "q":"x" }'),
            ),
            LLMInput(role="assistant", content="I  will search."),
            result,
        ],
        output_messages=[LLMOutput(content="Done.")],
    )
    fresh = LLMInteraction(
        input_messages=[LLMInput(role="user", content="go"), LLMInput(role="user", content="new")],
        output_messages=[LLMOutput(content="Again.")],
    )
    one, two, three = new_messages([first, second, fresh])
    assert list(one.new) == first.input_messages and one.complete
    assert list(two.new) == [result] and two.complete and two.repeated == 3
    assert len(two.replayed) == 2
    # Only the first message is shared: the rest of the previous context is gone.
    assert [m.content for m in three.new] == ["new"]
    assert three.repeated == 1 and not three.complete


@pytest.mark.heavy("a time ratio over agents of 250 and 2,000 interactions")
def test_rendering_a_2000_interaction_agent_is_fast() -> None:
    agent = faults.long_agent(2000)
    trace = MultiAgentTrace.from_agent(agent)
    content = render_agent(trace, agent.id).content

    def long(n: int) -> tuple[MultiAgentTrace, str]:
        agent = faults.long_agent(n)
        return MultiAgentTrace.from_agent(agent), agent.id

    # eight times the interactions, about eight times the time, not sixty-four
    assert growth(lambda given: render_agent(*given), 250, make=long) < LINEAR
    assert content.count("Add up the values.") == 1
    assert content.count("calls tool lookup") == 2000
    assert "a new model call whose context" not in content
