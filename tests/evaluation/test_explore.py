"""A trace too long for the judge's input budget is explored, never truncated: the judge
gets a digest of the trace and tools to read it (over real sockets, a scripted model
calling the tools), or the result is "not evaluated" with the reason."""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import pytest

from tests.evaluation.long_trace import FAULT, long_trace
from tracejudge.evaluation._explore import READ_RESULT, READ_STEP, SEARCH, TraceMaterial
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import ExplorationLimits, OpenAICompatibleJudge
from tracejudge.judges._budget import body_bytes
from tracejudge.models import MultiAgentTraceResponse, ScoreResponse
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer, ToolCall

BUDGET = 32_000
CRITERION = "Reward agents that notice failed tool calls and report them honestly"


def verdict(score: int, explanation: str) -> Reply:
    return Reply.text(json.dumps({"explanation": explanation, "applicable": True, "score": score}))


def _sent(request: RecordedRequest) -> str:
    return json.dumps(request.json["messages"])


def exploring_judge(request: RecordedRequest) -> Reply:
    """A model that explores as a careful judge would: it reads the steps the digest flags,
    then judges on what it read (a high score when it never saw the fault)."""
    body = request.json
    messages = body["messages"]
    if "tools" not in body:  # a judgement within the budget (the orchestrator)
        return verdict(9, "The orchestrator delegated and reported.")
    if messages[-1]["role"] != "tool":
        digest = messages[1]["content"]
        flagged = [
            int(line[2:].split()[0])
            for line in digest.splitlines()
            if line.startswith("*!") or line.startswith(" !")
        ]
        if not flagged:
            return Reply.tool_calls([ToolCall(READ_STEP, {"step": 1})])
        return Reply.tool_calls([ToolCall(READ_STEP, {"step": step}) for step in flagged])
    if "ERROR 503" in _sent(request):
        return verdict(2, "Step 180: fetch_region failed with ERROR 503; the agent went on.")
    return verdict(10, "Every call I read succeeded.")


def _judge(server: ScriptedLLMServer, **options: Any) -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge(
        "judge-model",
        base_url=server.base_url,
        api_key="k",
        cache=False,
        logprobs=False,
        max_input_tokens=BUDGET,
        **options,
    )


def _result(response: MultiAgentTraceResponse, agent_id: str) -> ScoreResponse:
    for result in response.results_by_agent_name.values():
        if agent_id in result.results_by_agent_instance_id:
            found = result.results_by_agent_instance_id[agent_id]
            assert found is not None
            return found
    raise AssertionError(agent_id)


@pytest.fixture(scope="module")
def trace():
    return long_trace()


def test_the_trace_is_six_hundred_thousand_tokens(trace) -> None:
    from tracejudge.evaluation.render import render_agent

    assert body_bytes(render_agent(trace, "r1").content) / 3 > 600_000


async def test_a_600k_token_trace_judged_with_a_32k_budget_reaches_the_fault_at_step_180(
    trace,
) -> None:
    with ScriptedLLMServer(default=exploring_judge) as server:
        service = EvaluationService(_judge(server))
        (response,) = await service.score_trace(trace, [CRITERION])
        requests = server.requests
    # no request to the judge is over the budget (counted as the judge counts: bytes / 3)
    assert requests and max(body_bytes(r.json) / 3 for r in requests) <= BUDGET
    researcher = _result(response, "r1")
    assert researcher.status == "scored"
    assert researcher.score == pytest.approx(1 / 9)  # graded 2: the fault was read
    # the step the judge cites by the digest's number, named as the page names its call
    assert "Step 180 (researcher call 180):" in researcher.explanation
    record = researcher.exploration
    assert record is not None and record.max_input_tokens == BUDGET
    assert "more than judge" in record.reason and "budget of 32,000" in record.reason
    assert [(r.tool, r.arguments) for r in record.reads] == [(READ_STEP, {"step": 180})]
    assert record.reads[0].tokens > 0 and record.tokens_read == record.reads[0].tokens
    assert record.rounds == 2 and record.largest_request_tokens <= BUDGET
    # the digest the judge started from: the finding of tool_results placed at step 180
    first = next(r for r in requests if "tools" in r.json)
    digest = first.json["messages"][1]["content"]
    assert "step 180: tool_results" in digest and "*!  180 researcher call 180" in digest
    assert {tool["function"]["name"] for tool in first.json["tools"]} == {
        READ_STEP,
        SEARCH,
        READ_RESULT,
    }
    # what the read returned: the failed call and its result
    reading = next(r for r in requests if r.json["messages"][-1]["role"] == "tool")
    assert FAULT.replace('"', '\\"') in _sent(reading)
    # the usage counts every round, and the orchestrator was judged whole, in one call
    assert researcher.usage is not None and researcher.usage.calls == 2
    orchestrator = _result(response, "o1")
    assert orchestrator.exploration is None and orchestrator.score == pytest.approx(8 / 9)
    assert len(requests) == 3


