"""Every recorded cassette, replayed through the real clients under each instrumentation,
converts to the model call the recording shows: messages by role, tool calls with
arguments and ids, tool results by id, answer text, other choices, refusal, finish
reason, reasoning, built-in tools, usage, model, errors.

Each setup runs `drive.py` in its own process (instrumenting patches the clients for
good), the three in parallel. What an instrumentation never records is listed in
NEVER_RECORDED, with the reason; everything else must match. Needs the cassette folder
(`shared/cassettes`, or $TRACEJUDGE_CASSETTES) and the instrumentations of the test extra.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.replay.compare import differences
from tests.replay.drive import cassette_dir
from tests.replay.expected import expected
from tracejudge.convert import SpanRecord, traces_from_spans
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


def _gap(setup: str, cassette: str, facet: str) -> str | None:
    for (where, part, gap_facet), reason in NEVER_RECORDED.items():
        if where == setup and part in cassette and gap_facet == facet:
            return reason
    return None


@pytest.fixture(scope="session")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = cassette_dir()
    if folder is None:
        pytest.skip("no cassette folder (shared/cassettes or $TRACEJUDGE_CASSETTES)")
    out = tmp_path_factory.mktemp("replayed")
    processes = {}
    for setup, packages in SETUPS.items():
        if not all(importlib.util.find_spec(p) for p in packages):
            continue
        processes[setup] = subprocess.Popen(
            [
                sys.executable,
                "-W",
                "ignore",
                str(ROOT / "tests/replay/drive.py"),
                setup,
                "--out",
                str(out),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    for setup, process in processes.items():
        try:
            output, _ = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        assert process.returncode == 0, f"replaying under {setup} failed:\n{output[-3000:]}"
    return out


def _traces(out: Path, setup: str) -> tuple[dict[str, dict], dict[str, list[SpanRecord]]]:
    if not (out / f"{setup}.json").exists():
        pytest.skip(f"{setup}: instrumentation not installed")
    manifest = json.loads((out / f"{setup}.json").read_text())
    records, _, warnings = decode((out / f"{setup}.pb").read_bytes(), max_inflated_bytes=1 << 30)
    assert warnings == []
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in records:
        by_trace.setdefault(record.trace_id, []).append(record)
    return manifest, by_trace


@pytest.mark.parametrize("setup", list(SETUPS))
def test_every_cassette_converts_to_what_was_recorded(setup: str, replayed: Path) -> None:
    manifest, by_trace = _traces(replayed, setup)
    folder = cassette_dir()
    assert folder is not None
    cassettes: dict[str, Cassette] = {}
    problems, gaps_seen = [], set()
    for trace_id, entry in manifest.items():
        name = entry["cassette"]
        cassette = cassettes.setdefault(name, Cassette.load(folder / name))
        want = expected(cassette.exchanges[entry["index"]])
        where = f"{name}#{entry['index']}"
        traces = traces_from_spans(by_trace.get(trace_id, []))
        calls = [c for t in traces for a in t.iter_agents() for c in a.llm_interactions]
        if len(calls) != 1:
            if _gap(setup, name, "calls") and not calls:
                gaps_seen.add(("calls", name))
                continue
            problems.append(f"{where}: {len(calls)} interactions for one call")
            continue
        warnings = [w for t in traces for w in t.warnings]
        if warnings and not any(_gap(setup, name, f) for f in ("outputs", "calls")):
            problems.append(f"{where}: warnings {warnings}")
        for facet, (got, wanted) in differences(calls[0], want).items():
            if _gap(setup, name, facet):
                gaps_seen.add((facet, name))
                continue
            problems.append(f"{where} {facet}:\n  got  {got!r:.400}\n  want {wanted!r:.400}")
    assert not problems, f"{len(problems)} differences under {setup}:\n" + "\n".join(problems)
    # Every listed gap still shows: a fixed instrumentation must leave the list.
    listed = {(f, p) for (s, p, f) in NEVER_RECORDED if s == setup}
    unseen = {(f, p) for f, p in listed if not any(f == g and p in n for g, n in gaps_seen)}
    assert not unseen, f"listed as never recorded under {setup}, but recorded now: {unseen}"
