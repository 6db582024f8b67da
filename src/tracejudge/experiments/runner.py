"""Running an experiment: the user's task on every row, traced, scored, recorded.

Each row (times `repeats`) is one call of the task inside an `AgentTracer` named after
the task, at most `concurrency` at a time; its trace is scored with the criteria through
the evaluation service (`EvaluationService.score_trace`, as `tracejudge score` and the
client's local mode do). A criterion is a check, a judged criterion (text), or a plain
function `fn(output, expected)` comparing the task's output with the row's expected
output: it becomes, for that row, a check of the whole trace whose score goes to the
task's agent. A task whose calls tracejudge did not see (no instrumented client) still
has a trace: its own call, the input as the question and the output as the answer.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tracejudge.errors import BadRequestError, ComposoError
from tracejudge.evaluation import Criterion, FunctionCheck, is_check
from tracejudge.experiments.dataset import DatasetLike, Row, read_dataset
from tracejudge.experiments.record import (
    AgentScore,
    RowResult,
    RunRecord,
    StoredRun,
    git_state,
    write_run,
)
from tracejudge.experiments.remote import RowUpload, RunServer
from tracejudge.models import (
    AgentInstance,
    LLMInput,
    LLMInteraction,
    LLMOutput,
    MultiAgentTrace,
    MultiAgentTraceResponse,
)

__all__ = ["DEFAULT_RUNS", "ExperimentCriterion", "Progress", "run_experiment"]

#: Where runs are kept when no directory is given: one directory per run under it.
DEFAULT_RUNS = Path(".tracejudge") / "runs"

#: A criterion of an experiment: a check, a judged criterion, or fn(output, expected).
ExperimentCriterion = Criterion | Callable[[Any, Any], Any]

#: Called after each finished row and repeat with (done, total).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class _Criteria:
    """The experiment's criteria: those scored as they are, and the comparisons."""

    items: list[Any]
    names: list[str]

    def for_row(self, output: Any, expected: Any) -> list[Criterion]:
        """The criteria of one row: each comparison bound to the row's output and expected
        output, as a check of the whole trace."""
        chosen: list[Criterion] = []
        for item, name in zip(self.items, self.names, strict=True):
            if isinstance(item, str) or is_check(item):
                chosen.append(item)
            else:
                chosen.append(_comparison_check(item, name, output, expected))
        return chosen


def _comparison_check(fn: Callable[..., Any], name: str, output: Any, expected: Any) -> Any:
    def compare(trace: MultiAgentTrace) -> Any:
        return fn(output, expected)

    return FunctionCheck(compare, name=name, scope="trace")


def _criteria(criteria: Sequence[ExperimentCriterion] | ExperimentCriterion) -> _Criteria:
    listed: list[Any] = (
        list(criteria)
        if isinstance(criteria, Sequence) and not isinstance(criteria, str)
        else [criteria]
    )
    if not listed:
        raise BadRequestError(
            "criteria: give at least one (a check, a judged criterion as text, or a "
            "function fn(output, expected))"
        )
    names: list[str] = []
    for position, item in enumerate(listed):
        if isinstance(item, str):
            names.append(item)
        elif is_check(item):
            names.append(item.name)
        elif callable(item):
            names.append(getattr(item, "__name__", type(item).__name__))
        else:
            raise BadRequestError(
                f"criteria[{position}]: {type(item).__name__} is not a criterion (a check, "
                "a judged criterion as text, or a function fn(output, expected))"
            )
    if len(set(names)) != len(names):
        raise BadRequestError(f"criteria: two criteria share a name ({names}); rename one")
    return _Criteria(listed, names)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def _with_task_call(trace: MultiAgentTrace, row: Row, output: Any) -> MultiAgentTrace:
    """`trace` with the task's output as its root agent's answer; when the task's model
    calls were not seen, the task's own call as the root agent's one interaction."""
    root = trace.root
    update: dict[str, Any] = {}
    if root.output is None and output is not None:
        update["output"] = _text(output)
    if not trace.has_llm_interactions:
        call = LLMInteraction(
            input_messages=[LLMInput(role="user", content=_text(row.input))],
            output_messages=[LLMOutput(content=_text(output))],
        )
        update["interactions"] = [call, *root.interactions]
    if trace.trace_id is None:  # no span was seen: an id of its own, to link row and trace
        update_trace: dict[str, Any] = {"trace_id": uuid.uuid4().hex}
    else:
        update_trace = {}
    if not update:
        return trace.model_copy(update=update_trace) if update_trace else trace
    agents: dict[str, AgentInstance] = dict(trace.agent_instance_by_id)
    agents[root.id] = root.model_copy(update=update)
    return trace.model_copy(update={"agent_instance_by_id": agents, **update_trace})


