"""AgentTracer's span (GenAI agent conventions), errors, nesting, and the decorator."""

from __future__ import annotations

import inspect

import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tracejudge import AgentTracer, agent_tracer
from tracejudge.testing import Reply, ScriptedLLMServer

MODEL = "gpt-4.1-mini"


def ask(client: openai.OpenAI, text: str) -> str:
    response = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": text}]
    )
    return response.choices[0].message.content or ""


def test_agent_span_follows_the_genai_agent_conventions(
    exported_spans: InMemorySpanExporter,
) -> None:
    with AgentTracer(name="planner", agent_id="plan-1") as tracer:
        assert tracer.span.is_recording()

    [span] = [s for s in exported_spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert span.name == "invoke_agent planner"
    assert span.kind is SpanKind.INTERNAL
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "planner",
        "gen_ai.agent.id": "plan-1",
    }
    assert span.status.status_code is StatusCode.UNSET
    assert tracer.span.get_span_context().span_id == span.context.span_id


def test_names_and_ids_default_and_alias() -> None:
    tracer = AgentTracer()
    assert tracer.name.startswith("agent_")
    assert tracer.id == tracer.agent_id and len(tracer.agent_id) == 36
    assert tracer.agent_name == tracer.name
    assert AgentTracer().agent_id != tracer.agent_id
    assert not tracer.span.is_recording()  # not entered yet


def test_nested_tracers_are_child_spans_and_child_agents(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("outer"), Reply.text("inner"))
    with AgentTracer(name="outer", agent_id="o") as outer:
        ask(client, "outer question")
        with AgentTracer(name="inner", agent_id="i") as inner:
            ask(client, "inner question")

    outer_ctx = outer.span.get_span_context()
    assert inner.span.parent.span_id == outer_ctx.span_id  # type: ignore[attr-defined]
    assert inner.span.get_span_context().trace_id == outer_ctx.trace_id

    trace = outer.trace
    assert trace.root_agent_instance_id == "o"
    assert set(trace.agent_instance_by_id) == {"o", "i"}
    assert trace.root.interactions[1] == "i"  # the child, where it started
    assert [i.output_text for i in trace.agent_instance_by_id["i"].llm_interactions] == ["inner"]

    # A nested tracer's trace is rooted at it and holds only its own subtree.
    inner_trace = inner.trace
    assert inner_trace.root_agent_instance_id == "i"
    assert list(inner_trace.agent_instance_by_id) == ["i"]
    assert [i.output_text for i in inner_trace.root.llm_interactions] == ["inner"]


def test_exception_marks_the_span_error_propagates_and_keeps_the_trace(
    client: openai.OpenAI, llm_server: ScriptedLLMServer, exported_spans: InMemorySpanExporter
) -> None:
    llm_server.add(Reply.text("before the crash"))
    with pytest.raises(ValueError, match="tool exploded"):
        with AgentTracer(name="crasher", agent_id="c") as tracer:
            ask(client, "go")
            raise ValueError("tool exploded")

    [span] = [s for s in exported_spans.get_finished_spans() if s.name == "invoke_agent crasher"]
    assert span.status.status_code is StatusCode.ERROR
    assert "tool exploded" in (span.status.description or "")
    assert (span.attributes or {})["error.type"] == "ValueError"
    [event] = [e for e in span.events if e.name == "exception"]
    assert (event.attributes or {})["exception.type"] == "ValueError"
    assert span.end_time is not None

    trace = tracer.trace
    assert trace.root_agent_instance_id == "c"
    assert [i.output_text for i in trace.root.llm_interactions] == ["before the crash"]


async def test_exception_in_async_with_propagates() -> None:
    with pytest.raises(KeyError):
        async with AgentTracer(name="async_crasher") as tracer:
            raise KeyError("missing")
    assert tracer.span.status.status_code is StatusCode.ERROR  # type: ignore[attr-defined]


def test_a_tracer_is_entered_once() -> None:
    tracer = AgentTracer(name="once")
    with tracer:
        pass
    with pytest.raises(RuntimeError, match="entered once"):
        with tracer:
            pass


# -- decorator --------------------------------------------------------------------------------


@agent_tracer
def bare_agent(question: str, *, loud: bool = False) -> str:
    """Answer a question."""
    return question.upper() if loud else question


@agent_tracer(name="named")
def named_agent(x: int, y: int = 2) -> int:
    return x + y


@agent_tracer()
async def async_agent(client: openai.AsyncOpenAI, question: str) -> str:
    """Ask asynchronously."""
    response = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": question}]
    )
    return response.choices[0].message.content or ""


