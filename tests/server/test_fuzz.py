"""The published OpenAPI document, fuzzed against the live server (a real uvicorn server
on SQLite): Schemathesis generates valid and invalid requests for every operation, and
every answer must be no 5xx, a documented status, a documented content type, and match
its documented schema. Where the document says everything the server checks, valid
requests must be accepted and invalid ones refused, too."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.harness import InProcessServer
from tracejudge.server.app import create_app
from tracejudge.server.config import ServerConfig
from tracejudge.testing import Reply, ScriptedLLMServer

schemathesis = pytest.importorskip("schemathesis", reason="pip install schemathesis")
hypothesis = pytest.importorskip("hypothesis")

#: A verdict any criterion kind accepts (Reward/Penalize read `score`, Passes/Fails
#: `passed`; `cleaned_explanation` for explanation_cleaning="end_user").
ANY_KIND = Reply.text(
    json.dumps(
        {
            "explanation": "ok",
            "cleaned_explanation": "ok",
            "applicable": True,
            "score": 8,
            "passed": True,
        }
    )
)
#: Examples per operation (valid and invalid requests): an eighth of the Hypothesis
#: profile's (tests/speed.py): 12 under the default `ci` profile (about 600 requests),
#: 125 under `thorough`. TRACEJUDGE_FUZZ_EXAMPLES=200 looks further, locally (#32 item 8).
EXAMPLES_PER_OPERATION = int(
    os.environ.get("TRACEJUDGE_FUZZ_EXAMPLES")
    or max(5, hypothesis.settings.default.max_examples // 8)
)
#: One worker: each that ran one of these started a server and read its document again,
#: and the suite is bound by its CPU, not by one worker's queue.
pytestmark = [
    pytest.mark.xdist_group("fuzz"),
    pytest.mark.heavy("Hypothesis generates each operation's requests, sent to a live server"),
]

#: Every operation the document describes, one test each.
OPERATIONS = sorted(
    (method.upper(), path)
    for path, item in create_app(ServerConfig(port=0), checks_only=True)
    .state.openapi["paths"]
    .items()
    for method in item
    if method in {"get", "post", "put", "patch", "delete"}
)
#: Operations whose schema says all the server checks: valid requests must not get a 4xx
#: but for a missing resource, invalid ones must. (A trace's root must be one of its
#: agents and hold a model call; what a chat must hold to be judged goes beyond its
#: messages' shape; the list's times (ISO 8601 or Unix seconds) and search syntax go
#: beyond a pattern: those are answered 422 naming the field.)
EXACT = {
    ("GET", "/api/v1/tasks/{task_id}"),
    ("GET", "/api/v1/traces/{trace_id}"),
    ("GET", "/api/v1/traces/{trace_id}/evaluations"),
    ("POST", "/api/v1/traces/{trace_id}/score"),
    ("GET", "/health"),
}


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    """One server for the module's operations, as one server once answered them all."""
    folder: Path = tmp_path_factory.mktemp("fuzz")
    with ScriptedLLMServer(default=ANY_KIND) as judge:
        server = InProcessServer(str(folder / "db"), judge=judge, args=["--rate-limit", "0"])
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="module")
def schema(fuzzed: InProcessServer):  # type: ignore[no-untyped-def]
    return schemathesis.openapi.from_url(f"{fuzzed.url}/openapi.json")


def test_the_live_document_describes_every_operation(schema) -> None:  # type: ignore[no-untyped-def]
    live = {(r.ok().method.upper(), r.ok().path) for r in schema.get_all_operations()}
    assert live == set(OPERATIONS)
    assert len(OPERATIONS) >= 14  # /ready and the two web pages are described too


@pytest.mark.parametrize(
    ("method", "path"),
    [pytest.param(method, path, id=f"{method} {path}") for method, path in OPERATIONS],
)
def test_every_answer_is_documented_and_none_is_a_server_error(
    fuzzed: InProcessServer,
    schema,
    method: str,
    path: str,  # type: ignore[no-untyped-def]
) -> None:
    from hypothesis import HealthCheck, given, settings
    from schemathesis import checks
    from schemathesis.core.failures import FailureGroup

    conformance = [
        checks.not_a_server_error,
        checks.status_code_conformance,
        checks.content_type_conformance,
        checks.response_schema_conformance,
    ]
    exact = [checks.positive_data_acceptance, checks.negative_data_rejection]
    failures: list[str] = []
    answered: Counter[tuple[str, str, int]] = Counter()
    modes = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
    operation = schema[path][method]
    strategies = [operation.as_strategy(generation_mode=mode) for mode in modes]

    @given(case=hypothesis.strategies.one_of(strategies))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(case) -> None:  # type: ignore[no-untyped-def]
        exact_schema = (case.operation.method.upper(), case.operation.path) in EXACT
        chosen = conformance + (exact if exact_schema else [])
        response = case.call(base_url=fuzzed.url, headers=fuzzed.headers, timeout=30)
        mode = case.meta.generation.mode.value if case.meta else "?"
        answered[(case.operation.label, mode, response.status_code // 100)] += 1
        # the bytes, not the text: an answer may be binary (the export's Parquet)
        if b"Traceback" in response.content:
            shown = response.content[:300].decode("utf-8", "replace")
            failures.append(f"{case.operation.label}: a traceback in {shown}")
        try:
            case.validate_response(response, checks=chosen, headers=fuzzed.headers)
        except (AssertionError, FailureGroup) as failure:  # one failure, or several
            text = str(failure)
            curl = text[text.find("curl ") :].split("\n", 1)[0] if "curl " in text else ""
            failures.append(f"{case.operation.label}: {text[:400]}\n{curl}")

    fuzz()
    summary = "\n".join(f"{k}: {v}" for k, v in sorted(answered.items()))
    print(summary)
    assert answered, "no request was sent"
    assert not failures, f"{len(failures)} failures:\n\n" + "\n\n".join(failures[:8])
