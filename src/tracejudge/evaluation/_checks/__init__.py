"""The built-in deterministic checks, offered publicly as `tracejudge.checks`.

Private: import the names from `tracejudge.evaluation` (or `tracejudge.checks`). Importing
this package loads nothing; each module holds one idea:

- `base`: the `TraceCheck` protocol, `AgentCheck`, `FunctionCheck` and `@check`, `is_check`.
- `reward`: reward functions as checks (`RewardCheck`, `from_reward`) and `as_check`.
- `run`, `calls`, `explain`: what the built-in checks share - one agent as they read it
  and their base `BuiltinCheck`, what became of each tool call, how explanations are worded.
- one module per built-in check: `tool_arguments`, `tool_results`, `loops`,
  `grounded_numbers`, `final_answer`, `budgets`; `defaults.ALL` lists the default ones.
- `schema`, `text`, `numbers`: JSON-schema validation, error/refusal/empty-result
  recognition, and numbers/dates/times in text.
"""