async def test_with_exploration_off_the_long_agent_is_not_evaluated_and_left_out(trace) -> None:
    with ScriptedLLMServer(default=exploring_judge) as server:
        service = EvaluationService(_judge(server), exploration=None)
        (response,) = await service.score_trace(trace, [CRITERION])
        sent = len(server.requests)
    researcher = _result(response, "r1")
    assert researcher.status == "not_evaluated" and researcher.score is None
    assert researcher.not_evaluated is not None
    assert researcher.not_evaluated.endswith("and exploration is off")
    assert "more than judge openai:judge-model's budget of 32,000 (max_input_tokens)" in (
        researcher.not_evaluated
    )
    assert researcher.explanation == f"Not evaluated: {researcher.not_evaluated}."
    assert sent == 1  # only the orchestrator's judgement was sent
    # never a 0, never N/A: out of the aggregates
    assert response.overall_score == pytest.approx(8 / 9)
    assert response.results_by_agent_name["researcher"].summary_statistics.median is None
    assert response.failing_agents == 0


async def test_a_judge_that_takes_no_tool_calls_is_not_evaluated_with_the_reason(trace) -> None:
    def no_tools(request: RecordedRequest) -> Reply:
        if "tools" in request.json:
            return Reply.error(400, message="this model does not support tools")
        return verdict(9, "Fine.")

    with ScriptedLLMServer(default=no_tools) as server:
        judge = _judge(server)
        service = EvaluationService(judge)
        (response,) = await service.score_trace(trace, [CRITERION])
        (again,) = await service.score_trace(trace, [CRITERION])
        sent = len(server.requests)
    for answer in (response, again):
        researcher = _result(answer, "r1")
        assert researcher.status == "not_evaluated"
        assert f"{judge.base_url} does not take tool calls" in (researcher.not_evaluated or "")
    # the refusal is remembered: the second trace sends no exploring request at all
    assert sent == 2 + 1  # o1 and the refused exploring request, then o1 alone


async def test_the_run_cap_stops_an_exploring_judge_between_rounds_keeping_what_it_used(
    trace,
) -> None:
    def reads_forever(request: RecordedRequest) -> Reply:
        usage = {"prompt_tokens": 20_000, "completion_tokens": 10}
        if "tools" not in request.json:
            return Reply.text(
                json.dumps({"explanation": "ok", "applicable": True, "score": 9}), usage=usage
            )
        return Reply.tool_calls([ToolCall(SEARCH, {"query": "error"})], usage=usage)

    with ScriptedLLMServer(default=reads_forever) as server:
        service = EvaluationService(
            _judge(server),
            max_concurrency=1,
            prices={"judge-model": {"input": 1.0, "output": 0.0}},
            max_judge_cost=0.05,
        )
        (response,) = await service.score_trace(trace, [CRITERION])
        sent = len(server.requests)
    researcher = _result(response, "r1")
    assert researcher.status == "not_evaluated"
    assert "was spent while the judge explored" in (researcher.not_evaluated or "")
    # $0.02 a call: the orchestrator's, then two exploring rounds reach $0.06 >= $0.05
    assert sent == 3
    assert researcher.usage is not None and researcher.usage.calls == 2
    assert researcher.usage.cost_usd == pytest.approx(0.04)
    assert researcher.exploration is not None and researcher.exploration.rounds == 2
    assert service.spend.total.cost_usd == pytest.approx(0.06)


async def test_a_cap_on_rounds_is_not_evaluated_with_the_reason(trace) -> None:
    with ScriptedLLMServer(
        default=lambda r: (
            Reply.tool_calls([ToolCall(READ_STEP, {"step": 5})])
            if "tools" in r.json
            else verdict(9, "ok")
        )
    ) as server:
        service = EvaluationService(_judge(server), exploration=ExplorationLimits(max_rounds=3))
        (response,) = await service.score_trace(trace, [CRITERION])
    researcher = _result(response, "r1")
    assert researcher.status == "not_evaluated"
    assert "max_rounds" in (researcher.not_evaluated or "")
    assert researcher.exploration is not None
    assert [r.arguments for r in researcher.exploration.reads] == [{"step": 5}] * 2