def _models(trace: MultiAgentTrace) -> list[str]:
    found = {
        call.model for agent in trace.iter_agents() for call in agent.llm_interactions if call.model
    }
    return sorted(found)


def _scores(responses: Sequence[MultiAgentTraceResponse], names: list[str]) -> list[AgentScore]:
    scores: list[AgentScore] = []
    for response, name in zip(responses, names, strict=True):
        bar = response.bar()
        explanations = {
            result.agent_name: next(
                (a.explanation for a in result.results_by_agent_instance_id.values() if a), ""
            )
            for result in response.results_by_agent_name.values()
        }
        for agent, score in response.scores_by_agent_name().items():
            passed = None if score is None else score >= bar
            scores.append(AgentScore(agent, name, score, bar, passed, explanations[agent]))
    return scores


async def _call_task(
    task: Callable[..., Any], agent: str, row: Row, threads: ThreadPoolExecutor
) -> tuple[Any, Any]:
    """Call the task on the row's input inside an AgentTracer: (output, tracer). A sync
    task runs on one of `threads` (one per concurrent row), in a copy of this context, so
    the tracing sees it as the caller's."""
    from tracejudge.tracing import AgentTracer

    if inspect.iscoroutinefunction(task):
        with AgentTracer(name=agent) as tracer:
            output = await task(row.input)
        return output, tracer

    def call() -> tuple[Any, Any]:
        with AgentTracer(name=agent) as tracer:
            return task(row.input), tracer

    context = contextvars.copy_context()
    output, tracer = await asyncio.get_running_loop().run_in_executor(threads, context.run, call)
    if inspect.isawaitable(output):
        output = await output
    return output, tracer


