"""Re-record every instrumentation now, in subprocesses, and check the recordings still
convert to the same traces as the checked-in fixtures (so the fixtures stay honest as
instrumentation versions move), and that SDK spans converted in process give exactly
what their OTLP encodings give.

Each instrumentation runs in its own process: instrumenting patches the openai client
for good, and this pytest process must stay uninstrumented (another suite instruments
OpenLLMetry in process). Each recording process spends seconds importing openai, so by
default only the three main conventions are re-recorded (in parallel);
TRACEJUDGE_RERECORD_ALL=1 re-records the events modes too. The legacy OpenLLMetry is
re-recorded only when TRACEJUDGE_LEGACY_OPENLLMETRY names an unpacked
opentelemetry-instrumentation-openai 0.54 wheel (see tests/fixtures/record.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.convert._helpers import FIXTURES, INSTRUMENTATIONS, Instrumentation, canonical
from tests.fixtures.record import LEGACY_ENV
from tracejudge.convert import traces_from_otlp

RECORDER = FIXTURES / "record.py"
ROOT = FIXTURES.parents[1]
TIMEOUT_S = 120
ALL_ENV = "TRACEJUDGE_RERECORD_ALL"
DEFAULT = {"openllmetry", "openinference", "genai_semconv", "openllmetry_legacy"}


def _available(inst: Instrumentation) -> str | None:
    """Why the instrumentation cannot be recorded here, or None."""
    if inst.name not in DEFAULT and not os.environ.get(ALL_ENV):
        return f"re-recorded only with {ALL_ENV}=1"
    if inst.name == "openllmetry_legacy":
        path = os.environ.get(LEGACY_ENV)
        return None if path and Path(path).is_dir() else f"{LEGACY_ENV} is not set"
    try:
        found = importlib.util.find_spec(inst.package) is not None
    except (ImportError, ValueError):
        found = False
    return None if found else f"{inst.package} is not installed"


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """Record every available instrumentation in parallel: name -> output dir or skip reason."""
    out = tmp_path_factory.mktemp("recordings")
    results: dict[str, Path | str] = {}
    processes = {}
    for inst in INSTRUMENTATIONS:
        reason = _available(inst)
        if reason is not None:
            results[inst.name] = reason
            continue
        target = out / inst.name
        command = [sys.executable, "-W", "ignore", str(RECORDER), inst.name, "--out", str(target)]
        processes[inst.name] = (
            target,
            subprocess.Popen(
                [*command, "--direct"],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
        )
    for name, (target, process) in processes.items():
        try:
            output, _ = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        if process.returncode != 0:
            pytest.fail(f"recording {name} failed ({process.returncode}):\n{output[-3000:]}")
        results[name] = target
    return results


def _files(inst: Instrumentation) -> list[str]:
    return [inst.name] + ([f"{inst.name}_responses"] if inst.responses else [])


# One group: the module's fixture records every instrumentation at once, which each worker
# running one of these tests would otherwise do again.
@pytest.mark.xdist_group("live-recording")
@pytest.mark.parametrize("inst", INSTRUMENTATIONS, ids=lambda i: i.name)
def test_live_recording_converts_like_the_fixture(
    inst: Instrumentation, recordings: dict[str, Path | str]
) -> None:
    result = recordings[inst.name]
    if isinstance(result, str):
        pytest.skip(result)
    for name in _files(inst):
        logs = result / f"{name}.logs.pb" if inst.logs else None
        (live,) = traces_from_otlp(result / f"{name}.pb", logs=logs)
        (from_json,) = traces_from_otlp(result / f"{name}.jsonl")
        (checked_in,) = traces_from_otlp(FIXTURES / f"{name}.jsonl")
        assert live.warnings == []
        assert canonical(live) == canonical(checked_in), name
        assert live.to_wire() == from_json.to_wire(), name
        # In-process SDK spans convert exactly like their OTLP encodings.
        (direct,) = json.loads((result / f"{name}.direct.json").read_text())
        assert direct == {"trace": live.to_wire(), "warnings": []}, name
