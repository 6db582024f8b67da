"""Every program in examples/ runs offline (ScriptedLLMServer on loopback) and prints scores.

Each runs in its own process with the developer's model variables removed, under a time
bound. An example whose framework is not installed (its `# requires: <module>` line) exits
with status 1 and one line on stderr naming what to install: its run is skipped here, and
that exit is checked for every framework example with the framework made unimportable.
With OTEL_EXPORTER_OTLP_ENDPOINT set, every example that runs an agent sends its trace
there: checked against a real server (`python -m tracejudge.server` under uvicorn).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.harness import API_KEY, QUIET_SECONDS, InProcessServer, wait_for

pytestmark = pytest.mark.heavy("each example runs as a program of its own")

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
_REQUIRES = re.compile(r"^# requires: (\S+)$", re.M)
FRAMEWORK_EXAMPLES = [e for e in EXAMPLES if _REQUIRES.search(e.read_text())]

#: The examples that run no agent, so have no trace to send: they score messages or
#: compute rewards. Every other example must export.
WITHOUT_AGENT = {
    "rl_reward_training_loop.py",
    "seed_evaluate.py",
    "seed_osmosis_rewards.py",
    "seed_tool_call_evaluation.py",
}
TRACING_EXAMPLES = [e for e in EXAMPLES if e.name not in WITHOUT_AGENT]


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TRACEJUDGE_", "ANTHROPIC_", "COMPOSO_", "OTEL_"))
    }
    src = str(ROOT / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


def _requires(example: Path) -> str | None:
    found = _REQUIRES.search(example.read_text())
    return found.group(1) if found else None


def _skip_without_framework(example: Path) -> None:
    module = _requires(example)
    if module is not None and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (the example says what to install)")


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def _run(example: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_runs(example: Path) -> None:
    _skip_without_framework(example)
    done = _run(example, _env())
    assert done.returncode == 0, done.stderr
    scores = re.findall(r"Score: (\d\.\d+|None)", done.stdout)
    assert scores, done.stdout
    assert any(s != "None" and float(s) > 0.5 for s in scores), done.stdout


@pytest.mark.parametrize("example", FRAMEWORK_EXAMPLES, ids=[e.name for e in FRAMEWORK_EXAMPLES])
def test_a_framework_example_without_its_framework_fails_in_one_line(
    example: Path, tmp_path: Path
) -> None:
    # A sitecustomize puts a finder first on sys.meta_path that refuses the framework's
    # module and its submodules, as an environment without the package does.
    module = _requires(example)
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Absent:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r} or name.startswith({module + '.'!r}):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Absent())\n"
    )
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    done = _run(example, env, timeout=60)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    named = re.match(rf"{re.escape(example.name)} needs (\S+), which is not installed: ", lines[0])
    assert named, lines
    # the refused module, or one this environment lacks anyway (found first)
    assert named[1] == module or not _importable(named[1]), lines
    install = example.read_text().split("\n    pip install ", 1)[1].split("\n", 1)[0]
    assert lines[0].endswith(f"pip install {install}"), (lines[0], install)


@pytest.fixture(scope="module")
def otlp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    """A keyed server (in a thread) that converts a trace its quiet period after its last span."""
    db = tmp_path_factory.mktemp("otlp") / "server.db"
    server = InProcessServer(str(db), args=["--trace-quiet-seconds", QUIET_SECONDS]).start()
    try:
        yield server
    finally:
        server.stop()


def _trace_ids(server: InProcessServer) -> set[str]:
    with server.client() as client:
        listed = client.get("/api/v1/traces", params={"limit": 200}).json()["traces"]
    return {t["trace_id"] for t in listed}


@pytest.mark.parametrize("example", TRACING_EXAMPLES, ids=[e.name for e in TRACING_EXAMPLES])
def test_example_sends_its_trace_to_the_otlp_endpoint(
    example: Path, otlp_server: InProcessServer
) -> None:
    _skip_without_framework(example)
    before = _trace_ids(otlp_server)
    env = _env()
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp_server.url
    env["OTEL_EXPORTER_OTLP_HEADERS"] = f"API-Key={API_KEY}"
    done = _run(example, env)
    assert done.returncode == 0, done.stderr
    assert "could not be exported" not in done.stderr, done.stderr

    def converted() -> list[dict]:
        with otlp_server.client() as client:
            listed = client.get("/api/v1/traces", params={"limit": 200}).json()["traces"]
        new = [t for t in listed if t["trace_id"] not in before]
        return new if new and all(t["status"] != "open" for t in new) else []

    arrived = wait_for(converted, timeout=30)
    agents = {name for t in arrived for name in t["agents"]}
    assert sum(t["model_calls"] for t in arrived) >= 1, arrived
    printed = set(re.findall(r"^agent (\S+):", done.stdout, re.M))
    printed |= {
        name
        for chain in re.findall(r"^trace \S+: (.+)$", done.stdout, re.M)
        for name in chain.split(" > ")
    }
    assert printed <= agents, (printed, agents)
    assert agents, arrived
