"""The Composo reference's tool-call evaluation, ported by changing the import line.

Runs offline: a ScriptedLLMServer on 127.0.0.1 plays the judge model. With a real judge,
set TRACEJUDGE_JUDGE=openai:gpt-4.1-mini (and OPENAI_API_KEY), or OPENAI_BASE_URL for a
local server; the example then uses `Composo()` as the reference does.
"""

import json
import os

from tracejudge import Composo
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.testing import Reply, ScriptedLLMServer

real = any(os.environ.get(v) for v in ("TRACEJUDGE_JUDGE", "OPENAI_API_KEY", "OPENAI_BASE_URL"))
verdict = {"explanation": "The weather tool was called for SF and used.", "applicable": True}
judge_model = (
    None if real else ScriptedLLMServer(default=Reply.text(json.dumps({**verdict, "score": 9})))
)
if judge_model is not None:
    judge_model.start()
    client = Composo(judge=OpenAICompatibleJudge("judge", base_url=judge_model.base_url))
else:
    client = Composo()

messages = [
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

tools = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get current weather for a location",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
]

with client:
    result = client.evaluate(
        messages=messages,
        tools=tools,
        criteria="Reward correct tool usage and accurate responses",
    )
    print(f"Score: {result.score}")
    print(f"Explanation: {result.explanation}")

if judge_model is not None:
    judge_model.stop()
