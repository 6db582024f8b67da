"""tracejudge: OpenTelemetry tracing and trace evaluation for LLM agents.

The public API is re-exported here; its names follow the Composo and Osmosis
SDKs so that code written against them ports by changing the import line.
Names are imported on first use, so `import tracejudge` stays cheap and
tracing code never loads the judges.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # evaluation clients
    "Composo": "tracejudge.client",
    "AsyncComposo": "tracejudge.client",
    # tracing
    "ComposoTracer": "tracejudge.tracing",
    "Instruments": "tracejudge.tracing",
    "AgentTracer": "tracejudge.tracing",
    "agent_tracer": "tracejudge.tracing",
    "context_propagating_executor": "tracejudge.tracing",
    "MissingDependencyError": "tracejudge.errors",
    # data model
    "MultiAgentTrace": "tracejudge.models",
    "AgentInstance": "tracejudge.models",
    "LLMInteraction": "tracejudge.models",
    "LLMInput": "tracejudge.models",
    "LLMOutput": "tracejudge.models",
    "LLMToolCall": "tracejudge.models",
    "LLMToolResponse": "tracejudge.models",
    "LLMToolDefinition": "tracejudge.models",
    "EvaluationResponse": "tracejudge.models",
    "MultiAgentTraceResponse": "tracejudge.models",
    # reward API
    "osmosis_reward": "tracejudge.rewards",
    "osmosis_rubric": "tracejudge.rewards",
    "evaluate_rubric": "tracejudge.rewards",
    "aevaluate_rubric": "tracejudge.rewards",
    "evaluate_rubric_batch": "tracejudge.rewards",
    "aevaluate_rubric_batch": "tracejudge.rewards",
    "batch_rewards": "tracejudge.rewards",
    "abatch_rewards": "tracejudge.rewards",
    "ModelInfo": "tracejudge.rewards",
    "RewardRubricRunResult": "tracejudge.rewards",
    "BatchResult": "tracejudge.rewards",
    # experiments
    "experiment": "tracejudge.experiments",
    "aexperiment": "tracejudge.experiments",
    # errors
    "ComposoError": "tracejudge.errors",
    "ConfigurationError": "tracejudge.errors",
    "AuthenticationError": "tracejudge.errors",
    "BadRequestError": "tracejudge.errors",
    "RateLimitError": "tracejudge.errors",
    "APIError": "tracejudge.errors",
    "MalformedError": "tracejudge.errors",
    "NoLLMInteractionsError": "tracejudge.errors",
    "MissingAPIKeyError": "tracejudge.errors",
    "ProviderRequestError": "tracejudge.errors",
    "ModelNotFoundError": "tracejudge.errors",
}

# Modules users import as names: `from tracejudge import criteria, checks`.
_MODULES: dict[str, str] = {
    "criteria": "tracejudge.criteria",
    "checks": "tracejudge.checks",
}

__all__ = [
    "APIError",
    "AgentInstance",
    "AgentTracer",
    "AsyncComposo",
    "AuthenticationError",
    "BadRequestError",
    "BatchResult",
    "Composo",
    "ComposoError",
    "ComposoTracer",
    "ConfigurationError",
    "EvaluationResponse",
    "Instruments",
    "LLMInput",
    "LLMInteraction",
    "LLMOutput",
    "LLMToolCall",
    "LLMToolDefinition",
    "LLMToolResponse",
    "MalformedError",
    "MissingAPIKeyError",
    "MissingDependencyError",
    "ModelInfo",
    "ModelNotFoundError",
    "MultiAgentTrace",
    "MultiAgentTraceResponse",
    "NoLLMInteractionsError",
    "ProviderRequestError",
    "RateLimitError",
    "RewardRubricRunResult",
    "__version__",
    "abatch_rewards",
    "aevaluate_rubric",
    "aevaluate_rubric_batch",
    "aexperiment",
    "agent_tracer",
    "batch_rewards",
    "checks",
    "context_propagating_executor",
    "criteria",
    "evaluate_rubric",
    "evaluate_rubric_batch",
    "experiment",
    "osmosis_reward",
    "osmosis_rubric",
]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        module = importlib.import_module(_MODULES[name])
        globals()[name] = module
        return module
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tracejudge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from tracejudge import checks, criteria
    from tracejudge.client import AsyncComposo, Composo
    from tracejudge.errors import (
        APIError,
        AuthenticationError,
        BadRequestError,
        ComposoError,
        ConfigurationError,
        MalformedError,
        MissingAPIKeyError,
        MissingDependencyError,
        ModelNotFoundError,
        NoLLMInteractionsError,
        ProviderRequestError,
        RateLimitError,
    )
    from tracejudge.experiments import aexperiment, experiment
    from tracejudge.models import (
        AgentInstance,
        EvaluationResponse,
        LLMInput,
        LLMInteraction,
        LLMOutput,
        LLMToolCall,
        LLMToolDefinition,
        LLMToolResponse,
        MultiAgentTrace,
        MultiAgentTraceResponse,
    )
    from tracejudge.rewards import (
        BatchResult,
        ModelInfo,
        RewardRubricRunResult,
        abatch_rewards,
        aevaluate_rubric,
        aevaluate_rubric_batch,
        batch_rewards,
        evaluate_rubric,
        evaluate_rubric_batch,
        osmosis_reward,
        osmosis_rubric,
    )
    from tracejudge.tracing import (
        AgentTracer,
        ComposoTracer,
        Instruments,
        agent_tracer,
        context_propagating_executor,
    )
