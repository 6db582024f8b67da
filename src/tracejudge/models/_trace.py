"""The trace: agent instances, each a sequence of model calls and child agents, in a tree."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any

from pydantic import ConfigDict, Discriminator, Field, Tag, model_validator

from tracejudge.errors import NoLLMInteractionsError
from tracejudge.models._base import EXTENSIONS, WireModel
from tracejudge.models._chat_session import interactions_from_messages
from tracejudge.models._interaction import LLMInteraction
from tracejudge.models._recorded import RecordedEvaluation

#: No NUL (see `_requests.PLAIN_TEXT_SCHEMA`; that module imports this one).
_PLAIN_TEXT: dict[str, Any] = {"pattern": "^[^\\u0000]*$"}

__all__ = [
    "NO_LLM_INTERACTIONS_HINT",
    "AgentInstance",
    "Interaction",
    "MultiAgentTrace",
    "no_llm_interactions_error",
]

#: What to check when nothing was captured: the end of every "no LLM interactions" error.
NO_LLM_INTERACTIONS_HINT = (
    "Check that ComposoTracer.init(...) ran before the model client was created and the "
    "model calls were made; that the instrumentation for your model client is installed "
    "(opentelemetry-instrumentation-openai for the openai client, for instance); and that "
    "these are the spans of the trace that made the calls (the right trace id)."
)


def no_llm_interactions_error(found: str) -> NoLLMInteractionsError:
    """The error for input that holds no LLM interaction; `found` says what it held."""
    return NoLLMInteractionsError(
        f"no LLM interactions to evaluate: {found}. {NO_LLM_INTERACTIONS_HINT}"
    )


def _interaction_kind(value: Any) -> str:
    return "agent_instance_id" if isinstance(value, str) else "llm_interaction"


#: An item of `AgentInstance.interactions`: a model call, or a child agent instance's id.
#: Tagged, so that a validation error names the field inside the interaction that is wrong.
Interaction = Annotated[
    Annotated[LLMInteraction, Tag("llm_interaction")] | Annotated[str, Tag("agent_instance_id")],
    Discriminator(_interaction_kind),
]


#: Keys of a routing decision (LangGraph supervisors, router agents).
ROUTING_KEYS = frozenset(
    {"next", "route", "goto", "next_agent", "next_node", "next_step", "destination", "route_to"}
)


def is_routing_decision(text: str | None) -> bool:
    """Whether an agent's text is a routing decision rather than an answer: a small JSON
    object (at most 3 keys) naming where the work goes next, such as a LangGraph
    supervisor's `{"next": "writer"}` or `{"next": "FINISH"}`."""
    if not text or len(text) > 500 or not text.lstrip().startswith("{"):
        return False
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(parsed, Mapping) or not 0 < len(parsed) <= 3:
        return False
    return any(isinstance(parsed.get(key), str) for key in ROUTING_KEYS)


