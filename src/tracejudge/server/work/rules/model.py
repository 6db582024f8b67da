"""What a rule is: which traces (a filter), what they are scored against (judge criteria and
check bars), how many of them (a sampling rate), within what budget.

`RuleBody` is the one definition: the rules file's tables, the API's request bodies and the
stored JSON are all read with it, and the OpenAPI document describes it. `problem(error)`
turns its validation error into one line naming the field and the fix.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tracejudge import checks, semconv
from tracejudge.errors import BadRequestError
from tracejudge.models import CRITERION_TEXT_SCHEMA, MAX_CRITERION_LENGTH, validate_criterion_text

__all__ = [
    "CHECK_NAMES",
    "NAME_PATTERN",
    "RuleBody",
    "RuleCriterion",
    "RuleFilter",
    "TraceFacts",
    "problem",
]

#: A rule's name: what the API's paths and the trace's decisions call it.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
CHECK_NAMES = tuple(str(c.name) for c in checks.ALL)
_Bar = Annotated[float, Field(ge=0.0, le=1.0)]
_Text = Annotated[str, Field(max_length=1024)]


class TraceFacts(BaseModel):
    """What a rule's filter reads of a trace."""

    trace_id: str
    service: str | None = None
    root_agent: str | None = None
    agents: list[str] = Field(default_factory=list)
    tags: dict[str, str] = Field(default_factory=dict)
    resource: dict[str, str] = Field(default_factory=dict)
    span_count: int = 0


class RuleFilter(BaseModel):
    """Which traces a rule applies to: every condition given holds (none: every trace).
    Names compare exactly; `agent` holds when any agent of the trace has that name."""

    model_config = ConfigDict(extra="forbid")

    service: _Text | None = Field(default=None, description="the service.name resource attribute")
    service_version: _Text | None = Field(
        default=None, description="the service.version resource attribute"
    )
    root_agent: _Text | None = Field(default=None, description="the name of the trace's root agent")
    agent: _Text | None = Field(default=None, description="an agent of the trace has this name")
    tags: dict[_Text, _Text] = Field(
        default_factory=dict, max_length=32, description="tags the trace has, all of them"
    )
    resource: dict[_Text, _Text] = Field(
        default_factory=dict,
        max_length=32,
        description="resource attributes the trace has, all of them",
    )
    min_spans: int | None = Field(default=None, ge=0, description="at least this many spans")
    max_spans: int | None = Field(default=None, ge=0, description="at most this many spans")

    def matches(self, facts: TraceFacts) -> bool:
        return not self.mismatch(facts)

    def mismatch(self, facts: TraceFacts) -> str:
        """Why the trace is not one of the rule's ("" when it is)."""
        version = facts.resource.get(semconv.SERVICE_VERSION)
        wanted: list[tuple[str, Any, Any]] = [
            ("service", self.service, facts.service),
            ("service_version", self.service_version, version),
            ("root_agent", self.root_agent, facts.root_agent),
        ]
        for name, want, have in wanted:
            if want is not None and want != have:
                return f"{name} is {have!r}, not {want!r}"
        if self.agent is not None and self.agent not in facts.agents:
            return f"no agent is named {self.agent!r}"
        for kind, pairs, have_pairs in (
            ("tag", self.tags, facts.tags),
            ("resource attribute", self.resource, facts.resource),
        ):
            for key, value in pairs.items():
                if have_pairs.get(key) != value:
                    return f"{kind} {key} is {have_pairs.get(key)!r}, not {value!r}"
        if self.min_spans is not None and facts.span_count < self.min_spans:
            return f"{facts.span_count} spans, fewer than {self.min_spans}"
        if self.max_spans is not None and facts.span_count > self.max_spans:
            return f"{facts.span_count} spans, more than {self.max_spans}"
        return ""


