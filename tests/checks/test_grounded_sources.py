"""Where grounded_numbers looks for a value's source, and when it cannot know: a built-in
tool ran on the provider's side, a history was handed to the agent, an answer derives a
value from its inputs."""

from __future__ import annotations

from tracejudge import checks
from tracejudge.models import (
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    MultiAgentTrace,
    ScoreResponse,
)

QUESTION = LLMInput(role="user", type="text", content="When was Ford founded, and by whom?")
WEB_SEARCH = LLMToolCall(id="ws_1", name="web_search", parameters='{"query": "Ford founded"}')


def _score(*interactions: LLMInteraction) -> ScoreResponse:
    agent = AgentInstance(id="a", name="researcher", interactions=list(interactions))
    score = checks.grounded_numbers.evaluate(MultiAgentTrace.from_agent(agent))["a"]
    assert score is not None
    return score


def _answer(text: str, inputs: list[LLMInput], **extensions: object) -> LLMInteraction:
    return LLMInteraction(
        input_messages=inputs, output_messages=[LLMOutput(type="text", content=text)], **extensions
    )


def test_values_after_an_unrecorded_web_search_cannot_be_verified() -> None:
    answer = "Ford was founded in 1903 by Henry Ford with 12 investors."
    searched = _score(_answer(answer, [QUESTION], server_tool_calls=[WEB_SEARCH]))
    assert searched.score is None
    assert "1 built-in tool call on the provider's side (web_search: ws_1)" in searched.explanation
    assert "cannot be verified" in searched.explanation
    assert "'1903' appears in no input" in searched.explanation  # still named

    # Without the search, the same answer is ungrounded ...
    assert _score(_answer(answer, [QUESTION])).score == 0.0
    # ... and with it, values the inputs do hold are still checked and pass.
    given = LLMInput(role="user", type="text", content="Ford (1903): 12 investors.")
    assert _score(_answer(answer, [given], server_tool_calls=[WEB_SEARCH])).score == 1.0


def test_a_handed_in_history_grounds_but_the_agents_own_replies_do_not() -> None:
    history = [
        LLMInput(role="user", type="text", content="What is 2 + 2?"),
        LLMInput(role="assistant", type="text", content="4"),  # an earlier session's turn
        LLMInput(role="user", type="text", content="Now multiply that by 10."),
    ]
    derived = _score(_answer("40", history))
    assert derived.score == 1.0 and "'40' is derived from the inputs: 4 × 10" in derived.explanation

    # Its own reply of an earlier call cannot ground a later one.
    first = _answer("The fee is 250 euros.", [QUESTION])
    again = [QUESTION, LLMInput(role="assistant", type="text", content="The fee is 250 euros.")]
    again.append(LLMInput(role="user", type="text", content="Sure?"))
    repeated = _score(first, _answer("Yes, 250 euros.", again))
    assert repeated.score == 0.0 and "'250 euros' appears in no input" in repeated.explanation
