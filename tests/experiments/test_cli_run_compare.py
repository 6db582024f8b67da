"""`tracejudge run FILE.py` then `tracejudge compare BASELINE CANDIDATE`, as a CI step does:
real processes, a real agent (OpenAI's client, traced) talking to a ScriptedLLMServer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracejudge.testing import ScriptedLLMServer

from .conftest import adder_model

pytestmark = pytest.mark.heavy("`tracejudge run` and `compare` as processes over a scripted agent")

EXPERIMENT = """
import os

import openai

from tracejudge import ComposoTracer, Instruments

ComposoTracer.init(instruments=Instruments.OPENAI)
client = openai.OpenAI(base_url=os.environ["AGENT_URL"], api_key="k", max_retries=0)

dataset = "questions.jsonl"
name = "adder"
params = {"prompt": "v1"}


def task(question):
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content


def correct(output, expected):
    return output.strip() == expected


criteria = [correct]
"""


def tracejudge(*argv: str, url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TRACEJUDGE_"))}
    env["AGENT_URL"] = url
    env["OTEL_SDK_DISABLED"] = "false"
    return subprocess.run(
        [sys.executable, "-m", "tracejudge", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "experiment.py").write_text(EXPERIMENT)
    lines = [
        json.dumps({"id": f"q{i}", "input": f"What is {i} plus one?", "expected": str(i + 1)})
        for i in range(40)
    ]
    (tmp_path / "questions.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_run_then_compare_flags_a_planted_regression_and_passes_an_unchanged_agent(
    project: Path,
) -> None:
    with ScriptedLLMServer(default=adder_model()) as good:
        base = tracejudge(
            "run", "experiment.py", "--out", "runs/main", url=good.base_url, cwd=project
        )
        assert base.returncode == 0, base.stderr
        assert base.stdout.strip().endswith("runs/main")
        assert "40/40 verdicts passed" in base.stdout
        same = tracejudge(
            "run", "experiment.py", "--out", "runs/same", url=good.base_url, cwd=project
        )
        assert same.returncode == 0, same.stderr
    with ScriptedLLMServer(default=adder_model(broken=set(range(0, 40, 3)))) as bad:
        pr = tracejudge(
            "run",
            "experiment.py",
            "--out",
            "runs/pr",
            "--param",
            'prompt="v2"',
            url=bad.base_url,
            cwd=project,
        )
        assert pr.returncode == 0, pr.stderr
    record = json.loads((project / "runs/pr/run.json").read_text())
    assert record["params"] == {"prompt": "v2"} and record["name"] == "adder"

    gate = tracejudge(
        "compare",
        "runs/main",
        "runs/pr",
        "--fail-on-regression",
        "--html",
        "cmp.html",
        url="",
        cwd=project,
    )
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "task / correct: REGRESSED" in gate.stdout
    assert "pass rate 100.0% -> 65.0%" in gate.stdout
    assert "regressed rows: q0, q3, q6" in gate.stdout
    page = (project / "cmp.html").read_text()
    assert "<script" not in page and "http" not in page  # self-contained
    assert "Rows that changed (14)" in page
    # q0's two answers side by side: 1 (right) in the baseline, 2 (wrong) in the candidate
    q0 = page.split("<td>q0</td>", 1)[1].split("</tr>", 1)[0]
    assert q0.index("<pre>1</pre>") < q0.index("<pre>2</pre>")
    assert "adder / correct: failed" not in q0 and "task / correct: failed" in q0

    report = tracejudge("compare", "runs/main", "runs/pr", "--json", url="", cwd=project)
    assert report.returncode == 0  # no gate asked for
    document = json.loads(report.stdout)
    (item,) = document["criteria"]
    assert (item["worse"], item["better"], item["verdict"]) == (14, 0, "regressed")
    assert item["p_value"] == pytest.approx(2 * 0.5**14)
    assert document["gate"] == {
        "result": "fail",
        "reasons": [item["agent"] + " / correct: " + item["reason"]],
        "enforced": False,
    }

    unchanged = tracejudge(
        "compare", "runs/main", "runs/same", "--fail-on-regression", url="", cwd=project
    )
    assert unchanged.returncode == 0, unchanged.stdout
    assert "UNCHANGED" in unchanged.stdout and "no regression" in unchanged.stdout


def test_too_few_rows_is_inconclusive_and_not_a_failure(project: Path) -> None:
    few = "\n".join((project / "questions.jsonl").read_text().splitlines()[:4]) + "\n"
    (project / "questions.jsonl").write_text(few)
    with ScriptedLLMServer(default=adder_model()) as good:
        assert (
            tracejudge(
                "run", "experiment.py", "--out", "a", url=good.base_url, cwd=project
            ).returncode
            == 0
        )
    with ScriptedLLMServer(default=adder_model(broken={0, 1, 2, 3})) as bad:
        assert (
            tracejudge(
                "run", "experiment.py", "--out", "b", url=bad.base_url, cwd=project
            ).returncode
            == 0
        )
    gate = tracejudge("compare", "a", "b", "--fail-on-regression", url="", cwd=project)
    assert gate.returncode == 0, gate.stdout
    assert "INCONCLUSIVE" in gate.stdout and "only 4 rows in both runs" in gate.stdout


def test_bad_usage_names_the_problem(project: Path) -> None:
    (project / "empty.py").write_text("x = 1\n")
    run = tracejudge("run", "empty.py", url="", cwd=project)
    assert run.returncode == 2
    assert "does not define dataset, task, criteria" in run.stderr
    compare = tracejudge("compare", "nowhere", "runs", url="", cwd=project)
    assert compare.returncode == 2 and "is not a run directory" in compare.stderr


def test_compare_reads_two_score_outputs_of_the_same_traces(project: Path) -> None:
    with ScriptedLLMServer(default=adder_model()) as good:
        assert (
            tracejudge(
                "run", "experiment.py", "--out", "r", url=good.base_url, cwd=project
            ).returncode
            == 0
        )
    # the run's traces are MultiAgentTrace lines: `score` reads them as they are
    for out in ("a.jsonl", "b.jsonl"):
        scored = tracejudge(
            "score", "r/traces.jsonl", "--check", "final_answer", "--out", out, url="", cwd=project
        )
        assert scored.returncode == 0, scored.stderr
    report = tracejudge("compare", "a.jsonl", "b.jsonl", "--json", url="", cwd=project)
    assert report.returncode == 0, report.stderr
    (item,) = json.loads(report.stdout)["criteria"]
    assert (item["criterion"], item["paired_rows"], item["verdict"]) == (
        "final_answer",
        40,
        "unchanged",
    )
    assert item["baseline"]["pass_rate"] == 1.0
