"""`tracejudge rules`: check a rules file, or backfill a rule on a server's stored traces.

    tracejudge rules check FILE
        read a rules file (TOML or YAML) as `tracejudge serve --rules FILE` reads it, and
        list its rules; one line naming the rule, the field and the fix when it is wrong
    tracejudge rules backfill NAME --server URL [--limit N] [--since T] [--until T]
        run rule NAME's judge criteria on the stored traces it never decided for, newest
        first, at most N of them (default 1000; 10,000 at most); T is ISO 8601 or Unix
        seconds. Repeat while it says more are left.

The server's key is written into the URL (`http://KEY@host:8000`) or COMPOSO_API_KEY, as
for any client of a remote server; it is never printed. Exit status: 0 done, 1 the server
refused, 2 bad usage or a wrong file.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Register `rules` on the `tracejudge` command's subparsers."""
    rules = commands.add_parser(
        "rules",
        help="check a rules file, or backfill a rule on a server's stored traces",
        description=(__doc__ or "").split("\n\n", 2)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = rules.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="read a rules file as serve --rules reads it")
    check.add_argument("file", help="the rules file (.toml, .yaml or .yml)")
    backfill = actions.add_parser(
        "backfill", help="run a rule's judge criteria on stored traces (capped)"
    )
    backfill.add_argument("name", help="the rule's name")
    backfill.add_argument(
        "--server", required=True, help="the server's URL (its key: http://KEY@host:8000)"
    )
    backfill.add_argument("--limit", type=int, default=1000, help="traces at most (default 1000)")
    backfill.add_argument("--since", help="traces started at or after (ISO 8601 or Unix seconds)")
    backfill.add_argument("--until", help="traces started before (ISO 8601 or Unix seconds)")
    rules.set_defaults(run=run)


def _check(args: argparse.Namespace) -> int:
    from tracejudge.server.work.rules import read_rules_file

    for rule in read_rules_file(args.file):  # ConfigurationError: one line, status 2
        judged = f"{len(rule.criteria)} judge criteria" if rule.criteria else "no judge criteria"
        session = (
            f", {len(rule.session_criteria)} session criteria" if rule.session_criteria else ""
        )
        print(f"{rule.name}: {judged}{session}, {rule.sample_rate * 100:.3g}% sampled")
    return 0


def _backfill(args: argparse.Namespace) -> int:
    import httpx

    from tracejudge import _env
    from tracejudge._http import redact, split_credentials
    from tracejudge.cli._errors import UsageError
    from tracejudge.cli._moment import moment

    if not 1 <= args.limit <= 10_000:
        raise UsageError(f"--limit {args.limit}: give a number from 1 to 10000")
    body: dict[str, float] = {"limit": args.limit}
    for option, text in (("since", args.since), ("until", args.until)):
        if text is not None:
            body[option] = moment(f"--{option}", text)
    url, key = split_credentials(args.server)
    key = key or _env.read(_env.COMPOSO_API_KEY)
    headers = {"API-Key": key} if key else {}
    address = f"{url.rstrip('/')}/api/v1/rules/{args.name}/backfill"
    try:
        answer = httpx.post(address, json=body, headers=headers, timeout=120)
    except httpx.HTTPError as error:
        raise UsageError(f"--server {url}: cannot reach it ({redact(str(error), [key])})") from None
    if answer.status_code != 202:
        try:
            detail = answer.json().get("detail", answer.text)
        except ValueError:
            detail = answer.text
        print(
            f"tracejudge rules: the server answered {answer.status_code}: {detail}", file=sys.stderr
        )
        return 1
    done = answer.json()
    more = "; more stored traces may be left: run it again" if done["capped"] else ""
    print(
        f"rule {done['rule']}: {done['queued']} traces queued for its criteria, "
        f"{done['sampled_out']} out of its sample, {done['scanned']} looked at{more}"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    """The command. See the module's docstring for what it does and its exit status."""
    return _check(args) if args.action == "check" else _backfill(args)
