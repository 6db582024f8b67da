"""Monitors through the API (see `alerts` for what a monitor does).

- `POST /api/v1/monitors` (`alerts.MonitorSpec`): create one; 201 with it.
- `GET /api/v1/monitors`: every monitor with its state (ok or firing, the value and count
  it last measured, how many times it fired).
- `GET /api/v1/monitors/{id}`, `DELETE /api/v1/monitors/{id}`.
- `GET /api/v1/monitors/{id}/deliveries`: its delivery log, newest first: each event,
  its status (pending, delivered, failed), its attempts with their outcomes.

A webhook URL may hold a secret (Slack's do): answers show its scheme and host only.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tracejudge.server.api.alerts import MonitorSpec, monitor_row
from tracejudge.server.api.evals import read_model
from tracejudge.server.api.trends import iso
from tracejudge.server.http.errors import ApiError
from tracejudge.server.http.list_query import page_limit
from tracejudge.server.http.operation import OBJECT, ApiRoute, Operation, query
from tracejudge.server.store.monitors import DeliveryRow, MonitorRow, MonitorState
from tracejudge.server.work.context import context_of, in_thread

__all__ = ["MONITORS_PATH", "routes"]

MONITORS_PATH = "/api/v1/monitors"


def _hidden_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}/…"


def _precise(moment: float) -> str:
    """A moment as ISO 8601 with milliseconds (the attempts of a backoff are that close)."""
    stamp = _dt.datetime.fromtimestamp(moment, _dt.timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _when(moment: float | None) -> str | None:
    return None if moment is None else iso(moment)


def monitor_json(monitor: MonitorRow, state: MonitorState) -> dict[str, Any]:
    spec = json.loads(monitor.body)
    spec["webhook_url"] = _hidden_url(spec["webhook_url"])
    return {
        "id": monitor.id,
        **spec,
        "created_at": iso(monitor.created_at),
        "state": {
            "state": state.state,
            "value": state.value,
            "count": state.count,
            "crossings": state.crossings,
            "checked_at": _when(state.checked_at),
            "changed_at": _when(state.changed_at),
        },
    }


def delivery_json(row: DeliveryRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "event": row.event,
        "status": row.status,
        "attempts": row.attempts,
        "created_at": iso(row.created_at),
        "delivered_at": _when(row.delivered_at),
        "next_attempt_at": None if row.status != "pending" else iso(row.next_attempt_at),
        "last_error": row.last_error,
        "log": [{**entry, "at": _precise(entry["at"])} for entry in row.log],
        "body": json.loads(row.body),
    }


async def _found(request: Request) -> tuple[MonitorRow, MonitorState]:
    monitor_id = request.path_params["monitor_id"]
    found = await in_thread(context_of(request).store.monitors.get, monitor_id)
    if found is None:
        raise ApiError(404, f"no monitor {monitor_id!r} here; GET {MONITORS_PATH} lists them")
    return found


async def create(request: Request) -> JSONResponse:
    spec = await read_model(request, MonitorSpec)
    row = monitor_row(spec)
    store = context_of(request).store
    await in_thread(store.monitors.create, row)
    return JSONResponse(monitor_json(row, MonitorState(row.id)), status_code=201)


async def list_monitors(request: Request) -> JSONResponse:
    found = await in_thread(context_of(request).store.monitors.all)
    return JSONResponse({"monitors": [monitor_json(m, s) for m, s in found]})


async def get_monitor(request: Request) -> JSONResponse:
    return JSONResponse(monitor_json(*await _found(request)))


async def delete_monitor(request: Request) -> Response:
    monitor, _ = await _found(request)
    await in_thread(context_of(request).store.monitors.delete, monitor.id)
    return Response(status_code=204)


async def deliveries(request: Request) -> JSONResponse:
    monitor, _ = await _found(request)
    limit = page_limit(request.query_params.get("limit"))
    rows = await in_thread(context_of(request).store.monitors.deliveries, monitor.id, limit)
    return JSONResponse({"deliveries": [delivery_json(r) for r in rows]})


_ONE = MONITORS_PATH + "/{monitor_id}"
routes = [
    ApiRoute(
        MONITORS_PATH,
        create,
        methods=["POST"],
        operation=Operation(
            "Create a monitor: a trend's metric over a window, a threshold and a minimum "
            "count; it fires once per crossing to a webhook",
            {"201": {"description": "The monitor", "content": OBJECT}},
            errors=(415, 422),
            body="MonitorSpec",
            changes=True,
        ),
    ),
    ApiRoute(
        MONITORS_PATH,
        list_monitors,
        methods=["GET"],
        operation=Operation(
            "Every monitor with its state",
            {"200": {"description": "The monitors", "content": OBJECT}},
        ),
    ),
    ApiRoute(
        _ONE,
        get_monitor,
        methods=["GET"],
        operation=Operation(
            "One monitor with its state",
            {"200": {"description": "The monitor", "content": OBJECT}},
            errors=(404,),
        ),
    ),
    ApiRoute(
        _ONE,
        delete_monitor,
        methods=["DELETE"],
        operation=Operation(
            "Delete a monitor (its delivery log stays)",
            {"204": {"description": "Deleted"}},
            errors=(404,),
            changes=True,
        ),
    ),
    ApiRoute(
        _ONE + "/deliveries",
        deliveries,
        methods=["GET"],
        operation=Operation(
            "A monitor's delivery log, newest first: each event, its attempts and outcomes",
            {"200": {"description": "The deliveries", "content": OBJECT}},
            errors=(404, 422),
            parameters=[
                query("limit", {"type": "integer", "minimum": 1, "maximum": 500}, "how many")
            ],
        ),
    ),
]
