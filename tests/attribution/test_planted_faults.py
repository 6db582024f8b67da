"""With no judge, `attribute` puts the planted fault first: the right agent in at least 95%
of the traces and the right step in at least 90%, on framework recordings with one fault
planted into the converted trace (`inject`) and on the scripted runs of the checks' suite.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from collections.abc import Callable

import pytest

from tests.attribution import inject
from tests.attribution.conftest import RECORDINGS, is_clean, recording
from tests.checks import faults
from tracejudge.evaluation.attribution import AttributionRequest
from tracejudge.evaluation.service import EvaluationService
from tracejudge.models import Attribution, MultiAgentTrace


async def _attribute(trace: MultiAgentTrace) -> Attribution:
    return await EvaluationService().attribute(AttributionRequest(trace=trace))


def _planted() -> list[inject.Planted]:
    planted = []
    for name in RECORDINGS:
        trace = recording(name)
        if not is_clean(trace):
            continue
        for kind, plant in inject.PLANTERS.items():
            found = plant(trace, random.Random(zlib.crc32(f"{name}:{kind}".encode())))
            if found is not None:
                planted.append(found)
    return planted


@pytest.mark.heavy("every framework recording converted and attributed")
async def test_planted_faults_in_framework_recordings_are_attributed_first() -> None:
    planted = _planted()
    kinds = Counter(p.kind for p in planted)
    assert set(kinds) == set(inject.PLANTERS) and min(kinds.values()) >= 50, kinds
    agent_right: Counter[str] = Counter()
    step_right: Counter[str] = Counter()
    for item in planted:
        top = (await _attribute(item.trace)).top
        if top is not None and top.agent_instance_id == item.agent_id:
            agent_right[item.kind] += 1
            if top.step is not None and top.step.interaction == item.interaction:
                step_right[item.kind] += 1
    total = len(planted)
    assert sum(agent_right.values()) / total >= 0.95, (agent_right, kinds)
    assert sum(step_right.values()) / total >= 0.90, (step_right, kinds)
    for kind, count in kinds.items():  # no kind of fault is left to chance
        assert step_right[kind] / count >= 0.85, (kind, step_right[kind], count)


#: Where each scripted run's fault lies: (agent name, its model call index).
SCRIPTED: list[tuple[faults.Scenario, str, int]] = [
    *[(faults.bad_arguments(v), faults.RESEARCHER, 0) for v in range(7)],
    *[(faults.wrong_tool(v), faults.RESEARCHER, 0) for v in range(4)],
    *[(faults.error_result(v), faults.RESEARCHER, 0) for v in range(7)],
    *[(faults.repeated_call(v), faults.RESEARCHER, 1) for v in range(3)],
    *[(faults.repeated_reply(v), faults.RESEARCHER, 1) for v in range(2)],
    *[(faults.ungrounded_number(v), faults.RESEARCHER, 1) for v in range(4)],
    (faults.empty_answer(0), faults.RESEARCHER, 1),
    (faults.empty_answer(1), faults.ORCHESTRATOR, 1),
]


@pytest.mark.parametrize(
    ("scenario", "agent", "step"), SCRIPTED, ids=lambda v: getattr(v, "name", "")
)
async def test_scripted_run_fault_is_the_top_cause(
    record: Callable[[faults.Scenario], MultiAgentTrace],
    scenario: faults.Scenario,
    agent: str,
    step: int,
) -> None:
    attribution = await _attribute(record(scenario))
    top = attribution.top
    assert attribution.failed and top is not None
    assert (top.agent_name, top.step.interaction if top.step else None) == (agent, step)
    assert top.method == "checks" and top.criteria == [scenario.fault[0]]
    assert top.consequence_of is None and top.confidence >= 0.75


@pytest.mark.parametrize("scenario", faults.clean_variants(), ids=lambda s: s.name)
async def test_a_clean_run_has_nothing_to_attribute(
    record: Callable[[faults.Scenario], MultiAgentTrace], scenario: faults.Scenario
) -> None:
    attribution = await _attribute(record(scenario))
    assert not attribution.failed and attribution.causes == []
    assert "nothing failed" in attribution.notes[0]
