"""A traced agent and its judge on a local OpenAI-compatible server: Ollama, vLLM or
llama.cpp's `llama-server`.

    # Ollama (ollama serve; ollama pull llama3.1)
    OPENAI_BASE_URL=http://localhost:11434/v1 AGENT_MODEL=llama3.1 \\
        TRACEJUDGE_JUDGE_MODEL=llama3.1 python examples/local_models.py
    # vLLM (vllm serve Qwen/Qwen2.5-7B-Instruct)
    OPENAI_BASE_URL=http://localhost:8000/v1 AGENT_MODEL=Qwen/Qwen2.5-7B-Instruct \\
        TRACEJUDGE_JUDGE_MODEL=Qwen/Qwen2.5-7B-Instruct python examples/local_models.py
    # llama.cpp (llama-server -m model.gguf --port 8080)
    OPENAI_BASE_URL=http://localhost:8080/v1 python examples/local_models.py

With OPENAI_BASE_URL set, `Composo()` picks the OpenAI-compatible judge at that URL by
itself (TRACEJUDGE_JUDGE_MODEL names its model); no key is needed for a local server.
Without it, a ScriptedLLMServer on 127.0.0.1 stands in for the local server, playing both
the agent's model and the judge.
"""

import json
import os

from openai import OpenAI

from tracejudge import AgentTracer, Composo, ComposoTracer, Instruments, checks
from tracejudge.testing import Reply, ScriptedLLMServer

base_url = os.environ.get("OPENAI_BASE_URL")
local = None
if base_url is None:
    verdict = {"explanation": "Correct and concise.", "applicable": True, "score": 9}
    local = ScriptedLLMServer(
        [Reply.text("Water boils at 100 C at sea level.")], default=Reply.text(json.dumps(verdict))
    ).start()
    base_url = local.base_url
    os.environ["OPENAI_BASE_URL"] = base_url  # what Composo() reads to find the judge

ComposoTracer.init(instruments=Instruments.OPENAI)
agent_client = OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "local"))

with AgentTracer(name="science_tutor") as tracer:
    answer = agent_client.chat.completions.create(
        model=os.environ.get("AGENT_MODEL", "llama3.1"),
        messages=[{"role": "user", "content": "At what temperature does water boil?"}],
    )
    print("Answer:", answer.choices[0].message.content)

with Composo() as client:
    print(client)  # which judge: the server at OPENAI_BASE_URL
    results = client.evaluate_trace(
        tracer.trace,
        criteria=["Reward accurate, concise answers", checks.final_answer],
    )
    for result in results:
        print(f"Overall Score: {result.overall_score} ({result.criterion})")

if local is not None:
    local.stop()
