"""Converting with a row taken out of the conventions table (`conventions.rows_removed`),
as the leave-one-out benchmark does, and the per-fact reading of a recording it counts."""

from __future__ import annotations

import threading

import pytest

from tests.fixtures.frameworks import expectations
from tracejudge.convert import conventions


def test_every_fact_of_every_recording_holds_with_the_whole_table() -> None:
    # The recordings whose agents are still misread are expected failures of
    # test_frameworks (each named there with its reason); every other one holds whole.
    from tests.convert.test_frameworks import NEEDS_AGENT_INFERENCE

    for name in expectations.recordings():
        facts = expectations.facts(name, expectations.convert(name))
        if name in NEEDS_AGENT_INFERENCE:
            continue
        assert facts and all(holds for _, holds in facts), (name, facts)


def test_a_row_removed_is_not_asked_inside_the_block_only() -> None:
    name = "vercel_v7_otel_agent"  # read through the GenAI row
    whole = expectations.facts(name, expectations.convert(name))
    with conventions.rows_removed(conventions.GENAI):
        without = expectations.facts(name, expectations.convert(name))
        # Another thread converts with the whole table meanwhile.
        other: list[list[expectations.Fact]] = []
        worker = threading.Thread(
            target=lambda: other.append(expectations.facts(name, expectations.convert(name)))
        )
        worker.start()
        worker.join()
    assert [text for text, _ in without] == [text for text, _ in whole]
    assert not all(holds for _, holds in without)  # the agents were read through that row
    assert other == [whole]
    assert expectations.facts(name, expectations.convert(name)) == whole


def test_the_facts_of_a_misread_trace_fail_one_by_one() -> None:
    # (OpenLIT's traced functions without its row or any content: the two agents' calls
    # cannot be told apart, their other facts hold)
    name = "openlit_no_content"
    with conventions.rows_removed(conventions.OPENLIT):
        facts = expectations.facts(name, expectations.convert(name))
    lost = [text for text, holds in facts if not holds]
    assert lost and len(lost) < len(facts)
    assert "agent ('weather_agent', 'lead', 2)" in lost


def test_only_rows_of_the_table_can_be_removed() -> None:
    class Stranger(conventions.Convention):
        name = "stranger"

    with pytest.raises(ValueError, match="not rows of the conventions table"):
        with conventions.rows_removed(Stranger()):
            pass


def test_tool_arguments_encoded_twice_are_read_once_with_no_row() -> None:
    """OpenInference's processor for the AI SDK writes each tool call's arguments as a JSON
    string of the arguments' JSON text; read through OpenInference alone (no AI SDK row),
    they are the arguments object, as the program passed them."""
    import json

    from tracejudge import checks

    name = "vercel_v6_openinference_generate"
    with conventions.rows_removed(conventions.VERCEL_AI):
        (trace,) = [t for t in expectations.convert(name) if t.has_llm_interactions]
    calls = [c for a in trace.iter_agents() for i in a.llm_interactions for c in i.tool_calls]
    assert [(c.name, json.loads(c.parameters)) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    for result in checks.tool_arguments.evaluate(trace).values():
        assert result is None or result.score in (None, 1.0), result


def test_a_function_span_holding_only_its_return_value_is_not_a_model_call() -> None:
    """OpenLIT's `@openlit.trace` writes a function's return value in
    `gen_ai.output.messages`, with no operation, model, input or usage: without OpenLIT's
    row it is not read as a model call swallowing the four calls made inside it."""
    name = "openlit"
    with conventions.rows_removed(conventions.OPENLIT):
        facts = dict(expectations.facts(name, expectations.convert(name)))
    assert facts["4 model calls"]


def test_a_plain_text_output_value_is_the_answer_of_a_call_with_no_output_message() -> None:
    """OpenInference's processor for the AI SDK writes a text answer only in `output.value`
    (`text/plain`), no output message: read through OpenInference alone, it is the answer."""
    from tracejudge import checks

    name = "vercel_v6_openinference_generate"
    with conventions.rows_removed(conventions.VERCEL_AI):
        (trace,) = [t for t in expectations.convert(name) if t.has_llm_interactions]
    (agent,) = [a for a in trace.iter_agents() if a.llm_interactions]
    assert agent.llm_interactions[-1].output_text == "It is sunny and 22 C in Paris."
    score = checks.final_answer.evaluate(trace)[agent.id]
    assert score is not None and score.score == 1.0, score
