"""An agent for the experiments' tests: it asks a ScriptedLLMServer what N plus one is.

The server answers from the question (a callable reply), so the agent is right on every
row unless `broken` names the rows where this version of it answers wrong: the planted
change of the tests and the benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer


def adder_model(broken: set[int] | None = None) -> Callable[[RecordedRequest], Reply]:
    """The model: the right sum, except on the questions about the numbers in `broken`."""

    def answer(request: RecordedRequest) -> Reply:
        question = request.json["messages"][-1]["content"]
        number = int(re.search(r"-?\d+", question).group())  # type: ignore[union-attr]
        wrong = broken is not None and number in broken
        return Reply.text(str(number + (2 if wrong else 1)))

    return answer


def make_task(server: ScriptedLLMServer) -> Callable[[Any], str]:
    """The user's agent: one OpenAI chat call per question (instrumented by the tracing)."""
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)

    def adder(question: Any) -> str:
        reply = client.chat.completions.create(
            model="adder-model", messages=[{"role": "user", "content": str(question)}]
        )
        return reply.choices[0].message.content or ""

    return adder


def rows(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "input": f"What is {i} plus one?", "expected": str(i + 1)} for i in range(n)
    ]


def correct(output: Any, expected: Any) -> bool:
    """The comparison criterion: the answer is the expected one."""
    return str(output).strip() == str(expected)


@pytest.fixture
def agent_model() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(default=adder_model()) as server:
        yield server


def noisy_judge(seed: int, salt: str, flip: float = 0.1) -> Callable[[RecordedRequest], Reply]:
    """A judge that checks the adder's sum from the transcript it is sent, and flips its
    verdict on a seeded tenth of the rows: which rows is fixed by (seed, salt, question),
    so two runs with different salts are flipped independently."""
    import json
    import random

    def answer(request: RecordedRequest) -> Reply:
        text = request.json["messages"][-1]["content"]
        found = re.search(r"What is (-?\d+) plus one\?\s*\[2\] assistant \[judged\]:\s*(\S+)", text)
        right = found is not None and found.group(2) == str(int(found.group(1)) + 1)
        question = found.group(1) if found else text
        flipped = random.Random(f"{seed}:{salt}:{question}").random() < flip
        score = 9 if right != flipped else 2
        return Reply.text(
            json.dumps({"explanation": "Checked the sum.", "applicable": True, "score": score})
        )

    return answer
