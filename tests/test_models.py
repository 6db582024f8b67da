"""The wire data model: the exact Composo JSON shape, round trips, validation errors,
chat sessions -> interactions, and the helpers users expect."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from tracejudge.convert import traces_from_otlp
from tracejudge.models import (
    EXTENSIONS,
    INTERACTION_EXTENSION_FIELDS,
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
    MultiAgentTrace,
    RewardRequest,
    TokenUsage,
    TraceRewardRequest,
    to_json_string,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# The trace body the published composo client sends (ARCHITECTURE.md, "Wire protocol").
SAMPLE_TRACE: dict[str, Any] = {
    "root_agent_instance_id": "o1",
    "agent_instance_by_id": {
        "o1": {
            "id": "o1",
            "name": "o",
            "interactions": [
                {
                    "input_messages": [{"role": "user", "content": "u"}],
                    "output_messages": [{"type": "text", "content": "x"}],
                }
            ],
        }
    },
}


SAMPLE_INTERACTION = LLMInteraction.model_validate(
    SAMPLE_TRACE["agent_instance_by_id"]["o1"]["interactions"][0]
)


def _call(call_id: str, name: str, **arguments: Any) -> LLMToolCall:
    return LLMToolCall(id=call_id, name=name, parameters=arguments)


WEATHER_TOOL = LLMToolDefinition(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def team_trace() -> MultiAgentTrace:
    """orchestrator -> (researcher -> fact_checker), writer; the researcher makes two
    parallel tool calls and gets both results back."""
    sf, ny = _call("call_1", "get_weather", city="SF"), _call("call_2", "get_weather", city="NY")
    ask = LLMInput(role="user", type="text", content="Weather in SF and NY?")
    research = [
        LLMInteraction(
            input_messages=[ask],
            output_messages=[
                LLMOutput(type="tool_call", content=sf),
                LLMOutput(type="tool_call", content=ny),
            ],
            tools_available=[WEATHER_TOOL],
        ),
        "fact_checker#1",
        LLMInteraction(
            input_messages=[
                ask,
                LLMInput(role="assistant", type="tool_call", content=sf),
                LLMInput(role="assistant", type="tool_call", content=ny),
                LLMInput(
                    role="tool",
                    type="tool_response",
                    content=LLMToolResponse(id="call_1", response="65F", name="get_weather"),
                ),
                LLMInput(
                    role="tool",
                    type="tool_response",
                    content=LLMToolResponse(id="call_2", response='{"temp": 50}'),
                ),
            ],
            output_messages=[LLMOutput(type="text", content="SF 65F, NY 50F.")],
            tools_available=[WEATHER_TOOL],
        ),
    ]

    def text(prompt: str, answer: str) -> LLMInteraction:
        return LLMInteraction(
            input_messages=[LLMInput(role="user", content=prompt)],
            output_messages=[LLMOutput(type="text", content=answer)],
        )

    agents = [
        AgentInstance(
            id="orch#1",
            name="orchestrator",
            interactions=[text("plan", "Plan."), "research#1", "writer#1", text("sum", "Done.")],
        ),
        AgentInstance(id="research#1", name="researcher", interactions=research),
        AgentInstance(id="fact_checker#1", name="fact_checker", interactions=[text("c", "ok")]),
        AgentInstance(id="writer#1", name="writer", interactions=[text("w", "Report.")]),
    ]
    return MultiAgentTrace(
        root_agent_instance_id="orch#1", agent_instance_by_id={a.id: a for a in agents}
    )


def with_measurements(trace: MultiAgentTrace) -> MultiAgentTrace:
    """A copy whose interactions carry tracejudge's extension fields, as converted ones do."""
    copy = trace.model_copy(deep=True)
    for agent in copy.agent_instance_by_id.values():
        for n, interaction in enumerate(agent.llm_interactions):
            interaction.model = "gpt-4.1-mini"
            interaction.usage = TokenUsage(input_tokens=10, output_tokens=2, total_tokens=12)
            interaction.start_time, interaction.end_time = 1000.0 + n, 1000.5 + n
    return copy


# --------------------------------------------------------------------------- wire shape


