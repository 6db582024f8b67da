"""The Composo SDK's tracing API as the seed documents it, ported by changing the import."""

from __future__ import annotations

import asyncio

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tracejudge import AgentTracer, ComposoTracer, Instruments, MultiAgentTrace
from tracejudge.convert import traces_from_spans
from tracejudge.errors import NoLLMInteractionsError
from tracejudge.testing import Reply, ScriptedLLMServer


def test_the_seed_example_runs_unchanged(llm_server: ScriptedLLMServer) -> None:
    ComposoTracer.init(instruments=Instruments.OPENAI)
    openai_client = openai.OpenAI(base_url=llm_server.base_url, api_key="test")
    llm_server.add(Reply.text("Quantum computing uses qubits."))

    with AgentTracer(name="research_agent") as tracer:
        response = openai_client.chat.completions.create(
            model="gpt-4", messages=[{"role": "user", "content": "Research: quantum computing"}]
        )
        result = response.choices[0].message.content

        # Get the trace object (inside the block, as the seed does)
        trace = tracer.trace
    openai_client.close()

    assert result == "Quantum computing uses qubits."
    assert isinstance(trace, MultiAgentTrace) and trace.warnings == []
    assert trace.root_agent_instance_id == tracer.agent_id == tracer.id
    assert trace.root.name == "research_agent" == tracer.agent_name
    (interaction,) = trace.root.interactions
    assert [(m.role, m.content) for m in interaction.input_messages] == [
        ("user", "Research: quantum computing")
    ]
    assert interaction.output_text == result
    assert tracer.trace == trace  # and the same after the block


def test_init_returns_the_provider_and_flushes(tracing: TracerProvider) -> None:
    assert ComposoTracer.init(Instruments.OPENAI) is tracing
    assert ComposoTracer.init(instruments=[Instruments.OPENAI]) is tracing
    assert ComposoTracer.flush() is True
    assert ComposoTracer.force_flush(1000) is True


def test_composo_method_names_work(client: openai.OpenAI, llm_server: ScriptedLLMServer) -> None:
    llm_server.add(Reply.text("a"), Reply.text("b"))
    assert AgentTracer.get_active() is None
    with AgentTracer(name="outer") as outer:
        assert AgentTracer.get_active() is outer
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "1"}])
        with AgentTracer(name="inner") as inner:
            assert AgentTracer.get_active() is inner
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "2"}])
        assert AgentTracer.get_active() is outer
    assert AgentTracer.get_active() is None

    assert outer.get_multi_agent_trace() == outer.trace
    assert [s.name for s in outer.get_raw_spans()] == [s.name for s in outer.spans]
    own = outer.get_agent_instance()
    assert (own.id, own.name) == (outer.agent_id, "outer")
    assert [i if isinstance(i, str) else i.output_text for i in own.interactions] == [
        "a",
        inner.agent_id,
    ]
    assert inner.get_agent_instance().llm_interactions[0].output_text == "b"


async def test_the_active_agent_follows_asyncio_tasks() -> None:
    async def worker(name: str) -> tuple[str, str]:
        async with AgentTracer(name=name) as tracer:
            await asyncio.sleep(0)
            active = AgentTracer.get_active()
            assert active is tracer
            return name, active.name

    async with AgentTracer(name="parent") as parent:
        results = await asyncio.gather(worker("w1"), worker("w2"))
        assert AgentTracer.get_active() is parent
    assert results == [("w1", "w1"), ("w2", "w2")]
    assert [a.name for a in parent.trace] == ["parent", "w1", "w2"]


def test_an_agent_without_model_calls_has_no_llm_interactions() -> None:
    with AgentTracer(name="idle") as tracer:
        pass
    trace = tracer.trace
    assert trace.root.name == "idle" and trace.root.interactions == []
    assert trace.has_llm_interactions is False
    converted = traces_from_spans(tracer.spans)
    assert not converted.has_llm_interactions
    with pytest.raises(NoLLMInteractionsError, match="no LLM interactions"):
        converted.require_llm_interactions()


def test_an_agent_started_before_init_says_nothing_was_captured(isolated_tracing: None) -> None:
    with AgentTracer(name="early") as tracer:
        pass
    trace = tracer.trace
    assert trace.root.interactions == []
    assert any("ComposoTracer.init" in warning for warning in trace.warnings)
