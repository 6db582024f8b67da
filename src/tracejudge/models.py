"""Wire data model: traces of agents and the answers of evaluations.

The JSON shape of every model here is the Composo wire protocol (see
ARCHITECTURE.md, "Wire protocol"): a trace produced here is accepted by a
Composo-compatible server, and a trace from one validates here. Optional fields
that are None are left out of the JSON, as the Composo SDK sends it.

tracejudge adds measurements to an `LLMInteraction` (`model`, `usage`,
`start_time`, `end_time`, `error`). Composo's models forbid unknown fields, so
the default serialisation (`model_dump()`, `model_dump_json()`) leaves them out
and is exactly the wire shape; `MultiAgentTrace.to_json()` and `to_wire()` keep
them (tracejudge reads them back), `to_wire(compat=True)` drops them. Equality
of interactions and traces compares the wire fields only, so a JSON round trip
gives an equal trace either way.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

from tracejudge.errors import NoLLMInteractionsError

__all__ = [
    "LLMToolCall",
    "LLMToolResponse",
    "LLMToolDefinition",
    "LLMInput",
    "LLMOutput",
    "TokenUsage",
    "LLMInteraction",
    "AgentInstance",
    "MultiAgentTrace",
    "JudgeUsage",
    "ScoreResponse",
    "EvaluationResponse",
    "SummaryStatistics",
    "AgentTraceResult",
    "MultiAgentTraceResponse",
    "RewardRequest",
    "TraceRewardRequest",
    "TaskResponse",
    "TaskStatus",
    "to_json_string",
]

#: Fields tracejudge adds to `LLMInteraction`; serialised only when asked for (see below).
INTERACTION_EXTENSION_FIELDS = frozenset({"model", "usage", "start_time", "end_time", "error"})

#: Serialisation context key: ``model_dump(context={EXTENSIONS: True})`` keeps the
#: extension fields (what `to_json()` and `to_wire()` do).
EXTENSIONS = "tracejudge_extensions"

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


class _Model(BaseModel):
    """Base of every model here.

    Validates instances of other pydantic models with the same shape (the official
    `composo` package's, say) through their dump, and leaves out of the JSON the
    optional fields listed in `_omit_when_none` when they are None, and the
    tracejudge extension fields listed in `_extensions` unless the serialisation
    context asks for them.
    """

    _omit_when_none: ClassVar[frozenset[str]] = frozenset()
    _extensions: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _from_other_model(cls, data: Any) -> Any:
        if isinstance(data, BaseModel) and not isinstance(data, cls):
            return data.model_dump()
        return data

    @model_serializer(mode="wrap")
    def _wire_form(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for key in self._omit_when_none:
            if key in data and data[key] is None:
                del data[key]
        if self._extensions:
            context = info.context
            keep = isinstance(context, Mapping) and bool(context.get(EXTENSIONS))
            for key in self._extensions:
                if key in data and (not keep or data[key] is None):
                    del data[key]
        return data


def to_json_string(value: Any) -> str:
    """Tool arguments, results and schemas travel as JSON strings; keep strings as they are."""
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class LLMToolCall(_Model):
    """A call to a tool, made by the model. `parameters` is the arguments as a JSON string."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    parameters: str = "{}"

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters_as_json(cls, value: Any) -> str:
        return to_json_string(value)

    def arguments(self) -> Any:
        """The arguments parsed from JSON; raises ValueError when they are not JSON."""
        return json.loads(self.parameters)


class LLMToolResponse(_Model):
    """What a tool returned for the call with the same `id`."""

    model_config = ConfigDict(extra="allow")
    _omit_when_none = frozenset({"name"})

    id: str
    response: str
    name: str | None = None

    @field_validator("response", mode="before")
    @classmethod
    def _response_as_string(cls, value: Any) -> str:
        return to_json_string(value)


class LLMToolDefinition(_Model):
    """A tool offered to the model. `parameters` is its JSON schema as a JSON string."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str = ""
    parameters: str = "{}"

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters_as_json(cls, value: Any) -> str:
        return to_json_string(value)

    @field_validator("description", mode="before")
    @classmethod
    def _description_text(cls, value: Any) -> str:
        return "" if value is None else str(value)

    def schema_dict(self) -> dict[str, Any] | None:
        """The JSON schema as a dict, or None when it is not a JSON object."""
        try:
            parsed = json.loads(self.parameters)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None


class LLMInput(_Model):
    """One message given to the model: text, a tool call it made earlier, or a tool result."""

    model_config = ConfigDict(extra="forbid")
    _omit_when_none = frozenset({"type"})

    role: str
    type: str | None = None
    content: str | LLMToolCall | LLMToolResponse


class LLMOutput(_Model):
    """One item the model produced: text or a tool call."""

    model_config = ConfigDict(extra="forbid")
    _omit_when_none = frozenset({"type"})

    type: str | None = None
    content: str | LLMToolCall


class TokenUsage(_Model):
    """Tokens used by one model call."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class LLMInteraction(_Model):
    """One call to a model: what it was given, what it answered, which tools it could use.

    `model`, `usage`, `start_time`, `end_time` (Unix seconds) and `error` are
    tracejudge extensions, filled by the converter from span attributes. They are
    not part of the wire shape: the default JSON leaves them out, `to_json()` /
    `model_dump(context={EXTENSIONS: True})` keep them, and equality ignores them
    (they measure a call; they do not make it a different call).
    """

    model_config = ConfigDict(extra="forbid")
    _omit_when_none = frozenset({"tools_available"})
    _extensions = INTERACTION_EXTENSION_FIELDS

    input_messages: list[LLMInput]
    output_messages: list[LLMOutput]
    tools_available: list[LLMToolDefinition] | None = None
    model: str | None = None
    usage: TokenUsage | None = None
    start_time: float | None = None
    end_time: float | None = None
    error: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LLMInteraction):
            return NotImplemented
        return (
            self.input_messages == other.input_messages
            and self.output_messages == other.output_messages
            and self.tools_available == other.tools_available
        )

    @property
    def duration_seconds(self) -> float | None:
        """How long the call took (`end_time - start_time`, never negative), or None when
        either time was not recorded."""
        if self.start_time is None or self.end_time is None:
            return None
        return max(0.0, self.end_time - self.start_time)

    @property
    def output_text(self) -> str:
        """The text the model produced, its text items joined by blank lines."""
        return "\n\n".join(m.content for m in self.output_messages if isinstance(m.content, str))

    @property
    def tool_calls(self) -> list[LLMToolCall]:
        """The tool calls the model made in this call, in output order."""
        return [m.content for m in self.output_messages if isinstance(m.content, LLMToolCall)]


