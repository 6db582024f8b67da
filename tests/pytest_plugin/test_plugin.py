"""The pytest plugin, run by pytest itself (`pytester`) on a user's test file.

The user's tests drive a real `openai` client against a ScriptedLLMServer inside the
`tracejudge_trace` fixture and call `assert_trace`; the outer test reads the report.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.heavy("pytester runs pytest on a test file")

ROOT = Path(__file__).resolve().parents[2]

USER_TESTS = '''
import openai
import pytest

from tracejudge import AgentTracer, checks
from tracejudge.checks import check
from tracejudge.pytest_plugin import TraceAssertionError, assert_trace
from tracejudge.testing import Reply, ScriptedLLMServer, ToolCall

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def run_agents(client):
    """A planner that delegates to a writer; the writer calls a tool, then answers."""
    client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Plan the weather report"}]
    )
    with AgentTracer(name="writer"):
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        first = client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
        call = first.choices[0].message.tool_calls[0]
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny, 22 C"},
        ]
        client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])


@pytest.fixture
def client():
    replies = [
        Reply.text("Plan: ask the writer."),
        Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"}, id="call_1")]),
        Reply.text("It is sunny and 22 C in Paris."),
    ]
    with ScriptedLLMServer(replies) as model:
        with openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0) as oai:
            yield oai


@check
def writer_is_vague(agent):
    if agent.name == "writer":
        return (0.3, "The answer gives no wind or humidity.")
    return (None, "The planner writes nothing.")  # does not apply to the planner


@check
def broken(agent):
    raise KeyError("the check has a bug")


def test_good_run(tracejudge_trace, client):
    run_agents(client)
    trace = tracejudge_trace.trace
    assert {a.name for a in trace.iter_agents()} == {"test_good_run", "writer"}
    verdict = assert_trace(tracejudge_trace, criteria=[checks.tool_arguments], min_score=0.8)
    assert verdict.ok and verdict.of("passed")


def test_bad_run(tracejudge_trace, client):
    run_agents(client)
    assert_trace(
        tracejudge_trace,
        criteria=[checks.tool_arguments, writer_is_vague, broken, "Reward complete answers"],
        min_score=0.8,
    )


def test_the_error_carries_the_verdict(tracejudge_trace, client):
    run_agents(client)
    with pytest.raises(TraceAssertionError) as caught:
        assert_trace(tracejudge_trace, criteria=[writer_is_vague, broken], min_score=0.5)
    verdict = caught.value.verdict
    assert [(f.kind, f.agent) for f in verdict.findings] == [
        ("not applicable", "test_the_error_carries_the_verdict"),
        ("failed", "writer"),
        ("errored", None),
    ]


@pytest.fixture
def ten_agents_client():
    replies = [Reply.text("Plan: ask ten helpers.")]
    for n in range(10):
        if n == 6:  # helper_6 ends with a call it never sees the result of
            replies.append(Reply.tool_calls([ToolCall("get_weather", {"city": "Oslo"}, id="c6")]))
        else:
            replies.append(Reply.text(f"Helper {n}: it is sunny in Paris."))
    with ScriptedLLMServer(replies) as model:
        with openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0) as oai:
            yield oai


def test_one_failed_agent_among_ten(tracejudge_trace, ten_agents_client):
    ten_agents_client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Plan"}]
    )
    for n in range(10):
        with AgentTracer(name=f"helper_{n}"):
            ten_agents_client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Weather?"}], tools=[WEATHER_TOOL]
            )
    assert_trace(tracejudge_trace, criteria=[checks.final_answer], min_score=0.8)


def test_min_score_is_the_bar(tracejudge_trace, client):
    run_agents(client)
    verdict = assert_trace(tracejudge_trace, criteria=[writer_is_vague], min_score=0.25)
    assert [f.kind for f in verdict.findings] == ["not applicable", "passed"]
    assert verdict.attribution is None  # nothing failed: nothing to attribute


@pytest.fixture
def relay_client():
    """The writer calls the tool with a number for the city; the planner then answers
    nothing."""
    replies = [
        Reply.text("Plan: ask the writer."),
        Reply.tool_calls([ToolCall("get_weather", {"city": 42}, id="call_bad")]),
        Reply.text("I could not get the weather."),
        Reply.text(""),
    ]
    with ScriptedLLMServer(replies) as model:
        with openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0) as oai:
            yield oai


def run_relay(client):
    run_agents(client)
    client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Now write the report"}]
    )


def test_the_planner_fails_for_the_writer_s_call(tracejudge_trace, relay_client):
    run_relay(relay_client)
    assert_trace(
        tracejudge_trace, criteria=[checks.final_answer, checks.tool_arguments], min_score=0.8
    )


def test_the_verdict_holds_the_cause(tracejudge_trace, relay_client):
    run_relay(relay_client)
    with pytest.raises(TraceAssertionError) as caught:
        assert_trace(
            tracejudge_trace, criteria=[checks.final_answer, checks.tool_arguments], min_score=0.8
        )
    verdict = caught.value.verdict
    worst = verdict.of("failed")[0]
    assert (worst.agent, worst.criterion) == ("test_the_verdict_holds_the_cause", "final_answer")
    cause = verdict.cause
    assert (cause.agent_name, cause.step.interaction, cause.step.tool_call_id) == (
        "writer",
        0,
        "call_bad",
    )
    assert [c.agent_name for c in verdict.attribution.causes] == [
        "writer",
        "test_the_verdict_holds_the_cause",
    ]
'''


@pytest.fixture
def user_tests(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("TRACEJUDGE_JUDGE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "COMPOSO_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # The plugin is named explicitly, whatever is installed: no second copy from the entry point.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_agents=USER_TESTS)
    return pytester


def _run(user_tests: pytest.Pytester, *arguments: str) -> pytest.RunResult:
    return user_tests.runpytest_subprocess(
        "-p", "tracejudge.pytest_plugin", "-p", "no:cacheprovider", *arguments
    )


def test_failures_list_agent_criterion_score_and_explanation_by_kind(
    user_tests: pytest.Pytester,
) -> None:
    result = _run(user_tests, "-k", "bad_run or good_run or carries or min_score")
    result.assert_outcomes(passed=3, failed=1)
    lines = result.stdout.lines
    # failed, errored and unscored are told apart, each under its own heading
    result.stdout.fnmatch_lines(
        [
            "E * writer scored 0.30 on writer_is_vague (below 0.8); 1 failed, 1 errored, "
            "1 unscored; cause: writer as a whole",
            "E *most likely cause: writer (*) (the agent as a whole) — writer_is_vague, "
            "confidence 0.70 (deterministic, no judge)",
            "E *failed (below min_score 0.8), worst first:",
            "E *writer (*): writer_is_vague = 0.30 — The answer gives no wind or humidity.",
            "E *errored (the evaluation itself failed):",
            "E *every agent: broken — RuntimeError:*the check has a bug*",
            "E *unscored (no judge for these criteria):",
            "E *every agent: Reward complete answers — no judge configured*TRACEJUDGE_JUDGE*",
        ]
    )
    # only the writer failed: the planner (not applicable) and passing scores are not listed
    start = next(i for i, line in enumerate(lines) if "failed (below min_score" in line)
    end = next(i for i, line in enumerate(lines) if "errored (the evaluation" in line)
    assert len(lines[start + 1 : end]) == 1
    assert not any("tool_arguments" in line for line in lines if line.startswith("E "))


def test_a_failure_shows_the_test_line_then_the_findings_and_no_plugin_source(
    user_tests: pytest.Pytester,
) -> None:
    result = _run(user_tests, "-k", "bad_run")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    section = text.split("_ test_bad_run _", 1)[1].split("short test summary", 1)[0]
    # the plugin's own frames are hidden: none of its source or its file is shown
    assert "pytest_plugin.py" not in section and "def assert_trace" not in section
    assert "_sync.run" not in section and "raise TraceAssertionError" not in section
    # the test's own line, then at once the findings
    body = [line for line in section.splitlines() if line.strip() and "____" not in line]
    pointer = next(i for i, line in enumerate(body) if line.startswith(">"))
    assert "assert_trace(" in body[pointer] or "assert_trace(" in "".join(body[pointer - 5 :])
    first_e = next(i for i, line in enumerate(body) if line.startswith("E "))
    assert first_e - pointer <= 5, body
    assert "writer scored 0.30 on writer_is_vague" in body[first_e]
    assert len(body) < 30, body  # was about 60 lines, 35 of them the plugin's source


def test_the_short_summary_names_the_worst_agent(user_tests: pytest.Pytester) -> None:
    result = _run(user_tests, "-k", "bad_run")
    result.stdout.fnmatch_lines(
        ["FAILED test_agents.py::test_bad_run - writer scored 0.30 on writer_is_vague*"]
    )
    assert "tracejudge.pytest_plugin.Tra" not in result.stdout.str()


def test_one_failed_agent_among_ten_fails_the_test_and_is_named_first(
    user_tests: pytest.Pytester,
) -> None:
    result = _run(user_tests, "-k", "among_ten")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * helper_6 scored 0.00 on final_answer (below 0.8); 1 failed; cause: helper_6 "
            "at call 1",
            "E *most likely cause: helper_6 (*) at call 1, tool call c6 "
            "(get_weather) — final_answer, confidence 0.90 (deterministic, no judge)",
            "E *failed (below min_score 0.8), worst first:",
            "E *helper_6 (*): final_answer = 0.00 — *ended with a tool call it never saw the "
            "result of (tool call c6 (get_weather))*",
            "E *at call 1, tool call c6 (get_weather)",
            "FAILED test_agents.py::test_one_failed_agent_among_ten - helper_6 scored 0.00*",
        ]
    )


def test_the_cause_of_the_worst_failure_is_named_where_it_lies(
    user_tests: pytest.Pytester,
) -> None:
    """The planner's empty answer scores worst, but the writer's bad tool call came first:
    the message names the writer's call as the cause."""
    result = _run(user_tests, "-k", "fails_for_the_writer or holds_the_cause")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * test_the_planner_fails_for_the_writer_s_call scored 0.00 on final_answer "
            "(below 0.8); 2 failed; cause: writer at call 1",
            "E *most likely cause: writer (*) at call 1, tool call call_bad "
            "(get_weather) — tool_arguments, confidence 0.95 (deterministic, no judge)",
            "E *and 1 more cause: verdict.attribution, or Composo().attribute(trace), ranks "
            "them all",
            "E *failed (below min_score 0.8), worst first:",
        ]
    )


def test_tracing_in_a_test_brings_no_deprecation_warnings(user_tests: pytest.Pytester) -> None:
    # The fixture initialises tracing (OpenLLMetry's instrumentation is imported then).
    result = _run(user_tests, "-k", "good_run", "-W", "default")
    result.assert_outcomes(passed=1)
    assert "warnings summary" not in result.stdout.str(), result.stdout.str()
    assert "Deprecat" not in result.stdout.str() + result.stderr.str()


def test_the_plugin_is_registered_through_the_pytest11_entry_point() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    entry = project["project"]["entry-points"]["pytest11"]
    assert entry == {"tracejudge": "tracejudge.pytest_plugin"}
    assert "tracejudge.pytest_plugin" in sys.modules or __import__("tracejudge.pytest_plugin")