class RuleCriterion(BaseModel):
    """A judge criterion and its bar (None: the judged default, 0.5)."""

    model_config = ConfigDict(extra="forbid")

    text: Annotated[
        str,
        Field(
            min_length=1, max_length=MAX_CRITERION_LENGTH, json_schema_extra=CRITERION_TEXT_SCHEMA
        ),
    ]
    bar: _Bar | None = None

    @field_validator("text")
    @classmethod
    def _criterion(cls, text: str) -> str:
        try:
            return validate_criterion_text(text, "text")
        except BadRequestError as error:
            raise ValueError(error.message) from None


def _criteria(value: Any) -> Any:
    """A criterion may be written as its text alone."""
    if isinstance(value, list):
        return [{"text": v} if isinstance(v, str) else v for v in value]
    return value


class RuleBody(BaseModel):
    """One rule. Checks run on every trace (they are cheap) unless a matching rule sets
    `sample_checks`; a rule's judge criteria run on the traces its filter keeps and its
    sample picks, within its own daily budget when it has one."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="letters, digits, _ . - (64 at most)")
    description: Annotated[str, Field(max_length=1024)] = ""
    filter: RuleFilter = Field(default_factory=RuleFilter)
    criteria: list[RuleCriterion] = Field(
        default_factory=list,
        max_length=64,
        description="judge criteria, each its text or {text, bar}",
    )
    check_bars: dict[str, _Bar] = Field(
        default_factory=dict,
        description="a bar for a check on this rule's traces (check name -> bar; default 1.0)",
    )
    session_criteria: list[RuleCriterion] = Field(
        default_factory=list,
        max_length=16,
        description="criteria judged over the whole session of a trace the rule scored (its "
        "turns in order), sampled by session id",
    )
    sample_rate: float = Field(
        default=1.0, ge=0.0, le=1.0, description="the share of the traces it keeps that it judges"
    )
    sample_checks: bool = Field(
        default=False, description="the checks, too, run only on the traces this rule samples"
    )
    max_judge_cost_per_day: float | None = Field(
        default=None, gt=0, description="dollars (UTC day)"
    )
    max_judge_tokens_per_day: int | None = Field(default=None, gt=0, description="tokens (UTC day)")
    enabled: bool = True

    @field_validator("criteria", "session_criteria", mode="before")
    @classmethod
    def _texts_alone(cls, value: Any) -> Any:
        return _criteria(value)

    @field_validator("check_bars")
    @classmethod
    def _known_checks(cls, bars: dict[str, float]) -> dict[str, float]:
        for name in bars:
            if name not in CHECK_NAMES:
                raise ValueError(f"unknown check {name!r}; the checks are {', '.join(CHECK_NAMES)}")
        return bars

    @field_validator("max_judge_cost_per_day")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number of dollars")
        return value

    @property
    def judged(self) -> bool:
        """Whether the rule needs a judge."""
        return bool(self.criteria or self.session_criteria)


def _where(location: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in location) or "the rule"


def problem(error: ValidationError) -> str:
    """The first problem of a rule's validation error, one line: the field, what is wrong,
    and what to give instead."""
    first = error.errors()[0]
    where, kind, message = _where(first["loc"]), first["type"], first["msg"]
    given = first.get("input")
    if kind == "extra_forbidden":
        parent = RuleBody if len(first["loc"]) == 1 else RuleFilter
        known = ", ".join(parent.model_fields)
        return f"{where}: unknown field; the fields are {known}"
    if kind == "missing":
        return f'{where}: missing; give it (e.g. name = "writer-quality")'
    if kind == "string_pattern_mismatch":
        return f"{where}: {given!r} is not a rule name; use letters, digits, _ . - (64 at most)"
    bounds = {"less_than_equal": "at most", "less_than": "less than"}
    bounds.update({"greater_than_equal": "at least", "greater_than": "more than"})
    if kind in bounds:
        limit = next(iter(first.get("ctx", {}).values()), "")
        return f"{where} is {given!r}; it must be {bounds[kind]} {limit}"
    if kind == "value_error":
        return f"{where}: {message.removeprefix('Value error, ')}"
    return f"{where}: {message} (given {given!r})"