def test_the_published_clients_trace_body_validates_and_dumps_back_exactly() -> None:
    trace = MultiAgentTrace.model_validate(SAMPLE_TRACE)
    assert trace.model_dump(mode="json") == SAMPLE_TRACE
    assert json.loads(trace.model_dump_json()) == SAMPLE_TRACE
    assert trace.to_wire() == trace.to_wire(compat=True) == SAMPLE_TRACE
    assert json.loads(trace.to_json()) == SAMPLE_TRACE
    assert MultiAgentTrace.from_json(json.dumps(SAMPLE_TRACE)) == trace


def test_every_model_has_exactly_the_wire_keys() -> None:
    wire = team_trace().model_dump(mode="json")
    assert list(wire) == ["root_agent_instance_id", "agent_instance_by_id"]
    researcher = wire["agent_instance_by_id"]["research#1"]
    assert list(researcher) == ["id", "name", "interactions"]
    first, child, second = researcher["interactions"]
    assert child == "fact_checker#1"  # a child agent is its instance id, in place
    assert list(first) == ["input_messages", "output_messages", "tools_available"]
    assert first["input_messages"] == [
        {"role": "user", "type": "text", "content": "Weather in SF and NY?"}
    ]
    assert first["output_messages"][0] == {
        "type": "tool_call",
        "content": {"id": "call_1", "name": "get_weather", "parameters": '{"city": "SF"}'},
    }
    assert first["tools_available"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": '{"type": "object", "properties": {"city": {"type": "string"}}}',
        }
    ]
    results = [m["content"] for m in second["input_messages"] if m["role"] == "tool"]
    assert results == [
        {"id": "call_1", "response": "65F", "name": "get_weather"},
        {"id": "call_2", "response": '{"temp": 50}'},  # no name: the key is left out
    ]
    # Optional fields that are None are left out, as the composo client sends them.
    orchestrator = wire["agent_instance_by_id"]["orch#1"]["interactions"][0]
    assert orchestrator == {
        "input_messages": [{"role": "user", "content": "plan"}],
        "output_messages": [{"type": "text", "content": "Plan."}],
    }


def test_tool_arguments_responses_and_schemas_travel_as_json_strings() -> None:
    call = LLMToolCall(id="c", name="f", parameters={"a": [1, 2], "b": "é"})
    assert call.parameters == '{"a": [1, 2], "b": "é"}'
    assert call.arguments() == {"a": [1, 2], "b": "é"}
    assert LLMToolCall(id="c", name="f", parameters='{"raw": true}').parameters == '{"raw": true}'
    assert LLMToolResponse(id="c", response={"ok": True}).response == '{"ok": true}'
    definition = LLMToolDefinition(name="f", description=None, parameters={"type": "object"})
    assert (definition.description, definition.parameters) == ("", '{"type": "object"}')
    assert definition.schema_dict() == {"type": "object"}


@pytest.mark.parametrize(
    "value",
    [
        {"city": "Paris", "days": [1, 2.5, None, True], "note": 'é\n"q"'},
        [1, {"nan": float("nan"), "inf": float("inf")}],
        {1: "int key", None: 2, 2.5: 3, False: 4},
        (1, ("a", {"b": {}})),
        {"big": 10**30, "when": date(2020, 1, 2)},  # not JSON: `str` of it, as json.dumps does
        12,
    ],
)
def test_json_strings_are_what_json_dumps_gives(value: Any) -> None:
    assert to_json_string(value) == json.dumps(value, ensure_ascii=False, default=str)


def test_a_cycle_becomes_its_text_and_a_very_deep_value_an_error() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    assert to_json_string(cycle) == "{'self': {...}}"
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper"):
        to_json_string(deep)


def test_message_contents_keep_their_kind() -> None:
    result = LLMInput.model_validate(
        {"role": "tool", "content": {"id": "1", "response": "r", "name": "search"}}
    )
    assert isinstance(result.content, LLMToolResponse)
    call = LLMInput.model_validate(
        {"role": "assistant", "content": {"id": "1", "name": "search", "parameters": "{}"}}
    )
    assert isinstance(call.content, LLMToolCall)
    assert isinstance(LLMOutput.model_validate({"content": "text"}).content, str)


# --------------------------------------------------------------------------- round trips


