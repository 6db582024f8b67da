"""MkDocs hooks: the pages that are generated rather than written.

- `<!-- cli-reference -->` becomes every command's `--help`, from the parser itself
  (`tracejudge.cli.build_parser`), so the reference cannot drift from the CLI;
- `<!-- api-reference -->` becomes one mkdocstrings block per public name, in the
  groups of `tracejudge._EXPORTS` (the lazy public face), so a name added there is
  documented;
- `<!-- include: PATH -->` becomes the text of a file of the repository: the landing page
  is the README, the benchmark results live beside the benchmarks.
"""

from __future__ import annotations

import argparse
import io
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_INCLUDE = re.compile(r"<!-- include: (?P<path>[^ ]+) -->")


def on_page_markdown(markdown: str, **_: Any) -> str:
    if "<!-- cli-reference -->" in markdown:
        markdown = markdown.replace("<!-- cli-reference -->", cli_reference())
    if "<!-- api-reference -->" in markdown:
        markdown = markdown.replace("<!-- api-reference -->", api_reference())
    return _INCLUDE.sub(lambda match: _included(match["path"]), markdown)


def cli_reference() -> str:
    from tracejudge.cli import build_parser

    parser = build_parser()
    parts = ["## tracejudge\n", _help_block(parser)]
    for name, command in _subcommands(parser):
        parts.append(f"## tracejudge {name}\n")
        parts.append(_help_block(command))
        for sub_name, sub in _subcommands(command):
            parts.append(f"### tracejudge {name} {sub_name}\n")
            parts.append(_help_block(sub))
    return "\n".join(parts)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.extend(action.choices.items())
    return found


def _help_block(parser: argparse.ArgumentParser) -> str:
    text = io.StringIO()
    with redirect_stdout(text):
        parser.print_help()
    # a fixed width: the page is the same whatever terminal builds it
    return "```text\n" + text.getvalue().rstrip() + "\n```\n"


def api_reference() -> str:
    import tracejudge

    groups: dict[str, list[str]] = {}
    for name, module in tracejudge._EXPORTS.items():
        groups.setdefault(module, []).append(name)
    parts = []
    for module, names in groups.items():
        parts.append(f"## `{module}`\n")
        parts.extend(f"::: {module}.{name}\n" for name in names)
    for module in tracejudge._MODULES.values():
        parts.append(f"## `{module}`\n")
        parts.append(f"::: {module}\n    options:\n      show_root_heading: false\n")
    return "\n".join(parts)


def _included(path: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    # the included file's own title is the page's
    text = re.sub(r"\A# [^\n]*\n", "", text)
    if path == "README.md":  # the landing page: its links are to files of the repository
        text = text.replace("](docs/", "](").replace("](benchmarks/RESULTS.md)", "](benchmarks.md)")
    return text
