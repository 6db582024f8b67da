"""Traces of real agent-framework programs read as the programs ran.

Each recording in tests/fixtures/frameworks is a small multi-agent program (programs.py)
run by its framework under an instrumentation against a ScriptedLLMServer, alone and
composed with tracejudge's own tracer (`ComposoTracer.init` + `AgentTracer("app")`).
The facts the converted trace must show (agent names and parents, calls per agent, tool
calls with arguments, results joined by id, each agent's and the trace's answer) come
from the program, not from the converter. Each recording is converted from its OTLP
protobuf, its OTLP/JSON and as in-process SDK spans, and all three must agree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode

from tests.fixtures.frameworks.programs import PROGRAMS, WEATHER, Expected
from tracejudge.convert import SpanRecord, traces_from_otlp, traces_from_spans
from tracejudge.convert._otlp import decode, decode_logs
from tracejudge.models import AgentInstance, LLMToolResponse, MultiAgentTrace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
RECORDINGS = sorted(path.name[: -len(".meta.json")] for path in FIXTURES.glob("*.meta.json"))

#: Recordings whose instrumentation does not record what the program did, and why; the
#: converter must say so instead of passing an empty trace off as complete.
NO_OUTPUTS = {
    "openai_agents_openllmetry_chat": "opentelemetry.instrumentation.openai_agents",
}
#: Recordings made with message content capture off, and their instrumentation scope:
#: only the calls are known, and each call's warning says so (test_producers_*).
NO_CONTENT = {
    "vercel_v6_private": "ai",
    "openlit_no_content": "openlit.instrumentation.openai",
    "semantic_kernel_no_content": "semantic_kernel.utils.telemetry.model_diagnostics.decorators",
    "llamaindex_agent_openllmetry_nocontent": "opentelemetry.instrumentation.llamaindex",
    "llamaindex_agent_openllmetry_nocontent_composed": "opentelemetry.instrumentation.llamaindex",
    "google_genai_otel_nocontent": "opentelemetry.util.genai.handler",
    "google_genai_otel_nocontent_composed": "opentelemetry.util.genai.handler",
    "agent_framework_no_content": "agent_framework",
    "agent_framework_no_content_composed": "agent_framework",
    "strands_redacted": "strands.telemetry.tracer",
    **{
        f"{base}{twin}": "gcp.vertex.agent"
        for base in ("adk_transfer_v2_nocontent", "adk_transfer_v1_nocontent")
        + ("adk1_transfer_nocontent",)
        for twin in ("", "_composed")
    },
}
#: Of those, the recordings whose producer names its agents only in recorded content.
NO_AGENT_NAMES = {
    "llamaindex_agent_openllmetry_nocontent",
    "llamaindex_agent_openllmetry_nocontent_composed",
}


#: Recordings whose agents have no agent span and are told apart only by their own prompts
#: (issue #30's pattern 1, `convert/_infer_agents.py`): none left (DSPy's and Haystack's
#: hold). Their tool calls written as text are asserted on their own in
#: test_text_tool_calls.py.
NEEDS_AGENT_INFERENCE: set[str] = set()

#: The instrumentation scope of OpenLLMetry's openai client spans.
OPENLLMETRY_OPENAI = "opentelemetry.instrumentation.openai.v1"


def meta(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.meta.json").read_text(encoding="utf-8"))


def sdk_spans(records: list[SpanRecord]) -> list[ReadableSpan]:
    """The recorded spans as the SDK's own `ReadableSpan`s, as a span processor sees them."""
    spans = []
    for record in records:
        trace_id = int(record.trace_id, 16)
        context = SpanContext(trace_id, int(record.span_id, 16), is_remote=False)
        parent = (
            SpanContext(trace_id, int(record.parent_id, 16), is_remote=False)
            if record.parent_id
            else None
        )
        spans.append(
            ReadableSpan(
                name=record.name,
                context=context,
                parent=parent,
                attributes=record.attributes,
                events=[
                    Event(e.name, e.attributes, int(e.time * 1e9) if e.time else None)
                    for e in record.events
                ],
                kind=SpanKind[record.kind] if record.kind else SpanKind.INTERNAL,
                status=Status(StatusCode[record.status], record.status_message),
                start_time=record.start_ns,
                end_time=record.end_ns,
                instrumentation_scope=InstrumentationScope(record.scope or ""),
                links=[
                    Link(SpanContext(int(t, 16), int(s, 16), is_remote=False))
                    for t, s in record.links
                ],
            )
        )
    return spans


