"""Ray is imported by tracejudge.bulk and nowhere else in the package (LAYOUT rule 8):
installing tracejudge without the ray extra loses nothing but `score --ray`."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tracejudge"


def _imports_ray(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(
            alias.name.split(".")[0] == "ray" for alias in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ray":
            return True
    return False


def test_only_bulk_imports_ray() -> None:
    importers = {
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py") if _imports_ray(path)
    }
    assert importers, "tracejudge.bulk no longer imports ray: is this test still right?"
    assert {name for name in importers if not name.startswith("bulk/")} == set()
