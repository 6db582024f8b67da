"""`tracejudge score` end to end, in subprocesses, on files the tracer and the recorded
instrumentations wrote."""

from __future__ import annotations

import gzip
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.batch.conftest import FIXTURES, load_benchmark, offline_env, tracejudge
from tests.server.harness import verdict
from tracejudge.cli import main
from tracejudge.testing import ScriptedLLMServer

CHECKS = {"tool_arguments", "tool_results", "loops", "grounded_numbers", "final_answer"}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_directory_of_every_format_gives_one_line_per_trace_and_criterion(
    tmp_path: Path, demo_trace: Path
) -> None:
    inputs = tmp_path / "inputs"
    (inputs / "nested").mkdir(parents=True)
    shutil.copy(FIXTURES / "openllmetry.jsonl", inputs / "a.jsonl")
    shutil.copy(FIXTURES / "openinference.pb", inputs / "nested" / "b.pb")
    (inputs / "c.json.gz").write_bytes(
        gzip.compress((FIXTURES / "genai_semconv.jsonl").read_bytes())
    )
    shutil.copy(demo_trace, inputs / "demo.json")
    (inputs / "notes.txt").write_text("not an input")  # not an OTLP file name: ignored
    out = tmp_path / "out.jsonl"
    done = tracejudge("score", str(inputs), "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = _lines(out)
    by_trace: dict[str, set[str]] = {}
    for line in lines:
        assert set(line) == {
            "trace_id",
            "source",
            "criterion",
            "overall_score",
            "fail_under",
            "failing_agents",
            "worst_agent",
            "explanation",
            "agents",
        }
        by_trace.setdefault(line["trace_id"], set()).add(line["criterion"])
        for instance_id, agent in line["agents"].items():
            assert instance_id and set(agent) - {"steps"} == {"name", "score", "explanation"}
    assert len(by_trace) == 4 and all(c == CHECKS for c in by_trace.values())
    assert {line["source"] for line in lines} == {
        str(inputs / "a.jsonl"),
        str(inputs / "nested" / "b.pb"),
        str(inputs / "c.json.gz"),
        str(inputs / "demo.json"),
    }
    # the summary: the demo's planted faults first, then the table by agent name
    findings, table = done.stdout.split("\n\n", 1)
    assert findings.startswith("Failing agents, below 1 (worst 2 of 2):")
    assert "call_h1 (search_hotels)" in findings and "'15%'" in findings
    assert "researcher" in table and "median" in table and "4 traces" in table


def test_standard_input_gzip_and_exit_codes(tmp_path: Path, demo_trace: Path, capsys) -> None:
    data = gzip.compress((FIXTURES / "openllmetry.pb").read_bytes())
    done = tracejudge("score", "-", "--json-lines", stdin=data)
    assert done.returncode == 0, done.stderr
    *lines, summary = [json.loads(line) for line in done.stdout.splitlines()]
    assert {line["criterion"] for line in lines} == CHECKS
    assert summary["summary"]["traces"] == 1 and summary["summary"]["failing_traces"] == 0

    # 1: a score below --fail-under (the demo's researcher scores 0.67 on tool_arguments)
    assert tracejudge("score", str(demo_trace), "--fail-under", "0.9").returncode == 1
    assert tracejudge("score", str(demo_trace), "--fail-under", "0.5").returncode == 0

    # 2: bad usage or input, one line naming the file and the problem, never a traceback
    garbage = tmp_path / "garbage.pb"
    garbage.write_bytes(b"\x00\x01 not otlp")
    bad_trace = tmp_path / "bad.jsonl"
    bad_trace.write_text(
        demo_trace.read_text().replace("\n", " ") + "\n" + '{"agent_instance_by_id": {}}\n'
    )
    cases = [
        ([str(garbage)], f"tracejudge score: {garbage}: cannot read it as OTLP"),
        ([str(bad_trace)], f"tracejudge score: {bad_trace}, line 2 is not a valid MultiAgentTrace"),
        ([str(tmp_path / "missing.jsonl")], "tracejudge score: no such file:"),
        ([str(tmp_path / "*.nothing")], "no file matches this pattern"),
        ([str(demo_trace), "--resume"], "--resume needs --out"),
        ([str(demo_trace), "--criterion", "   "], "tracejudge score: bad criterion"),
    ]
    done = tracejudge("score", *cases[0][0])  # once as a process: status and stderr
    assert done.returncode == 2 and done.stderr.startswith(cases[0][1]), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    for arguments, expected in cases:
        assert main(["score", *arguments]) == 2, arguments
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith(expected) or expected in err, err


def _interactive_signals() -> None:
    # A shell may run the tests with SIGINT ignored (a background job), and an ignored
    # signal stays ignored across exec: give the child the default an interactive
    # program has, so that Python installs its Ctrl-C handler.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(arguments: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tracejudge", "score", *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=offline_env(),
        preexec_fn=_interactive_signals,
    )


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        time.sleep(0.05)
    raise AssertionError(f"{path} did not reach {count} lines")


