"""A real Ray cluster for the bulk tests (tests/bulk/cluster.py): a head node and one
worker node, one CPU each, started once per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("ray", reason="the ray extra: pip install -e '.[ray]'")

from tests.bulk.cluster import RayCluster  # noqa: E402
from tests.bulk.cluster import ray_cluster as start_cluster  # noqa: E402


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    # the judge's key as a real cluster has it: in the nodes' environment
    with start_cluster(worker_nodes=1, OPENAI_API_KEY="scripted") as cluster:
        yield cluster
