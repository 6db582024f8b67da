"""Re-record framework programs now and check that they convert like the checked-in
fixtures, and that in-process SDK spans (and `AgentTracer("app").trace`, composed)
give exactly what their OTLP encodings give.

Runs only where the frameworks are installed (the `record-frameworks` extra, kept out
of CI's install); each recording runs in its own process. By default one recording per
framework is re-recorded (its composed twin too); TRACEJUDGE_RERECORD_ALL=1 re-records
every one whose packages import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.convert._helpers import canonical
from tests.fixtures.frameworks.record import names, recording_of, unavailable
from tracejudge.convert import traces_from_otlp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "frameworks"
RECORDER = FIXTURES / "record.py"
ROOT = FIXTURES.parents[2]
DEFAULT = {
    "openai_agents_openinference",
    "langgraph_openllmetry",
    "pydantic_ai_v6_chat",
    "smolagents_openinference",
    "vercel_v6_agent",
    "strands",
    "agent_framework",
}
TIMEOUT_S = 300


def _wanted(name: str) -> str | None:
    if not os.environ.get("TRACEJUDGE_RERECORD_ALL") and name.removesuffix("_composed") not in (
        DEFAULT
    ):
        return "re-recorded only with TRACEJUDGE_RERECORD_ALL=1"
    return unavailable(name)


def _renumbered(form: Any) -> Any:
    """A canonical form with each tool call id replaced by the order it was first seen in:
    some producers make random ids (ADK's `adk-<uuid>` client ids, which a call recorded
    without content keeps), so two runs agree on which result joins which call, not on
    the ids."""
    seen: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, tuple) and len(value) == 4 and value[0] in ("call", "result"):
            kind, call_id, *rest = value
            return (kind, seen.setdefault(call_id, f"#{len(seen)}"), *rest)
        if isinstance(value, (list, tuple)):
            return type(value)(walk(item) for item in value)
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        return value

    return walk(form)


@pytest.mark.parametrize("name", names())
def test_live_recording_converts_like_the_fixture(name: str, tmp_path: Path) -> None:
    reason = _wanted(name)
    if reason:
        pytest.skip(reason)
    command = [sys.executable, "-W", "ignore", str(RECORDER), name, "--out", str(tmp_path)]
    result = subprocess.run(
        [*command, "--direct"], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    folder = recording_of(name)[0].folder  # (recordings kept apart are in a subfolder)
    tmp_path, fixtures = tmp_path / folder, FIXTURES / folder
    live = [t for t in traces_from_otlp(tmp_path / f"{name}.pb") if t.has_llm_interactions]
    from_json = [t for t in traces_from_otlp(tmp_path / f"{name}.jsonl") if t.has_llm_interactions]
    fixture = [t for t in traces_from_otlp(fixtures / f"{name}.pb") if t.has_llm_interactions]
    assert [_renumbered(canonical(t)) for t in live] == [_renumbered(canonical(t)) for t in fixture]
    assert [t.final_output for t in live] == [t.final_output for t in fixture]
    assert [t.to_wire() for t in live] == [t.to_wire() for t in from_json]
    if not (tmp_path / f"{name}.direct.json").exists():  # a Node program: OTLP only
        return
    direct = json.loads((tmp_path / f"{name}.direct.json").read_text())
    in_process = [
        d
        for d in direct["traces"]
        if any(a["interactions"] for a in d["trace"]["agent_instance_by_id"].values())
    ]
    assert [d["trace"] for d in in_process] == [t.to_wire() for t in live]
    assert [d["warnings"] for d in in_process] == [t.warnings for t in live]
    if "agent_tracer" in direct:  # composed: what the user's AgentTracer("app") read
        (trace,) = live
        assert direct["agent_tracer"]["trace"] == trace.to_wire()
