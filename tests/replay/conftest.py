"""The replayed cassettes, recorded once per test session for every replay test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.drive import cassette_dir
from tests.replay.replayed import replay_all


@pytest.fixture(scope="session")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding, per installed setup, the spans of every cassette replayed."""
    if cassette_dir() is None:
        pytest.skip("no cassette folder (shared/cassettes or $TRACEJUDGE_CASSETTES)")
    out = tmp_path_factory.mktemp("replayed")
    replay_all(out)
    return out
