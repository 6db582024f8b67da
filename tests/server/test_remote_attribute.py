"""A client of a remote tracejudge server attributes through the server's API when it
needs the server's judge (a judge method, a text criterion), and in process otherwise:
the real client, a real server on loopback, its judge a scripted model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.server.labelled import POLITE, polite, record_faulty_trace
from tracejudge import AsyncComposo, Composo, checks
from tracejudge._sync import run
from tracejudge.errors import BadRequestError
from tracejudge.evaluation.attribution import AttributionRequest, trace_steps
from tracejudge.evaluation.service import EvaluationService
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import MultiAgentTrace
from tracejudge.server.background import BackgroundServer
from tracejudge.server.config import ServerConfig
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

USAGE = {"prompt_tokens": 100, "completion_tokens": 10}


def _schema(request: RecordedRequest) -> str | None:
    format_ = request.json.get("response_format") or {}
    return (format_.get("json_schema") or {}).get("name")


def _all_at_once(request: RecordedRequest) -> bool:
    """The all_at_once method's question (its reply schema is "decisive_error")."""
    return _schema(request) == "decisive_error"


@dataclass
class Remote:
    url: str
    model: ScriptedLLMServer
    trace: MultiAgentTrace


@pytest.fixture
def remote(tmp_path, composo_tracing: TracerProvider) -> Iterator[Remote]:  # type: ignore[no-untyped-def]
    """A server whose judge names the trace's last step when asked all at once, and
    judges POLITE as `polite` does (the orchestrator passes, the researcher fails)."""
    trace = record_faulty_trace()
    last = trace_steps(trace)[-1]

    def answer(request: RecordedRequest) -> Reply:
        if _all_at_once(request):
            reply = {
                "explanation": "the last answer was wrong",
                "agent": last.agent.name,
                "step": last.index,
                "other_steps": [],
                "confidence": 0.7,
            }
            return Reply.text(json.dumps(reply), usage=USAGE)
        return polite(request)

    with ScriptedLLMServer() as model:
        model.default = answer
        judge = OpenAICompatibleJudge(
            "judge-model", base_url=model.base_url, api_key="k", cache=False
        )
        config = ServerConfig(port=0, db=str(tmp_path / "remote.db"))
        with BackgroundServer(config, judge=judge) as server:
            yield Remote(server.url, model, trace)


def test_a_judge_method_is_attributed_by_the_server_s_judge(remote: Remote) -> None:
    last = trace_steps(remote.trace)[-1]
    with Composo(base_url=remote.url, api_key="unused") as client:
        attribution = client.attribute(remote.trace, ["checks", "all_at_once"])
    asked = [r for r in remote.model.requests if _all_at_once(r)]
    assert len(asked) == 1  # the server's judge, asked once
    assert attribution.methods == ["checks", "all_at_once"]
    assert attribution.usage.calls == 1 and attribution.usage.input_tokens == 100
    # the checks' finding first (the bad arguments), then the judge's step
    first, second = attribution.causes[0], attribution.causes[1]
    assert first.method == "checks" and first.criteria == ["tool_arguments"]
    assert (second.method, second.index, second.agent_instance_id) == (
        "all_at_once",
        last.index,
        last.agent.id,
    )
    # what the server answered is what the service makes in process with that judge
    with ScriptedLLMServer() as model:
        model.default = remote.model.default
        judge = OpenAICompatibleJudge(
            "judge-model", base_url=model.base_url, api_key="k", cache=False
        )
        local = run(
            EvaluationService(judge).attribute(
                AttributionRequest(trace=remote.trace, methods=["checks", "all_at_once"])
            )
        )
        run(judge.aclose())
    keep = {"seconds", "usage"}
    assert attribution.model_dump(exclude=keep) == local.model_dump(exclude=keep)


async def test_text_criteria_are_judged_by_the_server(remote: Remote) -> None:
    async with AsyncComposo(base_url=remote.url, api_key="unused") as client:
        attribution = await client.attribute(
            remote.trace, criteria=[POLITE, checks.tool_arguments], outcome="rude and wrong"
        )
    assert attribution.failed and attribution.methods == ["checks"]
    assert any(f.startswith(f"{POLITE}: agent 'researcher'") for f in attribution.failures)
    assert attribution.failures[-1] == "outcome: rude and wrong"
    by = {(c.agent_name, tuple(c.criteria)) for c in attribution.causes}
    assert ("researcher", ("tool_arguments",)) in by and ("researcher", (POLITE,)) in by
    assert remote.model.requests  # the server's judge judged POLITE
    assert not any(_all_at_once(r) for r in remote.model.requests)


def test_deterministic_attribution_never_leaves_the_client(remote: Remote) -> None:
    # a server that is not there: nothing is sent for checks only
    with Composo(base_url="http://127.0.0.1:9", api_key="k") as client:
        attribution = client.attribute(remote.trace)
    assert attribution.top is not None and attribution.top.criteria == ["tool_arguments"]
    assert remote.model.requests == []


def test_what_the_server_cannot_take_is_refused_with_the_fix(remote: Remote) -> None:
    own = checks.budgets(max_tokens=60)
    with Composo(base_url=remote.url, api_key="unused") as client:
        with pytest.raises(BadRequestError, match=r"built-in checks by name only .* 'budgets"):
            client.attribute(remote.trace, ["all_at_once"], criteria=[own])
        # the answers of that check, computed here, are taken as they are
        responses = client.evaluate_trace(remote.trace, criteria=[own, checks.tool_arguments])
        attribution = client.attribute(remote.trace, ["all_at_once"], responses=responses)
    assert attribution.failed and attribution.causes[0].method == "all_at_once"
    assert any(f.startswith(str(own.name)) for f in attribution.failures)


def test_a_server_without_the_api_or_without_a_judge_says_what_to_do(
    tmp_path,
    composo_tracing: TracerProvider,  # type: ignore[no-untyped-def]
) -> None:
    trace = record_faulty_trace()
    with ScriptedLLMServer() as other:  # answers 404 for every path it does not serve
        with Composo(base_url=other.base_url, api_key="k") as client:
            with pytest.raises(BadRequestError, match="this server does not attribute"):
                client.attribute(trace, ["all_at_once"])
    config = ServerConfig(port=0, db=str(tmp_path / "plain.db"))
    with BackgroundServer(config, checks_only=True) as server:
        with Composo(base_url=server.url, api_key="unused") as client:
            with pytest.raises(BadRequestError, match="need a judge, and this server has none"):
                client.attribute(trace, ["counterfactual"])
