"""What counts as a tool error and as a refusal."""

from __future__ import annotations

import json

import pytest

from tracejudge.evaluation._checks.text import empty_result, refusal, tool_error


@pytest.mark.parametrize(
    "result",
    [
        json.dumps({"error": "upstream timeout"}),
        json.dumps({"error": {"code": 42, "message": "bad"}}),
        json.dumps({"errors": ["x"]}),
        json.dumps({"status": 503}),
        json.dumps({"status_code": 404, "body": ""}),
        json.dumps({"status": "error", "data": None}),
        json.dumps({"code": 429, "message": "slow down"}),
        json.dumps({"success": False}),
        json.dumps({"isError": True, "content": []}),
        json.dumps("Error: no such city"),
        'Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: 1',
        "ValueError: invalid literal for int()",
        "requests.exceptions.HTTPError: 500 Server Error",
        "Error: city not found",
        "ERROR - backend unavailable",
        "An error occurred while fetching",
        "Failed to connect to api.example.org",
        "Request timed out after 30 s",
        "HTTP 503 Service Unavailable",
        "HTTP/1.1 404 Not Found",
        "<html><title>502 Bad Gateway</title></html>",
        "404 Client Error: Not Found for url: https://x",
        "Tool get_weather not found",
        "City not found.",
        "Internal Server Error",
        json.dumps({"detail": "Not Found"}),
        json.dumps({"detail": [{"loc": ["body", "city"], "msg": "field required"}]}),
        json.dumps({"message": "Error: bad key"}),
        "User ID 42 does not exist",
    ],
)
def test_error_results_are_recognised(result: str) -> None:
    assert tool_error(result)


@pytest.mark.parametrize(
    "result",
    [
        "",
        "[]",
        json.dumps({"temperature": 18, "error": None}),
        json.dumps({"results": ["How to fix error 404 Not Found", "Traceback tips"]}),
        json.dumps({"status": "ok", "code": 200}),
        json.dumps({"code": 404}),  # a code alone may be a product code
        "San Francisco weather today: 65 F and sunny.",
        "The page explains error handling in Python.",
        "Result: 42 (the error bars are small)",
        "x" * 400 + " 404 Not Found",  # deep in content, not the result's own status
        json.dumps({"detail": "Paris is sunny"}),
        json.dumps({"message": "hello", "temperature": 3}),
    ],
)
def test_ordinary_results_are_not_errors(result: str) -> None:
    assert tool_error(result) is None


@pytest.mark.parametrize(
    "answer",
    [
        "I'm sorry, but I can't help with that.",
        "Sorry, I don't have that information.",
        "I cannot access the weather service.",
        "Unfortunately, I was unable to find it.",
        "I am unable to complete this request.",
        "As an AI, I do not have real-time data.",
        "My apologies - the data is unavailable.",
    ],
)
def test_refusals_are_recognised(answer: str) -> None:
    assert refusal(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "It is 18 °C and sunny in Paris.",
        "The tool says the service is unable to scale past 10 nodes? No: it scales to 50.",
        "Sorrento is sunny today.",
    ],
)
def test_answers_are_not_refusals(answer: str) -> None:
    assert refusal(answer) is None


def test_an_anthropic_is_error_result_is_an_error() -> None:
    # from_chat_session marks an Anthropic tool_result with is_error as "[error] ...".
    assert tool_error("[error] service down")


@pytest.mark.parametrize(
    "result",
    [
        "",
        "[]",
        "null",
        json.dumps({"results": []}),
        json.dumps({"items": [], "count": 0}),
        json.dumps({"hits": {"total": {"value": 0}, "hits": []}}),
        json.dumps({"total": 0}),
        "No results found.",
        "nothing found",
    ],
)
def test_empty_results_are_recognised(result: str) -> None:
    assert empty_result(result)


@pytest.mark.parametrize(
    "result",
    [json.dumps({"temperature": 18}), json.dumps({"results": ["a"]}), "Paris: sunny", "0.5"],
)
def test_results_with_content_are_not_empty(result: str) -> None:
    assert not empty_result(result)


@pytest.mark.parametrize(
    "answer",
    [
        "It is 18 °C in Paris. I could not check tomorrow's forecast, though.",
        "Here are three hotels.\nI can't book them for you, but the links are below.",
    ],
)
def test_a_caveat_after_a_real_answer_is_not_a_refusal(answer: str) -> None:
    assert refusal(answer) is None
