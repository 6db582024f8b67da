"""Run by the published `composo` client's own virtualenv (see test_composo_client.py):
the SDK's calls against a live tracejudge server, results printed as one JSON object.
Uses only the composo package and its dependencies."""

import asyncio
import json
import os
import sys
import time

import httpx
from composo import AsyncComposo, Composo
from composo.models.api_types import MultiAgentTrace
from openai.types.chat import ChatCompletion

BASE_URL, API_KEY = os.environ["SERVER_URL"], os.environ["SERVER_KEY"]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
RESULT = ChatCompletion.model_validate(
    {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1-mini",
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
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
            }
        ],
    }
)
TRACE = MultiAgentTrace.model_validate(json.loads(sys.argv[1]))


def wait(task_id):
    for _ in range(200):
        status = httpx.get(
            f"{BASE_URL}/api/v1/tasks/{task_id}", headers={"API-Key": API_KEY}
        ).json()
        if status["status"] in ("done", "failed"):
            return status
        time.sleep(0.1)
    return status


out = {}
with Composo(api_key=API_KEY, base_url=BASE_URL, model_core="align-20251111") as client:
    messages = MESSAGES + [{"role": "assistant", "content": "It is sunny."}]
    one = client.evaluate(messages=messages, criteria="Reward accurate weather reports")
    out["one"] = one.model_dump()
    several = client.evaluate(
        messages=messages, criteria=["Reward brevity", "Reward answers that name a city"]
    )
    out["several"] = [r.model_dump() for r in several]
    tools = client.evaluate(
        messages=MESSAGES, tools=TOOLS, result=RESULT, criteria="Reward correct tool calls"
    )
    out["tools"] = tools.model_dump()
    trace = client.evaluate_trace(TRACE, criteria="Reward agents that finish the task")
    out["trace"] = trace.model_dump()
    background = client.evaluate(messages=messages, criteria="Reward politeness", block=False)
    out["background"] = wait(background["task_id"])
    trace_background = client.evaluate_trace(TRACE, criteria="Reward planning", block=False)
    out["trace_background"] = wait(trace_background["task_id"])


async def run_async():
    client = AsyncComposo(api_key=API_KEY, base_url=BASE_URL)
    try:
        answer = await client.evaluate(
            messages=MESSAGES + [{"role": "assistant", "content": "Sunny."}],
            criteria="Reward async answers",
        )
        return answer.model_dump()
    finally:
        await client.aclose()


out["async"] = asyncio.run(run_async())
print(json.dumps(out))
