"""Deterministic trace checks: criteria scored from the trace itself, with no judge model.

Many agent failures are visible in the trace: a call to a tool that was not
offered, arguments that break the tool's schema, a tool that answered with an
error, the same call made again and again, a number in the answer that no
input contained, an empty last answer. These checks find them in milliseconds,
offline, with no API key, and pass in `criteria=[...]` next to judged criteria::

    from tracejudge import Composo, checks

    result = Composo().evaluate_trace(trace, criteria=[checks.tool_arguments, checks.loops])
    scores = checks.tool_results.evaluate(trace)  # {agent_instance_id: ScoreResponse | None}

Every check scores each agent instance of the trace on its own (0..1, or None
when it does not apply, e.g. tool checks on an agent that made no tool call),
with an explanation that points at the interaction: the agent's name, the index
into `agent.llm_interactions` written `llm_interactions[i]` (0-based; followed by
`(interactions[j])`, the position in the wire list `agent.interactions`, where
child agents make the two differ), and the tool call id. An agent's own LLM
interactions are what it is scored on; its child agents are scored separately,
as agents of their own. One fault is flagged by one check: a call that
`tool_arguments` rejects, or that the agent never saw the result of because it
stopped there (`final_answer`), is not counted again by `tool_results`.

Built-in checks (instances; `budgets`, `loops_with` and `final_answer_with` build
configured ones):

* `tool_arguments` - calls name an available tool; arguments are JSON that fit its schema.
* `tool_results`   - every call got a result; results that are errors are counted.
* `loops`          - the same call repeated after it succeeded (or made 3 times), or the
  same reply repeated: the agent is stuck.
* `grounded_numbers` - numbers, dates and times in the final answer appear in the inputs.
* `final_answer`   - the agent ended with a non-empty answer, not a tool call, a refusal
  or an answer cut off at the token limit or by a content filter
  (`final_answer_with(allow_refusal=True)` for agents meant to refuse).
* `budgets(max_tokens=..., max_seconds=...)` - token and time budgets per agent.

Writing your own: `@check` turns `fn(agent) -> float | bool | (float, str) |
ScoreResponse | None` into a check (`fn(trace)` scores the whole trace), and
`from_reward` turns an `@osmosis_reward` function into one; a decorated reward
function is also a check by itself.
"""

from tracejudge.evaluation import (
    ALL,
    AgentCheck,
    Budgets,
    FinalAnswer,
    FunctionCheck,
    GroundedNumbers,
    Loops,
    RewardCheck,
    Score,
    ToolArguments,
    ToolResults,
    TraceCheck,
    as_check,
    budgets,
    check,
    final_answer,
    final_answer_with,
    from_reward,
    grounded_numbers,
    is_check,
    loops,
    loops_with,
    tool_arguments,
    tool_results,
)

__all__ = [
    "TraceCheck",
    "AgentCheck",
    "FunctionCheck",
    "RewardCheck",
    "Score",
    "ToolArguments",
    "ToolResults",
    "Loops",
    "GroundedNumbers",
    "FinalAnswer",
    "Budgets",
    "tool_arguments",
    "tool_results",
    "loops",
    "loops_with",
    "grounded_numbers",
    "final_answer",
    "final_answer_with",
    "budgets",
    "check",
    "from_reward",
    "as_check",
    "is_check",
    "ALL",
]
