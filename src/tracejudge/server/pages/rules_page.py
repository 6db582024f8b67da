"""`GET /ui/rules`: the evaluation rules on one page, and what each decided so far.

Each rule: its name and where it comes from, its filter, its judge criteria with their
bars, its check bars and session criteria, its sampling rate, its budget with what its
judge spent today, and how many traces it scored, sampled out and left over budget (each
count a link to the traces it names). Plain HTML, no script (`plainpage`).
"""

from __future__ import annotations

import html
import time

from starlette.requests import Request
from starlette.responses import HTMLResponse

from tracejudge.server.http.operation import HTML, ApiRoute, Operation
from tracejudge.server.pages import plainpage
from tracejudge.server.pages.ui import LIST_PATH
from tracejudge.server.store import RuleRow, RuleTally
from tracejudge.server.work.budget import utc_day
from tracejudge.server.work.context import context_of, in_thread
from tracejudge.server.work.rules.model import RuleBody, RuleCriterion

__all__ = ["RULES_PATH", "render_rules", "routes"]

RULES_PATH = LIST_PATH + "/rules"
_e = html.escape


def _filter(rule: RuleBody) -> str:
    f = rule.filter
    parts = [
        f"{name} = {value}"
        for name, value in (
            ("service", f.service),
            ("service.version", f.service_version),
            ("root agent", f.root_agent),
            ("agent", f.agent),
            ("spans ≥", f.min_spans),
            ("spans ≤", f.max_spans),
        )
        if value is not None
    ]
    parts += [f"tag {k}:{v}" for k, v in sorted(f.tags.items())]
    parts += [f"{k} = {v}" for k, v in sorted(f.resource.items())]
    if not parts:
        return '<span class="na">every trace</span>'
    return "".join(f'<span class="tag">{_e(p)}</span>' for p in parts)


def _criteria(items: list[RuleCriterion], default: str) -> str:
    if not items:
        return '<span class="na">none</span>'
    shown = []
    for item in items:
        bar = f"{item.bar:g}" if item.bar is not None else default
        shown.append(f'<li>{_e(item.text)} <span class="small">(bar {_e(bar)})</span></li>')
    return f"<ul>{''.join(shown)}</ul>"


def _budget(rule: RuleBody, spent: tuple[float, int]) -> str:
    parts = []
    if rule.max_judge_cost_per_day is not None:
        parts.append(f"${spent[0]:.4f} of ${rule.max_judge_cost_per_day:g} today")
    if rule.max_judge_tokens_per_day is not None:
        parts.append(f"{spent[1]:,} of {rule.max_judge_tokens_per_day:,} tokens today")
    if not parts:
        return '<span class="na">the server\'s</span>'
    return "<br>".join(_e(p) for p in parts)


def _rule_row(row: RuleRow, tally: RuleTally, spent: tuple[float, int]) -> str:
    rule = RuleBody.model_validate_json(row.body)
    checks = (
        ", ".join(f"{name} {bar:g}" for name, bar in sorted(rule.check_bars.items())) or "defaults"
    )
    checks_when = "in its sample only" if rule.sample_checks else "every trace"
    state = "" if rule.enabled else ' <span class="warn">(disabled)</span>'
    description = f'<div class="small">{_e(rule.description)}</div>' if rule.description else ""
    return (
        f"<tr><td><b>{_e(rule.name)}</b>{state}{description}"
        f'<div class="small">{_e(row.source)}, revision {row.revision}</div></td>'
        f"<td>{_filter(rule)}</td>"
        f"<td>{_criteria(rule.criteria, '0.5')}</td>"
        f'<td>{_e(checks)}<div class="small">{_e(checks_when)}</div></td>'
        f"<td>{_criteria(rule.session_criteria, '0.5')}</td>"
        f'<td class="n">{rule.sample_rate * 100:.3g}%</td>'
        f"<td>{_budget(rule, spent)}</td>"
        f'<td class="n good">{tally.scored:,}</td><td class="n na">{tally.sampled_out:,}</td>'
        f'<td class="n warn">{tally.over_budget:,}</td></tr>'
    )


def render_rules(
    rows: list[RuleRow], tallies: dict[str, RuleTally], spent: dict[str, tuple[float, int]]
) -> str:
    if rows:
        table = (
            "<table><thead><tr><th>rule</th><th>traces it keeps</th><th>judge criteria</th>"
            '<th>check bars</th><th>session criteria</th><th class="n">sampled</th>'
            '<th>judge budget</th><th class="n">scored</th><th class="n">sampled out</th>'
            '<th class="n">over budget</th></tr></thead><tbody>'
            + "".join(
                _rule_row(r, tallies.get(r.name, RuleTally()), spent.get(r.name, (0.0, 0)))
                for r in rows
            )
            + "</tbody></table>"
        )
        note = (
            '<p class="facts">The checks run on every trace unless a rule samples them; each '
            "rule's judge criteria run on the traces its filter keeps and its sample picks "
            "(decided from the trace id: every replica and every rule at the same rate pick "
            "the same traces). A change applies to traces completed after it; POST "
            "/api/v1/rules/{name}/backfill runs a rule on stored traces.</p>"
        )
    else:
        table = ""
        note = (
            '<p class="facts">No rule: every complete trace is scored with the server\'s '
            'criteria. Give rules with <span class="mono">tracejudge serve --rules '
            "FILE</span> or POST /api/v1/rules.</p>"
        )
    body = (
        f'<nav><a href="{LIST_PATH}">&larr; all traces</a></nav>'
        f"<h1>tracejudge: evaluation rules</h1>{note}{table}"
    )
    return plainpage.document("tracejudge: rules", body)


async def rules_page(request: Request) -> HTMLResponse:
    store = context_of(request).store
    rows = await in_thread(store.rules.all)
    tallies = await in_thread(store.decisions.tallies)
    spent = await in_thread(store.rules.spent, utc_day(time.time()))
    return HTMLResponse(render_rules(rows, tallies, spent), headers=plainpage.headers())


routes = [
    ApiRoute(
        RULES_PATH,
        rules_page,
        methods=["GET"],
        operation=Operation(
            "Web page: the evaluation rules and what each decided so far",
            {"200": {"description": "The page", "content": HTML}},
        ),
    ),
]