def test_json_round_trip_gives_an_equal_trace() -> None:
    trace = team_trace()
    assert MultiAgentTrace.model_validate_json(trace.model_dump_json()) == trace
    assert MultiAgentTrace.model_validate(trace.model_dump()) == trace
    assert MultiAgentTrace.from_json(trace.to_json(indent=2)) == trace
    assert MultiAgentTrace.from_json(trace.to_json()).to_wire() == trace.to_wire()


def test_extension_fields_are_kept_by_to_json_and_dropped_from_the_wire_shape() -> None:
    measured = with_measurements(team_trace())
    interaction = measured.root.llm_interactions[0]
    full = measured.to_wire()["agent_instance_by_id"]["orch#1"]["interactions"][0]
    assert full["model"] == "gpt-4.1-mini" and full["usage"]["total_tokens"] == 12
    assert (full["start_time"], full["end_time"]) == (1000.0, 1000.5)
    assert "error" not in full  # unset extensions are left out too

    for wire in (
        measured.to_wire(compat=True),
        measured.model_dump(mode="json"),
        json.loads(measured.model_dump_json()),
        json.loads(measured.to_json(compat=True)),
    ):
        for agent in wire["agent_instance_by_id"].values():
            for item in agent["interactions"]:
                if isinstance(item, dict):
                    assert not INTERACTION_EXTENSION_FIELDS & set(item)
    assert interaction.model_dump(context={EXTENSIONS: True})["model"] == "gpt-4.1-mini"

    restored = MultiAgentTrace.from_json(measured.to_json())
    assert restored.root.llm_interactions[0].usage == interaction.usage
    assert restored.root.llm_interactions[0].start_time == 1000.0
    # Equality is wire equality: measurements and converter warnings do not count.
    assert MultiAgentTrace.model_validate_json(measured.model_dump_json()) == measured
    assert measured == team_trace()
    measured.warnings.append("read from a broken file")
    assert measured == team_trace()
    different = team_trace()
    different.root.llm_interactions[0].output_messages[0].content = "Another plan."
    assert different != team_trace()


# --------------------------------------------------------------------------- validation


def _error_locations(data: Any) -> list[str]:
    with pytest.raises(ValidationError) as raised:
        MultiAgentTrace.model_validate(data)
    return [".".join(str(part) for part in error["loc"]) for error in raised.value.errors()]


def test_validation_errors_name_the_field() -> None:
    data = json.loads(json.dumps(SAMPLE_TRACE))
    del data["agent_instance_by_id"]["o1"]["name"]
    assert _error_locations(data) == ["agent_instance_by_id.o1.name"]

    data = json.loads(json.dumps(SAMPLE_TRACE))
    del data["agent_instance_by_id"]["o1"]["interactions"][0]["input_messages"][0]["content"]
    assert _error_locations(data) == [
        "agent_instance_by_id.o1.interactions.0.llm_interaction.input_messages.0.content"
    ]

    data = json.loads(json.dumps(SAMPLE_TRACE))
    data["agent_instance_by_id"]["o1"]["interactions"][0]["latency"] = 3
    assert _error_locations(data) == [
        "agent_instance_by_id.o1.interactions.0.llm_interaction.latency"
    ]

    data = json.loads(json.dumps(SAMPLE_TRACE))
    data["agent_instance_by_id"]["o1"]["interactions"].append(7)
    assert _error_locations(data) == ["agent_instance_by_id.o1.interactions.1.llm_interaction"]

    with pytest.raises(ValidationError, match="root_agent_instance_id 'nope'"):
        MultiAgentTrace.model_validate({**SAMPLE_TRACE, "root_agent_instance_id": "nope"})
    with pytest.raises(ValidationError, match="agent_instance_by_id"):
        MultiAgentTrace.model_validate({"root_agent_instance_id": "o1"})


def test_trace_requests_need_an_llm_interaction_and_short_tags() -> None:
    empty = MultiAgentTrace.from_agent(AgentInstance(id="a", name="a"))
    assert not empty.has_llm_interactions
    with pytest.raises(ValidationError, match="no LLM interactions"):
        TraceRewardRequest(trace=empty, evaluation_criteria="Reward x")
    request = TraceRewardRequest(trace=SAMPLE_TRACE, evaluation_criteria="Reward x", tags={})
    assert request.trace.has_llm_interactions
    with pytest.raises(ValidationError) as raised:
        TraceRewardRequest(trace=SAMPLE_TRACE, evaluation_criteria="Reward x", tags={"k": "v" * 65})
    assert raised.value.errors()[0]["loc"][0] == "tags"
    with pytest.raises(ValidationError, match="evaluate_latest"):
        TraceRewardRequest(trace=SAMPLE_TRACE, evaluation_criteria="Reward x", evaluate_latest=True)
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    reward = RewardRequest(messages=messages, system_message="Be brief.", evaluator_name="e")
    assert reward.system == "Be brief."


