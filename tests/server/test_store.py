"""The store as a whole on SQLite and PostgreSQL: migrations, reopening, and its shape (a
dialect core and a small repository per area; each repository's contract is tested in
test_store_<area>.py on both stores)."""

from __future__ import annotations

import inspect
import uuid

from tracejudge.server.store import SCHEMA_VERSION, Store, TaskRow, open_store


def _task() -> TaskRow:
    return TaskRow(id=str(uuid.uuid4()), kind="reward", payload="{}")


def test_migrations_apply_once_and_are_recorded(db_url: str) -> None:
    store = open_store(db_url)
    try:
        assert store.migrate() == SCHEMA_VERSION  # a second run applies nothing
    finally:
        store.close()
    again = open_store(db_url)  # reopening a migrated database keeps its data
    again.tasks.enqueue(_task())
    assert again.counts()["tasks"] == {"queued": 1}
    again.close()


#: The most public methods a repository (or the store around them) may grow to before it
#: is split again: LAYOUT.md's "no 30-method class".
_MOST_METHODS = 12


def _public_methods(thing: object) -> list[str]:
    return [
        name
        for name, member in inspect.getmembers(type(thing), inspect.isfunction)
        if not name.startswith("_")
    ]


def test_the_store_is_a_core_and_a_small_repository_per_area(db_url: str) -> None:
    store = open_store(db_url)
    try:
        areas = {
            name: value
            for name, value in vars(store).items()
            if not name.startswith("_") and name != "core"
        }
        assert set(areas) == {
            "tasks",
            "traces",
            "lists",
            "evaluations",
            "labels",
            "attributions",
            "spend",
            "rules",
            "decisions",
            "sessions",
            "runs",
            "trends",
            "rollups",
            "monitors",
            "exports",
        }
        for name, repository in [("store", store), *areas.items()]:
            methods = _public_methods(repository)
            assert 0 < len(methods) <= _MOST_METHODS, (name, methods)
            # every repository runs on the one core the store opened
            assert name == "store" or repository.core is store.core, name
        assert isinstance(store, Store)
    finally:
        store.close()
