"""The osmosis reference's complete example, ported by changing the import line.

`exact_match` is a local reward; `semantic_eval` asks a judge model through
`evaluate_rubric`. Offline, a ScriptedLLMServer on 127.0.0.1 plays the judge (its URL goes
in `model_info["base_url"]`, a tracejudge addition). With OPENAI_API_KEY set, the rubric
goes to OpenAI's gpt-5 exactly as in the reference (OSMOSIS_MODEL overrides the model).
"""

import json
import os

from tracejudge import evaluate_rubric, osmosis_reward, osmosis_rubric
from tracejudge.testing import Reply, ScriptedLLMServer

judge_model = None
model_info = {"provider": "openai", "model": os.environ.get("OSMOSIS_MODEL", "gpt-5")}
if not os.environ.get("OPENAI_API_KEY"):
    verdict = {"explanation": "Both say Paris is the capital.", "applicable": True, "score": 10}
    judge_model = ScriptedLLMServer(default=Reply.text(json.dumps(verdict))).start()
    model_info.update(base_url=judge_model.base_url, api_key="offline")


# Local reward function
@osmosis_reward
def exact_match(solution_str: str, ground_truth: str, extra_info: dict = None, **kwargs) -> float:
    return 1.0 if solution_str.strip() == ground_truth.strip() else 0.0


# Remote rubric evaluator
@osmosis_rubric
def semantic_eval(solution_str: str, ground_truth: str | None, extra_info: dict, **kwargs) -> float:
    return evaluate_rubric(
        rubric="Compare semantic similarity (0-1 scale)",
        solution_str=solution_str,
        ground_truth=ground_truth,
        model_info=model_info,
    )


# Usage
solution = "The capital of France is Paris"
truth = "Paris is France's capital"

local_score = exact_match(solution, truth)
semantic_score = semantic_eval(solution, truth, {})

print(f"Exact match: {local_score}")  # 0.0
print(f"Semantic: {semantic_score}")  # ~1.0
print(f"Score: {semantic_score}")

if judge_model is not None:
    judge_model.stop()
