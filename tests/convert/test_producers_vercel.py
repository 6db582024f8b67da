"""The Vercel AI SDK, as recorded live (tests/fixtures/frameworks/js/vercel, programs_vercel.py):
what the generic framework tests (test_frameworks.py) do not cover.

AI SDK 4, 5 and 6 write their own `ai.*` spans (AI SDK 7 too, with `LegacyOpenTelemetry`);
AI SDK 7's `OpenTelemetry` (`@ai-sdk/otel`) writes the GenAI conventions.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.convert._helpers import canonical
from tests.fixtures.frameworks.programs_vercel import VERCEL_NOTE
from tracejudge import semconv
from tracejudge.convert import SpanRecord, traces_from_otlp, traces_from_records
from tracejudge.convert._otlp import decode
from tracejudge.models import LLMToolResponse, MultiAgentTrace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
OWN_SPANS = [
    f"vercel_{major}_{kind}"
    for major in ("v4", "v5", "v6", "v7_legacy")
    for kind in ("generate", "stream", "agent")
] + ["vercel_v3_generate", "vercel_v3_agent"]  # AI SDK 3.2: no multi-step streams
GENAI_SPANS = [f"vercel_v7_otel_{kind}" for kind in ("generate", "stream", "agent")]
WEATHER_RUNS = [name for name in OWN_SPANS + GENAI_SPANS if not name.endswith("_agent")]
CALL_OPERATIONS = {
    f"{run}{suffix}" for run in semconv.AI_RUN_OPERATIONS for suffix in semconv.AI_CALL_SUFFIXES
}


def _operation(record: SpanRecord) -> str:
    return str(record.attributes.get(semconv.AI_OPERATION_ID, record.name))


def meta(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.meta.json").read_text(encoding="utf-8"))


def converted(name: str) -> MultiAgentTrace:
    (trace,) = traces_from_otlp(FIXTURES / f"{name}.pb")
    return trace


OPENINFERENCE = [f"vercel_v6_openinference_{kind}" for kind in ("generate", "stream", "agent")]


@pytest.mark.parametrize("name", OWN_SPANS + GENAI_SPANS + OPENINFERENCE + ["vercel_v6_private"])
def test_each_major_is_recorded_with_its_pinned_packages(name: str) -> None:
    info = meta(name)
    project = json.loads(
        (FIXTURES / "js" / info["options"]["project"] / "package.json").read_text()
    )
    for package, version in project["dependencies"].items():
        assert info["versions"][package] == version, (name, package)
    major = info["options"]["project"].rsplit("/v", 1)[1]
    assert info["versions"]["ai"].split(".")[0] == major


@pytest.mark.parametrize("name", OWN_SPANS)
def test_each_step_span_is_one_call_and_the_run_span_none(name: str) -> None:
    """doGenerate / doStream spans carry `gen_ai.system`, `gen_ai.request.model` and
    `gen_ai.usage.*` beside the `ai.*` keys: each is one call; the run span around them
    (which repeats the last step's text and the summed usage) is the agent, not a call."""
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    # (AI SDK 3.2 writes no `ai.operationId`: its span names are the operations)
    steps = [r for r in records if _operation(r) in CALL_OPERATIONS]
    assert steps and all(semconv.GEN_AI_REQUEST_MODEL in r.attributes for r in steps)
    runs = {
        r.span_id: r.attributes[semconv.AI_FUNCTION_ID]
        for r in records
        if _operation(r) in semconv.AI_RUN_OPERATIONS
    }
    trace = converted(name)
    calls = [i for a in trace.iter_agents() for i in a.llm_interactions]
    assert sorted(i.span_id for i in calls) == sorted(r.span_id for r in steps)
    assert len(calls) == meta(name)["model_calls"]
    assert {a.span_id: a.name for a in trace.iter_agents()} == runs


@pytest.mark.parametrize("name", WEATHER_RUNS)
def test_tools_offered_usage_finish_reasons_and_model_of_each_call(name: str) -> None:
    trace = converted(name)
    (agent,) = trace.iter_agents()
    first, second = agent.llm_interactions
    for call in (first, second):
        assert call.model == "scripted-model"
        if name.startswith("vercel_v3_"):  # AI SDK 3.2 records no tools offered
            assert call.tools_available is None
            continue
        (tool,) = call.tools_available or []
        assert (tool.name, tool.description) == (
            "get_weather",
            "Get the current weather for a city.",
        )
        assert json.loads(tool.parameters)["properties"] == {"city": {"type": "string"}}
    assert (first.finish_reason, second.finish_reason) == ("tool_calls", "stop")
    if name == "vercel_v4_stream":
        # @ai-sdk/openai 1.x does not ask a Chat Completions stream for usage: the AI SDK
        # records NaN tokens, which are no usage.
        assert first.usage is None and second.usage is None
        return
    assert first.usage is not None and second.usage is not None
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert second.usage.input_tokens > first.usage.input_tokens  # the conversation grew
    assert second.usage.total_tokens == second.usage.input_tokens + second.usage.output_tokens


@pytest.mark.parametrize("name", [n for n in OWN_SPANS + GENAI_SPANS if n.endswith("_agent")])
def test_the_sub_agent_runs_inside_the_lead_agents_tool_call(name: str) -> None:
    """The weather agent (an Agent object in AI SDK 5+, a generateText loop in 4) runs in
    the lead's `ask_weather_agent` tool: it is the lead's child, and its answer is the
    result the lead's next call reads."""
    trace = converted(name)
    lead = trace.root
    (child_id,) = lead.child_ids
    weather = trace.agent_instance_by_id[child_id]
    assert (lead.name, weather.name) == ("lead", "weather_agent")
    (ask,) = lead.llm_interactions[0].tool_calls
    results = [
        m.content
        for m in lead.llm_interactions[1].input_messages
        if isinstance(m.content, LLMToolResponse)
    ]
    assert [(r.id, r.response) for r in results] == [(ask.id, VERCEL_NOTE)]
    assert weather.final_output == VERCEL_NOTE


def test_a_run_without_function_id_is_named_after_its_operation_and_says_so() -> None:
    """A user who sets no `functionId` gives the run no name: the agent is named after the
    operation, and the trace says what to set."""
    records, _, _ = decode((FIXTURES / "vercel_v6_generate.pb").read_bytes())
    named = (semconv.AI_FUNCTION_ID, semconv.AI_RESOURCE_NAME, "operation.name")
    anonymous = [
        dataclasses.replace(r, attributes={k: v for k, v in r.attributes.items() if k not in named})
        for r in records
    ]
    (trace,) = traces_from_records(anonymous)
    assert trace.root.name == "ai.generateText"
    assert len(trace.root.llm_interactions) == 2
    (warning,) = trace.warnings
    assert "recorded no agent identity" in warning and "'ai'" in warning
    assert "functionId" in warning and trace.root.span_id in warning


def test_content_capture_off_keeps_the_calls_and_names_the_setting() -> None:
    """`recordInputs: false, recordOutputs: false`: the calls, their model, usage and
    finish reasons are still recorded; each call's warning names the instrumentation
    scope and the setting that turns content on."""
    trace = converted("vercel_v6_private")
    calls = trace.root.llm_interactions
    assert len(calls) == meta("vercel_v6_private")["model_calls"] == 2
    assert all(not c.input_messages and not c.output_messages for c in calls)
    assert [c.finish_reason for c in calls] == ["tool_calls", "stop"]
    assert all(c.usage is not None and c.usage.input_tokens > 0 for c in calls)
    assert len(trace.warnings) == 2
    for warning in trace.warnings:
        assert "no message content recorded by ai" in warning
        assert "turn content capture on: experimental_telemetry" in warning
        assert "recordInputs: true" in warning


@pytest.mark.parametrize(
    "name", ["vercel_v5_stream", "vercel_v6_stream", "vercel_v7_legacy_stream"]
)
def test_a_streamed_step_holds_the_whole_answer(name: str) -> None:
    """doStream spans record the aggregate of the stream (`ai.response.text`,
    `ai.response.toolCalls`), read as one answer."""
    trace = converted(name)
    first, second = trace.root.llm_interactions
    assert [(c.name, json.loads(c.parameters)) for c in first.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert [o.content for o in second.output_messages] == [meta(name)["answer"]]


@pytest.mark.parametrize("name", OPENINFERENCE)
def test_openinference_s_span_processor_changes_nothing_read(name: str) -> None:
    """`@arizeai/openinference-vercel` adds OpenInference kinds and keys to the AI SDK's
    spans (and renames them `ai.generateText lead`), keeping the `ai.*` keys: the spans
    are read by the AI SDK's convention, as without it. (Read as OpenInference, the runs
    would be named after the span, the tool arguments JSON-encoded twice, and the answers
    with tool calls beside them lost.)"""
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    kinds = {r.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) for r in records}
    assert {"AGENT", "LLM", "TOOL"} <= kinds
    plain = converted(name.replace("_openinference", ""))
    trace = converted(name)
    assert canonical(trace) == canonical(plain)
    assert trace.final_output == plain.final_output
    assert trace.warnings == []
