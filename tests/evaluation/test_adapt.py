"""Provider results and Responses API input, turned into the conversation the judge sees."""

from __future__ import annotations

import json
from typing import Any

import anthropic.types
import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from tracejudge.errors import BadRequestError
from tracejudge.evaluation import adapt_result
from tracejudge.evaluation._adapt import responses_input_to_messages
from tracejudge.evaluation.render import conversation_agent, render_conversation


def response_json(output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A Responses API `Response` as JSON, as `openai.responses.create()` returns it."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "gpt-4.1",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": extra.pop("tools", []),
        **extra,
    }


def output_message(text: str, annotations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": annotations or []}],
    }


SPACEX_OUTPUT: list[dict[str, Any]] = [
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "SpaceX latest launch news"},
    },
    {
        "type": "code_interpreter_call",
        "id": "ci_1",
        "status": "completed",
        "container_id": "cntr_1",
        "code": "import matplotlib.pyplot as plt\nplt.plot(dates)",
        "outputs": [{"type": "logs", "logs": "plotted 3 launches"}],
    },
    output_message(
        "SpaceX launched Starship; here is the plot.",
        [
            {
                "type": "url_citation",
                "url": "https://example.org/spacex",
                "title": "SpaceX news",
                "start_index": 0,
                "end_index": 6,
            }
        ],
    ),
]

MCP_OUTPUT: list[dict[str, Any]] = [
    {
        "type": "mcp_list_tools",
        "id": "mcpl_1",
        "server_label": "coingecko",
        "tools": [
            {
                "name": "get_simple_price",
                "description": "Current price of coins",
                "input_schema": {"type": "object", "properties": {"ids": {"type": "string"}}},
            }
        ],
    },
    {
        "type": "mcp_call",
        "id": "mcp_1",
        "server_label": "coingecko",
        "name": "get_simple_price",
        "arguments": '{"ids": "bitcoin,ethereum", "vs_currencies": "usd"}',
        "output": '{"bitcoin": {"usd": 97000}, "ethereum": {"usd": 3400}}',
    },
    output_message("Bitcoin is $97,000 and Ethereum is $3,400."),
]


def _render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    return render_conversation(conversation_agent(messages, tools=tools)).content


def test_responses_builtin_tools_become_calls_with_results() -> None:
    response = Response.model_validate(response_json(SPACEX_OUTPUT, tools=[{"type": "web_search"}]))
    adapted = adapt_result(response)
    content = _render([{"role": "user", "content": "Plot SpaceX launches"}, *adapted.messages])
    assert "calls tool web_search (id ws_1)" in content
    assert '"query": "SpaceX latest launch news"' in content
    assert "calls tool code_interpreter (id ci_1)" in content
    assert "plt.plot(dates)" in content
    assert "tool result (code_interpreter, id ci_1)" in content
    assert "plotted 3 launches" in content
    assert "SpaceX launched Starship" in content
    assert "- SpaceX news <https://example.org/spacex>" in content
    assert adapted.tools == [{"type": "web_search"}]


def test_responses_mcp_call_and_tool_list() -> None:
    adapted = adapt_result(Response.model_validate(response_json(MCP_OUTPUT)))
    tools = adapted.tools + adapted.discovered_tools
    content = _render(
        [{"role": "user", "content": "BTC and ETH prices?"}, *adapted.messages], tools
    )
    assert "- get_simple_price: (MCP server coingecko) Current price of coins" in content
    assert "calls tool get_simple_price (id mcp_1)" in content
    assert '"vs_currencies": "usd"' in content
    assert "tool result (get_simple_price, id mcp_1)" in content
    assert '"usd": 97000' in content
    assert "calls tool mcp_list_tools (id mcpl_1)" in content


def test_responses_function_calls_and_their_outputs_in_input() -> None:
    messages = responses_input_to_messages(
        [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "weather",
                "arguments": '{"city": "Paris"}',
            },
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "weather",
                "arguments": '{"city": "Rome"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {"type": "function_call_output", "call_id": "c2", "output": "rainy"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
        ]
    )
    # Parallel calls share one assistant message, as in the chat format.
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert len(messages[1]["tool_calls"]) == 2
    assert responses_input_to_messages("hello") == [{"role": "user", "content": "hello"}]


def test_chat_completion_object_appends_its_message() -> None:
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4.1",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city": "SF"}'},
                            }
                        ],
                    },
                }
            ],
        }
    )
    (message,) = adapt_result(completion).messages
    assert message["role"] == "assistant"
    assert message["tool_calls"][0]["function"]["name"] == "get_weather"
    assert adapt_result(completion.model_dump()).messages == [message]


def test_anthropic_message_appends_its_blocks() -> None:
    message = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Let me check."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "SF"},
                },
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )
    (appended,) = adapt_result(message).messages
    content = _render([{"role": "user", "content": "Weather?"}, appended])
    assert "Let me check." in content
    assert "calls tool get_weather (id toolu_1)" in content
    assert json.loads(content.split("arguments: ")[1].splitlines()[0]) == {"city": "SF"}


def test_strings_and_message_dicts_are_assistant_answers() -> None:
    assert adapt_result("Paris.").messages == [{"role": "assistant", "content": "Paris."}]
    assert adapt_result({"role": "assistant", "content": "Paris."}).messages == [
        {"role": "assistant", "content": "Paris."}
    ]


@pytest.mark.parametrize("bad", [42, {"unexpected": True}, ["a list"]])
def test_unreadable_results_are_rejected_clearly(bad: Any) -> None:
    with pytest.raises(BadRequestError, match="result"):
        adapt_result(bad)
