"""Evaluation: criteria, rendering for the judge, the evaluator, deterministic checks.

- `criteria`: ready-made criterion strings (`tracejudge.criteria`).
- `render`: a conversation or an agent instance written out for the judge.
- `Evaluator`: criteria x agent instances -> judge calls -> aggregated answers.
- `TraceCheck`: the protocol of deterministic checks (`tracejudge.checks`).

Names are imported on first use, so importing a submodule (a check, the
criteria) does not load the judges.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "TraceCheck": "tracejudge.evaluation._check",
    "Criterion": "tracejudge.evaluation._validate",
    "MAX_CRITERION_LENGTH": "tracejudge.evaluation._validate",
    "validate_criteria": "tracejudge.evaluation._validate",
    "validate_tags": "tracejudge.evaluation._validate",
    "validate_explanation_cleaning": "tracejudge.evaluation._validate",
    "adapt_result": "tracejudge.evaluation._adapt",
    "as_plain": "tracejudge.evaluation._adapt",
    "adapt_input": "tracejudge.evaluation._adapt",
    "responses_input_to_messages": "tracejudge.evaluation._adapt",
    "TaskRegistry": "tracejudge.evaluation._tasks",
    "RenderedContent": "tracejudge.evaluation.render",
    "conversation_agent": "tracejudge.evaluation.render",
    "render_conversation": "tracejudge.evaluation.render",
    "render_agent": "tracejudge.evaluation.render",
    "Evaluator": "tracejudge.evaluation.evaluator",
    "trace_response": "tracejudge.evaluation.evaluator",
    "summarize_trace_response": "tracejudge.evaluation.evaluator",
    "require_llm_interactions": "tracejudge.evaluation.evaluator",
    "gather_all": "tracejudge.evaluation.evaluator",
    "EvaluationService": "tracejudge.evaluation.service",
    "ConversationRequest": "tracejudge.evaluation.service",
    "TraceRequest": "tracejudge.evaluation.service",
}

__all__ = [
    "MAX_CRITERION_LENGTH",
    "ConversationRequest",
    "Criterion",
    "EvaluationService",
    "Evaluator",
    "RenderedContent",
    "TaskRegistry",
    "TraceCheck",
    "adapt_input",
    "adapt_result",
    "as_plain",
    "conversation_agent",
    "gather_all",
    "render_agent",
    "render_conversation",
    "require_llm_interactions",
    "responses_input_to_messages",
    "summarize_trace_response",
    "trace_response",
    "TraceRequest",
    "validate_criteria",
    "validate_explanation_cleaning",
    "validate_tags",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tracejudge.evaluation' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*__all__, *globals()})


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from tracejudge.evaluation._adapt import (
        adapt_input,
        adapt_result,
        as_plain,
        responses_input_to_messages,
    )
    from tracejudge.evaluation._check import TraceCheck
    from tracejudge.evaluation._tasks import TaskRegistry
    from tracejudge.evaluation._validate import (
        MAX_CRITERION_LENGTH,
        Criterion,
        validate_criteria,
        validate_explanation_cleaning,
        validate_tags,
    )
    from tracejudge.evaluation.evaluator import (
        Evaluator,
        gather_all,
        require_llm_interactions,
        summarize_trace_response,
        trace_response,
    )
    from tracejudge.evaluation.render import (
        RenderedContent,
        conversation_agent,
        render_agent,
        render_conversation,
    )
    from tracejudge.evaluation.service import (
        ConversationRequest,
        EvaluationService,
        TraceRequest,
    )