def sdk_logs(name: str) -> list[LogRecord] | None:
    """The recording's log records (`<name>.logs.pb`, where its framework logs message
    content) as SDK log records, or None when it has none."""
    path = FIXTURES / f"{name}.logs.pb"
    if not path.exists():
        return None
    placed, _ = decode_logs(path.read_bytes())
    return [
        LogRecord(
            timestamp=int(event.time * 1e9) if event.time else None,
            trace_id=int(trace_id, 16),
            span_id=int(span_id, 16),
            body=event.body,
            attributes=event.attributes,
            event_name=event.name or None,
        )
        for trace_id, span_id, event in placed
    ]


def language(name: str) -> str:
    """The program's language: a Node ("js") program exported OTLP from its own process."""
    return PROGRAMS[meta(name)["program"]].language


def converted(name: str) -> MultiAgentTrace:
    """The recording converted from OTLP protobuf (with its log records, where it has
    any), after checking that OTLP/JSON and in-process SDK spans give the same trace,
    extensions and warnings included (a Node program's spans exist only as OTLP)."""
    logs = FIXTURES / f"{name}.logs.pb"
    from_pb = traces_from_otlp(FIXTURES / f"{name}.pb", logs=logs if logs.exists() else None)
    from_json = traces_from_otlp(FIXTURES / f"{name}.jsonl")
    others = [from_json]
    if language(name) == "python":
        records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
        others.append(traces_from_spans(sdk_spans(records), logs=sdk_logs(name)))
    with_calls = [t for t in from_pb if t.has_llm_interactions]
    assert len(with_calls) == 1, [t.root.name for t in from_pb]
    for other in others:
        assert [t.to_wire() for t in other] == [t.to_wire() for t in from_pb]
        assert [t.warnings for t in other] == [t.warnings for t in from_pb]
    return with_calls[0]


#: The agent that holds the model calls a program makes outside every agent (a tool loop on
#: a client); composed with tracejudge's tracer, `AgentTracer("app")` holds them instead.
CALLS_OUTSIDE_AGENTS = "root"


def framework_root(
    trace: MultiAgentTrace, composed: bool, expected: Expected | None = None
) -> AgentInstance:
    root = trace.root
    if not composed:
        return root
    assert root.name == "app"
    if expected is not None and expected.agents[0][0] == CALLS_OUTSIDE_AGENTS:
        return root
    assert not root.llm_interactions
    if len(root.child_ids) > 1:
        return root  # no span of the framework's wraps its agents: "app" is the wrapper
    (child,) = root.child_ids
    return trace.agent_instance_by_id[child]


def name_of(agent: AgentInstance, top: AgentInstance, expected: Expected) -> str:
    """The agent's name, the app agent standing for the program's calls outside agents."""
    if agent is top and agent.name == "app" and expected.agents[0][0] == CALLS_OUTSIDE_AGENTS:
        return CALLS_OUTSIDE_AGENTS
    return agent.name


def agent_rows(trace: MultiAgentTrace, top: AgentInstance, expected: Expected) -> list[Any]:
    """(name, parent name, model calls) depth first under `top`; a wrapper `top` that the
    program did not define is dropped (its children's parent is None)."""
    names = {row[0] for row in expected.agents}
    wrapper = name_of(top, top, expected) not in names
    rows = []

    def walk(agent: AgentInstance, parent: str | None) -> None:
        rows.append((name_of(agent, top, expected), parent, len(agent.llm_interactions)))
        for child in agent.child_ids:
            walk(trace.agent_instance_by_id[child], name_of(agent, top, expected))

    if wrapper:
        assert not top.llm_interactions, top.name
        for child in top.child_ids:
            walk(trace.agent_instance_by_id[child], None)
    else:
        walk(top, None)
    return rows


def agents_under(trace: MultiAgentTrace, top: AgentInstance) -> Iterator[AgentInstance]:
    yield top
    for child in top.child_ids:
        yield from agents_under(trace, trace.agent_instance_by_id[child])


@pytest.fixture(scope="module", params=RECORDINGS)
def recording(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any], MultiAgentTrace]:
    name = request.param
    return name, meta(name), converted(name)


def test_every_framework_and_instrumentation_is_recorded() -> None:
    bases = {name.removesuffix("_composed") for name in RECORDINGS}
    for base in bases:
        # A Node program runs in its own process: tracejudge's tracer cannot wrap it.
        assert (f"{base}_composed" in RECORDINGS) == (language(base) == "python"), base
    programs = {meta(name)["program"] for name in RECORDINGS}
    assert programs == set(PROGRAMS)
    for name in RECORDINGS:
        info = meta(name)
        assert info["replies_left"] == 0, name  # the program made every scripted call