def _interaction_kind(value: Any) -> str:
    return "agent_instance_id" if isinstance(value, str) else "llm_interaction"


#: An item of `AgentInstance.interactions`: a model call, or a child agent instance's id.
#: Tagged, so that a validation error names the field inside the interaction that is wrong.
Interaction = Annotated[
    Annotated[LLMInteraction, Tag("llm_interaction")] | Annotated[str, Tag("agent_instance_id")],
    Discriminator(_interaction_kind),
]


class AgentInstance(_Model):
    """One run of one agent: its model calls and, in order among them, its child agents' ids.

    `output` is a tracejudge extension: the agent's answer as its framework recorded it
    (an agent span's own output), or, for an agent that made no model call of its own, the
    answer of its last child that gave one (routing decisions skipped). Like the
    interaction extensions it is left out of the wire shape unless asked for, and
    equality ignores it.
    """

    model_config = ConfigDict(extra="forbid")
    _extensions = frozenset({"output"})

    id: str
    name: str
    interactions: list[Interaction] = Field(default_factory=list)
    output: str | None = None

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
        from tracejudge._chat import interactions_from_messages

        interactions = interactions_from_messages(messages, tools=tools, system=system)
        return cls(id=id, name=name, interactions=list(interactions))


class MultiAgentTrace(_Model):
    """A tree of agent instances, the root first. This is what gets evaluated.

    `warnings` lists what the converter skipped while building the trace; it is
    not part of the wire form.
    """

    model_config = ConfigDict(extra="forbid")

    root_agent_instance_id: str
    agent_instance_by_id: dict[str, AgentInstance]
    warnings: list[str] = Field(default_factory=list, exclude=True, repr=False)

    @model_validator(mode="after")
    def _root_is_an_agent(self) -> MultiAgentTrace:
        if self.root_agent_instance_id not in self.agent_instance_by_id:
            known = ", ".join(sorted(self.agent_instance_by_id)) or "none"
            raise ValueError(
                f"root_agent_instance_id {self.root_agent_instance_id!r} is not a key of "
                f"agent_instance_by_id (known ids: {known}); add the root agent instance "
                "or fix the id"
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

    def __iter__(self) -> Iterator[AgentInstance]:  # type: ignore[override]
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


# --------------------------------------------------------------------------- answers


class JudgeUsage(_Model):
    """What scoring cost: judge calls, cache hits, tokens and wall time."""

    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    latency_seconds: float = 0.0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            latency_seconds=self.latency_seconds + other.latency_seconds,
        )


