"""The store: a dialect core and a repository per area, opened together.

Callers reach each area through its repository (`store.tasks.claim(...)`,
`store.traces.add_spans(...)`, `store.labels.page(...)`); every repository call is one
transaction, synchronous (the server runs them in worker threads). Repositories that
write in one transaction across areas (a finished task writes its trace and answers)
share the in-transaction writes of the others.
"""

from __future__ import annotations

from typing import Any

from tracejudge.models import PriceTable
from tracejudge.server.store._core import SQLCore
from tracejudge.server.store._digests import Digests
from tracejudge.server.store.evaluations import Evaluations
from tracejudge.server.store.exports import Exports
from tracejudge.server.store.labels import Attributions, Labels
from tracejudge.server.store.listing import TraceLists
from tracejudge.server.store.monitors import Monitors
from tracejudge.server.store.rules import RuleDecisions, Rules
from tracejudge.server.store.runs import Runs
from tracejudge.server.store.sessions import Sessions
from tracejudge.server.store.spend import Spend
from tracejudge.server.store.tasks import Tasks
from tracejudge.server.store.traces import Traces
from tracejudge.server.store.trends import Trends

__all__ = ["Store"]


class Store:
    """What the server keeps, whatever the database: `core` (the dialect) and the
    repositories `tasks`, `traces`, `lists`, `evaluations`, `labels`, `attributions`,
    `spend`, `runs`, `rules`, `decisions` (the rules'), `sessions`, `trends` (with
    `rollups`, their writer), `monitors` and `exports`."""

    def __init__(self, core: SQLCore) -> None:
        self.core = core
        self._digests = Digests(core)
        self.evaluations = Evaluations(core, self._digests)
        self.traces = Traces(core, self._digests, self.evaluations)
        self.lists = TraceLists(core)
        self.tasks = Tasks(core, self.traces, self._digests)
        self.labels = Labels(core)
        self.attributions = Attributions(core)
        self.spend = Spend(core)
        self.rules = Rules(core)
        self.decisions = RuleDecisions(core)
        self.sessions = Sessions(core)
        self.runs = Runs(core, self.traces, self.evaluations, self._digests)
        self.trends = Trends(core)
        #: The trends' writer (kept current by every digest; bulk loads go through it).
        self.rollups = self._digests.rollups
        self.monitors = Monitors(core)
        self.exports = Exports(core)

    @property
    def single_process(self) -> bool:
        """True when only one server process uses the database (SQLite): at start, tasks
        left running by a killed process can be taken back at once."""
        return self.core.single_process

    @property
    def prices(self) -> PriceTable | None:
        """What the agents' model calls cost, for the traces' digests (None: the shipped
        table)."""
        return self._digests.prices

    @prices.setter
    def prices(self, table: PriceTable | None) -> None:
        self._digests.prices = table

    def migrate(self) -> int:
        """Apply the schema migrations not applied yet; return the schema version."""
        return self.core.migrate()

    def is_transient(self, error: BaseException) -> bool:
        """Whether `error` means the database is busy or unreachable for now (a retry may
        succeed), rather than that it refused what it was given."""
        return self.core.is_transient(error)

    def counts(self) -> dict[str, Any]:
        """Rows per table and tasks per status (for the benchmark and the tests)."""
        with self.core.transaction() as cursor:
            run = self.core.run
            tasks = dict(
                run(cursor, "SELECT status, COUNT(*) FROM tasks GROUP BY status").fetchall()
            )
            traces = dict(
                run(cursor, "SELECT status, COUNT(*) FROM traces GROUP BY status").fetchall()
            )
            evaluations = run(cursor, "SELECT COUNT(*) FROM evaluations").fetchone()[0]
        return {"tasks": tasks, "traces": traces, "evaluations": evaluations}

    def close(self) -> None:
        self.core.close()

    def __repr__(self) -> str:
        return f"Store({self.core!r})"