def test_wire_requests_check_criteria_and_tags_as_the_client_does() -> None:
    from tracejudge.errors import BadRequestError
    from tracejudge.models import MAX_CRITERION_LENGTH, validate_tags

    trace = {"trace": SAMPLE_TRACE}
    with pytest.raises(ValidationError, match="evaluation_criteria is empty"):
        TraceRewardRequest(**trace, evaluation_criteria="   ")
    too_long = "Reward " + "x" * MAX_CRITERION_LENGTH
    with pytest.raises(ValidationError, match=f"the limit is {MAX_CRITERION_LENGTH}"):
        TraceRewardRequest(**trace, evaluation_criteria=too_long)
    longest = too_long[:MAX_CRITERION_LENGTH]
    assert TraceRewardRequest(**trace, evaluation_criteria=longest).evaluation_criteria == longest
    # Numbers and booleans become strings, on the wire as in the client.
    request = TraceRewardRequest(**trace, evaluation_criteria="Reward x", tags={"n": 3, "ok": True})
    assert request.tags == {"n": "3", "ok": "True"} == validate_tags({"n": 3, "ok": True})
    with pytest.raises(BadRequestError) as direct:
        validate_tags({"run": {"id": 1}})
    with pytest.raises(ValidationError) as wire:
        TraceRewardRequest(**trace, evaluation_criteria="Reward x", tags={"run": {"id": 1}})
    assert wire.value.errors()[0]["loc"] == ("tags",)
    assert str(direct.value) in str(wire.value)


# --------------------------------------------------------------------------- helpers


def test_iteration_is_depth_first_in_interaction_order() -> None:
    trace = team_trace()
    order = ["orchestrator", "researcher", "fact_checker", "writer"]
    assert [a.name for a in trace.iter_agents()] == order
    assert [a.name for a in trace] == order
    assert trace.root.child_ids == ["research#1", "writer#1"]
    assert trace.parent_of("fact_checker#1").name == "researcher"  # type: ignore[union-attr]
    assert trace.parent_of("orch#1") is None
    # An instance nothing refers to still comes out, after the tree.
    orphan = AgentInstance(id="orphan", name="orphan")
    loose = trace.model_copy(update={"agent_instance_by_id": {**trace.agent_instance_by_id}})
    loose.agent_instance_by_id["orphan"] = orphan
    assert [a.name for a in loose][-1] == "orphan"


def test_final_output_is_the_last_text_answer() -> None:
    trace = team_trace()
    assert trace.final_output == trace.root.final_output == "Done."
    researcher = trace.agent_instance_by_id["research#1"]
    assert researcher.final_output == "SF 65F, NY 50F."
    calls_only = AgentInstance(id="c", name="c", interactions=[researcher.llm_interactions[0], "x"])
    assert calls_only.final_output is None
    assert AgentInstance(id="e", name="e").final_output is None
    first = researcher.llm_interactions[0]
    assert [c.id for c in first.tool_calls] == ["call_1", "call_2"] and first.output_text == ""


# --------------------------------------------------------------------------- chat sessions

OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get current weather for a location",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
]


OPENAI_MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in SF and LA?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{city}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": f'{{"location": "{city}"}}'},
            }
            for city in ("SF", "LA")
        ],
    },
    {"role": "tool", "tool_call_id": "call_SF", "content": '{"temp": 65}'},
    {"role": "tool", "tool_call_id": "call_LA", "content": [{"type": "text", "text": "75"}]},
    {"role": "assistant", "content": "SF 65, LA 75."},
]


