"""The Composo reference's `evaluate_trace()` example, ported by changing the import line.

Runs offline: ScriptedLLMServers on 127.0.0.1 play the agent's model and the judge
model. With real models, drop the two servers, use `OpenAI()` and `Composo()` as the
reference does, and set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server).
"""

import json

from openai import OpenAI

from tracejudge import AgentTracer, Composo, ComposoTracer, Instruments
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.testing import Reply, ScriptedLLMServer

verdict = {"explanation": "Accurate and on topic.", "applicable": True, "score": 9}
agent_model = ScriptedLLMServer([Reply.text("Quantum computers use qubits ...")]).start()
judge_model = ScriptedLLMServer(default=Reply.text(json.dumps(verdict))).start()

# Initialize tracing
ComposoTracer.init(instruments=Instruments.OPENAI)
openai_client = OpenAI(base_url=agent_model.base_url, api_key="offline")
composo_client = Composo(judge=OpenAICompatibleJudge("judge", base_url=judge_model.base_url))

# Use AgentTracer context manager to capture trace
with AgentTracer(name="research_agent") as tracer:
    response = openai_client.chat.completions.create(
        model="gpt-4", messages=[{"role": "user", "content": "Research: quantum computing"}]
    )
    result = response.choices[0].message.content

    # Get the trace object
    trace = tracer.trace

# Evaluate the captured trace
evaluation = composo_client.evaluate_trace(
    trace=trace,
    criteria="Reward thorough research and accurate information",
    tags={"environment": "production", "agent_version": "1.0.0"},
)

print(f"Overall Score: {evaluation.overall_score}")
print(f"Explanation: {evaluation.explanation}")
composo_client.close()
agent_model.stop()
judge_model.stop()
