"""Google ADK's `LiteLlm` model under tracejudge, read from live recordings
(tests/fixtures/frameworks/programs_litellm.py: a lead agent calls a weather agent as an
`AgentTool`, both on `LiteLlm("openai/scripted-model")`).

LiteLLM sends OpenAI models through the `openai` client's low-level `post`, which
OpenLLMetry's wrapper of `chat.completions.create` never sees; `ComposoTracer.init(
instruments="openai")` records those calls too (tracejudge/tracing/_openai_post.py), once
each. The live tests of plain `litellm.completion` are in tests/tracing/test_openai_post.py.
"""

from __future__ import annotations

import json

import pytest

from tests.convert.test_frameworks import (
    FIXTURES,
    OPENLLMETRY_OPENAI,
    converted,
    framework_root,
    meta,
    sdk_spans,
)
from tests.fixtures.frameworks.programs import QUESTION
from tests.fixtures.frameworks.programs_litellm import ANSWER, NOTE
from tracejudge.convert import traces_from_spans
from tracejudge.convert._otlp import decode

ADK_SCOPE = "gcp.vertex.agent"


def records(name: str) -> list:
    return decode((FIXTURES / f"{name}.pb").read_bytes())[0]


@pytest.mark.parametrize("name", ["adk_litellm", "adk_litellm_stream"])
def test_every_litellm_call_is_one_openllmetry_span_when_composed(name: str) -> None:
    alone = records(name)
    assert not [r for r in alone if r.scope == OPENLLMETRY_OPENAI]  # nothing instruments it
    composed = records(f"{name}_composed")
    chat = [r for r in composed if r.scope == OPENLLMETRY_OPENAI]
    assert len(chat) == meta(f"{name}_composed")["model_calls"] == 4
    assert {r.name for r in chat} == {"openai.chat"}
    # Each is the wire-level record of one of ADK's own model-call spans, inside it.
    by_id = {r.span_id: r for r in composed}
    parents = [by_id[r.parent_id] for r in chat]
    assert all(p.scope == ADK_SCOPE and p.name.startswith("generate_content") for p in parents)
    assert len({p.span_id for p in parents}) == 4


@pytest.mark.parametrize("name", ["adk_litellm_composed", "adk_litellm_stream_composed"])
def test_the_openllmetry_spans_alone_hold_every_call_whole(name: str) -> None:
    """Without ADK's spans (their parents), tracejudge's own records still hold the four
    calls LiteLLM made, streamed or not, with their tool calls and answers."""
    ours = [r for r in records(name) if r.scope != ADK_SCOPE]
    (trace,) = traces_from_spans(sdk_spans(ours))
    assert trace.root.name == "app" and not trace.root.child_ids
    calls = trace.root.llm_interactions
    assert [[c.name for c in i.tool_calls] for i in calls] == [
        ["weather_agent"],
        ["get_weather"],
        [],
        [],
    ]
    assert [i.output_text for i in calls[2:]] == [NOTE, ANSWER]


@pytest.mark.parametrize("name", ["adk_litellm_stream", "adk_litellm_stream_composed"])
def test_a_streamed_litellm_answer_is_its_aggregate_once(name: str) -> None:
    """ADK's LiteLlm writes each streamed chunk and then the whole answer again: the answer
    is that whole, once (not the chunks and the whole), its tool call with its arguments."""
    trace = converted(name)
    lead = framework_root(trace, meta(name)["composed"])
    asked, answered = lead.llm_interactions
    assert [(c.id, c.name, json.loads(c.parameters)) for c in asked.tool_calls] == [
        ("call_ask", "weather_agent", {"request": QUESTION})
    ]
    assert [m.content for m in answered.output_messages] == [ANSWER]
    assert lead.final_output == trace.final_output == ANSWER