def _needs_agent_inference(name: str, request: pytest.FixtureRequest) -> None:
    if name in NEEDS_AGENT_INFERENCE:
        request.applymarker(pytest.mark.xfail(reason="needs pattern 1 from h-infer"))


def test_agents_parents_and_calls(
    recording: tuple[str, dict[str, Any], MultiAgentTrace], request: pytest.FixtureRequest
) -> None:
    name, info, trace = recording
    _needs_agent_inference(name, request)
    expected = PROGRAMS[info["program"]].expected
    interactions = sum(len(a.llm_interactions) for a in trace.iter_agents())
    assert interactions == info["model_calls"], name  # each call once, composed or not
    if name in NO_AGENT_NAMES:
        return  # the producer names agents only in content (its warning says so)
    top = framework_root(trace, info["composed"], expected)
    rows = agent_rows(trace, top, expected)
    assert rows == [(n, parent, calls) for n, parent, calls, _ in expected.agents], name


def test_tool_calls_results_and_answers(
    recording: tuple[str, dict[str, Any], MultiAgentTrace], request: pytest.FixtureRequest
) -> None:
    name, info, trace = recording
    _needs_agent_inference(name, request)
    expected = PROGRAMS[info["program"]].expected
    if name in NO_OUTPUTS or name in NO_CONTENT:
        pytest.skip("the instrumentation records no outputs (see the warning test)")
    top = framework_root(trace, info["composed"], expected)
    calls = [
        (name_of(agent, top, expected), call.name, json.loads(call.parameters))
        for agent in agents_under(trace, top)
        for interaction in agent.llm_interactions
        for call in interaction.tool_calls
    ]
    assert sorted(calls, key=repr) == sorted(expected.tool_calls, key=repr), name

    call_names = {
        call.id: call.name
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for call in interaction.tool_calls
    }
    # A result is in a later input, or (where none carries it) recorded by its tool span.
    results = [
        message.content
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for message in interaction.input_messages
        if isinstance(message.content, LLMToolResponse)
    ]
    results += [
        result
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for result in interaction.tool_results or []
    ]
    for tool, text in expected.results:
        joined = [r for r in results if r.id in call_names and call_names[r.id] == tool]
        assert any(text in r.response for r in joined), (name, tool, results)
    assert all(r.id in call_names for r in results), name  # every result joined to its call

    answers = {}
    for agent in agents_under(trace, top):
        answers.setdefault(name_of(agent, top, expected), []).append(agent.final_output)
    for agent_name, _, _, text in expected.agents:
        got = answers[agent_name].pop(0)
        if text is None:
            assert got is None, (name, agent_name, got)
        else:
            assert got is not None and text in got, (name, agent_name, got)
    assert trace.final_output == expected.answer, name
    assert info["answer"] == expected.answer


@pytest.mark.parametrize("name", ["dspy_openinference", "dspy_openinference_composed"])
def test_the_answer_of_a_recording_whose_agents_have_no_agent_span(name: str) -> None:
    """The user's answer is known from the module's span: DSPy's extraction writes
    `[[ ## reasoning ## ]] ... [[ ## answer ## ]] ...`, and the module that made the
    call records the `answer` field it parsed out of that text (`_answers.field_answer`)."""
    trace = converted(name)
    expected = PROGRAMS[meta(name)["program"]].expected
    assert trace.final_output == expected.answer == meta(name)["answer"]
    last = [i for a in trace.iter_agents() for i in a.llm_interactions][-1]
    assert "[[ ## answer ## ]]" in last.output_text  # the text is the fields, not the answer


def test_no_warnings_where_the_instrumentation_recorded_everything(
    recording: tuple[str, dict[str, Any], MultiAgentTrace],
) -> None:
    name, _, trace = recording
    if name in NO_OUTPUTS or name in NO_CONTENT:
        pytest.skip("see the tests of calls recorded without output or content")
    assert trace.warnings == [], name


def test_a_call_without_output_names_the_instrumentation_and_the_fix() -> None:
    for name, scope in NO_OUTPUTS.items():
        trace = converted(name)
        calls = [i for a in trace.iter_agents() for i in a.llm_interactions]
        assert calls and all(not i.output_messages for i in calls)
        assert len(trace.warnings) == len(calls)
        for warning in trace.warnings:
            assert "input was recorded but not its output" in warning
            assert scope in warning
            assert "use the Responses API" in warning and "OpenInference" in warning
        # Composed with tracejudge's tracer, the openai client's span supplies the output.
        composed = converted(f"{name}_composed")
        assert composed.warnings == []
        assert composed.final_output == PROGRAMS[meta(name)["program"]].expected.answer


