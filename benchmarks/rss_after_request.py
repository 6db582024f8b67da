"""The server's memory after a large request (issue #32 item 8).

A real server (`python -m tracejudge.server` under uvicorn, its own process, SQLite, a
ScriptedLLMServer as the judge) judges a small `POST /api/v1/evals/reward` (48 messages,
so that what the first request imports counts in the baseline), then `--requests` (2)
of 10.2 MiB (4,800 messages of 2,000 characters). The server's RSS is read from
/proc/<pid>/status: idle after the small request (the baseline), right after each large
answer, and 1 s and 3 s later; each is given as a ratio to the baseline.

    python benchmarks/rss_after_request.py [--requests 2] [--server-src PATH]

`--server-src` runs the server from another checkout's `src` (say, a `git archive` of
the commit before the fix) for a before-and-after in one sitting. Target: 3 s after each
answer, under 1.6x the idle RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from tests.server import harness  # noqa: E402

from tracejudge.testing import ScriptedLLMServer  # noqa: E402

TARGET_RATIO = 1.6


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def reward(messages: int) -> bytes:
    body = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"word{n} " * 250}
        for n in range(messages)
    ]
    return json.dumps({"messages": body, "evaluation_criteria": "Reward accuracy"}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--server-src", type=Path, default=None)
    options = parser.parse_args()
    if options.server_src is not None:
        plain = harness.server_env

        def from_other_src() -> dict[str, str]:
            return {**plain(), "PYTHONPATH": str(options.server_src.resolve())}

        harness.server_env = from_other_src
    big = reward(4_800)
    headers = {"Content-Type": "application/json"}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with (
        tempfile.TemporaryDirectory(prefix="tracejudge-rss-") as folder,
        ScriptedLLMServer(default=harness.verdict()) as judge,
    ):
        server = harness.ServerProcess(
            str(Path(folder) / "t.db"), judge=judge, args=["--rate-limit", "0"]
        ).start()
        try:
            assert server.process is not None
            pid = server.process.pid
            with httpx.Client(base_url=server.url, headers=server.headers, timeout=300) as http:
                assert http.post("/api/v1/evals/reward", content=reward(48), headers=headers)
                idle = rss_mb(pid)
                print(f"idle (after a small request): {idle:.0f} MB")
                worst = 0.0
                for n in range(options.requests):
                    answer = http.post("/api/v1/evals/reward", content=big, headers=headers)
                    assert answer.status_code == 200, answer.text
                    after = rss_mb(pid)
                    time.sleep(1)
                    one = rss_mb(pid)
                    time.sleep(2)
                    three = rss_mb(pid)
                    worst = max(worst, three / idle)
                    print(
                        f"request {n + 1} ({len(big) / 2**20:.1f} MiB): right after "
                        f"{after:.0f} MB ({after / idle:.2f}x), 1 s later {one:.0f} MB "
                        f"({one / idle:.2f}x), 3 s later {three:.0f} MB ({three / idle:.2f}x)"
                    )
        finally:
            server.stop()
    verdict = "met" if worst < TARGET_RATIO else "NOT met"
    print(f"3 s after: at most {worst:.2f}x idle (target under {TARGET_RATIO:g}x): {verdict}")


if __name__ == "__main__":
    main()