class AgentInstance(WireModel):
    """One run of one agent: its model calls and, in order among them, its child agents' ids.

    `output` is a tracejudge extension: the agent's answer as its framework recorded it
    (an agent span's own output), or, for an agent that made no model call of its own, the
    answer of its last child that gave one (routing decisions skipped). `handoff` is one
    too: the name of the agent this one handed its work to, as a hand-off span recorded
    it (the Agents SDK's, under OpenLLMetry or OpenInference); an empty string when the
    span did not say to whom. `span_id` (the hex id of the agent's span) and
    `evaluations` (the evaluation results the trace carried for this agent, as
    `gen_ai.evaluation.result` events) are extensions too. Like the interaction
    extensions they are left out of the wire shape unless asked for, and equality
    ignores them.
    """

    model_config = ConfigDict(extra="forbid")
    _extensions = frozenset({"output", "handoff", "span_id", "evaluations"})

    # The patterns are the API's rule (`TraceRewardRequest`: no NUL in names and ids),
    # for its schema only: a converted trace keeps what its spans said.
    id: str = Field(json_schema_extra=_PLAIN_TEXT)
    name: str = Field(json_schema_extra=_PLAIN_TEXT)
    interactions: list[Interaction] = Field(default_factory=list)
    output: str | None = None
    handoff: str | None = Field(default=None, json_schema_extra=_PLAIN_TEXT)
    span_id: str | None = None
    evaluations: list[RecordedEvaluation] | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentInstance):
            return NotImplemented
        return (
            self.id == other.id
            and self.name == other.name
            and self.interactions == other.interactions
        )

    @property
    def llm_interactions(self) -> list[LLMInteraction]:
        """This agent's own model calls, in order (`interactions` without the child ids)."""
        return [i for i in self.interactions if isinstance(i, LLMInteraction)]

    @property
    def child_ids(self) -> list[str]:
        """The ids of the child agent instances this agent ran, in order (`interactions`
        without the model calls)."""
        return [i for i in self.interactions if isinstance(i, str)]

    @property
    def final_output(self) -> str | None:
        """The agent's answer: `output` when set (what its framework recorded), else the
        text of its last model answer that has text, or None."""
        if self.output is not None:
            return self.output
        for interaction in reversed(self.llm_interactions):
            text = interaction.output_text
            if text:
                return text
        return None

    @classmethod
    def from_chat_session(
        cls,
        chat_session: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        system: str | Sequence[Mapping[str, Any]] | None = None,
        id: str = "agent_instance_0",
        name: str = "default_agent",
    ) -> AgentInstance:
        """Build an agent from a chat: OpenAI or Anthropic messages, with optional tools.

        `chat_session` is either a message list or a dict with `messages` and
        optionally `tools` and `system` (Anthropic's top-level system prompt, a
        string or text blocks). Tools may be in OpenAI (``{"type": "function",
        "function": {...}}``) or Anthropic (``{"name", "description",
        "input_schema"}``) form. Each assistant message becomes one interaction whose
        input is the whole conversation before it; OpenAI `tool_calls` and Anthropic
        `tool_use` blocks become tool calls, role `tool` messages and Anthropic
        `tool_result` blocks become tool results named after their call.
        """
        chat_session = getattr(chat_session, "raw_data", chat_session)  # composo's ChatSession
        if isinstance(chat_session, Mapping):
            messages = list(chat_session.get("messages") or [])
            tools = tools if tools is not None else chat_session.get("tools")
            system = system if system is not None else chat_session.get("system")
        else:
            messages = list(chat_session)
        interactions = interactions_from_messages(messages, tools=tools, system=system)
        return cls(id=id, name=name, interactions=list(interactions))


