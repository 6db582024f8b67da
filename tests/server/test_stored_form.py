"""What the server stores of a trace (issue #32 item 5): a chat agent resends its whole
conversation on every call, so a trace's JSON grows with the square of an agent's calls
(20,000 spans of 100-call agents: 325 MB, read whole for every page). The store keeps
each call's repeat of the previous call's input left out (`server.trace_text`), so what
is stored grows with the calls; every answer and page still has the whole trace."""

from __future__ import annotations

import json

import pytest

from tests.checks import faults
from tests.server.harness import InProcessServer, wait_for
from tracejudge.models import AgentInstance, MultiAgentTrace
from tracejudge.server.store import open_store
from tracejudge.server.store.trace_text import read_trace, stored_text, trace_data


def _long(rounds: int) -> MultiAgentTrace:
    return MultiAgentTrace.from_agent(faults.long_agent(rounds))


def test_the_stored_text_grows_with_the_calls_and_every_answer_has_the_whole_trace(
    server: InProcessServer,
) -> None:
    stored = []
    with server.client() as http:
        for rounds in (16, 32, 64):
            trace = _long(rounds)
            body = {"evaluator_name": "final_answer", "trace": trace.to_wire()}
            answer = http.post("/api/v1/evals/trace", json={**body, "trace_id": f"t{rounds}"})
            assert answer.status_code == 200, answer.text
            saved = open_store(server.db)
            try:
                row = saved.traces.get(f"t{rounds}")
            finally:
                saved.close()
            assert row is not None and row.trace_json is not None
            stored.append(len(row.trace_json))
            whole = json.loads(trace.to_json())
            assert http.get(f"/api/v1/traces/t{rounds}").json()["trace"] == whole
            page = http.get(f"/ui/traces/t{rounds}")
            assert page.status_code == 200 and "lookup" in page.text
        # scoring it again reads the stored text back into the trace
        again = http.post("/api/v1/traces/t64/score", json={"checks": ["loops"]})
        assert again.status_code == 202, again.text
        task = again.json()["task_id"]
        done = wait_for(lambda: http.get(f"/api/v1/tasks/{task}").json()["status"] == "done")
        assert done
    for before, after in zip(stored, stored[1:], strict=False):
        # the whole JSON grows about 4x as the calls double; what is stored, 2x
        assert after / before < 2.2


def test_the_stored_text_reads_back_as_the_whole_trace() -> None:
    trace = _long(6)
    text = stored_text(trace)
    assert len(text) < len(trace.to_json()) / 2
    read = read_trace(text)
    assert read == trace and read.to_json() == trace.to_json()
    calls = read.root.llm_interactions
    assert calls[5].input_messages[0] is calls[4].input_messages[0]  # shared, not copied
    assert trace_data(text) == json.loads(trace.to_json())


def test_a_reader_of_plain_traces_refuses_the_stored_text_by_name() -> None:
    with pytest.raises(ValueError, match="shared_inputs"):
        MultiAgentTrace.from_json(stored_text(_long(3)))


def test_a_trace_without_repeats_is_stored_as_its_json_and_old_rows_still_read() -> None:
    single = MultiAgentTrace.from_agent(AgentInstance(id="a", name="a"))
    assert stored_text(single) == single.to_json()
    plain = _long(5).to_json()  # as rows were stored before
    assert read_trace(plain).to_json() == plain
    assert trace_data(plain) == json.loads(plain)
