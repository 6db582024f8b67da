"""Wire data model: traces of agents and the answers of evaluations.

The JSON shape of every model here is the Composo wire protocol (see
ARCHITECTURE.md, "Wire protocol"): a trace produced here is accepted by a
Composo-compatible server, and a trace from one validates here. Optional fields
that are None are left out of the JSON, as the Composo SDK sends it.

tracejudge adds measurements to an `LLMInteraction` (`model`, `usage`,
`start_time`, `end_time`, `error`). Composo's models forbid unknown fields, so
the default serialisation (`model_dump()`, `model_dump_json()`) leaves them out
and is exactly the wire shape; `MultiAgentTrace.to_json()` and `to_wire()` keep
them (tracejudge reads them back), `to_wire(compat=True)` drops them. Equality
of interactions and traces compares the wire fields only, so a JSON round trip
gives an equal trace either way.

The modules, each one idea, in the order they build on each other (this package
imports nothing of tracejudge but `tracejudge.errors`):

- `_base`: the base model (Composo's JSON shape, extensions on request).
- `_messages`: model inputs and outputs, tool calls, results and definitions.
- `_interaction`: one model call and its token usage.
- `_chat_session`: OpenAI / Anthropic message lists -> model calls.
- `_trace`: agent instances and the trace tree.
- `_verdict`: what failing means: bars, the worst agent, the failing pairs of a trace.
- `_answers`: scores and evaluation results, judge usage, task status.
- `_attribution`: which agent and step caused a failure: ranked `Cause`s.
- `_estimate`: a statistic with its bootstrap interval.
- `_bench`: the attribution benchmark's results, per item and per split and method.
- `_labels`: people's verdicts on (trace, agent, criterion), the labels file's lines.
- `_calibration`: a judge measured against those labels.
- `_pricing`: what model calls cost, by model (the agents' calls and the judge's).
- `_recorded`: an evaluation result as a trace carries it (GenAI evaluation events).
- `_requests`: the reward endpoints' request bodies and the one definition of
  their limits (criterion length, tags).
- `_inspection`: what the converter made of an input's spans (`tracejudge inspect`):
  producers, spans read and ignored, agents, warnings; a stable JSON shape.
"""

from __future__ import annotations

from tracejudge.models._answers import (
    AgentTraceResult,
    EvaluationResponse,
    ExplorationRead,
    ExplorationRecord,
    JudgeUsage,
    MultiAgentTraceResponse,
    ScoreResponse,
    ScoreStatus,
    SummaryStatistics,
    TaskResponse,
    TaskStatus,
    TraceVerdict,
    VerdictStatus,
)
from tracejudge.models._attribution import (
    ATTRIBUTION_METHODS,
    Attribution,
    AttributionMethod,
    Cause,
)
from tracejudge.models._base import EXTENSIONS, INTERACTION_EXTENSION_FIELDS
from tracejudge.models._bench import BenchItemResult, BenchReport, BenchRow
from tracejudge.models._calibration import (
    AgreementBand,
    CalibrationItem,
    CalibrationReport,
    Confusion,
    CriterionAgreement,
    LabelStats,
    Repeatability,
)
from tracejudge.models._chat_session import (
    interactions_from_messages,
    text_of,
    tool_definitions,
)
from tracejudge.models._estimate import Estimate
from tracejudge.models._inspection import (
    ANSWER_EXCERPT,
    IGNORED_REASONS,
    INSPECTION_VERSION,
    InspectedAgent,
    InspectedProducer,
    InspectedSpan,
    InspectedTrace,
    Inspection,
)
from tracejudge.models._interaction import LLMInteraction, TokenUsage
from tracejudge.models._labels import HumanLabel, LabelVerdict
from tracejudge.models._messages import (
    LLMInput,
    LLMOutput,
    LLMToolCall,
    LLMToolDefinition,
    LLMToolResponse,
    to_json_string,
)
from tracejudge.models._pricing import DEFAULT_PRICES, Price, PriceTable, load_prices
from tracejudge.models._recorded import (
    LABEL_FAIL,
    LABEL_NOT_APPLICABLE,
    LABEL_PASS,
    RecordedEvaluation,
)
from tracejudge.models._requests import (
    CRITERION_TEXT_SCHEMA,
    LIGHTNING_CORE_PREFIX,
    MAX_CRITERION_LENGTH,
    MAX_TAG_LENGTH,
    PLAIN_TEXT_SCHEMA,
    RewardRequest,
    TraceRewardRequest,
    check_latest_only_core,
    validate_criterion_text,
    validate_plain_text,
    validate_tags,
)
from tracejudge.models._trace import (
    NO_LLM_INTERACTIONS_HINT,
    AgentInstance,
    Interaction,
    MultiAgentTrace,
    is_routing_decision,
    no_llm_interactions_error,
)
from tracejudge.models._verdict import (
    CHECK_BAR,
    JUDGED_BAR,
    Failure,
    ScoredAgent,
    Step,
    default_bar,
    fails,
)

