"""The cassettes replayed under each instrumentation setup, shared by the replay tests.

`replay_all(out)` runs `drive.py` for every installed setup, each in its own process
(instrumenting patches the clients for good) forked from one that imported the clients;
`recorded_spans(out, setup)` reads what one setup recorded back. `NEVER_RECORDED` lists
what an instrumentation never records (the README's "never recorded" column); `gap`
looks a facet up there.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.replay.drive import cassette_dir
from tracejudge.convert import SpanRecord
from tracejudge.convert._otlp import decode
from tracejudge.testing import Cassette

ROOT = Path(__file__).resolve().parents[2]
SETUPS = {
    "openllmetry": (
        "opentelemetry.instrumentation.openai",
        "opentelemetry.instrumentation.anthropic",
    ),
    "openinference": (
        "openinference.instrumentation.openai",
        "openinference.instrumentation.anthropic",
    ),
    "contrib": ("opentelemetry.instrumentation.openai_v2",),
}
TIMEOUT_S = 240

#: (setup, cassette name part, facet) -> what the instrumentation does not record.
#: This is the README's "never recorded" column.
NEVER_RECORDED: dict[tuple[str, str, str], str] = {
    # OpenLLMetry (opentelemetry-instrumentation-openai / -anthropic 0.62)
    ("openllmetry", "agents-", "output call ids"): "Responses API tool calls carry the item id "
    "fc_…; the call id call_… is joined only through a follow-up request",
    ("openllmetry", "responses-tool", "output call ids"): "as above",
    ("openllmetry", "anthropic", "usage"): "Anthropic streams: output tokens include "
    "message_start's placeholder count",
    # contrib opentelemetry-instrumentation-openai-v2 2.4b0, and the anthropic SDK's own spans
    ("contrib", "responses", "calls"): "no spans for the Responses API",
    ("contrib", "agents-", "calls"): "no spans for the Responses API",
    ("contrib", "completions-legacy", "calls"): "no spans for legacy Completions",
    ("contrib", "functions-legacy", "outputs"): "legacy function_call answers are not recorded",
    ("contrib", "functions-legacy", "output call ids"): "as above",
    ("contrib", "chat-refusal", "refusal"): "refusals are not recorded",
    ("contrib", "vision", "inputs"): "image parts of inputs are not recorded",
    ("contrib", "anthropic", "outputs"): "the anthropic SDK (2.15) records no output of streams",
    ("contrib", "anthropic", "output call ids"): "as above",
    ("contrib", "anthropic", "reasoning"): "as above",
}


def gap(setup: str, cassette: str, facet: str) -> str | None:
    for (where, part, gap_facet), reason in NEVER_RECORDED.items():
        if where == setup and part in cassette and gap_facet == facet:
            return reason
    return None


def replay_all(out: Path) -> None:
    """Replay every cassette under every installed setup, spans written under `out`.

    One `drive.py` process, forking a child per setup once the clients are imported (each
    setup instruments a process of its own; the imports are made once)."""
    installed = [
        setup
        for setup, packages in SETUPS.items()
        if all(importlib.util.find_spec(p) for p in packages)
    ]
    if not installed:
        return
    process = subprocess.Popen(
        [
            sys.executable,
            "-W",
            "ignore",
            str(ROOT / "tests/replay/drive.py"),
            ",".join(installed),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a timeout ends the children too
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
    assert process.returncode == 0, f"replaying under {installed} failed:\n{output[-3000:]}"


def recorded_spans(out: Path, setup: str) -> tuple[dict[str, dict], dict[str, list[SpanRecord]]]:
    """The manifest of one setup's replay (trace id -> cassette and exchange index) and
    its spans by trace id; skips when the setup's instrumentation is not installed."""
    if not (out / f"{setup}.json").exists():
        pytest.skip(f"{setup}: instrumentation not installed")
    manifest = json.loads((out / f"{setup}.json").read_text())
    records, _, warnings = decode((out / f"{setup}.pb").read_bytes(), max_inflated_bytes=1 << 30)
    assert warnings == []
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in records:
        by_trace.setdefault(record.trace_id, []).append(record)
    return manifest, by_trace


@functools.cache
def load_cassette(name: str) -> Cassette:
    """A cassette of the cassette folder, parsed once per process (YAML is slow)."""
    folder = cassette_dir()
    assert folder is not None
    return Cassette.load(folder / name)