def test_from_chat_session_reads_openai_messages_with_parallel_tool_calls() -> None:
    messages = OPENAI_MESSAGES
    agent = AgentInstance.from_chat_session({"messages": messages, "tools": OPENAI_TOOLS})
    assert (agent.id, agent.name) == ("agent_instance_0", "default_agent")
    first, second = agent.interactions
    assert isinstance(first, LLMInteraction) and isinstance(second, LLMInteraction)
    assert [(m.role, m.content) for m in first.input_messages] == [
        ("system", "You are helpful."),
        ("user", "Weather in SF and LA?"),
    ]
    assert [(c.id, c.name, c.arguments()) for c in first.tool_calls] == [
        ("call_SF", "get_weather", {"location": "SF"}),
        ("call_LA", "get_weather", {"location": "LA"}),
    ]
    assert first.output_text == ""
    tail = second.input_messages[2:]
    assert [(m.role, m.type) for m in tail] == [
        ("assistant", "tool_call"),
        ("assistant", "tool_call"),
        ("tool", "tool_response"),
        ("tool", "tool_response"),
    ]
    assert [(m.content.id, m.content.name, m.content.response) for m in tail[2:]] == [
        ("call_SF", "get_weather", '{"temp": 65}'),
        ("call_LA", "get_weather", "75"),
    ]
    assert second.output_text == "SF 65, LA 75."
    (tool,) = second.tools_available or []
    assert (tool.name, tool.description) == ("get_weather", "Get current weather for a location")
    assert json.loads(tool.parameters) == OPENAI_TOOLS[0]["function"]["parameters"]
    # The same list given directly, with the tools as a keyword, gives the same agent.
    direct = AgentInstance.from_chat_session(messages, tools=OPENAI_TOOLS, id="a", name="n")
    assert direct.interactions == agent.interactions and (direct.id, direct.name) == ("a", "n")


def test_from_chat_session_reads_anthropic_messages_and_top_level_system() -> None:
    session = {
        "system": [{"type": "text", "text": "Be brief."}],
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "messages": [
            {"role": "user", "content": "SF and NY?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "two calls", "signature": "s"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "SF"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "get_weather",
                        "input": {"city": "NY"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "65F"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "timeout"}],
                        "is_error": True,
                    },
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "SF is 65F."}]},
        ],
    }
    first, second = AgentInstance.from_chat_session(session).llm_interactions
    assert [(m.role, m.content) for m in first.input_messages] == [
        ("system", "Be brief."),
        ("user", "SF and NY?"),
    ]
    assert [o.type for o in first.output_messages] == ["text", "tool_call", "tool_call"]
    assert first.output_text == "Checking."
    assert [(c.id, c.arguments()) for c in first.tool_calls] == [
        ("toolu_1", {"city": "SF"}),
        ("toolu_2", {"city": "NY"}),
    ]
    results = [m.content for m in second.input_messages if m.role == "tool"]
    assert [(r.id, r.name, r.response) for r in results] == [
        ("toolu_1", "get_weather", "65F"),
        ("toolu_2", "get_weather", "[error] timeout"),
    ]
    assert second.output_text == "SF is 65F."
    (tool,) = second.tools_available or []
    assert json.loads(tool.parameters) == session["tools"][0]["input_schema"]
    # A plain-string system prompt reads the same.
    plain = AgentInstance.from_chat_session({**session, "system": "Be brief."})
    assert plain.interactions == AgentInstance.from_chat_session(session).interactions


def test_legacy_function_calls_match_their_results_by_name() -> None:
    messages = [
        {"role": "user", "content": "time?"},
        {"role": "assistant", "function_call": {"name": "now", "arguments": "{}"}},
        {"role": "function", "name": "now", "content": "12:00"},
        {"role": "assistant", "content": "Noon."},
    ]
    _, second = AgentInstance.from_chat_session(messages).llm_interactions
    call, result = (m.content for m in second.input_messages[1:])
    assert isinstance(call, LLMToolCall) and isinstance(result, LLMToolResponse)
    assert call.id == result.id == "now" and result.name == "now"


def test_from_chat_session_refuses_messages_that_are_not_dicts() -> None:
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        AgentInstance.from_chat_session([{"role": "user", "content": "q"}, "answer"])


ANTHROPIC_WEB_SEARCH = [
    {"role": "user", "content": "Latest SpaceX news?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Searching."},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "SpaceX news"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [
                    {"type": "web_search_result", "title": "Starship", "url": "https://e.org/s"}
                ],
            },
            {"type": "text", "text": "Starship flew again."},
        ],
    },
]


