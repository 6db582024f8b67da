"""Evaluation rules (#33 item 1): which traces get which criteria, at what sampling rate,
within what budget.

- `sampling`: `sampled(trace_id, rate)`, OpenTelemetry's trace-id ratio decision: every
  replica and every rule at the same rate picks the same traces.
- `model`: `RuleBody` (filter, judge criteria with bars, check bars, session criteria,
  sampling rate, budget), read alike from the rules file, the API and the store.
- `rulefile`: `tracejudge serve --rules FILE` (TOML or YAML), one-line errors.
- `plan`: what the rules decide for one trace: criteria, bars, decisions.
- `apply`: the plan run by the server's scoring of a complete trace (rule budgets, the
  decisions and spend stored), and backfills of stored traces.
The HTTP side is `server.api.rules_api` (`/api/v1/rules`: create, read, update, delete,
backfill) and `server.pages.rules_page` (`/ui/rules`).
"""

from __future__ import annotations

from tracejudge.server.work.rules.model import RuleBody, RuleCriterion, RuleFilter, TraceFacts
from tracejudge.server.work.rules.plan import ActiveRule, Decision, ScoringPlan, plan_scoring
from tracejudge.server.work.rules.rulefile import check_judged, parse_rules, read_rules_file
from tracejudge.server.work.rules.sampling import sample_point, sampled

__all__ = [
    "ActiveRule",
    "Decision",
    "RuleBody",
    "RuleCriterion",
    "RuleFilter",
    "ScoringPlan",
    "TraceFacts",
    "check_judged",
    "parse_rules",
    "plan_scoring",
    "read_rules_file",
    "sample_point",
    "sampled",
]
