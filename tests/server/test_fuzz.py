"""The published OpenAPI schema, fuzzed against the live server (schemathesis generates
valid and invalid requests for every operation): no input gives a 5xx or a stack trace."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.server.harness import ServerProcess
from tracejudge.testing import Reply, ScriptedLLMServer

schemathesis = pytest.importorskip("schemathesis", reason="pip install schemathesis")
hypothesis = pytest.importorskip("hypothesis")

#: A verdict any criterion kind accepts (Reward/Penalize read `score`, Passes/Fails `passed`).
ANY_KIND = Reply.text(
    json.dumps({"explanation": "ok", "applicable": True, "score": 8, "passed": True})
)
#: Examples per operation and mode (valid requests, then invalid ones).
EXAMPLES_PER_OPERATION = 30


@pytest.fixture
def fuzzed(tmp_path) -> Iterator[ServerProcess]:
    with ScriptedLLMServer(default=ANY_KIND) as judge:
        process = ServerProcess(
            str(tmp_path / "db"), judge=judge, args=["--rate-limit", "0"], log=tmp_path / "log"
        ).start()
        yield process
        process.stop()


def test_no_input_gives_a_server_error(fuzzed: ServerProcess) -> None:
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")
    failures: list[str] = []
    operations = 0
    modes = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        strategies = [operation.as_strategy(generation_mode=mode) for mode in modes]

        @given(case=hypothesis.strategies.one_of(strategies))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case) -> None:  # type: ignore[no-untyped-def]
            response = case.call(base_url=fuzzed.url, headers=fuzzed.headers, timeout=30)
            if response.status_code >= 500 or "Traceback" in response.text:
                failures.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: "
                    f"{response.text[:300]} (body {str(case.body)[:300]})"
                )

        fuzz()
    assert operations >= 10
    assert not failures, "\n".join(failures[:10])