def test_resume_after_a_kill_and_after_ctrl_c_scores_every_trace_once(tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    load_benchmark().write_input(source, 400)
    out = tmp_path / "out.jsonl"

    killed = _start([str(source), "--out", str(out), "--concurrency", "2"])
    _wait_for_lines(out, 60, killed)
    killed.kill()  # SIGKILL: no clean-up at all, perhaps half a line
    killed.wait()
    after_kill = out.read_bytes().count(b"\n")
    assert 0 < after_kill < 400 * 5

    interrupted = _start([str(source), "--out", str(out), "--resume"])
    _wait_for_lines(out, after_kill + 60, interrupted)
    interrupted.send_signal(signal.SIGINT)  # Ctrl-C: stops cleanly, keeps finished lines
    _, err = interrupted.communicate(timeout=60)
    assert interrupted.returncode == 130, err
    assert b"Traceback" not in err and b"--resume continues" in err
    assert out.read_bytes().endswith(b"\n")

    done = tracejudge("score", str(source), "--out", str(out), "--resume", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])["summary"]
    assert summary["traces"] == 400 and summary["resumed"] > 0
    lines = _lines(out)
    pairs = [(line["trace_id"], line["criterion"]) for line in lines]
    assert len(pairs) == len(set(pairs))  # nothing scored twice
    traces = {trace_id for trace_id, _ in pairs}
    assert traces == {f"{n:032x}" for n in range(1, 401)}


def test_peak_memory_is_bounded_by_the_trace_not_the_input(tmp_path: Path) -> None:
    """Five times the input costs (nearly) no more memory. The benchmark measures the
    full 10,000-trace case; here a generous bound on 1,000 traces (20 MB)."""
    benchmark = load_benchmark()
    peaks = {}
    for traces in (200, 1000):
        source = tmp_path / f"input-{traces}.jsonl.gz"
        size = benchmark.write_input(source, traces, compress=True)
        seconds, peak, status = benchmark.measure(
            ["score", str(source), "--out", str(tmp_path / f"out-{traces}.jsonl")],
            env=offline_env(),
        )
        assert status == 0
        peaks[traces] = peak
    grown = 800 * 20_000 / 2**20  # MiB of OTLP/JSON more in the larger input
    assert peaks[1000] < 150, peaks  # MiB; reading the whole input took over 8x its size
    assert peaks[1000] - peaks[200] < grown / 3, (peaks, size)


def test_traces_tied_by_span_links_are_scored_as_one_run(tmp_path: Path) -> None:
    """AutoGen's runtime starts a trace for every message of a run, linked to the span
    that sent it: the spool takes the linked traces out together, as the converter reads
    a whole file (one trace holding every agent of the run)."""
    from tracejudge.convert import traces_from_otlp
    from tracejudge.convert._otlp import decode

    recording = FIXTURES / "frameworks" / "autogen_openinference.pb"
    whole = [t for t in traces_from_otlp(recording) if t.has_llm_interactions]
    assert len(whole) == 1
    linked = {span.trace_id for span in decode(recording.read_bytes())[0]}
    assert len(linked) > 3  # the run's messages, each a trace of its own
    out = tmp_path / "out.jsonl"
    assert main(["score", str(recording), "--out", str(out)]) == 0
    lines = _lines(out)
    (trace_id,) = {line["trace_id"] for line in lines}  # one run, one trace
    assert trace_id in linked
    agents = {agent["name"] for line in lines for agent in line["agents"].values()}
    assert agents == {agent.name for agent in whole[0].iter_agents()}
    assert {"weather_agent", "writer"} <= agents


