"""The message formats several producers share, read once, under the format's name: the
rows of the table (`conventions`) read their spans through them.

- `genai_semconv`: OpenTelemetry's GenAI semantic conventions (`gen_ai.*` messages,
  parts, tools, model and token usage), which most producers write in some version.
- `openinference`: OpenInference's flattened `llm.input_messages.N.message.*` keys and
  its `input.value` / `output.value` JSON (with `_oi_keys`, their one-pass grouping).
- `openllmetry`: OpenLLMetry's older indexed `gen_ai.prompt.N.*` /
  `gen_ai.completion.N.*` keys (with `_legacy_keys`, their one-pass grouping).

A format module knows keys and shapes, never which producer wrote them: what is one
producer's alone goes in that producer's row.
"""
