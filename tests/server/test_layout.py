"""The server's imports keep LAYOUT.md's rules: never the client, the CLI or the rewards
API (rule 5), never another room's underscore module (rule 4); and its criteria file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tracejudge.server
from tracejudge.errors import ConfigurationError
from tracejudge.server.app import read_criteria_file, server_criteria
from tracejudge.server.config import ServerConfig

SERVER = Path(tracejudge.server.__file__).parent
FORBIDDEN = ("tracejudge.client", "tracejudge.cli", "tracejudge.rewards")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return names


def test_server_imports_keep_the_layout_rules() -> None:
    for path in SERVER.rglob("*.py"):
        for name in _imports(path):
            assert not name.startswith(FORBIDDEN), f"{path.name} imports {name}"
            parts = name.split(".")
            if parts[:2] != ["tracejudge", "server"] and name.startswith("tracejudge."):
                private = [p for p in parts[1:] if p.startswith("_")]
                assert not private, f"{path.name} imports another room's private {name}"


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