async def run_experiment(
    dataset: DatasetLike,
    task: Callable[..., Any],
    criteria: Sequence[ExperimentCriterion] | ExperimentCriterion,
    *,
    service: Any,
    name: str | None = None,
    repeats: int = 1,
    concurrency: int = 8,
    params: Mapping[str, Any] | None = None,
    directory: str | Path | None = None,
    to: str | None = None,
    progress: Progress | None = None,
) -> StoredRun:
    """Run `task` on every row of `dataset` (`repeats` times), score each trace with
    `criteria` through `service` (an `EvaluationService`), and record the run in
    `directory` (default: a new directory under `DEFAULT_RUNS`, unless the run goes to
    a server), and on the server at `to` (a `tracejudge serve` address) when given.
    See the module's docstring."""
    if not callable(task):
        raise BadRequestError(f"task: expected your agent's function, got {type(task).__name__}")
    if repeats < 1:
        raise BadRequestError(f"repeats: must be at least 1, got {repeats}")
    if concurrency < 1:
        raise BadRequestError(f"concurrency: must be at least 1, got {concurrency}")
    rows = read_dataset(dataset)
    chosen = _criteria(criteria)
    server = RunServer(to) if to is not None else None  # a bad address said before the run
    service.require_judge([c for c in chosen.items if isinstance(c, str)])
    agent = getattr(task, "__name__", "task")
    run_name = name or agent
    started = datetime.now(timezone.utc)
    record = RunRecord(
        name=run_name,
        started_at=started.isoformat(),
        git=git_state(),
        params=dict(params or {}),
        repeats=repeats,
        rows=len(rows),
        criteria=chosen.names,
    )
    work = [(row, repeat) for repeat in range(repeats) for row in rows]
    results: dict[tuple[str, int], RowResult] = {}
    traces: dict[tuple[str, int], dict[str, Any]] = {}
    answers: dict[tuple[str, int], list[dict[str, Any]]] = {}
    limit = asyncio.Semaphore(concurrency)
    done = 0

    async def one(row: Row, repeat: int) -> None:
        nonlocal done
        async with limit:
            result, trace, scored = await _run_row(
                service, task, agent, row, repeat, chosen, threads
            )
        results[row.id, repeat] = result
        if trace is not None:
            traces[row.id, repeat] = trace.to_wire()  # with its trace_id
        if server is not None:  # what the server shows with the trace
            answers[row.id, repeat] = [r.model_dump(mode="json") for r in scored]
        done += 1
        if progress is not None:
            progress(done, len(work))

    try:
        # the task's own threads: the loop's default pool has a few per core, not
        # `concurrency`
        with ThreadPoolExecutor(concurrency, thread_name_prefix="tracejudge-task") as threads:
            await asyncio.gather(*(one(row, repeat) for row, repeat in work))
    except BaseException:
        if server is not None:
            server.close()
        raise
    ordered = [results[row.id, repeat] for row, repeat in work]
    record.ended_at = datetime.now(timezone.utc).isoformat()
    record.models = sorted({m for result in ordered for m in result.models})
    total = service.spend.total
    record.cost = {
        "judge_calls": total.calls,
        "judge_tokens": total.total_tokens,
        "judge_cost_usd": total.cost_usd,
        "task_seconds": round(sum(result.seconds for result in ordered), 6),
    }
    where: Path | None = None
    if directory is not None or server is None:
        where = Path(directory) if directory is not None else _new_directory(run_name, started)
        stored_traces = [  # in the rows' order
            traces[row.id, repeat] for row, repeat in work if (row.id, repeat) in traces
        ]
        write_run(where, record, ordered, stored_traces)
    url = None
    if server is not None:
        uploads = [
            RowUpload(results[key], traces.get(key), answers.get(key, ()))
            for key in ((row.id, repeat) for row, repeat in work)
        ]
        try:
            with server:
                run_id = await asyncio.to_thread(server.upload, record, uploads)
        except ComposoError as error:
            if where is not None:
                raise
            # the run is not lost with the server: kept where a run goes by default
            kept = _new_directory(run_name, started)
            write_run(kept, record, ordered, [traces[k] for k in traces])
            raise type(error)(f"{error.message}; the run is kept in {kept}") from None
        url = server.page_of(run_id)
    return StoredRun(record, ordered, where, url)


def _new_directory(name: str, started: datetime) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[:60] or "run"
    base = DEFAULT_RUNS / f"{started.strftime('%Y%m%dT%H%M%SZ')}-{safe}"
    candidate, number = base, 1
    while candidate.exists():
        number += 1
        candidate = base.with_name(f"{base.name}-{number}")
    return candidate


async def _run_row(
    service: Any,
    task: Callable[..., Any],
    agent: str,
    row: Row,
    repeat: int,
    chosen: _Criteria,
    threads: ThreadPoolExecutor,
) -> tuple[RowResult, MultiAgentTrace | None, list[MultiAgentTraceResponse]]:
    began = time.perf_counter()
    try:
        output, tracer = await _call_task(task, agent, row, threads)
    except Exception as error:  # the task's own failure is the row's result, not the run's
        seconds = time.perf_counter() - began
        failed = RowResult(
            row.id,
            repeat,
            row.input,
            row.expected,
            None,
            seconds,
            error=f"the task raised {type(error).__name__}: {error}",
        )
        return failed, None, []
    seconds = time.perf_counter() - began
    trace = _with_task_call(tracer.trace, row, output)
    base = dict(
        id=row.id,
        repeat=repeat,
        input=row.input,
        expected=row.expected,
        output=output,
        seconds=seconds,
        trace_id=trace.trace_id,
        models=_models(trace),
    )
    try:
        responses = await service.score_trace(trace, chosen.for_row(output, row.expected))
    except ComposoError as error:
        return RowResult(**base, error=f"could not be scored: {error}"), trace, []
    costs = [r.usage.cost_usd for r in responses if r.usage is not None and r.usage.cost_usd]
    return (
        RowResult(
            **base,
            scores=_scores(responses, chosen.names),
            judge_cost_usd=sum(costs) if costs else None,
        ),
        trace,
        list(responses),
    )
