"""What a whole run needs made once, not once per xdist worker: the workers share the
parent folder of their temporary folders, and the first to ask makes the thing there
under a lock while the others wait, then read it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import pytest


def once_per_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """The folder `name`, which `make(folder)` filled once for the whole run (the test that
    asked first made it; a failure is raised to every test that asks)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / f"once-{name}"
    done, failed = shared / f"once-{name}.done", shared / f"once-{name}.failed"
    with open(shared / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if failed.exists():
            pytest.fail(f"making {name} failed in another worker:\n{failed.read_text()}")
        if not done.exists():
            folder.mkdir(exist_ok=True)
            try:
                make(folder)
            except BaseException as error:
                failed.write_text(f"{type(error).__name__}: {error}"[-3000:])
                raise
            done.touch()
    return folder
