"""The five default checks on real answers: every cassette, replayed under each
instrumentation and converted, is scored by `tool_arguments`, `tool_results`, `loops`,
`grounded_numbers` and `final_answer`, and what the recording says happened decides the
verdict (read from the recorded bodies, never from spans):

- a normal answer (finish reason `stop`) raises no alarm: no check scores below 1.0, and
  `final_answer` passes it - unless the instrumentation never records it (NEVER_RECORDED):
  an answer missing from the trace reads as empty, the output tokens named;
- a refusal fails `final_answer`, named ("the agent refused"); where the instrumentation
  never records refusals it is not passed either;
- an answer cut off at the token limit or by a content filter fails `final_answer`, with
  the finish reason named;
- a call that ends asking for tools leaves the calls dangling: `final_answer` fails it;
- a failed call fails `final_answer` as empty, naming the error.

Shares the session's replay with `test_cassettes.py` (the `replayed` fixture).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.replay.expected import Expected, expected
from tests.replay.replayed import SETUPS, gap, load_cassette, recorded_spans
from tracejudge import checks
from tracejudge.convert import traces_from_spans
from tracejudge.models import MultiAgentTrace, ScoreResponse

# the session's replay (three processes) is made once, on one worker
pytestmark = pytest.mark.xdist_group("cassettes")

OTHERS = (checks.tool_arguments, checks.tool_results, checks.loops, checks.grounded_numbers)


@functools.cache
def _replayed_traces(out: Path, setup: str) -> list[tuple[str, Expected, MultiAgentTrace]]:
    """(where, what the recording says, the converted trace) per replayed model call."""
    manifest, by_trace = recorded_spans(out, setup)
    found = []
    for trace_id, entry in manifest.items():
        name = entry["cassette"]
        cassette = load_cassette(name)
        want = expected(cassette.exchanges[entry["index"]])
        for trace in traces_from_spans(by_trace.get(trace_id, [])):
            if any(a.llm_interactions for a in trace.iter_agents()):
                found.append((f"{name}#{entry['index']}", want, trace))
    return found


def _verdict(setup: str, where: str, want: Expected, final: ScoreResponse | None) -> str | None:
    """What is wrong with `final_answer`'s score of a call the recording describes."""
    assert final is not None
    score, why = final.score, final.explanation
    name = where.split("#")[0]
    if want.error is not None:
        return None if score == 0.0 and "failed" in why else "a failed call passed"
    if want.refusal is not None:
        if gap(setup, name, "refusal"):
            return None if score == 0.0 else "an unrecorded refusal passed"
        return None if score == 0.0 and "the agent refused" in why else "a refusal passed"
    if want.finish_reason in ("length", "content_filter"):
        named = f"finish reason {want.finish_reason!r}" in why
        return None if score == 0.0 and named else "a cut-off answer passed or went unnamed"
    if want.finish_reason == "tool_calls":
        return None if score == 0.0 else "a dangling tool call passed"
    if score == 0.0 and gap(setup, name, "outputs"):
        # Never recorded: the trace holds no answer, and final_answer cannot tell that from
        # an empty one; it names the output tokens the model reported.
        return None if "did not record it" in why else "an unrecorded answer unexplained"
    return None if score == 1.0 else "a normal answer failed"


@pytest.mark.parametrize("setup", list(SETUPS))
def test_the_checks_raise_no_false_alarm_and_fail_what_went_wrong(
    setup: str, replayed: Path
) -> None:
    problems = []
    kinds: set[str] = set()
    for where, want, trace in _replayed_traces(replayed, setup):
        (agent,) = [a for a in trace.iter_agents() if a.llm_interactions]
        final = checks.final_answer.evaluate(trace)[agent.id]
        wrong = _verdict(setup, where, want, final)
        if wrong:
            problems.append(f"{where}: final_answer: {wrong}: {final}")
        kinds.add(want.finish_reason or ("error" if want.error else "none"))
        if want.finish_reason not in ("stop", "tool_calls"):
            continue  # a cut-off or failed answer is final_answer's alone
        for check in OTHERS:
            score = check.evaluate(trace)[agent.id]
            if score is not None and score.score is not None and score.score < 1.0:
                problems.append(f"{where}: {check.name} raised a false alarm: {score}")
    assert not problems, f"{len(problems)} wrong verdicts under {setup}:\n" + "\n".join(problems)
    if setup != "contrib":  # contrib records no Responses API call
        assert {"stop", "tool_calls", "length", "content_filter", "error"} <= kinds


def _trace_of(out: Path, setup: str, cassette: str, index: int) -> MultiAgentTrace:
    (trace,) = [t for w, _, t in _replayed_traces(out, setup) if w == f"{cassette}#{index}"]
    return trace


@pytest.mark.parametrize("setup", ["openllmetry", "openinference"])
def test_numbers_after_a_web_search_cannot_be_verified(setup: str, replayed: Path) -> None:
    for cassette, index in (
        ("openinference-litellm-responses-web-search.yaml", 0),
        ("openllmetry-agents-web-search.yaml", 1),
    ):
        trace = _trace_of(replayed, setup, cassette, index)
        score = checks.grounded_numbers.evaluate(trace)[trace.root.id]
        assert score is not None and score.score is None, (cassette, score)
        assert "built-in tool call" in score.explanation
        assert "cannot be verified" in score.explanation


@pytest.mark.parametrize("setup", ["openllmetry", "openinference"])
def test_a_value_derived_from_the_inputs_is_grounded(setup: str, replayed: Path) -> None:
    # "4" (the history), "Now multiply that by 10." -> "40".
    trace = _trace_of(replayed, setup, "openinference-litellm-responses-reasoning-input.yaml", 1)
    score = checks.grounded_numbers.evaluate(trace)[trace.root.id]
    assert score is not None and score.score == 1.0
    assert "'40' is derived from the inputs: 4 × 10" in score.explanation
