"""The public surface: every name each public module offered when the package was
reshaped (issue #7) is still there, importable from the same path.

New names may be added; a name leaves only with a CHANGELOG entry and an edit here.
(After httpx's tests/test_exported_members.py.)
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC_NAMES: dict[str, list[str]] = {
    "tracejudge": [
        "ModelInfo",
        "RewardRubricRunResult",
        "APIError",
        "AgentInstance",
        "AgentTracer",
        "AsyncComposo",
        "AuthenticationError",
        "BadRequestError",
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
        "ModelNotFoundError",
        "MultiAgentTrace",
        "MultiAgentTraceResponse",
        "NoLLMInteractionsError",
        "ProviderRequestError",
        "RateLimitError",
        "__version__",
        "agent_tracer",
        "checks",
        "context_propagating_executor",
        "criteria",
        "evaluate_rubric",
        "osmosis_reward",
        "osmosis_rubric",
        # batch scoring (issue #11)
        "abatch_rewards",
        "aevaluate_rubric",
        "aevaluate_rubric_batch",
        "batch_rewards",
        "evaluate_rubric_batch",
        # experiments (issue #34)
        "aexperiment",
        "experiment",
    ],
    "tracejudge.models": [
        "AgentInstance",
        "AgentTraceResult",
        "EvaluationResponse",
        "JudgeUsage",
        "LLMInput",
        "LLMInteraction",
        "LLMOutput",
        "LLMToolCall",
        "LLMToolDefinition",
        "LLMToolResponse",
        "MultiAgentTrace",
        "MultiAgentTraceResponse",
        "RecordedEvaluation",
        "RewardRequest",
        "ScoreResponse",
        "SummaryStatistics",
        "TaskResponse",
        "TaskStatus",
        "TokenUsage",
        "TraceRewardRequest",
        "to_json_string",
        # tracejudge inspect (issue #19)
        "Inspection",
        "InspectedAgent",
        "InspectedProducer",
        "InspectedSpan",
        "InspectedTrace",
    ],
    "tracejudge.checks": [
        "ALL",
        "AgentCheck",
        "Budgets",
        "FinalAnswer",
        "FunctionCheck",
        "GroundedNumbers",
        "Loops",
        "RewardCheck",
        "Score",
        "ToolArguments",
        "ToolResults",
        "TraceCheck",
        "as_check",
        "budgets",
        "check",
        "final_answer",
        "final_answer_with",
        "from_reward",
        "grounded_numbers",
        "is_check",
        "loops",
        "loops_with",
        "tool_arguments",
        "tool_results",
    ],
    "tracejudge.criteria": [
        "agent",
        "agent_exploitation",
        "agent_exploration",
        "agent_faithfulness",
        "agent_goal_pursuit",
        "agent_tool_use",
        "rag",
        "rag_completeness",
        "rag_faithfulness",
        "rag_precision",
        "rag_relevance",
    ],
    "tracejudge.client": [
        "AsyncComposo",
        "Composo",
        "DEFAULT_BASE_URL",
        "DEFAULT_MODEL_CORE",
    ],
    "tracejudge.rewards": [
        "ModelInfo",
        "RewardRubricRunResult",
        "evaluate_rubric",
        "osmosis_reward",
        "osmosis_rubric",
        # batch scoring (issue #11)
        "BatchItem",
        "BatchResult",
        "abatch_rewards",
        "aevaluate_rubric",
        "aevaluate_rubric_batch",
        "batch_rewards",
        "evaluate_rubric_batch",
    ],
    # experiments (issue #34)
    "tracejudge.experiments": [
        "AgentScore",
        "Comparison",
        "DEFAULT_RUNS",
        "GatePolicy",
        "Row",
        "RowResult",
        "RunRecord",
        "StoredRun",
        "aexperiment",
        "compare_runs",
        "experiment",
        "read_dataset",
        "read_run",
        # runs on a server (issue #34)
        "RunServer",
        "read_any_run",
        "run_address",
    ],
    "tracejudge.testing": [
        "Cassette",
        "CassetteServer",
        "RecordedExchange",
        "RecordedRequest",
        "Reply",
        "ScriptedLLMServer",
        "ToolCall",
        "token_logprobs",
    ],
    "tracejudge.tracing": [
        "AgentTracer",
        "CaptureSpanProcessor",
        "ComposoTracer",
        "ContextPropagatingExecutor",
        "Instruments",
        "IsolatingSpanProcessor",
        "MissingDependencyError",
        "SpanCapture",
        "agent_tracer",
        "context_propagating_executor",
    ],
    "tracejudge.convert": [
        "EventRecord",
        "MAX_INFLATED_BYTES",
        "OTLPDecodeError",
        "OTLPSource",
        "ROOT_AGENT_ID",
        "ROOT_AGENT_NAME",
        "SpanRecord",
        "TraceList",
        "traces_from_otlp",
        "traces_from_spans",
        # batch scoring (issue #11)
        "OTLPBatch",
        "read_otlp_batches",
        "traces_from_records",
        # one memo for a stream of conversions (issue #19)
        "ConversionMemo",
        # tracejudge inspect (issue #19)
        "inspect_otlp",
        "inspect_records",
        "inspect_spans",
    ],
    "tracejudge.judges": [
        "AnthropicJudge",
        "CacheOption",
        "CriterionKind",
        "DATA_END",
        "DATA_START",
        "DEFAULT_JUDGE_MODEL",
        "DEFAULT_TARGET",
        "HOW_TO_CONFIGURE_A_JUDGE",
        "HTTPJudge",
        "Judge",
        "JudgeCache",
        "JudgeOptions",
        "JudgeRequest",
        "MemoryCache",
        "OPENAI_COMPATIBLE_PROVIDERS",
        "OpenAICompatibleJudge",
        "PROVIDERS",
        "RESPONSE_FORMATS",
        "SQLiteCache",
        "Verdict",
        "default_judge",
        "judge_from_spec",
        "key_env_for",
        "needs_api_key",
    ],
    "tracejudge.errors": [
        "APIError",
        "AuthenticationError",
        "BadRequestError",
        "ComposoError",
        "ConfigurationError",
        "MalformedError",
        "MissingAPIKeyError",
        "MissingDependencyError",
        "ModelNotFoundError",
        "NoLLMInteractionsError",
        "ProviderRequestError",
        "RateLimitError",
        "TimeoutError",
    ],
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC_NAMES))
def test_public_module_keeps_its_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = set(module.__all__)
    missing = [name for name in PUBLIC_NAMES[module_name] if name not in exported]
    assert not missing, f"{module_name}.__all__ lost {missing}"
    for name in module.__all__:
        assert getattr(module, name, None) is not None, f"{module_name}.{name} does not resolve"


def test_top_level_names_are_the_same_objects_as_their_home_modules() -> None:
    import tracejudge
    from tracejudge import client, models, rewards, tracing

    assert tracejudge.Composo is client.Composo
    assert tracejudge.MultiAgentTrace is models.MultiAgentTrace
    assert tracejudge.evaluate_rubric is rewards.evaluate_rubric
    assert tracejudge.AgentTracer is tracing.AgentTracer
    assert tracejudge.experiment is importlib.import_module("tracejudge.experiments").experiment
    assert tracejudge.checks is importlib.import_module("tracejudge.checks")
    assert tracejudge.criteria is importlib.import_module("tracejudge.criteria")
