"""`from_answers`: the deterministic attribution of answers a trace already has (what the
trace viewer, the batch report and the pytest plugin show) is the one `attribute` makes
with the checks, without evaluating anything again."""

from __future__ import annotations

import random
import zlib

import pytest

from tests.attribution import inject
from tests.attribution.conftest import RECORDINGS, is_clean, recording
from tracejudge import checks
from tracejudge.evaluation.attribution import AttributionRequest, from_answers
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import Attribution, ScoreResponse, Step


def _without_time(attribution: Attribution) -> dict[str, object]:
    return attribution.model_dump(mode="json", exclude={"seconds"})


def _planted(count: int) -> list[inject.Planted]:
    found: list[inject.Planted] = []
    for name in RECORDINGS:
        trace = recording(name)
        if not is_clean(trace):
            continue
        for kind, plant in inject.PLANTERS.items():
            planted = plant(trace, random.Random(zlib.crc32(f"{name}:{kind}".encode())))
            if planted is not None:
                found.append(planted)
        if len(found) >= count:
            break
    return found


async def test_the_answers_attribution_is_the_checks_attribution() -> None:
    service = EvaluationService()
    planted = _planted(12)
    assert {p.kind for p in planted} == set(inject.PLANTERS)
    for item in planted:
        responses = await service.score_trace(item.trace, checks.ALL)
        made = await service.attribute(AttributionRequest(trace=item.trace))
        given = from_answers(item.trace, responses)
        assert _without_time(given) == _without_time(made)
        assert given.failed and given.top is not None
        assert given.top.agent_instance_id == item.agent_id
        # the answers alone are used: with them, the service evaluates nothing either
        again = await service.attribute(AttributionRequest(trace=item.trace, responses=responses))
        assert _without_time(again) == _without_time(given)


async def test_a_check_with_arguments_counts_as_a_check() -> None:
    """A budget check given its own limit is still a check: its findings get steps."""
    item = next(p for p in _planted(12) if p.kind == "cut_off")
    budget = checks.budgets(max_tokens=1)
    responses = await EvaluationService().score_trace(item.trace, [budget])
    attribution = from_answers(item.trace, responses)
    assert attribution.failed
    assert attribution.causes and all(c.method == "checks" for c in attribution.causes)
    assert any(str(budget.name) in c.criteria for c in attribution.causes)


async def test_clean_answers_have_nothing_to_attribute() -> None:
    trace = next(t for t in map(recording, RECORDINGS) if is_clean(t))
    responses = await EvaluationService().score_trace(trace, checks.ALL)
    attribution = from_answers(trace, responses)
    assert not attribution.failed and attribution.causes == []
    assert attribution.notes and "nothing failed" in attribution.notes[0]


@pytest.mark.parametrize("bar", [0.0, 0.5, 1.0])
async def test_the_bar_decides_what_failed(bar: float) -> None:
    item = next(p for p in _planted(12) if p.kind == "bad_arguments")
    responses = await EvaluationService().score_trace(item.trace, checks.ALL)
    scores = [
        r.score
        for response in responses
        for agent in response.results_by_agent_name.values()
        for r in agent.results_by_agent_instance_id.values()
        if r is not None and r.score is not None
    ]
    attribution = from_answers(item.trace, responses, fail_under=bar)
    assert attribution.failed == any(s < bar for s in scores)
    assert attribution.failed == (bar > 0.0)  # nothing scores below 0; the fault 0


async def test_a_check_of_your_own_points_to_its_steps_when_named() -> None:
    """Given the criteria, a check of the user's own is a check: its finding keeps its
    step; without them it is read as a judged criterion (the agent as a whole)."""
    item = next(p for p in _planted(12) if p.kind == "bad_arguments")

    @checks.check
    def first_call_is_wrong(agent):  # type: ignore[no-untyped-def]
        if agent.id != item.agent_id:
            return None
        return ScoreResponse(
            score=0.0, explanation="the first call is wrong", steps=[Step(interaction=0)]
        )

    responses = await EvaluationService().score_trace(item.trace, [first_call_is_wrong])
    named = from_answers(item.trace, responses, criteria=[first_call_is_wrong])
    assert named.top is not None and named.top.step == Step(interaction=0)
    assert named.top.agent_instance_id == item.agent_id
    unnamed = from_answers(item.trace, responses)
    assert unnamed.top is not None and unnamed.top.step is None