__all__ = [
    "LIGHTNING_CORE_PREFIX",
    "check_latest_only_core",
    # messages
    "LLMToolCall",
    "LLMToolResponse",
    "LLMToolDefinition",
    "LLMInput",
    "LLMOutput",
    "to_json_string",
    # model calls and traces
    "TokenUsage",
    "LLMInteraction",
    "Interaction",
    "AgentInstance",
    "MultiAgentTrace",
    "is_routing_decision",
    "EXTENSIONS",
    "INTERACTION_EXTENSION_FIELDS",
    "NO_LLM_INTERACTIONS_HINT",
    "no_llm_interactions_error",
    # chat sessions
    "interactions_from_messages",
    "text_of",
    "tool_definitions",
    # answers
    "ExplorationRead",
    "ExplorationRecord",
    "JudgeUsage",
    "ScoreResponse",
    "EvaluationResponse",
    "SummaryStatistics",
    "AgentTraceResult",
    "MultiAgentTraceResponse",
    "TaskResponse",
    "TaskStatus",
    "ScoreStatus",
    # verdicts: which agents failed which criteria
    "Step",
    "ScoredAgent",
    "Failure",
    "TraceVerdict",
    "VerdictStatus",
    "CHECK_BAR",
    "JUDGED_BAR",
    "default_bar",
    "fails",
    # attribution: which agent and step caused a failure
    "Attribution",
    "Cause",
    "AttributionMethod",
    "ATTRIBUTION_METHODS",
    "Estimate",
    "BenchItemResult",
    "BenchRow",
    "BenchReport",
    # people's labels and calibration
    "HumanLabel",
    "LabelVerdict",
    "AgreementBand",
    "CalibrationItem",
    "CalibrationReport",
    "Confusion",
    "CriterionAgreement",
    "LabelStats",
    "Repeatability",
    # what model calls cost
    "Price",
    "PriceTable",
    "DEFAULT_PRICES",
    "load_prices",
    # evaluation results recorded on a trace
    "RecordedEvaluation",
    "LABEL_PASS",
    "LABEL_FAIL",
    "LABEL_NOT_APPLICABLE",
    # wire requests and their limits
    "RewardRequest",
    "TraceRewardRequest",
    "CRITERION_TEXT_SCHEMA",
    "MAX_CRITERION_LENGTH",
    "MAX_TAG_LENGTH",
    "PLAIN_TEXT_SCHEMA",
    "validate_criterion_text",
    "validate_plain_text",
    "validate_tags",
    # what the converter made of spans (`tracejudge inspect`)
    "Inspection",
    "InspectedTrace",
    "InspectedProducer",
    "InspectedSpan",
    "InspectedAgent",
    "IGNORED_REASONS",
    "INSPECTION_VERSION",
    "ANSWER_EXCERPT",
]
