"""Compiled bytecode for the suite, written once (a pytest plugin, loaded by
tests/conftest.py).

- The run and every process it starts cache compiled bytecode (`__pycache__`, which git
  ignores) even where PYTHONDONTWRITEBYTECODE is set, as on CI's image: the suite starts
  some hundreds of Python processes (servers, the CLI, the examples), and each would
  otherwise compile the package from source, as each xdist worker would rewrite every
  test module's asserts again.
- On a fresh clone, the xdist controller writes that bytecode before the workers start
  (a process per CPU): otherwise every worker compiles the package and rewrites every test
  module at the same moment, each for itself (about 7 s of CPU a worker). A file whose
  cache is current is skipped, and a file that cannot be compiled is left to its import,
  which says why.

TRACEJUDGE_TEST_BYTECODE=0 leaves Python's setting alone and compiles nothing ahead.
"""

from __future__ import annotations

import compileall
import fnmatch
import importlib.util
import os
import struct
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from tests.speed import usable_cpus

ENABLED = os.environ.get("TRACEJUDGE_TEST_BYTECODE") != "0"

if ENABLED:
    sys.dont_write_bytecode = False  # this process: the test modules imported from here on
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the workers and processes it starts

#: The controller's config, for the forked compilers (pytest's rewriting reads its ini).
_CONFIG: pytest.Config | None = None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    workers = getattr(config.option, "numprocesses", None)  # set by xdist's controller
    if not ENABLED or hasattr(config, "workerinput") or not isinstance(workers, int):
        return
    if workers < 2:
        return  # one process compiles no more than its own imports would
    root = config.rootpath
    patterns = [*config.getini("python_files"), "conftest.py"]
    tests, modules = [], []
    for folder in (root / "src", root / "tests"):
        for path in folder.rglob("*.py"):
            if "fixtures" in path.relative_to(root).parts:
                continue  # recorded programs, run as scripts (never imported)
            is_test = folder.name == "tests" and any(
                fnmatch.fnmatch(path.name, p) for p in patterns
            )
            (tests if is_test else modules).append(path)
    global _CONFIG
    _CONFIG = config
    try:
        with ProcessPoolExecutor(usable_cpus(), mp_context=get_context("fork")) as pool:
            list(pool.map(_rewrite, tests, chunksize=16))
            list(pool.map(_compile, modules, chunksize=32))
    except Exception:  # the imports compile what is left, as without this plugin
        pass
    finally:
        _CONFIG = None


def _compile(path: Path) -> None:
    compileall.compile_file(path, quiet=2)  # skips a file whose cache is current


def _current(source: Path, pyc: Path) -> bool:
    """The cache's header names the source's modification time and size (as pytest's
    `_read_pyc` checks them, without loading the code)."""
    try:
        with open(pyc, "rb") as cached:
            header = cached.read(16)
        stat = source.stat()
    except OSError:
        return False
    expected = struct.pack("<LL", int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF)
    return header[:4] == importlib.util.MAGIC_NUMBER and header[8:16] == expected


def _rewrite(path: Path) -> None:
    """What pytest's import hook writes for a test module (`AssertionRewritingHook`)."""
    from _pytest.assertion import rewrite

    assert _CONFIG is not None
    cache = rewrite.get_cache_dir(path)
    pyc = cache / (path.name[:-3] + rewrite.PYC_TAIL)
    if _current(path, pyc) or not rewrite.try_makedirs(cache):
        return
    try:
        stat, code = rewrite._rewrite_test(path, _CONFIG)
    except SyntaxError:
        return  # its import reports it
    rewrite._write_pyc(_CONFIG.stash[rewrite.assertstate_key], code, stat, pyc)