# --------------------------------------------------------------------------- the material


def test_the_digest_fits_the_room_it_is_given_and_keeps_the_flagged_steps(trace) -> None:
    material = TraceMaterial(trace)
    whole = material.digest("r1", 20_000)
    assert body_bytes(whole) <= 20_000 * 3
    assert 'JUDGED: agent "researcher" (instance r1), called by "orchestrator"' in whole
    assert "201 own steps: 1-201" in whole
    assert whole.count("\n*") == 201  # every step of the judged agent, one line each
    for room in (6_000, 3_000, 1_500):
        short = material.digest("r1", room)
        assert body_bytes(short) <= room * 3
        assert "*!  180 researcher call 180" in short  # the flagged step stays listed
    summed = material.digest("r1", 3_000)
    assert (
        "  steps 0-179: 180 model calls (researcher x179, orchestrator x1), 179 of them the "
        "judged agent's; tools called: fetch_region x179, delegate x1"
    ) in summed
    # another agent's digest marks its own steps
    assert "*     0 orchestrator call 1" in material.digest("o1", 20_000)


def test_the_tools_read_a_step_search_and_page_through_a_long_result(trace) -> None:
    material = TraceMaterial(trace)
    tools = {tool.name: tool for tool in material.tools}
    step = tools[READ_STEP].run({"step": 180}, 4_000)
    assert step.startswith('STEP 180 | agent "researcher" (instance r1) | its call 180')
    assert "calls fetch_region (id c179)" in step
    assert "<- result of fetch_region (id c179), given to step 181:" in step and FAULT in step
    short = tools[READ_STEP].run({"step": 50}, 800)
    assert body_bytes(short) <= 800 * 3
    assert (
        "characters left out" in short and f"read a whole tool result with {READ_RESULT}" in short
    )

    found = tools[SEARCH].run({"query": "error 503"}, 1_000)
    assert found.startswith(
        "1 match for 'error 503':\n- step 181 (researcher call 181), tool result"
    )
    assert tools[SEARCH].run({"query": "no such text"}, 1_000) == "no match for 'no such text'"
    assert tools[SEARCH].run({"query": "ERROR 503", "agent": "orchestrator"}, 1_000) == (
        "no match for 'ERROR 503' in the steps of agent 'orchestrator'"
    )

    pages: list[str] = []
    offset = 0
    while True:
        page = tools[READ_RESULT].run({"step": 50, "tool_call_id": "c49", "offset": offset}, 600)
        assert body_bytes(page) <= 600 * 3
        heading, body = page.split("\n", 1)
        body, tail = body.rsplit("\n", 1)
        pages.append(body)
        if tail == "[end of the result]":
            break
        offset = int(tail.rsplit(" ", 1)[1].rstrip("]"))
    whole = trace.agent_instance_by_id["r1"].llm_interactions[50].input_messages[-1].content
    assert "".join(pages) == whole.response and len(pages) > 3


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (READ_STEP, {"step": 999}, "there is no step 999: steps are 0 to 202"),
        (READ_STEP, {"step": "x"}, '"step" must be a whole number'),
        (SEARCH, {"query": " "}, '"query" must be a non-empty text'),
        (READ_RESULT, {"step": 50, "tool_call_id": "zz"}, "step 50 shows no tool result"),
        (READ_RESULT, {"step": 50, "tool_call_id": "c49", "offset": 10**9}, "offset must be"),
    ],
)
def test_bad_arguments_are_told_to_the_model(trace, tool, arguments, message) -> None:
    tools = {t.name: t for t in TraceMaterial(trace).tools}
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        tools[tool].run(arguments, 1_000)


def test_the_trace_material_is_freed_with_its_last_reference() -> None:
    """No reference cycle keeps a trace's material (and its trace) alive: a server that
    judged a 10 MiB request kept its 90 MB until a full collection (issue #32 item 8)."""
    material = TraceMaterial(long_trace())
    assert {tool.name for tool in material.tools}  # the tools read, as a judge does
    gone = weakref.ref(material)
    was_on = gc.isenabled()
    gc.disable()  # no collection may run: only reference counting frees it
    try:
        del material
        assert gone() is None
    finally:
        if was_on:
            gc.enable()
