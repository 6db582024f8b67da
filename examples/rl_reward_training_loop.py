"""Rewards for reinforcement learning: a training loop scoring each batch of rollouts.

Each rollout gets a local reward (`@osmosis_reward`: the answer's number matches the
ground truth) plus a judged one (`@osmosis_rubric` through `evaluate_rubric`: is the
reasoning sound), mixed 50/50. A batch's rubric calls run concurrently through the batch
API (`tracejudge.rewards.batch_rewards`): order kept, concurrency bounded, and an item
whose judge call failed comes back with its error instead of failing the batch (it gets
the local reward alone here).

Offline, the policy's completions are canned and a ScriptedLLMServer on 127.0.0.1 plays
the judge. With OPENAI_API_KEY set, the rubric is judged by OpenAI (REWARD_MODEL, default
gpt-4.1-mini); with OPENAI_BASE_URL, by that OpenAI-compatible server (vLLM, Ollama, ...).
"""

import json
import os
import re
import statistics

from tracejudge import evaluate_rubric, osmosis_reward, osmosis_rubric
from tracejudge.rewards import batch_rewards
from tracejudge.testing import Reply, ScriptedLLMServer

model_info = {"provider": "openai", "model": os.environ.get("REWARD_MODEL", "gpt-4.1-mini")}
judge_model = None
if os.environ.get("OPENAI_BASE_URL"):
    model_info.update(base_url=os.environ["OPENAI_BASE_URL"], api_key="local")
elif not os.environ.get("OPENAI_API_KEY"):

    def grade(request) -> Reply:
        """The scripted judge: sound reasoning shows its working before the answer."""
        sound = b"= " in request.body and b"Answer:" in request.body
        score = 9 if sound else 3
        verdict = {"explanation": "Shows its work." if sound else "No working shown."}
        return Reply.text(json.dumps({**verdict, "applicable": True, "score": score}))

    judge_model = ScriptedLLMServer(default=grade).start()
    model_info.update(base_url=judge_model.base_url, api_key="offline")


@osmosis_reward
def correct_number(
    solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs
) -> float:
    numbers = re.findall(r"-?\d+(?:\.\d+)?", solution_str)
    return 1.0 if numbers and numbers[-1] == ground_truth else 0.0


@osmosis_rubric
def sound_reasoning(
    solution_str: str, ground_truth: str | None, extra_info: dict, **kwargs
) -> float:
    return evaluate_rubric(
        rubric="Reward step-by-step reasoning whose arithmetic is correct",
        solution_str=solution_str,
        original_input=extra_info["prompt"],
        ground_truth=ground_truth,
        model_info=model_info,
    )


def rewards_for(batch: list[dict]) -> list[float]:
    """One reward per rollout: half exact answer, half judged reasoning."""
    judged = batch_rewards(
        sound_reasoning,
        [(r["completion"], r["answer"], {"prompt": r["prompt"]}) for r in batch],
        concurrency=8,
    )
    rewards = []
    for rollout, outcome in zip(batch, judged, strict=True):
        local = correct_number(rollout["completion"], rollout["answer"])
        if outcome.error is not None:
            print(f"  judge failed for {rollout['prompt']!r}: {outcome.error}")
            rewards.append(local)
        else:
            rewards.append(0.5 * local + 0.5 * (outcome.score or 0.0))
    return rewards


# The policy's rollouts, step by step (a real loop samples them from the model).
steps = [
    [
        {"prompt": "12 * 3?", "completion": "About 40.", "answer": "36"},
        {"prompt": "7 + 8?", "completion": "7 + 8 = 15. Answer: 15", "answer": "15"},
    ],
    [
        {"prompt": "12 * 3?", "completion": "12 * 3 = 36. Answer: 36", "answer": "36"},
        {"prompt": "9 - 4?", "completion": "9 - 4 = 5. Answer: 5", "answer": "5"},
    ],
]

for step, batch in enumerate(steps):
    rewards = rewards_for(batch)
    # policy.update(batch, rewards)  <- your trainer's step
    print(f"step {step}: rewards {[round(r, 3) for r in rewards]}")
    print(f"Score: {statistics.fmean(rewards):.3f} (mean reward)")

if judge_model is not None:
    judge_model.stop()