def test_from_chat_session_keeps_anthropic_server_tool_blocks() -> None:
    from tracejudge.evaluation.render import conversation_agent

    agent = AgentInstance.from_chat_session(ANTHROPIC_WEB_SEARCH)
    # The assistant message is split at the result: a call, then the answer after it.
    first, second = agent.llm_interactions
    (call,) = first.tool_calls
    assert (call.id, call.name, call.arguments()) == (
        "srvtoolu_1",
        "web_search",
        {"query": "SpaceX news"},
    )
    result = second.input_messages[-1].content
    assert isinstance(result, LLMToolResponse) and result.id == "srvtoolu_1"
    assert result.name == "web_search" and "Starship <https://e.org/s>" in result.response
    assert second.output_text == "Starship flew again."
    # The judge's view of a conversation is the same agent.
    assert conversation_agent(ANTHROPIC_WEB_SEARCH).interactions == agent.interactions


def test_a_trace_without_llm_interactions_says_what_to_check() -> None:
    from tracejudge.errors import NoLLMInteractionsError

    trace = MultiAgentTrace.from_agent(AgentInstance(id="a1", name="idle"))
    with pytest.raises(NoLLMInteractionsError) as raised:
        trace.require_llm_interactions()
    message = str(raised.value)
    assert "idle (a1)" in message
    for hint in ("ComposoTracer.init", "instrumentation", "spans of the trace"):
        assert hint in message
    # The wire request rejects it with the same words; converting nothing says them too.
    with pytest.raises(ValidationError) as invalid:
        TraceRewardRequest(trace=trace, evaluation_criteria="Reward x")
    assert message in str(invalid.value)
    with pytest.raises(NoLLMInteractionsError) as converted:
        traces_from_otlp(b"").require_llm_interactions()
    assert "ComposoTracer.init" in str(converted.value)
    assert "the input holds 0 spans" in str(converted.value)
    trace.root.interactions.append(SAMPLE_INTERACTION)
    assert trace.require_llm_interactions() is trace


def test_public_members_say_what_they_are() -> None:
    from tracejudge.models import AgentTraceResult, SummaryStatistics

    documented = [
        AgentInstance.llm_interactions,
        AgentInstance.child_ids,
        LLMInteraction.duration_seconds,
        LLMInteraction.tool_calls,
        MultiAgentTrace.root,
        MultiAgentTrace.parent_of,
        MultiAgentTrace.require_llm_interactions,
        SummaryStatistics,
        AgentTraceResult,
    ]
    for member in documented:
        assert (member.__doc__ or "").strip(), member
    # Token usage is summed where it is read (checks.budgets); the model has no arithmetic.
    with pytest.raises(TypeError):
        TokenUsage(total_tokens=1) + TokenUsage(total_tokens=2)  # type: ignore[operator]


# --------------------------------------------------------------------------- compatibility

# The wire shape of ARCHITECTURE.md as a Composo-compatible server checks it: every
# model forbids fields it does not know (tool models allow extras, as Composo's do).
_STRICT = ConfigDict(extra="forbid")


class _WireToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    name: str
    parameters: str


class _WireToolResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    response: str
    name: str | None = None


