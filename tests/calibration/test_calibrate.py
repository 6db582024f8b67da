"""`calibrate` end to end: a scripted judge (over a real loopback socket) gives verdicts we
chose; the report's kappa, alpha, Spearman and their bootstrap intervals equal what
scikit-learn, the `krippendorff` package and scipy give on the same items and the same
seeded resamples; repeatability counts flips; the labels file and the CLI."""

from __future__ import annotations

import json
import random
import re
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from tracejudge import _stats
from tracejudge.calibration import acalibrate, calibrate, read_labels, write_labels
from tracejudge.cli import main
from tracejudge.errors import BadRequestError
from tracejudge.judges import OpenAICompatibleJudge
from tracejudge.models import AgentInstance, HumanLabel, MultiAgentTrace
from tracejudge.testing import RecordedRequest, Reply, ScriptedLLMServer

BINARY = "Passes if the answer is polite"
GRADED = "Reward answers that are complete"
N = 90
RESAMPLES = 400
SEED = 11


def _trace(i: int) -> MultiAgentTrace:
    agent = AgentInstance.from_chat_session(
        [
            {"role": "user", "content": f"Question {i}"},
            {"role": "assistant", "content": f"Item {i}."},
        ],
        id=f"w{i}",
        name="writer",
    )
    return MultiAgentTrace(
        root_agent_instance_id=agent.id, agent_instance_by_id={agent.id: agent}, trace_id=f"t{i}"
    )


def _plan(seed: int = 5) -> tuple[list[bool], list[bool], list[float], list[int]]:
    """People's pass/fail, the judge's pass/fail, people's grades, the judge's 1-10 grades."""
    rng = random.Random(seed)
    human = [rng.random() < 0.6 for _ in range(N)]
    judge = [h if rng.random() < 0.8 else not h for h in human]
    grades = [rng.randint(1, 10) for _ in range(N)]
    human_scores = [min(1.0, max(0.0, (g - 1) / 9 + rng.gauss(0, 0.15))) for g in grades]
    return human, judge, human_scores, grades


def _answerer(judge: list[bool], grades: list[int]):  # type: ignore[no-untyped-def]
    def answer(request: RecordedRequest) -> Reply:
        prompt = "\n".join(m["content"] for m in request.json["messages"])
        item = int(re.search(r"Item (\d+)\.", prompt).group(1))  # type: ignore[union-attr]
        if BINARY in prompt:
            reply = {"explanation": "e", "applicable": True, "passed": judge[item]}
        else:
            reply = {"explanation": "e", "applicable": True, "score": grades[item]}
        return Reply.text(json.dumps(reply))

    return answer


def _labels(human: list[bool], human_scores: list[float]) -> list[HumanLabel]:
    labels = [
        HumanLabel(
            trace_id=f"t{i}",
            agent="writer",
            criterion=BINARY,
            verdict="pass" if h else "fail",
            who="ana",
        )
        for i, h in enumerate(human)
    ]
    labels += [
        HumanLabel(
            trace_id=f"t{i}", agent_instance_id=f"w{i}", criterion=GRADED, score=s, who="ana"
        )
        for i, s in enumerate(human_scores)
    ]
    return labels


