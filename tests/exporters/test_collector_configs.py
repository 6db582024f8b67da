"""The Collector pipelines in exporters/ against the server's real routes and auth.

No Collector binary can run here, so each file is parsed and checked for what the
Collector would do with it (every pipeline names defined components; the tracejudge
exporter's URL is the server's OTLP route, its header the server's key header, the key
from the environment), and the exact URL, header and compression the Collector would
send are then used by the standard OTLP exporter against a live server. The fan-out is
tested for real with Arize Phoenix as the second backend (slow: `pytest -m slow`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.server.harness import API_KEY, InProcessServer, ServerProcess, server_env, wait_for
from tracejudge.server.http.auth import API_KEY_HEADER
from tracejudge.server.intake.otlp import routes as otlp_routes

ROOT = Path(__file__).resolve().parents[2]
EXPORTERS = ROOT / "exporters"
CONFIGS = sorted(EXPORTERS.glob("*.yaml"))
TRACEJUDGE = "otlphttp/tracejudge"
#: What the otlphttp exporter appends to `endpoint` for traces.
TRACES_PATH = "/v1/traces"
_REFERENCE = re.compile(r"\$\{env:([A-Z0-9_]+)(?::-([^}]*))?\}")


def resolve(value: str, env: dict[str, str]) -> str:
    """A config value with `${env:NAME}` / `${env:NAME:-default}` expanded, as the
    Collector does."""
    return _REFERENCE.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), value)


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def test_every_collector_file_is_listed() -> None:
    assert {p.name for p in CONFIGS} == {"tracejudge.yaml", "fanout.yaml", "tail-sampling.yaml"}
    assert (EXPORTERS / "README.md").exists() and (EXPORTERS / "sdk.env").exists()


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_pipelines_name_only_defined_components(path: Path) -> None:
    config = load(path)
    pipelines = config["service"]["pipelines"]
    assert "traces" in pipelines
    for pipeline in pipelines.values():
        for kind in ("receivers", "processors", "exporters"):
            for name in pipeline.get(kind, []):
                assert name in config[kind], f"{path.name}: {kind} {name!r} is not defined"
    otlp = config["receivers"]["otlp"]["protocols"]
    assert otlp["grpc"]["endpoint"].endswith(":4317")
    assert otlp["http"]["endpoint"].endswith(":4318")
    # batch last among processors, memory_limiter first: the Collector's advice
    processors = pipelines["traces"]["processors"]
    assert processors[0] == "memory_limiter" and processors[-1] == "batch"


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_the_tracejudge_exporter_matches_the_servers_route_and_auth(path: Path) -> None:
    exporter = load(path)["exporters"][TRACEJUDGE]
    assert TRACEJUDGE in load(path)["service"]["pipelines"]["traces"]["exporters"]
    base = resolve(exporter["endpoint"], {})
    assert base == "http://localhost:8000"  # `tracejudge serve`'s default port
    assert TRACES_PATH in {route.path for route in otlp_routes}
    assert "POST" in next(r for r in otlp_routes if r.path == TRACES_PATH).methods
    (header,) = exporter["headers"]
    assert header.lower() == API_KEY_HEADER.lower()
    # the key comes from the environment, never written in the file
    assert exporter["headers"][header] == "${env:TRACEJUDGE_API_KEY}"
    assert resolve(exporter["headers"][header], {"TRACEJUDGE_API_KEY": "k"}) == "k"


def test_fanout_sends_to_each_backend_at_its_otlp_address() -> None:
    exporters = load(EXPORTERS / "fanout.yaml")["exporters"]
    assert set(exporters) == {
        TRACEJUDGE,
        "otlp/jaeger",
        "otlp/tempo",
        "otlphttp/phoenix",
        "otlphttp/langfuse",
    }
    assert resolve(exporters["otlp/jaeger"]["endpoint"], {}) == "jaeger:4317"
    assert resolve(exporters["otlp/tempo"]["endpoint"], {}) == "tempo:4317"
    assert resolve(exporters["otlphttp/phoenix"]["endpoint"], {}) == "http://phoenix:6006"
    langfuse = exporters["otlphttp/langfuse"]
    assert resolve(langfuse["endpoint"], {}).endswith("/api/public/otel")
    assert langfuse["headers"]["Authorization"] == "Basic ${env:LANGFUSE_AUTH}"


def test_tail_sampling_keeps_errors_and_a_fraction_of_the_rest() -> None:
    config = load(EXPORTERS / "tail-sampling.yaml")
    sampling = config["processors"]["tail_sampling"]
    policies = {p["type"]: p for p in sampling["policies"]}
    assert policies["status_code"]["status_code"]["status_codes"] == ["ERROR"]
    share = float(
        resolve(str(policies["probabilistic"]["probabilistic"]["sampling_percentage"]), {})
    )
    assert 0 < share < 100
    assert resolve(sampling["decision_wait"], {}) == "30s"
    processors = config["service"]["pipelines"]["traces"]["processors"]
    assert processors.index("tail_sampling") < processors.index("batch")


def read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value
    return values


@pytest.fixture
def server(tmp_path: Path) -> Any:
    process = InProcessServer(
        str(tmp_path / "tj.db"), args=["--trace-quiet-seconds", "0.3"], log=tmp_path / "log"
    ).start()
    yield process
    process.stop()


def _run_app(env: dict[str, str], *args: str) -> None:
    """The traced three-agent run (tests/exporters/app.py) in its own process."""
    full = {**server_env(), **env}
    full["PYTHONPATH"] = f"{ROOT}{os.pathsep}{full['PYTHONPATH']}"
    subprocess.run(
        [sys.executable, "-m", "tests.exporters.app", *args],
        env=full,
        cwd=ROOT,
        check=True,
        timeout=120,
    )


def _stored_agents(server: InProcessServer) -> set[str]:
    with server.client() as http:
        (listed,) = wait_for(
            lambda: http.get("/api/v1/traces", params={"status": "scored"}).json()["traces"],
            timeout=60,
        )
    return set(listed["agents"])


@pytest.mark.heavy("a traced program as a process, to a server process")
def test_the_sdk_env_recipe_sends_to_a_live_server(server: InProcessServer) -> None:
    env = read_env_file(EXPORTERS / "sdk.env")
    assert env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].endswith(TRACES_PATH)
    assert env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"].startswith(f"{API_KEY_HEADER}=")
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].replace(
        "http://localhost:8000", server.url
    )
    env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = f"{API_KEY_HEADER}={API_KEY}"
    _run_app(env)
    assert _stored_agents(server) == {"orchestrator", "researcher", "writer"}


@pytest.mark.heavy("a server process fed what a collector sends")
def test_what_the_collector_would_send_is_accepted_by_a_live_server(
    server: InProcessServer,
) -> None:
    """The collector's request, made by the standard OTLP/HTTP exporter: the resolved
    endpoint + /v1/traces, the resolved headers, gzip."""
    exporter = load(EXPORTERS / "tracejudge.yaml")["exporters"][TRACEJUDGE]
    env = {"TRACEJUDGE_ENDPOINT": server.url, "TRACEJUDGE_API_KEY": API_KEY}
    target = {
        "endpoint": resolve(exporter["endpoint"], env) + TRACES_PATH,
        "headers": {k: resolve(v, env) for k, v in exporter["headers"].items()},
        "compression": exporter["compression"],
    }
    _run_app({}, "--exporter", yaml.safe_dump(target))
    assert _stored_agents(server) == {"orchestrator", "researcher", "writer"}


# --------------------------------------------------------------------------- fan-out, live


def _phoenix_command() -> list[str] | None:
    found = os.environ.get("TRACEJUDGE_PHOENIX_BIN") or shutil_which("phoenix")
    return [found, "serve"] if found else None


def shutil_which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


@pytest.mark.slow
def test_fanout_reaches_tracejudge_and_phoenix_and_scores_come_back_to_phoenix(
    tmp_path: Path,
) -> None:
    """fanout.yaml's tracejudge and Phoenix exporters, live: the run reaches both, the
    server scores it and writes the scores back to Phoenix under the agents' spans."""
    import httpx

    from tests.server.postgres import free_port

    command = _phoenix_command()
    if command is None:
        pytest.skip(
            "Arize Phoenix is not installed: pip install 'tracejudge[phoenix]' in a "
            "virtualenv and set TRACEJUDGE_PHOENIX_BIN to its phoenix script"
        )
    port, grpc_port = free_port(), free_port()
    phoenix_url = f"http://127.0.0.1:{port}"
    phoenix_env = {
        **server_env(),
        "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_HOST": "127.0.0.1",
    }
    phoenix = subprocess.Popen(
        command, env=phoenix_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    server = ServerProcess(
        str(tmp_path / "tj.db"),
        args=["--trace-quiet-seconds", "0.3", "--evaluation-events-endpoint", phoenix_url],
        log=tmp_path / "log",
    )
    try:
        server.start()

        def phoenix_up() -> bool:
            try:
                return httpx.get(f"{phoenix_url}/healthz", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(phoenix_up, timeout=120, interval=0.5)
        exporters = load(EXPORTERS / "fanout.yaml")["exporters"]
        env = {
            "TRACEJUDGE_ENDPOINT": server.url,
            "TRACEJUDGE_API_KEY": API_KEY,
            "PHOENIX_ENDPOINT": phoenix_url,
        }
        targets = [
            {
                "endpoint": resolve(exporters[name]["endpoint"], env) + TRACES_PATH,
                "headers": {k: resolve(v, env) for k, v in exporters[name]["headers"].items()},
            }
            for name in (TRACEJUDGE, "otlphttp/phoenix")
        ]
        _run_app({}, *[arg for t in targets for arg in ("--exporter", yaml.safe_dump(t))])
        assert _stored_agents(server) == {"orchestrator", "researcher", "writer"}

        def phoenix_spans() -> list[dict[str, Any]]:
            answer = httpx.get(
                f"{phoenix_url}/v1/projects/default/spans", params={"limit": 100}, timeout=10
            )
            data = answer.json().get("data", []) if answer.status_code == 200 else []
            names = {s["name"] for s in data}
            return data if "evaluate researcher" in names else []

        spans = wait_for(phoenix_spans, timeout=60, interval=0.5)
        by_id = {s["context"]["span_id"]: s for s in spans}
        agents = [s for s in spans if s["name"].startswith("invoke_agent ")]
        assert {s["name"] for s in agents} == {
            "invoke_agent orchestrator",
            "invoke_agent researcher",
            "invoke_agent writer",
        }
        for span in spans:
            if span["name"].startswith("evaluate "):
                parent = by_id[span["parent_id"]]
                assert parent["name"] == "invoke_agent " + span["name"].removeprefix("evaluate ")
                assert span["context"]["trace_id"] == parent["context"]["trace_id"]
                assert {e["name"] for e in span["events"]} == {"gen_ai.evaluation.result"}
    finally:
        server.stop()
        phoenix.terminate()
        try:
            phoenix.wait(20)
        except subprocess.TimeoutExpired:
            phoenix.kill()
