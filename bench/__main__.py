"""`python -m bench list` and `python -m bench run SUITE ...`: pgrecall's benchmarks as named suites.

Examples:
    python -m bench list
    python -m bench run quick --size tiny
    python -m bench run search --rounds 4 --against ../pgrecall-before
    PGRECALL_BENCH_DATA=~/data python -m bench run index quality --out /tmp/bench-results
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

from . import runner
from .harness import corpora, results
from .harness.checkouts import other_checkout, this_checkout
from .suites import SUITES


def list_suites() -> int:
    """Each suite, what it measures, and its steps with their standard arguments."""
    for suite in SUITES.values():
        print(f"{suite.name}\n    {suite.measures}")
        for step in suite.steps:
            notes = ["standard only" if step.tiny is None else "", "needs --against" if step.needs_against else ""]
            note = "; ".join(filter(None, notes))
            print(f"    - bench/{step.script} {' '.join(step.standard)}" + (f"  ({note})" if note else ""))
    return 0


def parser() -> argparse.ArgumentParser:
    commands = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = commands.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the suites and what each measures")
    run = sub.add_parser("run", help="run one or more suites and write their JSON")
    run.add_argument("suites", nargs="+", choices=sorted(SUITES), metavar="SUITE", help=", ".join(SUITES))
    run.add_argument(
        "--size",
        choices=("tiny", "standard"),
        default="standard",
        help="tiny: a few documents, to check that the suite runs; standard: the documented figures",
    )
    run.add_argument("--rounds", type=int, default=1, help="runs of each step on each checkout (p50/p95 over them)")
    run.add_argument(
        "--against",
        metavar="CHECKOUT",
        help="another checkout with its own .venv (e.g. a git worktree of an earlier commit): "
        "the same suite on it, alternating, and the ratios this / against",
    )
    run.add_argument(
        "--out",
        metavar="DIR",
        help=f"where the JSON goes (env {results.RESULTS_VARIABLE}; "
        "default ~/.local/share/pgrecall/bench); never inside the tree",
    )
    run.add_argument(
        "--data",
        metavar="DIR",
        help=f"the folder holding the corpora (env {corpora.DATA_VARIABLE}; "
        "default ../shared/data above the checkout); never downloaded",
    )
    run.add_argument(
        "--work", metavar="DIR", help="where the homes are made (kept); default a temporary folder, removed"
    )
    run.add_argument("--timeout", type=float, help="seconds a step may take (default: no limit)")
    return commands


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "list":
        return list_suites()
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    out = results.results_dir(args.out)
    data = corpora.data_root(args.data)
    checkouts = [this_checkout(), *([other_checkout(args.against)] if args.against else [])]
    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="pgrecall-bench-"))
    code = 0
    try:
        for name in args.suites:
            started = datetime.datetime.now(datetime.UTC)
            payload = {
                "suite": name,
                "measures": SUITES[name].measures,
                "size": args.size,
                "rounds": args.rounds,
                "started": started.isoformat(timespec="seconds"),
                "checkouts": {checkout.side: checkout.describe() for checkout in checkouts},
                "data": str(data),
                "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average": os.getloadavg()},
                **runner.run_suite(SUITES[name], args.size, checkouts, data, work / name, args.rounds, args.timeout),
                "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            }
            payload["machine"]["load_average_after"] = os.getloadavg()
            path = results.write_result(out, name, payload)
            report(payload, path)
            code |= bool(runner.failed(payload))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return code


def report(payload: dict, path: Path) -> None:
    """A few lines per step: wall p50 per checkout, the ratio, and the failures."""
    print(f"{payload['suite']} ({payload['size']}, {payload['rounds']} round(s)): {path}")
    for key, record in payload["steps"].items():
        for side, runs in record["sides"].items():
            failures = sum(run["returncode"] != 0 for run in runs["runs"])
            wall = runs.get("seconds", {}).get("p50")
            line = (
                f"  {key:26} {side:7} wall p50 {wall} s"
                if wall is not None
                else f"  {key:26} {side:7} no run succeeded"
            )
            print(line + (f", {failures} failed" if failures else ""))
        if "ratios" in record:
            shown = ", ".join(f"{name} {value}" for name, value in list(record["ratios"].items())[:8])
            print(f"  {key:26} this/against: {shown}")
    for key, why in payload["skipped"].items():
        print(f"  {key:26} skipped: {why}")
    for failure in runner.failed(payload):
        print(f"  failed: {failure}")


if __name__ == "__main__":
    sys.exit(main())
