"""Alerts: monitors on the trends, checked in the background, firing to webhooks.

A monitor (`MonitorSpec`) is a metric of the trends (`store.trends.METRICS`) for one
selection (agent, criterion, service, version, rule), over the last `window_hours`
hours (the hour buckets that overlap them: the current hour so far, and those before), a
`threshold` the metric must go `above` (or `below`), and a `min_count`: fewer units
measured than that (scored units for a failure rate) and the monitor does not judge. It
fires once when the metric crosses the threshold, and recovers (sending a "recovered"
event) only once the metric is back past `recover_at` (hysteresis: by default 10% of the
threshold back), so a metric hovering at the threshold does not send a stream of alerts.

An event is a webhook: a JSON body (`"format": "json"`), or a Slack-compatible one
(`"slack"`: `{"text": ...}` with the link in Slack's `<url|text>` form), carrying a link
to the failing traces of the window on this server's list page. A receiver that does
not take it (a connection refused, a timeout, an answer other than 2xx) is sent it again
after `--alert-retry-seconds`, doubled at each attempt (at most 10 minutes), up to
`--alert-attempts` times; every attempt is in the delivery log (`GET
/api/v1/monitors/{id}/deliveries`).

With several replicas on one PostgreSQL database every replica checks the monitors, and
the database makes the event one: the state row is held while it changes, and the
delivery's key is (monitor, crossing, event) (see `store.monitors`). Deliveries are
claimed under a lease, so one replica sends each.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from typing import Literal

import anyio.to_thread
import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tracejudge.server.api.trends import failing_traces_path, iso
from tracejudge.server.store import Store
from tracejudge.server.store.monitors import (
    DeliveryRow,
    MonitorRow,
    MonitorState,
    Transition,
)
from tracejudge.server.store.trends import METRICS, TrendQuery
from tracejudge.server.work.supervise import Beat, retry

__all__ = ["AlertLoop", "MonitorSpec", "decide", "event_body", "monitor_row"]

logger = logging.getLogger("tracejudge.server")

Metric = Literal[
    "failure_rate",
    "mean_score",
    "not_evaluated_rate",
    "judge_cost",
    "volume",
    "latency_p50",
    "latency_p95",
]
assert set(Metric.__args__) == set(METRICS)  # type: ignore[attr-defined]

#: The longest wait between two attempts of one delivery.
_MOST_RETRY_SECONDS = 600.0
#: Seconds a replica holds a delivery it is sending.
_LEASE_SECONDS = 60.0
_SEND_TIMEOUT = 10.0
_CLAIM = 20


class MonitorSpec(BaseModel):
    """Body of POST /api/v1/monitors: what to watch, when to fire, where to send it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    metric: Metric
    agent: str | None = Field(default=None, min_length=1, max_length=500)
    criterion: str | None = Field(default=None, min_length=1, max_length=4096)
    service: str | None = Field(default=None, min_length=1, max_length=500)
    version: str | None = Field(default=None, min_length=1, max_length=500)
    rule: str | None = Field(default=None, min_length=1, max_length=500)
    window_hours: int = Field(default=1, ge=1, le=168)
    threshold: float
    direction: Literal["above", "below"] = "above"
    recover_at: float | None = None
    min_count: int = Field(default=10, ge=1)
    webhook_url: str = Field(min_length=8, max_length=2000)
    format: Literal["json", "slack"] = "json"

    @field_validator("webhook_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("give the receiver's http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _recovery_behind_the_threshold(self) -> MonitorSpec:
        if self.recover_at is None:
            band = abs(self.threshold) * 0.1
            shift = -band if self.direction == "above" else band
            self.recover_at = self.threshold + shift
        wrong = (
            self.recover_at > self.threshold
            if self.direction == "above"
            else self.recover_at < self.threshold
        )
        if wrong:
            side = "at or below" if self.direction == "above" else "at or above"
            raise ValueError(
                f"recover_at must be {side} the threshold ({self.threshold}) for a monitor "
                f"that fires {self.direction} it"
            )
        return self

    def query(self, now: float) -> TrendQuery:
        """The trend the monitor reads: its selection over its window, by the hour."""
        return TrendQuery(
            since=now - self.window_hours * 3600 + 1,
            until=now,
            grain="hour",
            agent=self.agent,
            criterion=self.criterion,
            service=self.service,
            version=self.version,
            rule=self.rule,
        )


def monitor_row(spec: MonitorSpec) -> MonitorRow:
    """A new monitor's row."""
    return MonitorRow(
        id=uuid.uuid4().hex[:16],
        name=spec.name,
        body=spec.model_dump_json(),
        created_at=time.time(),
    )


def _crossed(spec: MonitorSpec, value: float, limit: float, *, inclusive: bool) -> bool:
    if spec.direction == "above":
        return value >= limit if inclusive else value > limit
    return value <= limit if inclusive else value < limit


def decide(
    spec: MonitorSpec, state: MonitorState, value: float | None, count: float, now: float
) -> tuple[MonitorState, str | None]:
    """The monitor's next state and the event it fires (firing, recovered, or None), given
    the value and count measured now. Too few units measured: no change (neither firing
    nor recovering on too little)."""
    new = dataclasses.replace(state, value=value, count=count, checked_at=now)
    if value is None or count < spec.min_count:
        return new, None
    assert spec.recover_at is not None
    if state.state == "ok" and _crossed(spec, value, spec.threshold, inclusive=False):
        return dataclasses.replace(
            new, state="firing", crossings=state.crossings + 1, changed_at=now
        ), "firing"
    back = not _crossed(spec, value, spec.recover_at, inclusive=False)
    if state.state == "firing" and back:
        return dataclasses.replace(new, state="ok", changed_at=now), "recovered"
    return new, None


def _shown(spec: MonitorSpec, value: float | None) -> str:
    if value is None:
        return "none"
    if spec.metric in ("failure_rate", "not_evaluated_rate"):
        return f"{value:.1%}"
    if spec.metric == "judge_cost":
        return f"${value:,.4f}"
    return f"{value:.3g}"


def event_body(
    monitor: MonitorRow,
    spec: MonitorSpec,
    state: MonitorState,
    event: str,
    base_url: str,
    now: float,
) -> str:
    """The webhook's body (JSON text) for `event`, in the monitor's format."""
    asked = spec.query(now)
    since = asked.buckets()[0]  # the window's first hour, whole: what the monitor counted
    failing = base_url.rstrip("/") + failing_traces_path(asked, since, now)
    selection = {
        k: v
        for k, v in spec.model_dump().items()
        if k in ("agent", "criterion", "service", "version", "rule") and v is not None
    }
    where = ", ".join(f"{k} {v!r}" for k, v in selection.items()) or "every trace"
    value = _shown(spec, state.value)
    if event == "firing":
        headline = (
            f"FIRING: {monitor.name}: {spec.metric} is {value} ({where}), "
            f"{spec.direction} {_shown(spec, spec.threshold)} over the last "
            f"{spec.window_hours} h ({state.count or 0:,.0f} measured)"
        )
    else:
        headline = (
            f"RECOVERED: {monitor.name}: {spec.metric} is back to {value} ({where}), "
            f"past {_shown(spec, spec.recover_at)}"
        )
    if spec.format == "slack":
        return json.dumps({"text": f"{headline}\n<{failing}|failing traces>"})
    return json.dumps(
        {
            "event": event,
            "text": headline,
            # the monitor as defined, but its webhook URL (it may hold a secret)
            "monitor": {"id": monitor.id, **spec.model_dump(exclude={"webhook_url"})},
            "value": state.value,
            "count": state.count,
            "crossing": state.crossings,
            "window": {"since": iso(since), "until": iso(now)},
            "at": iso(now),
            "failing_traces": failing,
        }
    )


class AlertLoop:
    """The `alerts` background loop: checks every monitor, then sends due webhooks."""

    def __init__(
        self,
        store: Store,
        *,
        base_url: str,
        interval: float,
        retry_seconds: float,
        attempts: int,
    ) -> None:
        self.store = store
        self.base_url = base_url
        self.interval = interval
        self.retry_seconds = retry_seconds
        self.attempts = attempts

    async def run(self, beat: Beat) -> None:
        async with httpx.AsyncClient(timeout=_SEND_TIMEOUT) as http:
            while True:
                await retry(beat, "check the monitors", self.check_once, transient=self._transient)
                # A receiver that takes its time is not the loop stalling (as a task's
                # handler is not): each send is bounded by its own timeout.
                with beat.busy("sending"):
                    await retry(
                        beat,
                        "send due alerts",
                        lambda: self.send_due(http),
                        transient=self._transient,
                    )
                await beat.wait(self._next_wait())

    def _transient(self, error: BaseException) -> bool:
        return self.store.is_transient(error)

    def _next_wait(self) -> float:
        # A retry due sooner than the next check is not left waiting for it.
        return min(self.interval, self.retry_seconds)

    async def check_once(self) -> int:
        """Check every monitor once; how many events were queued."""
        monitors = await anyio.to_thread.run_sync(self.store.monitors.all)
        queued = 0
        for monitor, _ in monitors:
            spec = MonitorSpec.model_validate_json(monitor.body)
            queued += await anyio.to_thread.run_sync(self._check, monitor, spec)
        return queued

    def _check(self, monitor: MonitorRow, spec: MonitorSpec) -> int:
        now = time.time()
        (series,) = self.store.trends.series(spec.query(now))
        total = series.total()
        value, count = total.metric(spec.metric), total.count_of(spec.metric)

        def transition(state: MonitorState) -> Transition:
            new, event = decide(spec, state, value, count, now)
            if event is None:
                return Transition(new)
            body = event_body(monitor, spec, new, event, self.base_url, now)
            return Transition(new, event, body)

        delivery = self.store.monitors.transition(monitor.id, transition, now)
        if delivery is not None:
            logger.warning("tracejudge: monitor %r: %s", monitor.name, delivery.event)
        return int(delivery is not None)

    async def send_due(self, http: httpx.AsyncClient) -> int:
        """Send the deliveries due now; how many were delivered."""
        due = await anyio.to_thread.run_sync(
            self.store.monitors.claim_deliveries, _CLAIM, _LEASE_SECONDS
        )
        delivered = 0
        for delivery in due:
            delivered += await self._send(http, delivery)
        return delivered

    async def _send(self, http: httpx.AsyncClient, delivery: DeliveryRow) -> int:
        found = await anyio.to_thread.run_sync(self.store.monitors.get, delivery.monitor_id)
        if found is None:
            outcome, ok = "the monitor was deleted", False
            retry_at = None
        else:
            spec = MonitorSpec.model_validate_json(found[0].body)
            outcome, ok = await self._post(http, spec.webhook_url, delivery.body)
            retry_at = (
                None if ok or delivery.attempts >= self.attempts else self._retry_at(delivery)
            )
        await anyio.to_thread.run_sync(
            lambda: self.store.monitors.record_attempt(
                delivery, outcome, delivered=ok, retry_at=retry_at
            )
        )
        if not ok and retry_at is None:
            logger.warning(
                "tracejudge: alert %s not delivered after %d attempts (%s)",
                delivery.id,
                delivery.attempts,
                outcome,
            )
        return int(ok)

    def _retry_at(self, delivery: DeliveryRow) -> float:
        wait = min(self.retry_seconds * 2.0 ** (delivery.attempts - 1), _MOST_RETRY_SECONDS)
        return time.time() + float(wait)

    @staticmethod
    async def _post(http: httpx.AsyncClient, url: str, body: str) -> tuple[str, bool]:
        try:
            answer = await http.post(
                url, content=body, headers={"Content-Type": "application/json"}
            )
        except httpx.HTTPError as error:
            return f"not sent: {type(error).__name__}", False
        if 200 <= answer.status_code < 300:
            return f"HTTP {answer.status_code}", True
        return f"HTTP {answer.status_code}", False
