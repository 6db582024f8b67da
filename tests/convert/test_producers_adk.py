"""Google ADK recordings (programs_adk.py, record_adk.py): what the generic framework
tests do not cover. Transfers are hand-offs to the root agent's children, the root is the
runner's agent whatever span ADK wraps its run in, a streamed answer is one answer, the
call ids are the ones the next request repeats, and a run recorded without content says
so, naming ADK's setting for the schema that recorded it."""

from __future__ import annotations

import json

import pytest

from tests.convert.test_frameworks import FIXTURES, RECORDINGS, converted, framework_root, meta
from tests.fixtures.frameworks.programs import PROGRAMS
from tests.fixtures.frameworks.programs_adk import (
    ADK_ANSWER,
    PROGRAMS_ADK,
    ROME,
    STREAM_ANSWER,
)
from tests.fixtures.frameworks.record_adk import DEFECTS
from tracejudge.convert import traces_from_otlp
from tracejudge.convert._otlp import decode
from tracejudge.convert._records import SpanRecord
from tracejudge.models import LLMToolResponse, MultiAgentTrace

ADK = [name for name in RECORDINGS if meta(name)["program"] in PROGRAMS_ADK]
TRANSFERS = [name for name in ADK if meta(name)["program"] == "adk_transfer"]
WITH_CONTENT = [name for name in ADK if "_nocontent" not in name]
NO_CONTENT = [name for name in ADK if "_nocontent" in name]
STREAMED = [name for name in ADK if meta(name)["program"] == "adk_stream"]
SCOPE = "gcp.vertex.agent"


def _calls(trace: MultiAgentTrace) -> list:
    return [i for agent in trace.iter_agents() for i in agent.llm_interactions]


def test_every_variant_is_recorded() -> None:
    bases = {name.removesuffix("_composed") for name in ADK}
    expected = {
        f"{prefix}{program}{variant}"
        for prefix, variants in (
            ("adk_", ("_v2", "_v1", "_openinference")),
            ("adk1_", ("", "_openinference")),
        )
        for program in ("transfer", "agent_tool", "stream")
        for variant in variants
    }
    expected -= {"adk1_agent_tool_openinference", "adk1_stream_openinference"}
    expected |= {"adk_transfer_v2_nocontent", "adk_transfer_v1_nocontent"}
    expected |= {"adk1_transfer_nocontent"}
    assert bases == expected
    for name in ADK:
        versions = meta(name)["versions"]
        assert versions["google-adk"].startswith("1." if name.startswith("adk1_") else "2.")


@pytest.mark.parametrize("name", TRANSFERS)
def test_a_transfer_is_a_hand_off_to_a_child_of_the_root_agent(name: str) -> None:
    """`invoke_workflow coordinator` (v2) or `invocation` (v1) around `invoke_agent
    coordinator` is one agent, the root; the agent it transferred to runs beside it in
    2.x and inside it in 1.x: either way its child. The transfer tool's `{"result": null}`
    is no answer: the coordinator's run answers with the weather agent's answer."""
    trace = converted(name)
    top = framework_root(trace, meta(name)["composed"])
    assert top.name == "coordinator" and top.handoff == "weather_agent"
    (child,) = [trace.agent_instance_by_id[c] for c in top.child_ids]
    assert child.name == "weather_agent" and child.handoff is None
    results = [r for i in top.llm_interactions for r in i.tool_results or []]
    assert results == []  # the transfer is not a tool run
    if "_nocontent" in name:
        return
    assert top.final_output == child.final_output == trace.final_output == ADK_ANSWER
    (call,) = top.llm_interactions[0].tool_calls
    assert (call.name, json.loads(call.parameters)) == (
        "transfer_to_agent",
        {"agent_name": "weather_agent"},
    )


def test_the_root_span_adk_wraps_a_run_in_is_the_root_agent() -> None:
    for name in ("adk_transfer_v2", "adk_transfer_v1", "adk1_transfer"):
        trace = converted(name)
        records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
        (root_span,) = [r for r in records if r.parent_id is None]
        assert root_span.name in ("invoke_workflow coordinator", "invocation")
        assert trace.root.span_id == root_span.span_id
        assert trace.root.name == "coordinator"
        assert len(trace.root.llm_interactions) == 1


