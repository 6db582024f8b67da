"""A criteria file is read by one reader: `tracejudge serve`, `score` and `attribute` (and
`rubric`'s `--rubric-file`) give the same one-line error for the same bad file, naming the
file and the fix, never a traceback. Each command runs as a real subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch.conftest import FIXTURES, tracejudge
from tracejudge.models import MAX_CRITERION_LENGTH

# A judge at a loopback address that nothing answers: these commands stop before a call.
_JUDGE = ["--judge", "openai:scripted-model"]
_JUDGE_URL = "http://127.0.0.1:9/v1"


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("# ours\nReward caf\xe9 answers\n".encode("latin-1"))
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    long = tmp_path / "long.txt"
    long.write_text("Reward short answers\n" + "Reward " + "x" * MAX_CRITERION_LENGTH + "\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    return {
        "not UTF-8": latin1,
        "empty": empty,
        "too long": long,
        "missing": tmp_path / "missing.txt",
        "a directory": folder,
    }


def _serve(criteria: Path, tmp_path: Path) -> tuple[int, str]:
    done = tracejudge(
        "serve",
        *_JUDGE,
        "--judge-base-url",
        _JUDGE_URL,
        "--db",
        str(tmp_path / "serve.db"),
        "--port",
        "0",
        "--criteria-file",
        str(criteria),
        timeout=60,
    )
    return done.returncode, done.stderr


def _score(criteria: Path) -> tuple[int, str]:
    done = tracejudge(
        "score", str(FIXTURES / "openllmetry.jsonl"), *_JUDGE, "--criteria-file", str(criteria)
    )
    return done.returncode, done.stderr


def _attribute(criteria: Path) -> tuple[int, str]:
    done = tracejudge(
        "attribute", str(FIXTURES / "openllmetry.jsonl"), "--criteria-file", str(criteria)
    )
    return done.returncode, done.stderr


def _one_line(command: str, stderr: str) -> str:
    """The message after ``tracejudge COMMAND: `` of the one line on stderr."""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    prefix = f"tracejudge {command}: "
    assert lines[0].startswith(prefix), stderr
    return lines[0][len(prefix) :]


@pytest.mark.parametrize("problem", ["not UTF-8", "empty", "too long", "missing", "a directory"])
def test_serve_score_and_attribute_say_the_same_line_for_a_bad_criteria_file(
    problem: str, tmp_path: Path
) -> None:
    path = _bad_files(tmp_path)[problem]
    served, serve_err = _serve(path, tmp_path)
    scored, score_err = _score(path)
    attributed, attribute_err = _attribute(path)
    assert (served, scored, attributed) == (2, 2, 2), (serve_err, score_err, attribute_err)
    message = _one_line("serve", serve_err)
    assert _one_line("score", score_err) == message
    assert _one_line("attribute", attribute_err) == message
    assert message.startswith(f"--criteria-file {path}")
    assert "Traceback" not in serve_err + score_err + attribute_err


def test_a_non_utf8_criteria_file_names_the_byte_its_line_and_the_fix(tmp_path: Path) -> None:
    path = _bad_files(tmp_path)["not UTF-8"]
    code, err = _serve(path, tmp_path)
    assert code == 2
    assert _one_line("serve", err) == (
        f"--criteria-file {path} is not UTF-8 text (byte 0xe9 on line 2); save it as UTF-8, "
        f"e.g. iconv -f latin1 -t utf-8 {path} > fixed.txt"
    )


def test_a_too_long_criterion_names_its_line(tmp_path: Path) -> None:
    path = _bad_files(tmp_path)["too long"]
    message = _one_line("score", _score(path)[1])
    assert message.startswith(f"--criteria-file {path}, line 2: criterion (")
    assert f"the limit is {MAX_CRITERION_LENGTH}" in message


def test_rubric_reads_its_rubric_file_by_the_same_rules(tmp_path: Path) -> None:
    path = _bad_files(tmp_path)["not UTF-8"]
    dataset = tmp_path / "data.jsonl"
    dataset.write_text('{"solution_str": "4"}\n')
    done = tracejudge(
        "rubric", str(dataset), "--rubric-file", str(path), "--model", "openai/scripted-model"
    )
    assert done.returncode == 2
    assert _one_line("rubric", done.stderr) == (
        f"--rubric-file {path} is not UTF-8 text (byte 0xe9 on line 2); save it as UTF-8, "
        f"e.g. iconv -f latin1 -t utf-8 {path} > fixed.txt"
    )


def test_a_utf8_criteria_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    from tracejudge.evaluation.criteria_file import read_criteria_file

    path = tmp_path / "notepad.txt"
    path.write_bytes(
        "\ufeff# Notepad's\r\nReward café answers\r\n\r\nPenalize guesses\r\n".encode()
    )
    assert read_criteria_file(path) == ["Reward café answers", "Penalize guesses"]
