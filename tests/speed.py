"""The suite's speed rules, as a pytest plugin (loaded by tests/conftest.py).

- A test whose call (its own body: not its fixtures' setup or teardown) takes over
  `CALL_LIMIT` seconds fails, unless it carries `@pytest.mark.heavy("why")`: a server or
  program as a process of its own, a real model, a browser page. The limit is for a machine
  that is not oversubscribed: when the load average, or the run's own workers, are above
  the CPU count it grows in proportion (a test is not failed for other processes' load; 1.5x
  under `-n auto`, which oversubscribes by design). TRACEJUDGE_TEST_CALL_LIMIT
  sets it (seconds; 0 switches the check off).
- Hypothesis's example counts come from a profile: TRACEJUDGE_HYPOTHESIS_PROFILE=dev (few
  examples, quick), ci (the default) or thorough (many). Tests leave `max_examples` to
  the profile; Schemathesis's counts are derived from it (tests/server/test_fuzz.py).
- Compiled bytecode is cached and written ahead of the workers (tests/bytecode.py).
- `-n auto` starts half as many workers again as there are CPUs (3 on 2 cores): a worker
  spends about a third of its time waiting on the processes it started (servers, the CLI,
  PostgreSQL, browsers, a model), and the extra worker fills those waits.
  PYTEST_XDIST_AUTO_NUM_WORKERS (pytest-xdist's own variable) still sets the number.
- Under `--dist loadgroup`, a test whose `xdist_group` mark would be silently ignored
  (a pytest that drops pytest-xdist's group suffix) fails, saying why.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

#: Seconds a test's call may take without the `heavy` mark, on an unloaded machine.
CALL_LIMIT = float(os.environ.get("TRACEJUDGE_TEST_CALL_LIMIT", "3"))

#: Hypothesis's examples per property in each profile.
PROFILES = {"dev": 20, "ci": 100, "thorough": 1000}
PROFILE = os.environ.get("TRACEJUDGE_HYPOTHESIS_PROFILE", "ci")


def _register_profiles() -> None:
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:  # the tests that need it skip saying so
        return
    if PROFILE not in PROFILES:
        raise pytest.UsageError(
            f"TRACEJUDGE_HYPOTHESIS_PROFILE={PROFILE!r} is not a profile: use one of "
            + ", ".join(PROFILES)
        )
    for name, examples in PROFILES.items():
        # No deadline: a wall-clock limit per example fails on a loaded machine.
        settings.register_profile(
            name,
            max_examples=examples,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
    settings.load_profile(PROFILE)


_register_profiles()


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the platform says)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def load_factor() -> float:
    """How oversubscribed the machine is: the 1-minute load average per CPU, and at least
    the run's own workers per CPU (the load average lags a minute behind: at the start of
    a run it still says the machine is idle while every worker is busy), at least 1."""
    cpus = usable_cpus()
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    try:
        load = os.getloadavg()[0]
    except OSError:  # not every platform has one
        load = 0.0
    return max(1.0, load / cpus, workers / cpus)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    cpus = usable_cpus()
    return cpus + max(1, cpus // 2)


# trylast: after pytest-xdist's own hook, which tags grouped tests' node ids on a worker.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        mark = item.get_closest_marker("heavy")
        if mark is not None and not (mark.args or mark.kwargs.get("reason")):
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.heavy needs its reason, "
                '@pytest.mark.heavy("a server process of its own")'
            )
    _check_groups_kept(config, items)


#: Why a test fails at setup: its `xdist_group` mark would be ignored (see below).
GROUP_LOST = pytest.StashKey[str]()


def _check_groups_kept(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fail the grouped tests when `--dist loadgroup` would silently ignore their group.

    pytest-xdist tells its scheduler a test's group by a `@group` suffix on the node id
    the worker reports; where a pytest release stops that suffix from sticking (pytest
    9.2 with pytest-xdist 3.8), every group is spread over all workers: each worker starts
    the group's shared fixtures again (the cassette replay, the llama.cpp server), and
    tests that must not run side by side do. (A worker's collection error would only show
    as a crash of the worker, so the tests fail at setup, saying why.)
    """
    if not getattr(config.option, "loadgroup", False):  # not an xdist worker of loadgroup
        return
    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if names and not item.nodeid.endswith("@" + "_".join(sorted(names))):
            item.stash[GROUP_LOST] = (
                f"its xdist_group mark is lost: pytest {pytest.__version__} does not keep "
                "pytest-xdist's group suffix on node ids (pytest-xdist issue 1386), so the "
                "group would be spread over the workers; install the test extra's pytest "
                "(pytest<9.2)"
            )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    lost = item.stash.get(GROUP_LOST, None)
    if lost is not None:
        pytest.fail(lost, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when != "call" or not report.passed or CALL_LIMIT <= 0:
        return report
    if item.get_closest_marker("heavy") is not None:
        return report
    limit = CALL_LIMIT * load_factor()
    if call.duration > limit:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {call.duration:.1f} s, over the {limit:.1f} s a test may "
            f"take ({CALL_LIMIT:g} s on an unloaded machine, TRACEJUDGE_TEST_CALL_LIMIT): make "
            'it faster, or mark it @pytest.mark.heavy("why it needs the time")'
        )
    return report