@pytest.mark.parametrize("name", ["openai_agents_openinference", "smolagents_openinference"])
def test_answers_hand_offs_and_span_results_are_kept_out_of_the_compat_wire_shape(
    name: str,
) -> None:
    trace = converted(name)
    wire = trace.to_wire()
    agents = wire["agent_instance_by_id"]
    assert agents[trace.root_agent_instance_id]["output"] == trace.final_output
    extensions = {"output", "handoff"}
    assert any(extensions & agent.keys() for agent in agents.values())
    compat = trace.to_wire(compat=True)
    for agent in compat["agent_instance_by_id"].values():
        assert not extensions & agent.keys()
        for item in agent["interactions"]:
            assert isinstance(item, str) or "tool_results" not in item
    # A round trip through either form gives an equal trace; tracejudge's keeps them all.
    back = MultiAgentTrace.from_json(trace.to_json())
    assert back.to_wire() == wire
    assert MultiAgentTrace.model_validate(compat) == trace


def test_results_no_later_input_carries_come_from_the_tool_spans() -> None:
    """smolagents' `final_answer` calls and the Agents SDK's `stop_on_first_tool` tool are
    the agents' last calls: no later model call shows their results, their tool spans do
    (OpenInference TOOL spans by tool name and order, OpenLLMetry `execute_tool` spans)."""
    smol = converted("smolagents_openinference")
    recorded = {
        agent.name: [(r.id, r.name, r.response) for r in agent.llm_interactions[-1].tool_results]
        for agent in smol.iter_agents()
    }
    assert recorded == {
        "manager": [("call_answer", "final_answer", "It is sunny and 22 C in Paris.")],
        "web_agent": [("call_note", "final_answer", "Paris is sunny, 22 C.")],
    }
    # Results a later input carries stay there, once.
    assert all(i.tool_results is None for a in smol.iter_agents() for i in a.llm_interactions[:-1])
    escalate = converted("openai_agents_openllmetry_escalate")
    (specialist,) = [a for a in escalate.iter_agents() if a.name == "weather_specialist"]
    (call,) = specialist.llm_interactions[-1].tool_calls
    (result,) = specialist.llm_interactions[-1].tool_results or []
    assert (result.id, result.name, result.response) == (call.id, "get_weather", WEATHER)
    # Its result ended the run (stop_on_first_tool): it is the agent's answer, and the user's.
    assert specialist.final_output == escalate.final_output == WEATHER


def test_a_handoff_span_names_the_agent_handed_to() -> None:
    for name in RECORDINGS:
        if not name.startswith("openai_agents") or name in NO_OUTPUTS:
            continue
        if "triage" not in {a[0] for a in PROGRAMS[meta(name)["program"]].expected.agents}:
            continue  # no triage agent: nothing handed off (one agent, or an agent as a tool)
        trace = converted(name)
        handoffs = {a.name: a.handoff for a in trace.iter_agents() if a.handoff is not None}
        assert handoffs == {"triage": "weather_specialist"}, name


def test_streamed_responses_are_a_gap_in_openllmetry_that_agent_spans_fill() -> None:
    """The Agents SDK streams (`Runner.run_streamed`) through
    `responses.with_streaming_response.create(stream=True)`, for which OpenLLMetry's openai
    instrumentation (what `ComposoTracer.init(instruments="openai")` installs) records no
    span: the calls are captured only by an agent-framework instrumentation."""
    name = "openai_agents_openinference_stream_composed"
    records, _, _ = decode((FIXTURES / f"{name}.pb").read_bytes())
    openllmetry = [r for r in records if r.scope == OPENLLMETRY_OPENAI]
    assert openllmetry == []  # not one span for 3 streamed calls
    ours_only = [r for r in records if not (r.scope or "").startswith("openinference")]
    assert not traces_from_spans(sdk_spans(ours_only)).has_llm_interactions
    trace = converted(name)
    assert sum(len(a.llm_interactions) for a in trace.iter_agents()) == meta(name)["model_calls"]
    # Not streamed, the same program's calls are recorded by OpenLLMetry too.
    plain = decode((FIXTURES / "openai_agents_openinference_composed.pb").read_bytes())[0]
    assert len([r for r in plain if r.scope == OPENLLMETRY_OPENAI]) == 3