def _find_cycle(agents: Mapping[str, AgentInstance]) -> list[str] | None:
    """A cycle of child references (`[a, b, a]`), or None; iterative, for any depth."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in agents:
        if start in state:
            continue
        path = [start]
        children = [iter(agents[start].child_ids)]
        state[start] = 1
        while children:
            child = next(children[-1], None)
            if child is None:
                state[path.pop()] = 2
                children.pop()
            elif state.get(child) == 1:
                return [*path[path.index(child) :], child]
            elif child not in state and child in agents:
                state[child] = 1
                path.append(child)
                children.append(iter(agents[child].child_ids))
    return None


class MultiAgentTrace(WireModel):
    """A tree of agent instances, the root first. This is what gets evaluated.

    `warnings` lists what the converter skipped while building the trace; it is
    not part of the wire form. `trace_id` (the OpenTelemetry trace id, hex) is a
    tracejudge extension, kept by `to_json()` and dropped by `to_wire(compat=True)`.
    """

    model_config = ConfigDict(extra="forbid")
    _extensions = frozenset({"trace_id"})

    root_agent_instance_id: str = Field(json_schema_extra=_PLAIN_TEXT)
    agent_instance_by_id: dict[Annotated[str, Field(json_schema_extra=_PLAIN_TEXT)], AgentInstance]
    warnings: list[str] = Field(default_factory=list, exclude=True, repr=False)
    trace_id: str | None = Field(default=None, json_schema_extra=_PLAIN_TEXT)

    @model_validator(mode="after")
    def _root_is_an_agent(self) -> MultiAgentTrace:
        if self.root_agent_instance_id not in self.agent_instance_by_id:
            known = ", ".join(sorted(self.agent_instance_by_id)) or "none"
            raise ValueError(
                f"root_agent_instance_id {self.root_agent_instance_id!r} is not a key of "
                f"agent_instance_by_id (known ids: {known}); add the root agent instance "
                "or fix the id"
            )
        for key, agent in self.agent_instance_by_id.items():
            if key != agent.id:
                raise ValueError(
                    f"agent_instance_by_id[{key!r}].id is {agent.id!r}; each key must be its "
                    "agent instance's id"
                )
        for agent in self.agent_instance_by_id.values():
            for position, item in enumerate(agent.interactions):
                if isinstance(item, str) and item not in self.agent_instance_by_id:
                    raise ValueError(
                        f"agent_instance_by_id[{agent.id!r}].interactions[{position}] names the "
                        f"child {item!r}, which is not an agent instance of the trace; add it "
                        "to agent_instance_by_id or remove the reference"
                    )
        cycle = _find_cycle(self.agent_instance_by_id)
        if cycle:
            path = " -> ".join(repr(agent_id) for agent_id in cycle)
            raise ValueError(
                f"the agent instances list each other as children in a cycle ({path}); an "
                "agent instance cannot be its own child or its ancestor's child"
            )
        return self

    @property
    def root(self) -> AgentInstance:
        """The root agent instance (`agent_instance_by_id[root_agent_instance_id]`)."""
        return self.agent_instance_by_id[self.root_agent_instance_id]

    def iter_agents(self) -> Iterator[AgentInstance]:
        """Every agent instance once: depth first from the root, in interaction order,
        then any instance that no other instance refers to."""
        seen: set[str] = set()
        stack = [self.root_agent_instance_id]
        while stack:
            agent_id = stack.pop()
            agent = self.agent_instance_by_id.get(agent_id)
            if agent is None or agent_id in seen:
                continue
            seen.add(agent_id)
            yield agent
            stack.extend(reversed(agent.child_ids))
        for agent_id, agent in self.agent_instance_by_id.items():
            if agent_id not in seen:
                seen.add(agent_id)
                yield agent

    def __iter__(self) -> Iterator[AgentInstance]:  # type: ignore[override]  # agents, not fields
        return self.iter_agents()

    def parent_of(self, agent_id: str) -> AgentInstance | None:
        """The agent instance that lists `agent_id` among its child ids, or None (for the
        root, an instance no other refers to, or an unknown id)."""
        for agent in self.agent_instance_by_id.values():
            if agent_id in agent.child_ids:
                return agent
        return None

    @property
    def has_llm_interactions(self) -> bool:
        """Whether any agent called a model. A trace without any model call (its agents
        made none, or nothing was captured) cannot be evaluated: evaluating it raises
        `tracejudge.errors.NoLLMInteractionsError` (see `require_llm_interactions`)."""
        return any(agent.llm_interactions for agent in self.agent_instance_by_id.values())

    def require_llm_interactions(self) -> MultiAgentTrace:
        """Return self, or raise `tracejudge.errors.NoLLMInteractionsError` (saying what to
        check) when no agent called a model: such a trace cannot be evaluated."""
        if self.has_llm_interactions:
            return self
        agents = ", ".join(f"{a.name} ({a.id})" for a in self.iter_agents())
        raise no_llm_interactions_error(f"no model call was captured for its agents: {agents}")

    @property
    def final_output(self) -> str | None:
        """The root agent's final output."""
        return self.root.final_output

    def to_wire(self, *, compat: bool = False) -> dict[str, Any]:
        """The JSON-ready dict, with tracejudge's extension fields (model, usage, times,
        error) where set. `compat=True` drops them: exactly the Composo wire shape, which
        is also what plain `model_dump(mode="json")` gives."""
        return self.model_dump(mode="json", context={EXTENSIONS: not compat})

    def to_json(self, *, indent: int | None = None, compat: bool = False) -> str:
        """The JSON text, with tracejudge's extension fields (see `to_wire`); `from_json`
        reads it back. `compat=True` gives exactly the Composo wire shape."""
        return self.model_dump_json(indent=indent, context={EXTENSIONS: not compat})

    @classmethod
    def from_json(cls, data: str | bytes) -> MultiAgentTrace:
        """A trace from its JSON text (tracejudge's or any Composo-compatible producer's)."""
        return cls.model_validate_json(data)

    def __eq__(self, other: object) -> bool:
        # Wire equality: the converter's `warnings` describe how a trace was read.
        if not isinstance(other, MultiAgentTrace):
            return NotImplemented
        return (
            self.root_agent_instance_id == other.root_agent_instance_id
            and self.agent_instance_by_id == other.agent_instance_by_id
        )

    @classmethod
    def from_agent(cls, agent: AgentInstance) -> MultiAgentTrace:
        """A one-agent trace."""
        return cls(root_agent_instance_id=agent.id, agent_instance_by_id={agent.id: agent})
