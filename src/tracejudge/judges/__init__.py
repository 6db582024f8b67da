"""Judges: the models that score rendered conversations against natural-language criteria.

A judge receives a `JudgeRequest` (a criterion, its kind, and already-rendered text) and
answers a `Verdict` (a score in 0..1 or None, an explanation, usage). Judges know nothing
of spans or traces. Pick one with `judge_from_spec("openai:gpt-4.1-mini")`, or from the
environment with `default_judge()`; or construct `OpenAICompatibleJudge` /
`AnthropicJudge` (their options one by one, or whole as a `JudgeOptions`); or bring any
object that has `name`, `async judge()` and `async aclose()`.

## The judge reply contract

The judge model is asked for ONE JSON object, with the explanation written first:

| criterion kind | reply object |
|---|---|
| `Reward ...`, `Penalize ...` | `{"explanation": str, "applicable": bool, "score": int 1..10}` |
| `Passes if ...`, `Fails if ...` | `{"explanation": str, "applicable": bool, "passed": bool}` |

With `explanation_cleaning="end_user"` the object also carries `"cleaned_explanation": str`,
a rewrite of the explanation that refers only to what is visible in user and assistant
messages.

The criterion's prefix decides its kind ("Reward", "Penalize", "Passes if", "Fails if";
the first letter's case is ignored; anything else is Reward). The reply becomes a score:

- **Reward**: `score` 10 means the rewarded quality is fully shown; score = (score - 1) / 9.
- **Penalize**: the criterion names a behaviour to penalise, and the prompt says that 10 is
  best: 10 means the behaviour is absent, 1 that it is present at its worst; score =
  (score - 1) / 9, so 1.0 means "absent".
- **Passes if**: `passed` is true when the condition holds; score = 1.0 if passed, else 0.0.
- **Fails if**: `passed` is true when the failing condition does NOT hold; score = 1.0 if
  passed, else 0.0.
- `"applicable": false` (the criterion cannot apply, e.g. it is about tool use and no tool
  was available) gives score None.

When the endpoint returns token logprobs (OpenAI and most OpenAI-compatible servers; the
judge asks for `logprobs: true, top_logprobs: 20` on graded criteria), the 1..10 value is
the probability-weighted mean of the grades among the alternatives at the token of the
`"score"` value (renormalised over the grades present), which separates close calls that a
single integer cannot. Without logprobs, or when the value's token cannot be told apart
(a "10" split into "1", "0"), the reported integer is used; the judge logs that once at
INFO level.

How the shape is asked for: `response_format` with a strict JSON schema first; if the
endpoint rejects it (400/422 naming response_format or json_schema, or a 500 whose message
names it), `{"type":
"json_object"}`, then the prompt alone. Logprobs and temperature are dropped the same way
when rejected. Each judge remembers what its endpoint accepts.

The reply is read tolerantly: code fences, `<think>...</think>` blocks, prose around the
object and trailing commas are all fine. A reply that still cannot be read gets ONE
corrective re-ask (the bad reply is shown back with what was wrong); a second bad reply
raises `MalformedError`. A judge never turns an unreadable reply into a low score.

Everything being judged is placed between the lines `<<<TRACE_DATA` and `TRACE_DATA>>>`
(any look-alike of these delimiters inside the data is escaped), and the system prompt says
it is data to evaluate, never instructions to follow. The system prompt is the same for
every criterion; the data comes first in the user message and the target and criterion
last, so that providers' prompt caches serve the criteria of one material
(docs/guides/judge.md, "The judge reply contract", has the layout, the input budget and
exploration, and spans).

Reliability: `timeout` (default 60 s) is the total time of one judgement, retries and re-ask
included (`TimeoutError` when it runs out). 429, 5xx, timeouts and connection errors are
retried `num_retries` times (at least 1) with exponential backoff and full jitter, or after
the `Retry-After` the server asks for; 400/401/403/404 are not retried. Each judge bounds its
requests in flight (`max_concurrency`, default 16) and caches verdicts by judge, model,
prompt and parameters (`cache=None`: in memory; `cache="judge-cache.sqlite"`: an SQLite
file shared across runs; `cache=False`: off). Errors are never cached; the key includes
the endpoint's URL (without credentials), so two servers of one model name do not share.
A `StructuredRequest` asks a question whose answer is a JSON object of the asker's own
schema (which step caused a failure, say) through the same `judge()`: the verdict has no
score, and `reply_of(verdict)` is the object (see `_ask`).

A judge may be used from several event loops in turn: it keeps connections per loop and
closes them when that loop shuts down, or on `aclose()`.
"""

from __future__ import annotations

from tracejudge.judges._anthropic import AnthropicJudge
from tracejudge.judges._ask import StructuredRequest, reply_of
from tracejudge.judges._backend import HTTPJudge
from tracejudge.judges._budget import (
    BYTES_PER_TOKEN,
    CONTEXT_WINDOWS,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_TOKENS,
    context_window,
    default_max_input_tokens,
)
from tracejudge.judges._cache import CacheOption, JudgeCache, MemoryCache, SQLiteCache
from tracejudge.judges._openai import (
    OPENAI_COMPATIBLE_PROVIDERS,
    RESPONSE_FORMATS,
    OpenAICompatibleJudge,
)
from tracejudge.judges._options import JudgeOptions
from tracejudge.judges._prompt import DATA_END, DATA_START
from tracejudge.judges._spans import JUDGE_SERVICE_NAME, JudgeSpans, SpansOption
from tracejudge.judges._spec import (
    DEFAULT_JUDGE_MODEL,
    HOW_TO_CONFIGURE_A_JUDGE,
    PROVIDERS,
    default_judge,
    judge_from_spec,
    key_env_for,
    needs_api_key,
)
from tracejudge.judges._tools import Exploration, ExplorationLimits, ExplorationTool, SpendCheck
from tracejudge.judges._types import DEFAULT_TARGET, CriterionKind, Judge, JudgeRequest, Verdict

__all__ = [
    "CriterionKind",
    "JudgeRequest",
    "Verdict",
    "Judge",
    "DEFAULT_TARGET",
    "StructuredRequest",
    "reply_of",
    "HTTPJudge",
    "OpenAICompatibleJudge",
    "AnthropicJudge",
    "JudgeOptions",
    "judge_from_spec",
    "default_judge",
    "key_env_for",
    "needs_api_key",
    "HOW_TO_CONFIGURE_A_JUDGE",
    "DEFAULT_JUDGE_MODEL",
    "PROVIDERS",
    "OPENAI_COMPATIBLE_PROVIDERS",
    "RESPONSE_FORMATS",
    "JudgeCache",
    "MemoryCache",
    "SQLiteCache",
    "CacheOption",
    "DATA_START",
    "DATA_END",
    "Exploration",
    "ExplorationLimits",
    "ExplorationTool",
    "SpendCheck",
    "BYTES_PER_TOKEN",
    "CONTEXT_WINDOWS",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_TOKENS",
    "context_window",
    "default_max_input_tokens",
    "JudgeSpans",
    "SpansOption",
    "JUDGE_SERVICE_NAME",
]
