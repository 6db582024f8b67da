"""Wire requests: the bodies of the reward endpoints, and the one definition of their limits.

`MAX_CRITERION_LENGTH`, `MAX_TAG_LENGTH`, `validate_criterion_text`, `validate_tags`
and `validate_plain_text` are what every caller checks (the client before it sends, the
server when it receives), so both report the same mistakes in the same words.
The checks raise `BadRequestError`, a `ValueError`: inside a request model it
becomes a pydantic validation error located at the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tracejudge.errors import BadRequestError
from tracejudge.models._base import WireModel
from tracejudge.models._chat_session import CHAT_MESSAGE_SCHEMA
from tracejudge.models._trace import MultiAgentTrace

__all__ = [
    "LIGHTNING_CORE_PREFIX",
    "check_latest_only_core",
    "MAX_CRITERION_LENGTH",
    "MAX_TAG_LENGTH",
    "CRITERION_TEXT_SCHEMA",
    "PLAIN_TEXT_SCHEMA",
    "RewardRequest",
    "TraceRewardRequest",
    "validate_criterion_text",
    "validate_plain_text",
    "validate_tags",
]

#: The longest criterion accepted, in characters (the Composo API's limit).
MAX_CRITERION_LENGTH = 4096
#: The longest tag key or value accepted, in characters.
MAX_TAG_LENGTH = 64


#: What no database stores as text: NUL (PostgreSQL) and lone surrogates (neither).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: The JSON Schema of what `validate_plain_text` accepts (no NUL; JSON text in UTF-8
#: cannot carry a lone surrogate unescaped).
PLAIN_TEXT_SCHEMA: dict[str, Any] = {"pattern": "^[^\\u0000]*$"}
#: What `str.strip` removes (Python's whitespace), as a character class of a JSON Schema
#: pattern: the pattern's own `\s` (ECMA-262) leaves out U+001C-U+001F and U+0085, which a
#: criterion of nothing else would be refused for, and adds U+FEFF, which it would not.
_BLANK = (
    "\\t\\n\\u000b\\f\\r\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029"
    "\\u202f\\u205f\\u3000"
)
#: ... and of a criterion's text: not blank either.
CRITERION_TEXT_SCHEMA: dict[str, Any] = {"pattern": f"^[^\\u0000]*[^\\u0000{_BLANK}][^\\u0000]*$"}


def validate_plain_text(text: str, where: str) -> str:
    """`text` as given, or `BadRequestError` naming `where` when it holds a NUL (U+0000) or
    a lone surrogate (half of a UTF-16 pair), which names, ids, tags and criteria may not:
    they are stored as text, and no database stores those."""
    if "\x00" not in text and (text.isascii() or not _UNSTORABLE.search(text)):
        return text
    found = _UNSTORABLE.search(text)
    assert found is not None
    what = "a NUL (U+0000)" if found.group() == "\x00" else "a lone surrogate"
    raise BadRequestError(
        f"{where} holds {what} at character {found.start()}; send text without NUL "
        "characters and with every surrogate in a pair (valid UTF-8 / UTF-16)"
    )


def _describe(criterion: str) -> str:
    return criterion if len(criterion) <= 60 else criterion[:57] + "..."


def validate_criterion_text(text: str, where: str = "criterion") -> str:
    """The criterion text as given, or `BadRequestError` naming `where` when it is blank or
    longer than `MAX_CRITERION_LENGTH` characters, or holds a NUL or a lone surrogate."""
    validate_plain_text(text, where)
    if not text.strip():
        raise BadRequestError(
            f"{where} is empty: write what to judge, for example "
            '"Reward responses that answer the question"'
        )
    if len(text) > MAX_CRITERION_LENGTH:
        raise BadRequestError(
            f"{where} ({_describe(text)!r}) is {len(text)} characters long; the limit "
            f"is {MAX_CRITERION_LENGTH}: shorten it or split it into several criteria"
        )
    return text


def validate_tags(tags: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The tags with every value as a string, or None when there are none.

    Keys must be strings of at most `MAX_TAG_LENGTH` characters; values strings,
    numbers or booleans (converted to strings) of at most `MAX_TAG_LENGTH`
    characters; nothing nested. Anything else raises `BadRequestError`.
    """
    if tags is None:
        return None
    if not isinstance(tags, Mapping):
        raise BadRequestError(
            f"tags must be a dict of str keys to str/int/float/bool values, got "
            f"{type(tags).__name__}"
        )
    result: dict[str, str] = {}
    for key, value in tags.items():
        if not isinstance(key, str):
            raise BadRequestError(
                f"tag key {key!r} is a {type(key).__name__}; tag keys must be strings"
            )
        validate_plain_text(key, f"tag key {key[:20]!r}")
        if len(key) > MAX_TAG_LENGTH:
            raise BadRequestError(
                f"tag key {key[:20]!r}... is {len(key)} characters long; tag keys may have at "
                f"most {MAX_TAG_LENGTH}"
            )
        if isinstance(value, (dict, list, tuple, set, frozenset)) or isinstance(value, Mapping):
            raise BadRequestError(
                f"tag {key!r} has a nested {type(value).__name__} value; tag values must be a "
                "string, number or bool (flatten it into separate tags)"
            )
        if isinstance(value, (str, int, float)):  # bool is an int: str(True) == "True"
            text = str(value)
        else:
            raise BadRequestError(
                f"tag {key!r} has a {type(value).__name__} value; tag values must be a string, "
                "number or bool"
            )
        if len(text) > MAX_TAG_LENGTH:
            raise BadRequestError(
                f"tag {key!r} has a value {len(text)} characters long; tag values may have at "
                f"most {MAX_TAG_LENGTH}"
            )
        validate_plain_text(text, f"tag {key!r}")
        result[key] = text
    return result


