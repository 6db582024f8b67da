"""The rules file (`tracejudge serve --rules FILE`): TOML or YAML, read and checked at start.

TOML (`.toml`) writes each rule as a `[[rule]]` table; YAML (`.yaml`, `.yml`) as a list
under `rules:`. Every problem is one `ConfigurationError` line naming the file, the rule
(its number and name) and the field, and saying what to give instead:

    [[rule]]
    name = "writer-quality"
    sample_rate = 0.1
    criteria = ["Reward answers that cite the sources the researcher found"]
    [rule.filter]
    root_agent = "writer"
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from tracejudge.errors import ConfigurationError
from tracejudge.evaluation.criteria_file import read_text_file
from tracejudge.server.work.rules.model import RuleBody, problem

__all__ = ["read_rules_file", "parse_rules", "check_judged"]

_OPTION = "--rules"


def _toml(text: str) -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)


def _yaml(text: str, name: str) -> Any:
    try:
        import yaml
    except ImportError:  # pragma: no cover - the server extra installs it
        raise ConfigurationError(
            f"{_OPTION} {name}: reading YAML needs PyYAML: pip install 'tracejudge[server]' "
            "(or write the rules as TOML)"
        ) from None
    return yaml.safe_load(text)


def _document(path: str) -> Any:
    text = read_text_file(path, _OPTION)
    name = os.fspath(path)
    lower = name.lower()
    try:
        if lower.endswith(".toml"):
            return _toml(text)
        if lower.endswith((".yaml", ".yml")):
            return _yaml(text, name)
    except ConfigurationError:
        raise
    except Exception as error:  # the parser's own error: where and what
        why = " ".join(str(error).split())
        raise ConfigurationError(f"{_OPTION} {name} is not valid: {why}") from None
    raise ConfigurationError(
        f"{_OPTION} {name}: name the file .toml or .yaml (or .yml) so that its format is known"
    )


def parse_rules(document: Any, where: str) -> list[RuleBody]:
    """The rules of a parsed file (`where`: what messages call it)."""
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigurationError(
            f"{where}: give a table of rules ([[rule]] in TOML, rules: in YAML)"
        )
    unknown = sorted(set(document) - {"rule", "rules"})
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown top-level key {unknown[0]!r}; write each rule as [[rule]] "
            "(TOML) or as an item of rules: (YAML)"
        )
    items = document.get("rule", document.get("rules", []))
    if not isinstance(items, list) or not items:
        raise ConfigurationError(f"{where} holds no rule; write one as [[rule]] with a name")
    rules: list[RuleBody] = []
    seen: set[str] = set()
    for number, item in enumerate(items, 1):
        label = f"rule {number}"
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            label += f" ({item['name']!r})"
        if not isinstance(item, dict):
            raise ConfigurationError(f"{where}, {label}: give a table of the rule's fields")
        try:
            rule = RuleBody.model_validate(item)
        except ValidationError as error:
            raise ConfigurationError(f"{where}, {label}: {problem(error)}") from None
        if rule.name in seen:
            raise ConfigurationError(
                f"{where}, {label}: name {rule.name!r} is given twice; give each rule its own"
            )
        seen.add(rule.name)
        rules.append(rule)
    return rules


def read_rules_file(path: str | os.PathLike[str]) -> list[RuleBody]:
    """The rules of a TOML or YAML file; `ConfigurationError` (one line) when it cannot be
    read or a rule is not valid."""
    name = os.fspath(path)
    return parse_rules(_document(name), f"{_OPTION} {name}")


def check_judged(rules: Sequence[RuleBody], judged: bool, where: str = _OPTION) -> None:
    """`ConfigurationError` when a rule gives judge criteria and no judge is configured."""
    if judged:
        return
    for rule in rules:
        if rule.judged and rule.enabled:
            raise ConfigurationError(
                f"{where}: rule {rule.name!r} gives judge criteria, but no judge is "
                "configured: add --judge (e.g. openai:gpt-4.1-mini), or leave its criteria out"
            )
