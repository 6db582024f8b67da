"""`tracejudge attribute` and the clients' `attribute`: inputs read like `score`'s, the
service does the work, answers as text, JSON and JSON lines."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checks import faults
from tracejudge import AsyncComposo, Composo
from tracejudge.cli import main
from tracejudge.errors import BadRequestError, ConfigurationError
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import Attribution, MultiAgentTrace
from tracejudge.testing import Reply, ScriptedLLMServer

Record = Callable[[faults.Scenario], MultiAgentTrace]


@pytest.fixture
def traces(record: Record, tmp_path: Path) -> Path:
    """A directory of two failed traces and a clean one, as MultiAgentTrace JSON."""
    for name, scenario in [
        ("bad.json", faults.bad_arguments(0)),
        ("clean.json", faults.clean_variants()[0]),
        ("cut.json", faults.empty_answer(1)),
    ]:
        (tmp_path / name).write_text(record(scenario).to_json())
    return tmp_path


def test_attribute_prints_the_causes_of_each_failed_trace(
    traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["attribute", str(traces)]) == 0
    out = capsys.readouterr().out
    assert "3 traces, 2 failed, 2 with a cause (checks)" in out
    assert "1. researcher" in out and "tool call call_bad (get_weather)" in out
    assert "missing required property 'city'" in out
    # the step named as the page names it: the agent's call 2 (its llm_interactions[1])
    assert re.search(r"1\. orchestrator \([^)]+\), call 2\n", out), out
    assert "clean.json" not in out


def test_attribute_json_and_out_lines_hold_the_attributions(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "out" / "attributions.jsonl"
    out_file.parent.mkdir()
    assert main(["attribute", str(traces), "--json", "--out", str(out_file)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["summary"] == {
        "traces": 3,
        "failed": 2,
        "attributed": 2,
        "errors": 0,
        "methods": ["checks"],
    }
    lines = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert sorted(Path(line["source"]).name for line in lines) == [
        "bad.json",
        "clean.json",
        "cut.json",
    ]
    for line in lines:
        attribution = Attribution.model_validate({k: v for k, v in line.items() if k != "source"})
        assert attribution.failed == (not line["source"].endswith("clean.json"))


def test_attribute_failed_flag_and_usage_errors(
    traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = str(traces / "clean.json")
    assert main(["attribute", clean, "--failed", "--json"]) == 0
    (line,) = json.loads(capsys.readouterr().out)["traces"]
    assert line["failed"] and line["causes"] == []
    assert "try a judge method" in line["notes"][0]
    assert main(["attribute", clean, "--method", "binary_search"]) == 2
    assert "--method binary_search needs a judge" in capsys.readouterr().err
    assert main(["attribute", str(traces / "nothing.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_attribute_with_a_judge_method_over_a_scripted_judge(
    traces: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedLLMServer() as server:
        reply = {
            "explanation": "the researcher",
            "agent": "researcher",
            "step": 1,
            "other_steps": [],
            "confidence": 0.7,
        }
        server.default = Reply.text(json.dumps(reply))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        command = ["attribute", str(traces / "cut.json"), "--method", "all_at_once"]
        code = main([*command, "--judge", "openai:judge", "--json"])
    assert code == 0, capsys.readouterr().err
    (line,) = json.loads(capsys.readouterr().out)["traces"]
    assert [(c["method"], c["index"]) for c in line["causes"]] == [
        ("checks", 3),
        ("all_at_once", 1),
    ]
    assert line["usage"]["calls"] == 1


def test_composo_attribute_forwards_to_the_service(record: Record) -> None:
    trace = record(faults.error_result(0))
    with Composo() as client:
        attribution = client.attribute(trace)
        assert attribution.top is not None and attribution.top.criteria == ["tool_results"]
        assert client.attribute(trace, failed=False).causes == []
        with pytest.raises(ConfigurationError, match="need a judge"):
            client.attribute(trace, ["checks", "counterfactual"])
        with pytest.raises(BadRequestError, match="unknown attribution method"):
            client.attribute(trace, "everything")


async def test_async_composo_attribute_uses_its_judge(record: Record) -> None:
    trace = record(faults.ungrounded_number(0))
    with ScriptedLLMServer() as server:
        server.default = Reply.text(
            json.dumps(
                {
                    "explanation": "invented",
                    "agent": "researcher",
                    "step": 2,
                    "fix": "say 18",
                    "outcome_changes": True,
                    "confidence": 0.8,
                }
            )
        )
        judge = OpenAICompatibleJudge("judge", base_url=server.base_url, api_key="k", cache=False)
        async with AsyncComposo(judge=judge) as client:
            attribution = await client.attribute(trace, ["checks", "counterfactual"])
        await judge.aclose()
    (cause,) = attribution.causes  # the judge agrees with the check: one cause
    assert cause.method == "checks" and cause.fix == "say 18" and cause.outcome_changes
    assert attribution.methods == ["checks", "counterfactual"]


def test_a_remote_client_attributes_with_checks_in_process(record: Record) -> None:
    """Checks need no server (the judge methods go to it: tests/server/test_remote_attribute)."""
    trace = record(faults.bad_arguments(1))
    with Composo(base_url="http://127.0.0.1:9", api_key="k") as client:
        assert client.attribute(trace).top is not None
