"""The rules page and the session page in headless Chromium: drawn without a script error
or a refused style (their Content-Security-Policy allows their own style only), the
figures the API gives, and a screenshot of each kept as a test artifact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cdp import Browser
from tests.chromium import keep, needs_chromium
from tests.server.harness import QUIET_SECONDS, InProcessServer, wait_for
from tests.server.rules_traffic import run, scored, send, trace_ids
from tests.server.test_sessions import CITIES, MINUTE_NS
from tracejudge.server.work.rules import sampled
from tracejudge.testing import ScriptedLLMServer

RULES = """
[[rule]]
name = "checkout-quality"
description = "a tenth of checkout judged for its sources; the checks on every trace"
sample_rate = 0.1
criteria = [{text = "Reward answers that cite the sources the researcher found", bar = 0.9}]
check_bars = {final_answer = 1.0}
max_judge_cost_per_day = 5.0
[rule.filter]
service = "checkout"
root_agent = "orchestrator"

[[rule]]
name = "conversations"
description = "whole conversations judged, half of the sessions"
sample_rate = 0.5
session_criteria = ["Reward conversations where the assistant keeps track of earlier turns"]
"""


@needs_chromium
def test_the_rules_page_and_a_session_page_in_chromium(
    tmp_path: Path,
    judge_model: ScriptedLLMServer,
    start_server: Callable[..., InProcessServer],
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    args = ["--trace-quiet-seconds", QUIET_SECONDS, "--rules", str(rules)]
    server = start_server(str(tmp_path / "db"), judge=judge_model, args=args, api_key=None)
    ids = trace_ids(12, seed=80)
    # a session the conversations rule's 50% sample picks (by its id)
    picked = next(f"s-{n}" for n in range(100) if sampled(f"s-{n}", 0.5))
    with server.client() as http:
        for n, trace_id in enumerate(ids):
            session = picked if n < 3 else f"other-{n}"
            city = CITIES[n] if n < 3 else None
            shift = n * MINUTE_NS
            send(
                http,
                run(
                    trace_id,
                    service="checkout",
                    session=session,
                    user="ann",
                    start_shift_ns=shift,
                    city=city,
                ),
            )
        scored(http, len(ids))
        listed = wait_for(
            lambda: {
                r["rule"]["name"]: r
                for r in http.get("/api/v1/rules").json()["rules"]
                if r["scored"] + r["sampled_out"] == len(ids)
            }
        )

        def judged() -> dict[str, Any] | None:
            found: dict[str, Any] = http.get(f"/api/v1/sessions/{picked}").json()
            return found if any(e["turns"] == 3 for e in found["evaluations"]) else None

        session = wait_for(judged)
    quality = wait_for(lambda: listed.get("checkout-quality"))
    with Browser(tmp_path / "profile") as tab:
        tab.load(f"{server.url}/ui/rules")
        assert tab.console == []
        assert tab.evaluate("document.querySelectorAll('tbody tr').length") == 2
        cells = tab.evaluate(
            "[...document.querySelectorAll('tbody tr')[0].cells].map(c => c.textContent)"
        )
        assert cells[0].startswith("checkout-quality")
        assert cells[5] == "10%"
        assert cells[7] == f"{quality['scored']:,}" and cells[8] == f"{quality['sampled_out']:,}"
        keep(tab.screenshot(tmp_path / "ui-rules.png", full_page=True))

        tab.load(f"{server.url}/ui/sessions/{picked}")
        assert tab.console == []
        shown = tab.evaluate(
            "[...document.querySelectorAll('table:last-of-type tbody .mono')]"
            ".map(e => e.textContent)"
        )
        assert "keeps track of earlier turns" in tab.evaluate("document.body.textContent")
        assert shown == [t["trace_id"] for t in session["trace_list"]] == ids[:3]
        assert session["verdict"] in tab.evaluate("document.querySelector('.facts').textContent")
        keep(tab.screenshot(tmp_path / "ui-session.png", full_page=True))