@pytest.mark.parametrize("name", STREAMED)
def test_a_streamed_answer_is_one_answer_and_parallel_calls_both_show(name: str) -> None:
    """ADK 2.x's schema v2 writes each streamed chunk as its own output message; the
    chunks are one answer. The two parallel calls are named as the next request names
    them, so their results join."""
    trace = converted(name)
    first, second = _calls(trace)
    assert [json.loads(c.parameters) for c in first.tool_calls] == [
        {"city": "Paris"},
        {"city": ROME},
    ]
    assert [c.id for c in first.tool_calls] == ["get_weather_0", "get_weather_1"]
    results = [m.content for m in second.input_messages if isinstance(m.content, LLMToolResponse)]
    assert [r.id for r in results] == ["get_weather_0", "get_weather_1"]
    assert [m.content for m in second.output_messages] == [STREAM_ANSWER]
    assert second.finish_reason == "stop" and second.alternatives is None
    assert trace.final_output == STREAM_ANSWER


@pytest.mark.parametrize("name", WITH_CONTENT)
def test_calls_hold_prompts_tools_usage_and_no_client_ids(name: str) -> None:
    """ADK's client-side call ids (`adk-...`) never reach the model; the calls read
    carry the ids the model's messages carry, and every call its system prompt, the
    tools it was offered, its usage and its finish reason."""
    trace = converted(name)
    program = meta(name)["program"]
    for interaction in _calls(trace):
        system = interaction.input_messages[0]
        assert system.role == "system" and "You are an agent" in str(system.content)
        assert interaction.tools_available, name
        assert interaction.usage is not None and interaction.usage.input_tokens > 0
        assert interaction.finish_reason == "stop"
        assert interaction.model == "gemini-2.5-flash"
        for message in [*interaction.input_messages, *interaction.output_messages]:
            content = message.content
            assert isinstance(content, str) or not content.id.startswith("adk-"), name
    expected = PROGRAMS[program].expected
    assert len(_calls(trace)) == sum(calls for _, _, calls, _ in expected.agents)


@pytest.mark.parametrize("name", NO_CONTENT)
def test_a_run_without_content_says_so_naming_the_setting_of_its_schema(name: str) -> None:
    """Without content each call is still counted with its usage under its agent, the
    hand-off still found, and one warning per call names ADK's scope and the setting
    that turns content on for the schema that recorded it."""
    trace = converted(name)
    calls = _calls(trace)
    assert len(calls) == 3 and all(not i.output_messages or i.tool_calls for i in calls)
    assert all(i.usage is not None for i in calls)
    content_warnings = [w for w in trace.warnings if "no message content recorded" in w]
    assert len(content_warnings) == 3, trace.warnings
    v2 = "_v2_" in name
    setting = (
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY"
        if v2
        else "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS unset or true"
    )
    for warning in content_warnings:
        assert f"recorded by {SCOPE}" in warning and setting in warning
    assert len(trace.warnings) == len(content_warnings)
    top = framework_root(trace, meta(name)["composed"])
    assert top.handoff == "weather_agent"


def test_the_agent_tool_runs_under_the_agent_that_called_it() -> None:
    for name in ("adk_agent_tool_v2", "adk_agent_tool_v1", "adk1_agent_tool"):
        trace = converted(name)
        lead = trace.root
        (weather,) = [trace.agent_instance_by_id[c] for c in lead.child_ids]
        assert (lead.name, weather.name) == ("lead", "weather_agent")
        (call,) = lead.llm_interactions[0].tool_calls
        second_input = lead.llm_interactions[1].input_messages
        (result,) = [m.content for m in second_input if isinstance(m.content, LLMToolResponse)]
        assert result.id == call.id and weather.final_output in result.response