def test_every_output_path_is_checked_before_any_trace_is_scored(
    tmp_path: Path, demo_trace: Path
) -> None:
    missing = tmp_path / "no-such-folder"
    cases = [
        (["--html", str(missing / "report.html")], "cannot write --html "),
        (["--out", str(missing / "out.jsonl")], "cannot write --out "),
        (["--html", str(tmp_path)], "cannot write --html "),
        (["--out", str(tmp_path / "same"), "--html", str(tmp_path / "same")], "--out and --html"),
    ]
    with ScriptedLLMServer(default=verdict()) as judge:
        env = {**offline_env(), "OPENAI_BASE_URL": judge.base_url, "OPENAI_API_KEY": "k"}
        for options, expected in cases:
            done = subprocess.run(
                [sys.executable, "-m", "tracejudge", "score", str(demo_trace),
                 "--criterion", "Reward clear answers", "--judge", "openai:m", *options],
                capture_output=True, text=True, env=env, timeout=120,
            )  # fmt: skip
            assert done.returncode == 2, (options, done.stderr)
            assert done.stderr.startswith(f"tracejudge score: {expected}"), done.stderr
            assert len(done.stderr.splitlines()) == 1, done.stderr
            assert judge.requests == [], options  # no judge call was paid for
    assert not missing.exists() and not (tmp_path / "same").exists()


def _screen(raw: bytes) -> list[str]:
    """What a terminal shows of `raw` at the end: each line's last redraw, colours off."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw.decode(errors="replace"))
    return [line.split("\r")[-1] for line in text.replace("\r\n", "\n").split("\n")]


def test_the_progress_bar_on_a_terminal_reads_done_at_the_end(tmp_path: Path) -> None:
    pytest.importorskip("rich")
    source = tmp_path / "many.jsonl"
    load_benchmark().write_input(source, 40)
    terminal, stderr = pty.openpty()  # a real terminal: rich draws its bar
    process = subprocess.Popen(
        [sys.executable, "-m", "tracejudge", "score", str(source)],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env={**offline_env(), "COLUMNS": "120", "TERM": "xterm"},
    )
    os.close(stderr)
    raw = b""
    while True:
        try:
            chunk = os.read(terminal, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        raw += chunk
    os.close(terminal)
    assert process.wait(60) == 0
    (bar,) = [line for line in _screen(raw) if "scoring traces" in line]
    assert "40/40" in bar and "done in 0:00:" in bar, bar
    assert "left" not in bar, bar


def test_plain_progress_ends_with_one_line_saying_how_long_it_took(tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    load_benchmark().write_input(source, 30)
    done = tracejudge("score", str(source))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert [line for line in lines if "30/30" in line] == [lines[-1]]
    assert lines[-1].startswith("scored 30/30 traces in 0:00:"), lines


def test_inputs_that_share_a_trace_id_are_named_in_a_warning(tmp_path: Path, capsys) -> None:
    """Two inputs holding the same trace id are scored as one trace under the first's
    name: the run says so, naming the inputs and how many trace ids they share."""
    recording = (FIXTURES / "frameworks" / "openai_agents_openllmetry_parallel.pb").read_bytes()
    other = (FIXTURES / "frameworks" / "genkit.pb").read_bytes()
    (tmp_path / "a.pb").write_bytes(recording)
    (tmp_path / "b.pb").write_bytes(recording)  # the same run copied: the same trace id
    (tmp_path / "c.pb").write_bytes(other)
    out = tmp_path / "out.jsonl"
    assert main(["score", str(tmp_path / "*.pb"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert len({line["trace_id"] for line in _lines(out)}) == 2  # three files, two traces
    assert "1 trace id appear in more than one input" in err, err
    assert "a.pb" in err and "b.pb" in err and "c.pb" not in err, err
    assert "under the first input's name" in err

    assert main(["score", str(tmp_path / "a.pb"), str(tmp_path / "c.pb")]) == 0
    assert "more than one input" not in capsys.readouterr().err