class ScoreResponse(_Model):
    """A score in 0..1 (None: the criterion does not apply) with its explanation."""

    score: float | None = None
    explanation: str
    cleaned_explanation: str | None = None
    usage: JudgeUsage | None = None

    _omit_when_none = frozenset({"cleaned_explanation", "usage"})

    @field_validator("score")
    @classmethod
    def _score_in_range(cls, value: float | None) -> float | None:
        if value is None or math.isnan(value):
            return None
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"score must be between 0 and 1 or null, got {value}")
        return value


class EvaluationResponse(ScoreResponse):
    """The answer of `Composo.evaluate()` for one criterion."""

    criterion: str | None = None

    _omit_when_none = frozenset({"cleaned_explanation", "usage", "criterion"})


class SummaryStatistics(_Model):
    """Median, min, max and population standard deviation of the non-null scores of one
    agent name's instances; all None when none of them got a score."""

    median: float | None = None
    min: float | None = None
    max: float | None = None
    std: float | None = None

    @classmethod
    def of(cls, scores: Sequence[float | None]) -> SummaryStatistics:
        """Statistics of the scores that are not None (population std)."""
        values = [s for s in scores if s is not None]
        if not values:
            return cls()
        return cls(
            median=statistics.median(values),
            min=min(values),
            max=max(values),
            std=statistics.pstdev(values),
        )


class AgentTraceResult(_Model):
    """The results of one criterion for every instance of one agent name: each instance's
    `ScoreResponse` by instance id (None where the criterion does not apply), and their
    `summary_statistics`."""

    agent_name: str
    results_by_agent_instance_id: dict[str, ScoreResponse | None]
    summary_statistics: SummaryStatistics | None = None


class MultiAgentTraceResponse(_Model):
    """The answer of `Composo.evaluate_trace()` for one criterion.

    Carries the wire fields (`request_id`, `results_by_agent_name`) and the
    seed SDK's flat fields: `agent_scores` (agent instance id -> score),
    `overall_score` (mean of the non-null agent scores) and `explanation`.
    """

    request_id: str
    results_by_agent_name: dict[str, AgentTraceResult]
    agent_scores: dict[str, float | None] = Field(default_factory=dict)
    overall_score: float | None = None
    explanation: str = ""
    criterion: str = ""
    usage: JudgeUsage | None = None

    _omit_when_none = frozenset({"usage"})

    def __str__(self) -> str:
        return self.model_dump_json(indent=2)


# --------------------------------------------------------------------------- requests

TaskStatus = Literal["pending", "running", "succeeded", "failed"]


_Tag = Annotated[str, Field(max_length=64)]


class _RequestBase(_Model):
    evaluation_criteria: str | None = Field(default=None, min_length=1, max_length=4096)
    evaluator_name: str | None = Field(default=None, min_length=1, max_length=255)
    model_core: str | None = None
    tags: dict[_Tag, _Tag] | None = None
    trace_id: str | None = None
    data_retention: Literal["standard", "none"] | None = None

    @model_validator(mode="after")
    def _one_of_criteria_or_evaluator(self) -> _RequestBase:
        if (self.evaluation_criteria is None) == (self.evaluator_name is None):
            raise ValueError("give exactly one of 'evaluation_criteria' and 'evaluator_name'")
        return self


class RewardRequest(_RequestBase):
    """Body of POST /api/v1/evals/reward."""

    model_config = ConfigDict(populate_by_name=True)

    messages: list[dict[str, Any]] = Field(min_length=2)
    system: str | None = Field(
        default=None, validation_alias=AliasChoices("system", "system_message")
    )
    tools: list[dict[str, Any]] | None = None
    evaluate_latest: bool = True
    explanation_cleaning: Literal["end_user"] | None = None


class TraceRewardRequest(_RequestBase):
    """Body of POST /api/v1/evals/trace."""

    trace: MultiAgentTrace
    evaluate_latest: bool = False

    @field_validator("evaluate_latest")
    @classmethod
    def _must_be_false(cls, value: bool) -> bool:
        if value:
            raise ValueError("evaluate_latest must be false for trace evaluations")
        return value

    @field_validator("trace")
    @classmethod
    def _has_llm_interactions(cls, trace: MultiAgentTrace) -> MultiAgentTrace:
        return trace.require_llm_interactions()  # its error is a ValueError: a validation error


class TaskResponse(_Model):
    """Status of a background evaluation."""

    task_id: str
    status: TaskStatus
    result: dict[str, Any] | list[dict[str, Any]] | None = None
    error: str | None = None
