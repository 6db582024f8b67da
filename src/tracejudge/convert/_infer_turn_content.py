"""A model call recorded without messages, in an agent turn recorded with them (issue
#30, pattern 4): a phase of the walk that applies to every producer.

Some producers record the request and the reply on the span of the agent's turn, and
nothing of them on the model call's own span: AG2's classic `autogen.opentelemetry`
writes an `invoke_agent` span per reply of an agent, with the messages the agent was
given (`gen_ai.input.messages`) and its reply, tool calls included
(`gen_ai.output.messages`), while its `chat` span records messages only when the LLM
wrapper is instrumented with `capture_messages=True`. When the turn holds exactly one
model call (no other record of any call below it), the turn's messages are that call's:
its input and its output, in the GenAI conventions' format, read as the GenAI row reads a
model call's. The call keeps what its own span records (model, usage, finish reasons).

No producer row is needed: the turn is an agent span whichever row read it (or a later
turn joined into its agent's first, `_join_turns`), and the messages are in the GenAI
conventions' keys.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tracejudge import semconv
from tracejudge.convert._agents import agent_above
from tracejudge.convert._common import Extraction
from tracejudge.convert._records import SpanRecord
from tracejudge.convert.conventions.formats import genai_semconv

__all__ = ["fill_from_turns"]

_TURN_KEYS = (semconv.GEN_AI_INPUT_MESSAGES, semconv.GEN_AI_OUTPUT_MESSAGES)


def fill_from_turns(
    readable: list[tuple[SpanRecord, Extraction]],
    by_id: Mapping[str, SpanRecord],
    agent_span_ids: Collection[str],
) -> None:
    """Give each model call recorded without messages (`readable`: the calls' records and
    what they say) the messages of the agent turn whose only model call it is."""
    under: dict[str, list[tuple[SpanRecord, Extraction]]] = {}
    for span, extraction in readable:
        nearest = agent_above(span, by_id, agent_span_ids)
        if nearest is not None:
            under.setdefault(nearest, []).append((span, extraction))
    for turn_id, calls in under.items():
        if len(calls) != 1:
            continue  # several calls (or records of one) in the turn: whose is unknown
        span, extraction = calls[0]
        turn = by_id.get(turn_id)
        if extraction.has_content or span.parent_id != turn_id or turn is None:
            continue
        if all(turn.attributes.get(key) is None for key in _TURN_KEYS):
            continue
        recorded = genai_semconv.extract(turn)
        if not recorded.has_content or not (recorded.inputs or recorded.outputs):
            continue
        extraction.inputs = recorded.inputs
        extraction.outputs = recorded.outputs
        extraction.warnings.extend(recorded.warnings)
        extraction.has_content = True
        extraction.content_setting = None
