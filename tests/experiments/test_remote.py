"""Where a run on a server is: the addresses `tracejudge compare` and the pytest plugin
take for one, and those that are not one."""

from __future__ import annotations

import pytest

from tracejudge.errors import BadRequestError
from tracejudge.experiments import RunServer, run_address


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("http://host:8000/runs/abc", ("http://host:8000", "abc")),
        ("http://host:8000/ui/runs/abc", ("http://host:8000", "abc")),
        ("https://host/api/v1/runs/abc/", ("https://host", "abc")),
        ("http://KEY@host:8000/runs/main", ("http://KEY@host:8000", "main")),
        ("http://host/tracejudge/runs/r1", ("http://host/tracejudge", "r1")),
        ("http://host:8000", None),
        ("http://host/runs/", None),
        ("runs/abc", None),
        ("ftp://host/runs/abc", None),
    ],
)
def test_a_run_s_address(text: str, found: tuple[str, str] | None) -> None:
    assert run_address(text) == found


def test_a_server_address_that_is_none_is_said_and_the_key_is_taken_out() -> None:
    with pytest.raises(BadRequestError, match="not a server's address"):
        RunServer("runs/main")
    with RunServer("http://secret-key-1@127.0.0.1:9/") as server:
        assert server.url == "http://127.0.0.1:9"
        assert server.key == "secret-key-1"
        assert server.page_of("a b") == "http://127.0.0.1:9/ui/runs/a%20b"