# The constraints below repeat the limits for the JSON schema; the validators run first
# and give the messages.
_Tag = Annotated[str, Field(max_length=MAX_TAG_LENGTH, json_schema_extra=PLAIN_TEXT_SCHEMA)]


class _RequestBase(WireModel):
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["evaluation_criteria"],
                    "properties": {
                        "evaluation_criteria": {"type": "string"},
                        "evaluator_name": {"type": "null"},
                    },
                },
                {
                    "required": ["evaluator_name"],
                    "properties": {
                        "evaluator_name": {"type": "string"},
                        "evaluation_criteria": {"type": "null"},
                    },
                },
            ]
        }
    )

    evaluation_criteria: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CRITERION_LENGTH,
        json_schema_extra=CRITERION_TEXT_SCHEMA,
    )
    evaluator_name: str | None = Field(
        default=None, min_length=1, max_length=255, json_schema_extra=PLAIN_TEXT_SCHEMA
    )
    model_core: str | None = Field(default=None, json_schema_extra=PLAIN_TEXT_SCHEMA)
    tags: dict[_Tag, _Tag] | None = None
    trace_id: str | None = Field(default=None, json_schema_extra=PLAIN_TEXT_SCHEMA)
    data_retention: Literal["standard", "none"] | None = None

    @field_validator("evaluation_criteria", mode="before")
    @classmethod
    def _criterion_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return validate_criterion_text(value, "evaluation_criteria")
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _valid_tags(cls, value: Any) -> Any:
        return validate_tags(value)

    @field_validator("evaluator_name", "model_core", "trace_id", mode="before")
    @classmethod
    def _plain_text(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            return validate_plain_text(value, str(info.field_name))
        return value

    @model_validator(mode="after")
    def _one_of_criteria_or_evaluator(self) -> _RequestBase:
        if (self.evaluation_criteria is None) == (self.evaluator_name is None):
            raise ValueError("give exactly one of 'evaluation_criteria' and 'evaluator_name'")
        return self


#: Model cores that judge only the latest response (the Composo SDK's Lightning cores).
LIGHTNING_CORE_PREFIX = "align-lightning"


def check_latest_only_core(model_core: str | None, evaluate_latest: bool) -> None:
    """Raise `BadRequestError` for `evaluate_latest=False` with a Lightning model core,
    which judges only the latest response."""
    if not evaluate_latest and (model_core or "").startswith(LIGHTNING_CORE_PREFIX):
        raise BadRequestError(
            f"evaluate_latest=False is not supported by the Lightning model core "
            f"{model_core!r}: use evaluate_latest=True, or another model core"
        )


class RewardRequest(_RequestBase):
    """Body of POST /api/v1/evals/reward."""

    model_config = ConfigDict(populate_by_name=True)

    messages: list[dict[str, Any]] = Field(
        min_length=2,
        json_schema_extra={
            "items": CHAT_MESSAGE_SCHEMA,
            "contains": {"required": ["role"], "properties": {"role": {"const": "assistant"}}},
        },
    )
    system: str | None = Field(
        default=None, validation_alias=AliasChoices("system", "system_message")
    )
    tools: list[dict[str, Any]] | None = None
    evaluate_latest: bool = True
    explanation_cleaning: Literal["end_user"] | None = None

    @model_validator(mode="after")
    def _latest_only_cores(self) -> RewardRequest:
        try:
            check_latest_only_core(self.model_core, self.evaluate_latest)
        except BadRequestError as error:
            raise ValueError(str(error)) from None
        return self


class TraceRewardRequest(_RequestBase):
    """Body of POST /api/v1/evals/trace."""

    trace: MultiAgentTrace
    evaluate_latest: bool = False

    @field_validator("evaluate_latest")
    @classmethod
    def _must_be_false(cls, value: bool) -> bool:
        if value:
            raise ValueError("evaluate_latest must be false for trace evaluations")
        return value

    @field_validator("trace")
    @classmethod
    def _plain_names(cls, trace: MultiAgentTrace) -> MultiAgentTrace:
        validate_plain_text(trace.root_agent_instance_id, "root_agent_instance_id")
        if trace.trace_id is not None:
            validate_plain_text(trace.trace_id, "trace.trace_id")
        for key, agent in trace.agent_instance_by_id.items():
            where = f"agent_instance_by_id[{key[:40]!r}]"
            validate_plain_text(key, f"agent_instance_by_id key {key[:40]!r}")
            validate_plain_text(agent.id, f"{where}.id")
            validate_plain_text(agent.name, f"{where}.name")
            if agent.handoff is not None:
                validate_plain_text(agent.handoff, f"{where}.handoff")
        return trace

    @field_validator("trace")
    @classmethod
    def _has_llm_interactions(cls, trace: MultiAgentTrace) -> MultiAgentTrace:
        return trace.require_llm_interactions()  # its error is a ValueError: a validation error