class Team:
    def __init__(self, client: openai.OpenAI) -> None:
        self.client = client

    @agent_tracer(name="member")
    def work(self, task: str) -> str:
        """Do the task."""
        return ask(self.client, task)

    @agent_tracer
    async def think(self, topic: str, depth: int = 1) -> str:
        return f"{topic}:{depth}"

    @agent_tracer
    def lead(self, tasks: list[str]) -> list[str]:
        return [self.work(task) for task in tasks]


def test_decorator_keeps_name_signature_and_docstring() -> None:
    assert bare_agent.__name__ == "bare_agent"
    assert bare_agent.__doc__ == "Answer a question."
    assert (
        str(inspect.signature(bare_agent)) == "(question: 'str', *, loud: 'bool' = False) -> 'str'"
    )
    assert str(inspect.signature(named_agent)) == "(x: 'int', y: 'int' = 2) -> 'int'"
    assert inspect.iscoroutinefunction(async_agent)
    assert async_agent.__name__ == "async_agent"
    assert Team.work.__name__ == "work" and Team.work.__doc__ == "Do the task."
    assert str(inspect.signature(Team.work)) == "(self, task: 'str') -> 'str'"
    assert inspect.iscoroutinefunction(Team.think)
    assert str(inspect.signature(Team(None).think)) == "(topic: 'str', depth: 'int' = 1) -> 'str'"  # type: ignore[arg-type]


def test_decorated_functions_run_as_agents(exported_spans: InMemorySpanExporter) -> None:
    assert bare_agent("hi", loud=True) == "HI"
    assert named_agent(1) == 3
    names = [s.name for s in exported_spans.get_finished_spans()]
    assert names == ["invoke_agent bare_agent", "invoke_agent named"]
    ids = {(s.attributes or {})["gen_ai.agent.id"] for s in exported_spans.get_finished_spans()}
    assert len(ids) == 2


async def test_decorated_async_function_starts_its_agent_when_awaited(
    aclient: openai.AsyncOpenAI, llm_server: ScriptedLLMServer, exported_spans: InMemorySpanExporter
) -> None:
    llm_server.add(Reply.text("async answer"))
    coroutine = async_agent(aclient, "q")
    assert exported_spans.get_finished_spans() == ()
    with AgentTracer(name="caller", agent_id="caller") as caller:
        assert await coroutine == "async answer"

    trace = caller.trace
    [child_id] = trace.root.child_ids
    child = trace.agent_instance_by_id[child_id]
    assert child.name == "async_agent"
    assert [i.output_text for i in child.llm_interactions] == ["async answer"]


async def test_decorated_methods_nest_as_child_agents(
    client: openai.OpenAI, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add(Reply.text("done a"), Reply.text("done b"))
    team = Team(client)
    with AgentTracer(name="root", agent_id="root") as root:
        assert team.lead(["a", "b"]) == ["done a", "done b"]
        assert await team.think("x") == "x:1"

    trace = root.trace
    [lead_id, think_id] = trace.root.child_ids
    lead = trace.agent_instance_by_id[lead_id]
    assert lead.name == "lead"
    assert trace.agent_instance_by_id[think_id].name == "think"
    members = [trace.agent_instance_by_id[i] for i in lead.child_ids]
    assert [m.name for m in members] == ["member", "member"]
    assert [m.llm_interactions[0].output_text for m in members] == ["done a", "done b"]


class Registry:
    @agent_tracer
    @classmethod
    def build(cls, size: int) -> str:
        return f"{cls.__name__}:{size}"

    @agent_tracer(name="checker")
    @staticmethod
    async def check(value: int) -> bool:
        return value > 0


async def test_decorator_wraps_classmethods_and_staticmethods(
    exported_spans: InMemorySpanExporter,
) -> None:
    assert str(inspect.signature(Registry.build)) == "(size: 'int') -> 'str'"
    assert inspect.iscoroutinefunction(Registry.check)
    assert Registry.build(3) == "Registry:3"
    assert await Registry().check(1) is True
    names = [s.name for s in exported_spans.get_finished_spans()]
    assert names == ["invoke_agent build", "invoke_agent checker"]


def test_decorator_name_must_be_a_string() -> None:
    with pytest.raises(TypeError, match="string"):
        agent_tracer(42)  # type: ignore[call-overload]


def test_decorated_function_exception_propagates(exported_spans: InMemorySpanExporter) -> None:
    @agent_tracer
    def broken() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        broken()
    [span] = exported_spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR


def test_decorator_refuses_generator_functions() -> None:
    with pytest.raises(TypeError, match="generator"):

        @agent_tracer
        def gen() -> object:
            yield 1
