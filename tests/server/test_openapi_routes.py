"""The OpenAPI document's paths come from the app's routes: every documented operation is
served by a route that declares it, every route that declares one is documented, the
path parameters are the route's own, and a new route is documented by its declaration
alone."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("starlette")

from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from tracejudge.server.app import create_app  # noqa: E402
from tracejudge.server.config import ServerConfig  # noqa: E402
from tracejudge.server.http.operation import ApiRoute, Operation, answer, query  # noqa: E402
from tracejudge.server.openapi import paths_of  # noqa: E402


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return create_app(ServerConfig(db=str(tmp_path_factory.mktemp("openapi") / "t.db")))


def served(app: Any) -> set[tuple[str, str]]:
    return {
        (route.path, method.lower())
        for route in app.routes
        if isinstance(route, ApiRoute)
        for method in (route.methods or set()) - {"HEAD"}
    }


def test_every_documented_operation_is_a_declared_route_and_back(app: Any) -> None:
    paths = app.state.openapi["paths"]
    documented = {(path, method) for path, operations in paths.items() for method in operations}
    assert documented == served(app)
    # the API's routes are all there, the pages' form post and the redirect are not
    assert ("/api/v1/evals/reward", "post") in documented
    assert ("/v1/traces", "post") in documented
    assert not any(path in ("/", "/openapi.json") for path, _ in documented)


def test_the_intake_and_the_metrics_document_what_they_answer(app: Any) -> None:
    """#32: /v1/traces answers 503 (a full backlog, or the store away) in OTLP's shape, and
    /metrics is an operation of the API, behind its keys."""
    intake = app.state.openapi["paths"]["/v1/traces"]["post"]["responses"]
    unavailable = intake["503"]
    assert "--max-backlog-traces" in unavailable["description"]
    assert "store" in unavailable["description"]
    assert set(unavailable["content"]) == {"application/json", "application/x-protobuf"}
    assert "--max-trace-spans" in intake["200"]["description"]
    metrics = app.state.openapi["paths"]["/metrics"]["get"]
    assert "security" not in metrics  # a key, like the rest of the API
    assert set(metrics["responses"]["200"]["content"]) == {"text/plain"}
    assert sorted(metrics["responses"]) == ["200", "400", "401", "413", "421", "429"]
    assert "wrong API keys" in metrics["responses"]["429"]["description"]


def test_path_parameters_are_the_routes_own(app: Any) -> None:
    for path, operations in app.state.openapi["paths"].items():
        names = re.findall(r"{(\w+)}", path)
        for method, operation in operations.items():
            in_path = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
            assert in_path == names, f"{method} {path}"


async def _thing(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def test_a_new_route_is_documented_by_its_declaration() -> None:
    route = ApiRoute(
        "/api/v1/things/{thing_id}",
        _thing,
        methods=["GET"],
        operation=Operation(
            "One thing",
            {"200": answer("The thing", "Health")},
            errors=(404,),
            parameters=[query("fresh", {"type": "boolean"}, "ask again")],
        ),
    )
    paths = paths_of([route, Route("/plain", _thing, methods=["GET"])])
    assert list(paths) == ["/api/v1/things/{thing_id}"]
    operation = paths["/api/v1/things/{thing_id}"]["get"]
    assert [(p["name"], p["in"]) for p in operation["parameters"]] == [
        ("thing_id", "path"),
        ("fresh", "query"),
    ]
    # its own error, and those every keyed request can get
    assert sorted(operation["responses"]) == ["200", "401", "404", "413", "421", "429"]
    assert "security" not in operation


def test_an_open_route_that_changes_state() -> None:
    route = ApiRoute(
        "/hook",
        _thing,
        methods=["POST"],
        operation=Operation("A hook", {"204": {"description": "Done"}}, open=True, changes=True),
    )
    operation = paths_of([route])["/hook"]["post"]
    assert operation["security"] == []
    assert sorted(operation["responses"]) == ["204", "403", "421"]


def test_one_method_of_a_path_declared_twice_is_refused() -> None:
    twice = [
        ApiRoute("/x", _thing, methods=["GET"], operation=Operation("a", {})),
        ApiRoute("/x", _thing, methods=["GET"], operation=Operation("b", {})),
    ]
    with pytest.raises(ValueError, match="GET /x is declared twice"):
        paths_of(twice)
