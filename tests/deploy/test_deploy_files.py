"""deploy/: the compose file and the Helm chart use the probes the way their orchestrators
expect, share one database, feed the Collector's tracejudge pipeline, and hold no key.
(No Docker daemon or Kubernetes cluster here: the topology itself runs as processes in
tests/server/test_topology.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CHART = DEPLOY / "helm" / "tracejudge"


def test_the_compose_file_runs_replicas_over_one_database_behind_a_balancer() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"postgres", "tracejudge", "balancer", "collector"}
    server = services["tracejudge"]
    assert server["deploy"]["replicas"] >= 2
    assert server["environment"]["TRACEJUDGE_DB"].startswith("postgresql://")
    assert "@postgres:5432/" in server["environment"]["TRACEJUDGE_DB"]
    assert server["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    # the Collector sends the exporters/ pipeline to the balancer, not to one replica
    collector = services["collector"]
    assert any("exporters/tracejudge.yaml" in v for v in collector["volumes"])
    assert collector["environment"]["TRACEJUDGE_ENDPOINT"] == "http://balancer:8000"
    assert (ROOT / "exporters" / "tracejudge.yaml").is_file()
    # keys come from the environment of `docker compose`, never from the file
    for service in services.values():
        for name, value in (service.get("environment") or {}).items():
            if "KEY" in name or "PASSWORD" in name:
                assert str(value).startswith("${"), name


def test_the_balancer_retries_an_upload_a_replica_could_not_take() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    assert re.search(r"proxy_next_upstream[^;]*\berror\b[^;]*\bhttp_503\b", conf)
    assert "server tracejudge:8000" in conf


def test_the_image_probes_liveness_on_health() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "HEALTHCHECK" in dockerfile and "/health" in dockerfile
    assert "'.[server,postgres]'" in dockerfile
    assert re.search(r"^USER \S+", dockerfile, re.M)  # not root


def test_the_chart_probes_health_for_liveness_and_ready_for_readiness() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "tracejudge"
    assert values["replicaCount"] >= 2 and values["existingSecret"]
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    liveness = deployment.split("livenessProbe:", 1)[1].split("readinessProbe:", 1)[0]
    readiness = deployment.split("readinessProbe:", 1)[1].split("resources:", 1)[0]
    assert "path: /health" in liveness
    assert "path: /ready" in readiness
    assert "secretRef" in deployment  # keys from a Secret
    # every value the templates read exists in values.yaml
    for path in re.findall(r"\.Values\.([A-Za-z.]+)", deployment):
        node = values
        for part in path.split("."):
            assert part in node, f".Values.{path} is not in values.yaml"
            node = node[part]
    assert not re.search(r"(?i)(api_key|password)\s*:\s*\S", (CHART / "values.yaml").read_text())
