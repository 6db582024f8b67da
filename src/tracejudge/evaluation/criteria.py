"""Ready-made criteria for retrieval-augmented answers and for agents.

Import as `from tracejudge import criteria` and pass one (or a list) to
`Composo.evaluate(criteria=...)` or `Composo.evaluate_trace(criteria=...)`:

    client.evaluate(messages=..., criteria=criteria.rag_faithfulness)
    client.evaluate_trace(trace, criteria=criteria.agent)

Every criterion is a plain string beginning with "Reward", so it scores 0..1.
"""

from __future__ import annotations

__all__ = [
    "rag_faithfulness",
    "rag_completeness",
    "rag_precision",
    "rag_relevance",
    "agent_exploration",
    "agent_exploitation",
    "agent_tool_use",
    "agent_goal_pursuit",
    "agent_faithfulness",
    "rag",
    "agent",
]

# --------------------------------------------------------------------------- RAG

#: Claims are backed by the retrieved sources; nothing is invented.
rag_faithfulness = (
    "Reward responses whose every claim can be traced to the supplied source material, "
    "adding no invented facts, guesses or unsupported details"
)

#: Everything in the sources that the question needs is used.
rag_completeness = (
    "Reward responses that use all of the information in the supplied source material "
    "that is needed to answer the question fully, leaving out nothing relevant"
)

#: Only what the question needs is taken from the sources.
rag_precision = (
    "Reward responses that take from the supplied source material only what is needed "
    "to answer the question, without padding it with unrelated details"
)

#: The whole answer addresses the user's question.
rag_relevance = (
    "Reward responses in which all of the content addresses the specific question the user asked"
)

# --------------------------------------------------------------------------- agents

#: Plans that seek out missing information and try unfamiliar capabilities.
agent_exploration = (
    "Reward agents that plan well by seeking out information they lack, trying the "
    "capabilities available to them and investigating open questions instead of guessing"
)

#: Plans that make good use of what is already known.
agent_exploitation = (
    "Reward agents that plan well by building on what they already know and on the "
    "context they were given, choosing dependable steps with predictable results"
)

#: Tools called as defined, with all the relevant context in the arguments.
agent_tool_use = (
    "Reward agents that call tools as the tool definitions specify, with correct and "
    "complete arguments that draw on all of the relevant context available"
)

#: Steady progress towards what the user asked for.
agent_goal_pursuit = "Reward agents that keep working towards the goal the user set, and reach it"

#: Claims backed by the given sources or by what tools returned.
agent_faithfulness = (
    "Reward agents whose claims are all supported by the material they were given or by "
    "the results their tool calls returned, adding no invented facts or speculation"
)

#: The four RAG criteria.
rag: list[str] = [rag_faithfulness, rag_completeness, rag_precision, rag_relevance]

#: The five agent criteria.
agent: list[str] = [
    agent_exploration,
    agent_exploitation,
    agent_tool_use,
    agent_goal_pursuit,
    agent_faithfulness,
]
