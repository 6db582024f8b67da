"""The documentation site: it builds with `mkdocs build --strict` and asks the network for
nothing while it builds; its generated pages hold every command and every public name;
and every Python block of its pages either runs offline as written (a ScriptedLLMServer
on loopback stands in for the model and the judge) or says, in a `docs-test` comment
before it, why it cannot."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tracejudge.testing import Reply, ScriptedLLMServer

pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TRACE_FILE = ROOT / "tests" / "fixtures" / "openllmetry.jsonl"

#: What a `<!-- docs-test: with a trace -->` block finds defined before it runs.
WITH_A_TRACE = f"""\
from tracejudge.convert import traces_from_otlp
traces = traces_from_otlp({str(TRACE_FILE)!r})
trace = traces[0]
"""

#: Loaded into the build's interpreter (PYTHONPATH): every connection the build tries
#: is written down, and any that leaves the machine is refused.
_NO_NETWORK = """\
import socket

_LOG = {log!r}
_connect = socket.socket.connect


def _logged_connect(self, address):
    host = address[0] if isinstance(address, tuple) else str(address)
    with open(_LOG, "a") as log:
        log.write(f"{{host}}\\n")
    if host not in ("127.0.0.1", "::1", "localhost") and not str(host).startswith("/"):
        raise OSError(f"the docs build tried to reach {{host}}")
    return _connect(self, address)


socket.socket.connect = _logged_connect
"""


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    directive: str  # "" (run as written), "with a trace", or "skip: <reason>"

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def python_blocks() -> Iterator[Block]:
    for path in sorted(DOCS.rglob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        directive = ""
        index = 0
        while index < len(lines):
            line = lines[index]
            found = re.fullmatch(r"<!-- docs-test: (.+?) -->", line.strip())
            if found:
                directive = found[1]
            elif line.startswith("```python"):
                start = index + 1
                end = lines.index("```", start)
                code = "\n".join(lines[start:end]) + "\n"
                yield Block(str(path.relative_to(DOCS)), start, code, directive)
                directive = ""
                index = end
            elif line.strip():
                directive = "" if not line.startswith("<!--") else directive
            index += 1


BLOCKS = list(python_blocks())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The site built once, strictly, with the connections the build tried."""
    work = tmp_path_factory.mktemp("docs")
    log = work / "connections.log"
    log.touch()
    hooks = work / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_NO_NETWORK.format(log=str(log)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HTTP_", "HTTPS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), str(ROOT / "src")])
    env["NO_MKDOCS_2_WARNING"] = "1"
    env["COLUMNS"] = "100"
    out = work / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out, log.read_text().split()


@pytest.mark.heavy("builds the whole site, the API reference from the source")
@pytest.mark.xdist_group("docs-site")  # one build: the three read the same site
def test_the_site_builds_strictly_without_the_network(site: tuple[Path, list[str]]) -> None:
    out, connections = site
    assert (out / "index.html").is_file()
    assert [host for host in connections if host not in ("127.0.0.1", "::1", "localhost")] == []
    # nothing on a page is fetched from a third party when it is read
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r'<(?:script|link)[^>]+(?:src|href)="https?://', text), page


@pytest.mark.heavy("builds the whole site (shared with the test above)")
@pytest.mark.xdist_group("docs-site")  # one build: the three read the same site
def test_the_cli_reference_holds_every_command(site: tuple[Path, list[str]]) -> None:
    from tracejudge.cli import COMMANDS

    text = (site[0] / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"usage: tracejudge {name}" in text, name
    assert "--judge-timeout-seconds" in text


@pytest.mark.heavy("builds the whole site (shared with the test above)")
@pytest.mark.xdist_group("docs-site")  # one build: the three read the same site
def test_the_api_reference_holds_every_public_name(site: tuple[Path, list[str]]) -> None:
    import tracejudge

    text = (site[0] / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    for name, module in tracejudge._EXPORTS.items():
        assert f'id="{module}.{name}"' in text, f"{module}.{name} has no entry"


def test_every_python_block_runs_or_says_why_not() -> None:
    assert BLOCKS, "no Python block found under docs/"
    for block in BLOCKS:
        assert block.directive in ("", "with a trace") or re.fullmatch(
            r"skip: .{10,}", block.directive
        ), f"{block.name}: unknown docs-test directive {block.directive!r}"


@pytest.mark.heavy("each block runs as a program of its own, as a reader runs it")
@pytest.mark.parametrize(
    "block",
    [b for b in BLOCKS if not b.directive.startswith("skip")],
    ids=lambda block: block.name,
)
def test_the_block_runs_offline_as_written(block: Block, tmp_path: Path) -> None:
    prelude = WITH_A_TRACE if block.directive == "with a trace" else ""
    program = tmp_path / "block.py"
    program.write_text(prelude + block.code)
    # one reply every judge question accepts: a verdict (graded or pass/fail) and an
    # attribution (the counterfactual's fields)
    verdict = {
        "explanation": "Fine.",
        "applicable": True,
        "score": 10,
        "passes": True,
        "agent": "assistant",
        "step": 1,
        "fix": "Check the tool's result.",
        "outcome_changes": True,
        "confidence": 0.8,
    }
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "TRACEJUDGE_", "COMPOSO_", "OTEL_", "ANTHROPIC_"))
    }
    env["PYTHONPATH"] = str(ROOT / "src")
    with ScriptedLLMServer(default=Reply.text(json.dumps(verdict))) as model:
        env.update(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="scripted")
        done = subprocess.run(
            [sys.executable, str(program)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
    assert done.returncode == 0, f"{block.name}:\n{done.stderr}"
