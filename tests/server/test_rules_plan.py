"""What the rules decide for one trace, as a pure function: which rules keep it, which
sample it, the criteria and their bars (a criterion two rules ask for judged once, to the
higher bar), the checks on every trace unless the matching rules that sample them all
left it out, and a rule over its budget leaving out only what it alone asked for."""

from __future__ import annotations

from tests.server.rules_traffic import trace_ids
from tracejudge import checks
from tracejudge.server.work.rules import ActiveRule, RuleBody, TraceFacts, plan_scoring, sampled

IN_HALF = next(t for t in trace_ids(50) if sampled(t, 0.5))
OUT_OF_HALF = next(t for t in trace_ids(50) if not sampled(t, 0.5))


def _rule(**fields: object) -> ActiveRule:
    return ActiveRule(RuleBody.model_validate(fields))


def _facts(trace_id: str, **fields: object) -> TraceFacts:
    defaults: dict[str, object] = {
        "service": "checkout",
        "root_agent": "orchestrator",
        "agents": ["orchestrator", "writer"],
        "resource": {"service.version": "1.4.0"},
        "tags": {"team": "search"},
        "span_count": 12,
    }
    return TraceFacts(trace_id=trace_id, **{**defaults, **fields})


def test_filters_keep_the_traces_they_name() -> None:
    keeps = {
        "service": "checkout",
        "service_version": "1.4.0",
        "root_agent": "orchestrator",
        "agent": "writer",
        "tags": {"team": "search"},
        "resource": {"service.version": "1.4.0"},
        "min_spans": 12,
        "max_spans": 12,
    }
    rule = _rule(name="all", filter=keeps, criteria=["Reward a"])
    assert rule.body.filter.matches(_facts(IN_HALF))
    for field, other in [
        ("service", "search"),
        ("service_version", "1.5.0"),
        ("root_agent", "writer"),
        ("agent", "critic"),
        ("tags", {"team": "ads"}),
        ("min_spans", 13),
        ("max_spans", 11),
    ]:
        narrower = _rule(name="one", filter={field: other})
        why = narrower.body.filter.mismatch(_facts(IN_HALF))
        assert why, field
    assert "service is 'checkout', not 'search'" == _rule(
        name="x", filter={"service": "search"}
    ).body.filter.mismatch(_facts(IN_HALF))


def test_one_criterion_two_rules_judged_once_to_the_higher_bar() -> None:
    rules = [
        _rule(name="a", criteria=[{"text": "Reward a", "bar": 0.6}], check_bars={"loops": 0.5}),
        _rule(name="b", criteria=[{"text": "Reward a", "bar": 0.8}, "Reward b"]),
    ]
    plan = plan_scoring(_facts(IN_HALF), rules, checks.ALL)
    assert [c for c in plan.criteria if isinstance(c, str)] == ["Reward a", "Reward b"]
    assert plan.bars == {"Reward a": 0.8, "loops": 0.5}
    assert plan.owners == {"Reward a": "a", "Reward b": "b"}
    assert len([c for c in plan.criteria if not isinstance(c, str)]) == len(checks.ALL)
    # over its budget, a leaves out nothing b still asks for, and its bar goes with it
    plan.drop_rule("a", "not judged: its budget is spent")
    assert [c for c in plan.criteria if isinstance(c, str)] == ["Reward a", "Reward b"]
    assert plan.owners == {"Reward a": "b", "Reward b": "b"}
    assert plan.bars["Reward a"] == 0.8
    assert [(d.rule, d.outcome) for d in plan.decisions] == [("a", "over_budget"), ("b", "scored")]
    plan.drop_rule("b", "not judged: its budget is spent")
    assert not plan.judged and "Reward a" not in plan.bars


def test_sampling_and_the_checks_on_every_trace_unless_a_rule_samples_them() -> None:
    half = _rule(name="half", sample_rate=0.5, criteria=["Reward a"])
    plan = plan_scoring(_facts(OUT_OF_HALF), [half], checks.ALL)
    assert not plan.judged and len(plan.criteria) == len(checks.ALL)
    assert plan.decisions[0].outcome == "sampled_out"
    sampling_checks = _rule(name="s", sample_rate=0.5, criteria=["Reward a"], sample_checks=True)
    assert plan_scoring(_facts(OUT_OF_HALF), [sampling_checks], checks.ALL).criteria == []
    assert len(plan_scoring(_facts(IN_HALF), [sampling_checks], checks.ALL).criteria) == 1 + len(
        checks.ALL
    )
    disabled = _rule(name="off", criteria=["Reward a"], enabled=False)
    assert plan_scoring(_facts(IN_HALF), [disabled], checks.ALL).decisions == []
    # a rule with nothing to judge keeps every trace its filter keeps
    bars_only = _rule(name="bars", sample_rate=0.01, check_bars={"loops": 0.9})
    (decision,) = plan_scoring(_facts(OUT_OF_HALF), [bars_only], checks.ALL).decisions
    assert decision.outcome == "scored"
