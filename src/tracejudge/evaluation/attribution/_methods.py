"""The judge methods of attribution: each a prompt, a reply schema and a way to walk.

- `all_at_once`: the whole run, one question: which agent, which step, and the other
  steps that may be decisive (most likely first). One call.
- `step_by_step`: step k's transcript so far, "is step k the decisive error?", from the
  first step on until the judge says yes. Up to one call per step (the context grows).
- `binary_search`: "is the decisive error in steps lo..mid or mid+1..hi?", halving until
  one step is left. About log2(steps) calls.
- `counterfactual`: abduce the cause, propose the smallest fix, predict whether the
  outcome then changes; when the judge predicts it would not, ask again with that step
  ruled out (up to `rounds` times). Causes whose fix would change the outcome rank first.

The step numbers the judge reads and answers are the trace's step indexes (`STEP N` in
the transcript, `_transcript`).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tracejudge.evaluation.attribution._judging import Asker, schema
from tracejudge.evaluation.attribution._rank import Candidate
from tracejudge.evaluation.attribution._steps import StepRef, TraceSteps
from tracejudge.evaluation.attribution._transcript import render_steps
from tracejudge.judges import StructuredRequest
from tracejudge.models import AttributionMethod, Step

__all__ = ["JUDGE_METHODS", "MethodContext"]

_CONFIDENCE = {"type": "number"}

ALL_AT_ONCE_SCHEMA = schema(
    agent={"type": "string"},
    step={"type": "integer"},
    other_steps={"type": "array", "items": {"type": "integer"}},
    confidence=_CONFIDENCE,
)
STEP_SCHEMA = schema(decisive={"type": "boolean"}, confidence=_CONFIDENCE)
HALF_SCHEMA = schema(half={"type": "string", "enum": ["first", "second"]}, confidence=_CONFIDENCE)
COUNTERFACTUAL_SCHEMA = schema(
    agent={"type": "string"},
    step={"type": "integer"},
    fix={"type": "string"},
    outcome_changes={"type": "boolean"},
    confidence=_CONFIDENCE,
)

#: What the decisive error is, as every method's question says it.
DECISIVE = (
    "The decisive error is the mistake, made by one agent at one step, that led to the "
    "failure: the earliest step where an agent did something wrong (a wrong action, a wrong "
    "claim, a wrong instruction, an ignored error) such that, had that step been right, the "
    "run would have succeeded. Later steps that only suffer from it are not the decisive "
    "error."
)
#: A judge's alternatives to its chosen step count for less the further down they come.
OTHER_STEP_FACTOR = 0.5


@dataclass
class MethodContext:
    """What a judge method works with: the steps, the asker, what failed."""

    steps: TraceSteps
    asker: Asker
    failure: str
    max_chars: int
    rounds: int = 2

    def transcript(self, upto: int | None = None) -> str:
        return render_steps(self.steps, upto=upto, max_chars=self.max_chars)

    def question(self, *parts: str) -> str:
        return "\n\n".join(["The run of agents below failed.", self.failure, DECISIVE, *parts])

    def candidate(
        self,
        step: StepRef,
        method: AttributionMethod,
        evidence: str,
        confidence: float,
        **fields: Any,
    ) -> Candidate:
        return Candidate(
            agent_id=step.agent.id,
            agent_name=step.agent.name,
            method=method,
            evidence=self.steps.named_calls(evidence),
            confidence=confidence,
            step=Step(interaction=step.interaction),
            index=step.index,
            **fields,
        )

    def agent_candidate(
        self, name: Any, method: AttributionMethod, evidence: str, confidence: float
    ) -> Candidate | None:
        """A cause at an agent the judge named without a usable step, or None."""
        agent = self.steps.agent_named(name) if isinstance(name, str) else None
        if agent is None:
            return None
        return Candidate(
            agent_id=agent.id,
            agent_name=agent.name,
            method=method,
            evidence=self.steps.named_calls(evidence),
            confidence=confidence,
        )


def _confidence(reply: dict[str, Any], default: float = 0.5) -> float:
    value = reply.get("confidence")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return default
    if value > 1.0 and value <= 100.0:
        value = value / 100.0  # a percentage
    return min(1.0, max(0.0, float(value)))


def _named(reply: dict[str, Any], step: StepRef) -> str:
    """The judge's explanation, and the agent it named when that is not the step's."""
    explanation = str(reply.get("explanation") or "").strip()
    named = reply.get("agent")
    if (
        isinstance(named, str)
        and named.strip()
        and named.strip().casefold() != (step.agent.name.casefold())
    ):
        explanation += (
            f" (the judge named agent {named.strip()!r} for {step.agent.name} "
            f"{Step.call_name(step.interaction)})"
        )
    return explanation


async def all_at_once(ctx: MethodContext) -> list[Candidate]:
    request = StructuredRequest.ask(
        ctx.question(
            'Read every step. Reply fields: "explanation": your reasoning, citing steps by '
            'number; "agent": the name of the agent that made the decisive error, as the steps '
            'name it; "step": the number N of its STEP N; "other_steps": other steps that may '
            'be the decisive error, most likely first (an empty list when none); "confidence": '
            "from 0 to 1, how sure you are of the step."
        ),
        ctx.transcript(),
        ALL_AT_ONCE_SCHEMA,
        name="decisive_error",
    )
    reply = await ctx.asker.ask(request)
    if reply is None:
        return []
    confidence = _confidence(reply)
    step = ctx.steps.get(reply["step"])
    found: list[Candidate] = []
    if step is not None:
        found.append(ctx.candidate(step, "all_at_once", _named(reply, step), confidence))
    else:
        why = f"{reply.get('explanation', '')} (step {reply['step']} is not a step of the trace)"
        named = ctx.agent_candidate(reply.get("agent"), "all_at_once", why, confidence)
        if named is not None:
            found.append(named)
    weight = confidence
    for other in reply.get("other_steps") or []:
        alternative = ctx.steps.get(other)
        if alternative is None or (step is not None and alternative.index == step.index):
            continue
        weight *= OTHER_STEP_FACTOR
        found.append(
            ctx.candidate(
                alternative,
                "all_at_once",
                f"named by the judge as another step that may be decisive (after step "
                f"{reply['step']})",
                weight,
            )
        )
    return found


async def step_by_step(ctx: MethodContext) -> list[Candidate]:
    for step in ctx.steps:
        request = StructuredRequest.ask(
            ctx.question(
                f"The steps are shown up to STEP {step.index}, by agent "
                f'"{step.agent.name}". Decide whether STEP {step.index} is the decisive '
                f'error. Reply fields: "explanation": your reasoning; "decisive": true when '
                f"STEP {step.index} is the decisive error, false when it is not; "
                '"confidence": from 0 to 1, how sure you are.'
            ),
            ctx.transcript(upto=step.index),
            STEP_SCHEMA,
            name="step_verdict",
        )
        reply = await ctx.asker.ask(request)
        if reply is None:
            return []
        if reply["decisive"]:
            evidence = str(reply.get("explanation") or "").strip()
            return [ctx.candidate(step, "step_by_step", evidence, _confidence(reply))]
    ctx.asker.notes.append("step_by_step: the judge named no step the decisive error")
    return []


async def binary_search(ctx: MethodContext) -> list[Candidate]:
    if not ctx.steps:
        return []
    low, high = 0, len(ctx.steps) - 1
    confidence = 1.0
    reasons: list[str] = []
    while low < high:
        middle = (low + high) // 2
        request = StructuredRequest.ask(
            ctx.question(
                f"The decisive error lies in steps {low} to {high}. Decide which half holds "
                f"it. FIRST HALF: steps {low} to {middle}. SECOND HALF: steps {middle + 1} to "
                f'{high}. Reply fields: "explanation": your reasoning; "half": "first" or '
                '"second"; "confidence": from 0 to 1, how sure you are.'
            ),
            ctx.transcript(upto=high),
            HALF_SCHEMA,
            name="half",
        )
        reply = await ctx.asker.ask(request)
        if reply is None:
            return []
        confidence = min(confidence, _confidence(reply))
        if reply["half"] == "first":
            high = middle
        else:
            low = middle + 1
        reasons.append(f"steps {low}-{high}: {str(reply.get('explanation') or '').strip()}")
    step = ctx.steps[low]
    evidence = "; ".join(reasons) or "the only step of the trace"
    return [ctx.candidate(step, "binary_search", evidence, confidence)]


async def counterfactual(ctx: MethodContext) -> list[Candidate]:
    tried: list[int] = []
    changing: list[Candidate] = []
    others: list[Candidate] = []
    for _ in range(max(1, ctx.rounds)):
        ruled_out = (
            f"Steps already considered, whose fix would not have avoided the failure: "
            f"{', '.join(str(i) for i in tried)}. Pick another step."
            if tried
            else ""
        )
        request = StructuredRequest.ask(
            ctx.question(
                "Work in three moves. Abduce: find the step whose mistake best explains the "
                "failure. Act: propose the smallest change to what that agent did at that "
                "step that would correct it. Predict: with that change, and the run going on "
                "from there, would the failure have been avoided?",
                ruled_out,
                'Reply fields: "explanation": your reasoning for the three moves; "agent": '
                'the name of the agent at that step; "step": the number N of its STEP N; '
                '"fix": the smallest change to the step; "outcome_changes": true when the '
                'fix would have avoided the failure, false when not; "confidence": from 0 to '
                "1, how sure you are of the step.",
            ),
            ctx.transcript(),
            COUNTERFACTUAL_SCHEMA,
            name="counterfactual",
        )
        reply = await ctx.asker.ask(request)
        if reply is None:
            break
        step = ctx.steps.get(reply["step"])
        if step is None or step.index in tried:
            break
        tried.append(step.index)
        changes = bool(reply["outcome_changes"])
        candidate = ctx.candidate(
            step,
            "counterfactual",
            _named(reply, step),
            _confidence(reply) * (1.0 if changes else 0.5),
            fix=str(reply.get("fix") or "") or None,
            outcome_changes=changes,
        )
        (changing if changes else others).append(candidate)
        if changes:
            break
    return [*changing, *others]


#: The judge methods by name.
JUDGE_METHODS: dict[str, Callable[[MethodContext], Awaitable[list[Candidate]]]] = {
    "all_at_once": all_at_once,
    "step_by_step": step_by_step,
    "binary_search": binary_search,
    "counterfactual": counterfactual,
}
