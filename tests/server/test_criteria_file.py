"""The server's criteria file. (Its imports keep LAYOUT.md's rules 4 and 5: the
import-linter contracts in pyproject.toml check them, `lint-imports` in CI.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tracejudge.errors import ConfigurationError
from tracejudge.evaluation.criteria_file import read_criteria_file
from tracejudge.server.app import server_criteria
from tracejudge.server.config import ServerConfig


def test_criteria_file(tmp_path: Path) -> None:
    good = tmp_path / "criteria.txt"
    good.write_text("# ours\nReward short answers\n\nPenalize made-up numbers\n")
    assert read_criteria_file(str(good)) == ["Reward short answers", "Penalize made-up numbers"]
    config = ServerConfig(criteria_file=str(good))
    texts = [c for c in server_criteria(config, judged=True) if isinstance(c, str)]
    assert texts == ["Reward short answers", "Penalize made-up numbers"]
    with pytest.raises(ConfigurationError, match="no judge"):
        server_criteria(config, judged=False)
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(ConfigurationError, match="holds no criterion"):
        read_criteria_file(str(empty))
    with pytest.raises(ConfigurationError, match="cannot be read"):
        read_criteria_file(str(tmp_path / "missing.txt"))
