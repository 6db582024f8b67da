"""The Composo reference's `evaluate()` examples, ported by changing the import line.

Runs offline against a scripted judge on 127.0.0.1. With a real judge, use
`Composo()` and set TRACEJUDGE_JUDGE=openai:gpt-4.1-mini (or OPENAI_API_KEY).
"""

import json

from tracejudge import Composo
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.testing import Reply, ScriptedLLMServer

verdict = {"explanation": "The response correctly identifies Paris.", "applicable": True}
judge_model = ScriptedLLMServer(default=Reply.text(json.dumps({**verdict, "score": 10}))).start()
judge = OpenAICompatibleJudge("judge", base_url=judge_model.base_url)

with Composo(judge=judge) as client:
    messages = [
        {"role": "user", "content": "What's the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
    ]

    result = client.evaluate(
        messages=messages,
        criteria="Reward accurate and informative responses",
        tags={"environment": "production", "version": "1.0.0"},
    )
    print(f"Score: {result.score}")
    print(f"Explanation: {result.explanation}")

    results = client.evaluate(
        messages=messages,
        criteria=[
            "Reward accurate information",
            "Reward clear communication",
            "Penalize overly technical jargon",
        ],
    )
    for result in results:
        print(f"Score: {result.score} - {result.explanation}")

    response = client.evaluate(messages=messages, criteria="Your criterion", block=False)
    task_id = response["task_id"]
    print(f"Task submitted with ID: {task_id}")

judge_model.stop()