def _reference_interval(statistic, n: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    values = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample in _stats.bootstrap_samples(n, RESAMPLES, SEED):
            value = statistic(sample)
            if not np.isnan(value):
                values.append(value)
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


async def test_kappa_alpha_spearman_and_intervals_match_the_references() -> None:
    human, judged, human_scores, grades = _plan()
    with ScriptedLLMServer() as server:
        server.default = _answerer(judged, grades)
        judge = OpenAICompatibleJudge("judge", base_url=server.base_url, api_key="k", cache=False)
        report = await acalibrate(
            _labels(human, human_scores),
            traces=[_trace(i) for i in range(N)],
            judge=judge,
            resamples=RESAMPLES,
            seed=SEED,
        )
        await judge.aclose()
    assert report.items == 2 * N and report.skipped == 0
    # Both criteria's rows, in label order: people's and the judge's pass/fail.
    judge_scores = [(g - 1) / 9 for g in grades]
    h = ["pass" if x else "fail" for x in human] + [
        "fail" if s < 0.5 else "pass" for s in human_scores
    ]
    j = ["pass" if x else "fail" for x in judged] + [
        "fail" if s < 0.5 else "pass" for s in judge_scores
    ]
    assert [r.human for r in report.rows] == h and [r.judge for r in report.rows] == j
    assert report.kappa.value == pytest.approx(cohen_kappa_score(h, j))
    assert (report.kappa.low, report.kappa.high) == pytest.approx(
        _reference_interval(
            lambda s: cohen_kappa_score([h[i] for i in s], [j[i] for i in s]), 2 * N
        )
    )

    def ref_alpha(hs, js, level):  # type: ignore[no-untyped-def]
        return krippendorff.alpha(
            reliability_data=np.array([hs, js], dtype=float), level_of_measurement=level
        )

    hv = [1.0 if x == "pass" else 0.0 for x in h]
    jv = [1.0 if x == "pass" else 0.0 for x in j]
    assert report.alpha.value == pytest.approx(ref_alpha(hv, jv, "nominal"))
    assert (report.alpha.low, report.alpha.high) == pytest.approx(
        _reference_interval(
            lambda s: ref_alpha([hv[i] for i in s], [jv[i] for i in s], "nominal"), 2 * N
        )
    )
    assert report.graded_items == N
    assert report.spearman is not None and report.alpha_interval is not None
    assert report.spearman.value == pytest.approx(spearmanr(human_scores, judge_scores).statistic)
    assert (report.spearman.low, report.spearman.high) == pytest.approx(
        _reference_interval(
            lambda s: (
                spearmanr([human_scores[i] for i in s], [judge_scores[i] for i in s]).statistic
            ),
            N,
        )
    )
    assert report.alpha_interval.value == pytest.approx(
        ref_alpha(human_scores, judge_scores, "interval")
    )
    assert (report.alpha_interval.low, report.alpha_interval.high) == pytest.approx(
        _reference_interval(
            lambda s: ref_alpha(
                [human_scores[i] for i in s], [judge_scores[i] for i in s], "interval"
            ),
            N,
        )
    )
    # Confusion matrix rows are people's verdicts, columns the judge's.
    pairs = list(zip(h, j, strict=True))
    assert report.confusion.matrix == [
        [pairs.count(("pass", "pass")), pairs.count(("pass", "fail"))],
        [pairs.count(("fail", "pass")), pairs.count(("fail", "fail"))],
    ]
    assert report.band is not None and report.band in report.band_text
    assert [c.criterion for c in report.by_criterion] == [BINARY, GRADED]
    assert report.usage.calls == 2 * N


def test_repeated_samples_report_flips_variance_and_pass_k() -> None:
    traces = [_trace(i) for i in range(4)]
    asked: dict[int, int] = {}

    def answer(request: RecordedRequest) -> Reply:
        item = int(re.search(r"Item (\d+)\.", json.dumps(request.json)).group(1))  # type: ignore[union-attr]
        asked[item] = asked.get(item, 0) + 1
        # Items 0 and 1 always pass (grade 10 and 8); item 2 flips (10, then 1, 10);
        # item 3 always fails (grade 1).
        grade = {0: 10, 1: 8, 2: 1 if asked[item] == 2 else 10, 3: 1}[item]
        return Reply.text(json.dumps({"explanation": "e", "applicable": True, "score": grade}))

    labels = [
        HumanLabel(trace_id=f"t{i}", agent="writer", criterion=GRADED, verdict="pass")
        for i in range(4)
    ]
    with ScriptedLLMServer() as server:
        server.default = answer
        judge = OpenAICompatibleJudge("judge", base_url=server.base_url, api_key="k", cache=False)
        report = calibrate(labels, traces=traces, judge=judge, samples=3, resamples=50)
    repeat = report.repeatability
    assert repeat is not None and (repeat.samples, repeat.items) == (3, 4)
    assert repeat.flip_rate == 0.25 and repeat.pass_k == 0.5
    assert repeat.mean_variance == pytest.approx(np.var([1.0, 0.0, 1.0]) / 4)
    assert asked == {0: 3, 1: 3, 2: 3, 3: 3}


def test_people_agreeing_among_themselves_and_labels_left_out() -> None:
    traces = {f"t{i}": _trace(i) for i in range(6)}
    labels = [
        *[
            HumanLabel(
                trace_id=f"t{i}",
                agent="writer",
                criterion="final_answer",
                verdict="pass",
                who="ana",
            )
            for i in range(6)
        ],
        *[
            HumanLabel(
                trace_id=f"t{i}",
                agent="writer",
                criterion="final_answer",
                verdict="pass" if i % 3 else "fail",
                who="ben",
            )
            for i in range(6)
        ],
        HumanLabel(trace_id="gone", agent="writer", criterion="final_answer", verdict="pass"),
        HumanLabel(trace_id="t1", agent="editor", criterion="final_answer", verdict="pass"),
    ]
    report = calibrate(labels, traces=traces, resamples=50)  # a check: no judge needed
    assert report.items == 12 and report.skipped == 2
    skipped = [r.skipped for r in report.rows if r.skipped]
    assert skipped == [
        "trace 'gone' is not among the traces given",
        "the trace has no agent 'editor'",
    ]
    expected = krippendorff.alpha(
        reliability_data=[[1] * 6, [0 if i % 3 == 0 else 1 for i in range(6)]],
        level_of_measurement="nominal",
    )
    assert report.human_alpha is not None and report.human_alpha.value == pytest.approx(expected)
    assert report.usage.calls == 0
    assert any("only 12 labelled items" in note for note in report.notes)


def test_the_labels_file_reads_back_and_names_each_problem(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    labels = [
        HumanLabel(
            trace_id="t1",
            agent="writer",
            criterion=BINARY,
            verdict="fail",
            note="rude",
            who="ana",
            when="2026-03-02T10:15:00Z",
        ),
        HumanLabel(trace_id="t2", agent_instance_id="w2", criterion=GRADED, score=0.75),
    ]
    write_labels(path, labels)
    path.write_text("# people's verdicts\n\n" + path.read_text())
    assert read_labels(path) == labels
    for line, problem in [
        (
            '{"trace_id": "t", "agent": "w", "criterion": "c", "verdict": "ok"}',
            'line 1: field \'verdict\': must be "pass" or "fail" (or give "score" in 0..1), '
            "got 'ok'",
        ),
        (
            '{"trace_id": "t", "criterion": "c", "verdict": "pass"}',
            "line 1: give 'agent' (the agent's name) or 'agent_instance_id'",
        ),
        (
            '{"trace_id": "t", "agent": "w", "criterion": "c", "score": 7}',
            "line 1: field 'score': Input should be less than or equal to 1",
        ),
        (
            '{"trace_id": "t", "agent": "w", "criterion": "c", "verdict": "pass", '
            '"when": "monday"}',
            "line 1: field 'when': must be an ISO 8601 date",
        ),
        ("not json", "line 1: not a JSON object"),
    ]:
        path.write_text(line + "\n")
        with pytest.raises(BadRequestError, match=re.escape(f"{path}, {problem}")):
            read_labels(path)


def test_calibrate_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for i in range(8):
        (traces / f"t{i}.json").write_text(_trace(i).to_json())
    human = [True, True, False, True, False, True, True, False]
    judged = [True, True, False, False, False, True, True, True]
    labels = tmp_path / "labels.jsonl"
    write_labels(
        labels,
        [
            HumanLabel(
                trace_id=f"t{i}", agent="writer", criterion=BINARY, verdict="pass" if h else "fail"
            )
            for i, h in enumerate(human)
        ],
    )
    out = tmp_path / "report.json"
    with ScriptedLLMServer() as server:
        server.default = _answerer(judged, [])
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        command = ["calibrate", str(labels), "--traces", str(traces), "--judge", "openai:judge"]
        assert main([*command, "--out", str(out), "--bootstrap", "100"]) == 0
    text = capsys.readouterr().out
    h = ["pass" if x else "fail" for x in human]
    j = ["pass" if x else "fail" for x in judged]
    kappa = cohen_kappa_score(h, j)
    assert f"Cohen's kappa    {kappa:.3f}" in text
    assert "band: kappa" in text and "people pass" in text
    report = json.loads(out.read_text())
    assert report["kappa"]["value"] == pytest.approx(kappa) and report["items"] == 8
    assert main(["calibrate", str(labels), "--traces", str(tmp_path / "nothing")]) == 2
    assert "no such file" in capsys.readouterr().err
    labels.write_text(
        '{"trace_id": "zz", "agent": "writer", "criterion": "c", "verdict": "pass"}\n'
    )
    assert main(["calibrate", str(labels), "--traces", str(traces)]) == 2
    assert "holds none of the 1 traces the labels name" in capsys.readouterr().err
