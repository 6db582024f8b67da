"""A monitor's decisions: fires once per crossing, recovers only past its hysteresis, does
not judge on too few units; and its definition's errors name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from tracejudge.server.api.alerts import MonitorSpec, decide, event_body, monitor_row
from tracejudge.server.store.monitors import MonitorState

URL = "http://127.0.0.1:9/hook"


def spec(**given: object) -> MonitorSpec:
    fields: dict[str, object] = {
        "name": "writer fails",
        "metric": "failure_rate",
        "agent": "writer",
        "threshold": 0.2,
        "min_count": 10,
        "webhook_url": URL,
    }
    return MonitorSpec.model_validate({**fields, **given})


def run(monitor: MonitorSpec, readings: list[tuple[float | None, float]]) -> list[str | None]:
    state = MonitorState("m")
    events = []
    for now, (value, count) in enumerate(readings):
        state, event = decide(monitor, state, value, count, float(now))
        events.append(event)
    return events


def test_fires_once_per_crossing_and_recovers_only_past_the_hysteresis() -> None:
    monitor = spec()  # recovers at 0.18 (10% of the threshold back)
    events = run(
        monitor,
        [
            (0.1, 50),  # fine
            (0.3, 50),  # crosses: fires
            (0.4, 50),  # still above: nothing more
            (0.19, 50),  # below the threshold, not past the hysteresis: still firing
            (0.21, 50),  # above again, while firing: nothing
            (0.17, 50),  # past recover_at: recovered
            (0.25, 50),  # a second crossing
        ],
    )
    assert events == [None, "firing", None, None, None, "recovered", "firing"]


def test_too_few_units_neither_fire_nor_recover() -> None:
    assert run(spec(), [(0.9, 9), (None, 0), (0.9, 10)]) == [None, None, "firing"]
    assert run(spec(), [(0.9, 10), (0.0, 3), (0.0, 10)]) == ["firing", None, "recovered"]


def test_a_monitor_below_a_threshold() -> None:
    monitor = spec(metric="mean_score", threshold=0.7, direction="below", recover_at=0.75)
    assert run(monitor, [(0.8, 20), (0.6, 20), (0.72, 20), (0.76, 20)]) == [
        None,
        "firing",
        None,
        "recovered",
    ]


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"metric": "failures"}, "metric"),
        ({"webhook_url": "ftp://x.example/hook"}, "webhook_url"),
        ({"recover_at": 0.5}, None),  # above the threshold of a monitor that fires above
        ({"window_hours": 0}, "window_hours"),
        ({"min_count": 0}, "min_count"),
        ({"format": "teams"}, "format"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_wrong_definition_names_its_field(given: dict[str, object], field: str | None) -> None:
    with pytest.raises(ValidationError) as caught:
        spec(**given)
    error = caught.value.errors()[0]
    assert (error["loc"][0] if error["loc"] else None) == field
    if field is None:
        assert "recover_at must be at or below the threshold" in error["msg"]


def test_the_bodies_link_to_the_failing_traces_and_never_carry_the_webhook_url() -> None:
    secret = "https://hooks.slack.example/services/T000/B000/SECRETTOKEN"
    for fmt in ("json", "slack"):
        monitor = spec(webhook_url=secret, format=fmt, criterion="final_answer")
        row = monitor_row(monitor)
        state = MonitorState(row.id, "firing", 0.4, 50.0, 1)
        body = event_body(row, monitor, state, "firing", "https://tj.example", 7200.0)
        assert "SECRETTOKEN" not in body
        text = json.loads(body)["text"]
        assert text.startswith("FIRING: writer fails: failure_rate is 40.0%")
        link = "https://tj.example/ui?verdict=failed&since=1970-01-01T01%3A00%3A00Z"
        assert link in body
        assert "agent=writer&criterion=final_answer" in body
    assert json.loads(body)["text"].endswith("|failing traces>")  # Slack's link form


def test_the_readme_s_monitor_is_a_valid_one() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("**An alert on the writer's failure rate**", 1)[1]
    body = section.split("-d '", 1)[1].split("'", 1)[0]
    monitor = MonitorSpec.model_validate_json(body)
    assert (monitor.metric, monitor.agent, monitor.format) == ("failure_rate", "writer", "slack")
    assert monitor.recover_at == pytest.approx(0.18)
