"""Semantic Kernel: its own spans, written when its diagnostics are on
(`SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS=true`, or the `..._SENSITIVE`
variant, which adds message content; .NET: the `Microsoft.SemanticKernel.Experimental.
GenAI.EnableOTelDiagnostics[Sensitive]` switches).

The spans follow the GenAI conventions and are read as `genai` reads them:
`invoke_agent <name>` (a ChatCompletionAgent's run, with `gen_ai.tool.definitions` and
its answer in `gen_ai.output.messages`), `chat <model>` model calls and `execute_tool
<plugin>-<function>` tool runs (an agent used as another's plugin runs inside its tool
span). What is Semantic Kernel's own:

- the message content is not on the spans: Python writes one log record per message
  through the `semantic_kernel` loggers (semantic_kernel/utils/telemetry/
  model_diagnostics/decorators.py `_set_completion_input` / `_set_completion_response`:
  `gen_ai.system|user|assistant|tool.message` with the message as JSON text, and
  `gen_ai.choice` with `{"message": ..., "finish_reason": ...}` as JSON text), tied to the
  model-call span; .NET writes them as span events (events cannot hold maps: the
  message is JSON text, see below). Without them a call has no messages, and the warning
  says both what turns content on and that the log records must be given too;
- the finish reason is one `gen_ai.response.finish_reason` (Python: comma-joined, as
  the client's enum, `FinishReason.TOOL_CALLS`; .NET: `["ToolCalls"]`);
- .NET's message events hold the message as JSON text in `gen_ai.event.content`
  (dotnet/src/InternalUtilities/src/Diagnostics/ModelDiagnostics.cs
  `AttachSensitiveDataAsEvent`), read by the GenAI events reader.
"""

from __future__ import annotations

from tracejudge import semconv
from tracejudge.convert._common import Extraction, finish_reason
from tracejudge.convert._view import SpanView
from tracejudge.convert.conventions._base import Kind
from tracejudge.convert.conventions.genai import GenAISemconv

__all__ = ["SEMANTIC_KERNEL", "SemanticKernel"]


class SemanticKernel(GenAISemconv):
    name = "semantic-kernel"
    marker_keys = frozenset(
        {semconv.SEMANTIC_KERNEL_FINISH_REASON, semconv.SEMANTIC_KERNEL_AVAILABLE_FUNCTIONS}
    )
    marker_scopes = frozenset(semconv.SEMANTIC_KERNEL_SPAN_SCOPES)
    content_setting = (
        "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true; Semantic "
        "Kernel (Python) writes the messages as log records of its `semantic_kernel` "
        "loggers: send them to OpenTelemetry (a LoggingHandler) and give them too "
        "(traces_from_otlp(..., logs=...))"
    )

    def content_hint(self, span: SpanView) -> str | None:
        return self.content_setting

    def kind(self, span: SpanView) -> str | None:
        scope = span.scope
        if scope is None or not scope.startswith(semconv.SEMANTIC_KERNEL_SCOPES):
            return None
        # Its function-calling loop (`AutoFunctionInvocationLoop`) and kernel function
        # runs outside a model's tool call are steps.
        return super().kind(span) or Kind.STEP

    def model_call(self, span: SpanView) -> Extraction:
        extraction = super().model_call(span)
        if not extraction.finish_reasons:
            recorded = span.attributes.get(semconv.SEMANTIC_KERNEL_FINISH_REASON)
            if isinstance(recorded, str):
                extraction.finish_reasons = _finish_reasons(recorded)
        return extraction


def _finish_reasons(recorded: str) -> list[str]:
    """`FinishReason.TOOL_CALLS,FinishReason.STOP` (Python) or `["ToolCalls"]` (.NET, the
    OpenAI .NET client's names; `N/A` where it had none) as OpenAI's words."""
    found = []
    for part in recorded.strip().strip("[]").split(","):
        text = part.strip().strip('"')
        if text and text != "N/A":
            reason = finish_reason(text)
            if reason:
                found.append(reason)
    return found


SEMANTIC_KERNEL = SemanticKernel()