class _WireToolDefinition(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    description: str
    parameters: str


class _WireInput(BaseModel):
    model_config = _STRICT
    role: str
    type: str | None = None
    content: str | _WireToolCall | _WireToolResponse


class _WireOutput(BaseModel):
    model_config = _STRICT
    type: str | None = None
    content: str | _WireToolCall


class _WireInteraction(BaseModel):
    model_config = _STRICT
    input_messages: list[_WireInput]
    output_messages: list[_WireOutput]
    tools_available: list[_WireToolDefinition] | None = None


class _WireAgent(BaseModel):
    model_config = _STRICT
    id: str
    name: str
    interactions: list[str | _WireInteraction]


class _WireTrace(BaseModel):
    model_config = _STRICT
    root_agent_instance_id: str
    agent_instance_by_id: dict[str, _WireAgent]


def test_converted_traces_dump_to_what_a_strict_server_accepts() -> None:
    (trace,) = traces_from_otlp(FIXTURES / "openllmetry.jsonl")
    assert trace.root.llm_interactions[0].usage is not None  # it carries measurements
    for wire in (trace.model_dump(), json.loads(trace.model_dump_json())):
        _WireTrace.model_validate(wire)
    _WireTrace.model_validate(trace.to_wire(compat=True))
    with pytest.raises(ValidationError, match="Extra inputs"):
        _WireTrace.model_validate(trace.to_wire())  # the extended form is tracejudge's own


def _composo_api_types() -> types.ModuleType:
    """The published composo 0.4.0 wire models, loaded by path (without the package's
    dependencies) from an unpacked wheel; skips when it is not there."""
    models = Path("/tmp/composo/src/composo/models")
    if not (models / "api_types.py").is_file():
        pytest.skip("the composo 0.4.0 wheel is not unpacked at /tmp/composo/src")
    package = "_composo_wire_models"
    if f"{package}.api_types" in sys.modules:
        return sys.modules[f"{package}.api_types"]
    module = types.ModuleType(package)
    module.__path__ = [str(models)]
    sys.modules[package] = module
    for name in ("common_types", "api_types"):
        spec = importlib.util.spec_from_file_location(f"{package}.{name}", models / f"{name}.py")
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = loaded
        spec.loader.exec_module(loaded)
    return sys.modules[f"{package}.api_types"]


def test_traces_cross_between_tracejudge_and_the_composo_package() -> None:
    composo = _composo_api_types()
    ours = with_measurements(team_trace())
    theirs = composo.MultiAgentTrace.model_validate(ours.model_dump())
    assert theirs.model_dump(exclude_none=True) == ours.model_dump()
    assert composo.MultiAgentTrace.model_validate_json(ours.model_dump_json()) == theirs
    request = composo.TraceRewardRequest(trace=ours.model_dump(), evaluation_criteria="Reward x")
    assert request.trace == theirs

    # And back: a composo trace validates here, as a dict, as JSON and as the object.
    assert MultiAgentTrace.model_validate(theirs.model_dump()) == ours
    assert MultiAgentTrace.model_validate_json(theirs.model_dump_json()) == ours
    assert MultiAgentTrace.model_validate(theirs) == ours

    sample = composo.MultiAgentTrace.model_validate(SAMPLE_TRACE)
    assert MultiAgentTrace.model_validate(sample.model_dump(exclude_none=True)).to_wire() == (
        SAMPLE_TRACE
    )


def test_composo_chat_sessions_validate_here() -> None:
    composo = _composo_api_types()
    messages = OPENAI_MESSAGES
    theirs = composo.AgentInstance.from_chat_session({"messages": messages, "tools": OPENAI_TOOLS})
    agent = AgentInstance.model_validate(theirs.model_dump())
    ours = AgentInstance.from_chat_session({"messages": messages, "tools": OPENAI_TOOLS})
    assert [i.tool_calls for i in agent.llm_interactions] == [
        i.tool_calls for i in ours.llm_interactions
    ]
    assert [i.output_text for i in agent.llm_interactions] == ["", "SF 65, LA 75."]
    composo.AgentInstance.model_validate(ours.model_dump())


def test_the_criterion_schema_refuses_exactly_the_texts_the_server_calls_empty() -> None:
    # Schemathesis found it: a criterion of U+001D alone matched the document's pattern
    # (ECMA-262's \s leaves it out) and was refused 422 "is empty" (Python strips it).
    import re

    from tracejudge.errors import BadRequestError
    from tracejudge.models import CRITERION_TEXT_SCHEMA, validate_criterion_text

    # no \s, whose meaning differs between regex dialects: escapes and ranges only, which
    # ECMA-262 (the document's readers) and Python's re read alike
    assert "\\s" not in CRITERION_TEXT_SCHEMA["pattern"]
    pattern = re.compile(CRITERION_TEXT_SCHEMA["pattern"])
    for code in [*range(0x3100), 0xFEFF]:
        text = chr(code) * 2
        if 0xD800 <= code <= 0xDFFF or code == 0:
            continue  # refused for another reason, said apart (validate_plain_text)
        try:
            validate_criterion_text(text)
            accepted = True
        except BadRequestError:
            accepted = False
        assert bool(pattern.search(text)) == accepted, hex(code)