def test_openinference_on_schema_v2_merges_each_agent_runs_calls_and_says_so() -> None:
    """OpenInference's ADK instrumentor 1.0.5 expects schema v1's `call_llm` span; on ADK
    2.13's default schema v2 it writes its LLM attributes onto ADK's `invoke_agent` span,
    each call over the one before (recorded apart: tests/fixtures/frameworks/defects).
    The trace keeps what is left and says how to record it whole."""
    name = "adk_transfer_openinference_schema2"
    path = FIXTURES / DEFECTS / f"{name}.pb"
    records, _, _ = decode(path.read_bytes())
    llm = [r for r in records if r.attributes.get("openinference.span.kind") == "LLM"]
    assert sorted(r.name for r in llm) == ["invoke_agent coordinator", "invoke_agent weather_agent"]
    info = json.loads((FIXTURES / DEFECTS / f"{name}.meta.json").read_text(encoding="utf-8"))
    assert info["model_calls"] == 3 and info["answer"] == ADK_ANSWER
    (trace,) = traces_from_otlp(path)
    coordinator = trace.root
    (weather,) = [trace.agent_instance_by_id[c] for c in coordinator.child_ids]
    assert (coordinator.name, weather.name) == ("coordinator", "weather_agent")
    assert coordinator.handoff == "weather_agent"
    (call,) = weather.llm_interactions  # two calls made, one left
    assert call.output_text == ADK_ANSWER and [c.name for c in call.tool_calls] == ["get_weather"]
    assert len(trace.warnings) == 2
    for warning in trace.warnings:
        assert "OpenInference's ADK instrumentor" in warning
        assert "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1" in warning


# --------------------------------------------------------------------------- made-up spans


def _call_llm_span(request: dict, response: dict) -> SpanRecord:
    return SpanRecord(
        trace_id="t",
        span_id="c",
        parent_id=None,
        name="call_llm",
        scope=SCOPE,
        attributes={
            "gen_ai.request.model": "gemini-x",
            "gcp.vertex.agent.llm_request": json.dumps(request),
            "gcp.vertex.agent.llm_response": json.dumps(response),
        },
    )


def test_schema_v1_reads_ids_the_model_sent_thoughts_and_camel_case() -> None:
    """Ids the model sent (Vertex, newer Gemini models) are kept; `adk-` ids and missing
    ones are named `<tool>_<part index>`; thought parts are no answer; a system
    instruction given as a Content, and camelCase keys, read the same."""
    request = {
        "config": {
            "systemInstruction": {"parts": [{"text": "Be brief."}], "role": "system"},
            "tools": [
                {
                    "functionDeclarations": [
                        {"name": "get_weather", "parametersJsonSchema": {"type": "object"}}
                    ]
                }
            ],
        },
        "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"id": "fc-9", "name": "get_weather", "args": {"c": 1}}},
                    {"functionCall": {"name": "get_weather", "args": {"c": 2}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "fc-9", "name": "get_weather", "response": {}}},
                    {"functionResponse": {"name": "get_weather", "response": {"r": 2}}},
                ],
            },
        ],
    }
    response = {
        "content": {
            "role": "model",
            "parts": [
                {"text": "thinking...", "thought": True},
                {"text": "Sunny "},
                {"text": "twice."},
                {"functionCall": {"id": "adk-1234", "name": "log", "args": {}}},
            ],
        },
        "finishReason": "MAX_TOKENS",
        "modelVersion": "gemini-x-001",
    }
    (trace,) = traces_from_spans_records([_call_llm_span(request, response)])
    (call,) = trace.root.llm_interactions
    assert [(m.role, str(m.content)) for m in call.input_messages[:2]] == [
        ("system", "Be brief."),
        ("user", "Weather?"),
    ]
    ids = [m.content.id for m in call.input_messages if not isinstance(m.content, str)]
    assert ids == ["fc-9", "get_weather_1", "fc-9", "get_weather_1"]
    assert call.output_text == "Sunny twice."
    assert [(c.id, c.name) for c in call.tool_calls] == [("log_3", "log")]
    assert call.finish_reason == "length" and call.model == "gemini-x-001"
    assert [t.name for t in call.tools_available or []] == ["get_weather"]


def traces_from_spans_records(records: list[SpanRecord]) -> list[MultiAgentTrace]:
    from tracejudge.convert._tree import build_traces

    return build_traces(records, [])
