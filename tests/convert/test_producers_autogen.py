"""AutoGen AgentChat 0.7 as its recordings show it (tests/fixtures/frameworks/autogen_*):
what the generic framework tests (test_frameworks.py) do not check."""

from __future__ import annotations

from tests.convert.test_frameworks import FIXTURES, converted
from tracejudge.convert import SpanRecord, traces_from_spans
from tracejudge.convert._otlp import decode

RUNTIME_SCOPE = "autogen SingleThreadedAgentRuntime"


def test_the_runtime_puts_each_message_in_a_trace_of_its_own_tied_by_links() -> None:
    """AutoGen's runtime starts a new trace for every message it passes, linked to the
    span that sent it: one `team.run` is many traces, its two agents in different ones.
    Traces tied by links are one trace again (the agents side by side under the root)."""
    records, _, _ = decode((FIXTURES / "autogen_openinference.pb").read_bytes())
    runtime = [r for r in records if r.scope == RUNTIME_SCOPE]
    assert len({r.trace_id for r in runtime}) > 10
    assert sum(1 for r in runtime if r.links) > 10
    agents = [r for r in records if r.name.startswith("invoke_agent ")]
    assert len({r.trace_id for r in agents}) == 2  # one trace per agent's turn
    trace = converted("autogen_openinference")
    assert trace.root.name == "root" and not trace.root.llm_interactions
    names = [trace.agent_instance_by_id[c].name for c in trace.root.child_ids]
    assert names == ["weather_agent", "writer"]
    # Under an application span (composed) the runtime's spans are in its trace already.
    composed, _, _ = decode((FIXTURES / "autogen_openinference_composed.pb").read_bytes())
    assert len({r.trace_id for r in composed}) == 1


def _span(trace: str, span: str, name: str, links: tuple[tuple[str, str], ...] = ()) -> SpanRecord:
    return SpanRecord(
        trace_id=trace * 32,
        span_id=span * 16,
        parent_id=None,
        name=f"invoke_agent {name}",
        start_ns=int(span, 16),
        end_ns=int(span, 16) + 1,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
        links=links,
    )


def test_only_traces_linked_to_one_another_are_joined() -> None:
    first = _span("a", "1", "one")
    linked = _span("b", "2", "two", links=(("a" * 32, "1" * 16),))
    unrelated = _span("c", "3", "three")
    # A link to a trace that is not in the input joins nothing.
    dangling = _span("d", "4", "four", links=(("e" * 32, "5" * 16),))
    traces = traces_from_spans([first, linked, unrelated, dangling])
    assert [sorted(a.name for a in t.iter_agents()) for t in traces] == [
        ["one", "root", "two"],
        ["three"],
        ["four"],
    ]
    assert traces[0].trace_id == "a" * 32


def test_a_record_whose_tool_results_lost_their_text_loses_the_merge() -> None:
    """Composed with the openai client's instrumentation, each call of OpenInference's
    AutoGen instrumentor (`OpenAIChatCompletionClient.create`) wraps the client's own
    span. Its tool results are `function` messages of AutoGen's own types; where such a
    result is not readable, the client's record of the call (what went on the wire) wins."""
    trace = converted("autogen_oi_agentchat_composed")
    results = [
        message.content
        for agent in trace.iter_agents()
        for interaction in agent.llm_interactions
        for message in interaction.input_messages
        if message.role == "tool"
    ]
    assert [(r.id, r.name, r.response) for r in results] == [
        ("call_weather", "get_weather", "Sunny, 22 C in Paris")
    ]


def test_openinference_autogen_agent_turns_are_the_agents_they_name() -> None:
    """OpenInference AutoGen records each turn as `<agent>.on_messages_stream` (AGENT, the
    agent in `graph.node.id`) inside AutoGen's `invoke_agent <agent>`: one agent, not two;
    its system messages (role `developer`) are system messages."""
    for name in ("autogen_oi_agentchat", "autogen_oi_agentchat_composed"):
        trace = converted(name)
        names = sorted(agent.name for agent in trace.iter_agents())
        assert names == sorted(["app" if "composed" in name else "root", "weather_agent", "writer"])
        for agent in trace.iter_agents():
            for interaction in agent.llm_interactions:
                roles = [message.role for message in interaction.input_messages]
                assert "developer" not in roles and "function" not in roles
                assert roles[0] == "system" or agent.name == "writer"


def test_openinference_autogen_records_no_tools_offered() -> None:
    """The instrumentor records a tool only when it is an AutoGen `Tool`; the client passes
    it `ToolSchema` dicts, so alone it records no tools offered (the producer's gap; the
    openai client's span, composed, has them)."""
    alone = converted("autogen_oi_agentchat")
    composed = converted("autogen_oi_agentchat_composed")
    first = [a for a in alone.iter_agents() if a.name == "weather_agent"][0].llm_interactions[0]
    assert first.tools_available is None
    first = [a for a in composed.iter_agents() if a.name == "weather_agent"][0].llm_interactions[0]
    assert [tool.name for tool in first.tools_available or []] == ["get_weather"]


def _oi_call(span: str, parent: str | None, scope: str, result: str | None) -> SpanRecord:
    prefix = "llm.input_messages"
    attributes: dict[str, object] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "m",
        "llm.token_count.prompt": 10,
        "llm.token_count.completion": 2,
        f"{prefix}.0.message.role": "user",
        f"{prefix}.0.message.content": "q",
        f"{prefix}.1.message.role": "assistant",
        f"{prefix}.1.message.tool_calls.0.tool_call.id": "c1",
        f"{prefix}.1.message.tool_calls.0.tool_call.function.name": "f",
        f"{prefix}.1.message.tool_calls.0.tool_call.function.arguments": "{}",
        f"{prefix}.2.message.role": "tool",
        f"{prefix}.2.message.tool_call_id": "c1",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "done",
    }
    if result is not None:
        attributes[f"{prefix}.2.message.content"] = result
    return SpanRecord(
        trace_id="a" * 32,
        span_id=span * 16,
        parent_id=parent * 16 if parent else None,
        name="call",
        start_ns=int(span, 16) * 10,
        end_ns=1000 - int(span, 16),
        attributes=attributes,
        scope=scope,
    )


def test_between_two_complete_records_the_one_with_readable_results_wins() -> None:
    """The merge rule on its own: the outer record of a call (a framework's) holds a tool
    result without text, the inner one (the client's, on the wire) holds it: the inner
    record wins although the outer one would win a tie."""
    outer = _oi_call("1", None, "framework", None)
    inner = _oi_call("2", "1", "client", "42")
    (trace,) = traces_from_spans([outer, inner])
    (interaction,) = trace.root.llm_interactions
    results = [m.content for m in interaction.input_messages if m.role == "tool"]
    assert [(r.id, r.response) for r in results] == [("c1", "42")]
    # Both readable: the outer record wins, as before.
    (trace,) = traces_from_spans([_oi_call("1", None, "framework", "41"), inner])
    results = [m.content for m in trace.root.llm_interactions[0].input_messages if m.role == "tool"]
    assert [(r.id, r.response) for r in results] == [("c1", "41")]
