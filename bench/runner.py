"""One suite run: each step's script as a process, in a home of its own, on each checkout in turn.

With two checkouts the rounds alternate between them (ABBA: this, against; against, this; ...), so
that a machine whose load drifts during the run weighs on both alike; a script that alternates
between two installs itself runs once, on this checkout, told where the other one is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .harness import corpora, homes, processes, results, timing
from .harness.checkouts import Checkout
from .suites import Step, Suite

BENCH = Path(__file__).resolve().parent
OUTPUT_KEPT = 4000  # characters of a script's output kept in the result when it printed no JSON


class Fields(dict):
    """The values an argument may name; a corpus is found (or cut, at size tiny) when first named."""

    def __init__(self, values: dict[str, str], data: Path, size: str, cuts: Path):
        super().__init__(values)
        self.data, self.size, self.cuts = data, size, cuts

    def __missing__(self, name: str) -> str:
        if name not in corpora.CORPORA:
            raise KeyError(name)
        folder = corpora.corpus(name, self.data)
        if self.size == "tiny" and (folder / "qrels").is_dir():
            # The cut keeps the corpus's folder name: `pgrecall eval` names its database after it.
            folder = corpora.cut(folder, self.cuts / name, documents=60, queries=5)
        self[name] = str(folder)
        return self[name]


def parse_output(stdout: str) -> object | None:
    """The JSON a script printed: all of its output, else its last line that is JSON; None if none."""
    for text in (stdout, *reversed(stdout.strip().splitlines())):
        try:
            return json.loads(text)
        except ValueError:
            continue
    return None


def run_process(command: list[str], env: dict[str, str], cwd: Path, timeout: float | None) -> dict:
    """Run command; its wall time, exit code, and what it printed (JSON when it printed some)."""
    started = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as timed_out:
        return {
            "seconds": round(time.perf_counter() - started, 3),
            "returncode": None,
            "error": f"timeout {timeout} s",
            "stderr": str(timed_out.stderr or "")[-OUTPUT_KEPT:],
        }
    run: dict = {"seconds": round(time.perf_counter() - started, 3), "returncode": done.returncode}
    result = parse_output(done.stdout)
    if result is not None:
        run["result"] = result
    else:
        run["output"] = done.stdout[-OUTPUT_KEPT:]
    if done.returncode != 0:
        run["stderr"] = done.stderr[-OUTPUT_KEPT:]
    return run


def side_order(checkouts: list[Checkout], round_: int) -> list[Checkout]:
    """ABBA: the checkouts in order on even rounds, reversed on odd ones."""
    return checkouts if round_ % 2 == 0 else checkouts[::-1]


def arguments(step: Step, size: str, fields: Fields, alternating: bool) -> list[str]:
    chosen = step.tiny if size == "tiny" else step.standard
    extra = step.against if alternating and step.against else ()
    return [argument.format_map(fields) for argument in (*chosen, *extra)]


def runnable(step: Step, size: str, checkouts: list[Checkout]) -> str | None:
    """Why `step` does not run in this plan, or None when it does."""
    if size == "tiny" and step.tiny is None:
        return "no tiny variant: runs at --size standard"
    if step.needs_against and len(checkouts) < 2:
        return "compares two checkouts: give --against CHECKOUT"
    return None


def run_suite(
    suite: Suite,
    size: str,
    checkouts: list[Checkout],
    data: Path,
    work: Path,
    rounds: int = 1,
    timeout: float | None = None,
    echo: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> dict:
    """Every step of `suite`, `rounds` times on each checkout; the runs, their summaries, and ratios."""
    steps = [(f"{index}-{step.name}", step) for index, step in enumerate(suite.steps)]
    skipped = {key: why for key, step in steps if (why := runnable(step, size, checkouts))}
    against = checkouts[1] if len(checkouts) > 1 else None
    records: dict[str, dict] = {
        key: {"script": f"bench/{step.script}", "sides": {}} for key, step in steps if key not in skipped
    }
    for round_ in range(rounds):
        for checkout in side_order(checkouts, round_):
            folder = work / f"round{round_}-{checkout.side}"
            used: dict[Path, dict[str, str]] = {}
            prepared_homes: set[str] = set()
            try:
                for key, step in steps:
                    if key in skipped or (against and step.against and checkout.side == "against"):
                        continue
                    home = homes.new_home(folder / (step.home or key), "")
                    env = homes.home_environment(home)
                    env[corpora.DATA_VARIABLE] = str(data)
                    used[home] = env
                    fields = Fields(
                        {
                            "home": str(home),
                            "notes": str(homes.EXAMPLES),
                            "data": str(data),
                            "python": checkout.python,
                            **({f"against_{k}": v for k, v in against.describe().items()} if against else {}),
                        },
                        data,
                        size,
                        work / "corpora",
                    )
                    record = records[key]
                    for command in step.prepare:  # once per home: the steps that share it share what it holds
                        name = f"{checkout.side}:{home}:{' '.join(command)}"
                        if name not in prepared_homes:
                            prepared_homes.add(name)
                            prepared = record.setdefault("prepared", {})
                            argv = [
                                *processes.pgrecall_command(checkout.python),
                                *(a.format_map(fields) for a in command),
                            ]
                            prepared[name] = run_process(argv, env, home, timeout)
                    argv = arguments(step, size, fields, alternating=against is not None)
                    record["args"] = argv
                    run = run_process([checkout.python, str(BENCH / step.script), *argv], env, home, timeout)
                    run["round"] = round_
                    record["sides"].setdefault(checkout.side, {"runs": []})["runs"].append(run)
                    state = "ok" if run["returncode"] == 0 else f"FAILED ({run.get('error') or run['returncode']})"
                    echo(f"round {round_ + 1}/{rounds} {checkout.side:7} {key:24} {run['seconds']:9.1f} s  {state}")
            finally:
                for env in used.values():
                    processes.stop_database(processes.pgrecall_command(checkout.python), env)
    for record in records.values():
        summarise(record)
    return {"steps": records, "skipped": skipped}


def summarise(record: dict) -> None:
    """Each side's wall seconds (p50/p95 over its rounds) and figures (medians); this / against."""
    for side in record["sides"].values():
        good = [run for run in side["runs"] if run["returncode"] == 0]
        if good:
            side["seconds"] = timing.summary([run["seconds"] for run in good])
            side["figures"] = results.median_figures([run["result"] for run in good if "result" in run])
    both = record["sides"]
    if "this" in both and "against" in both and "seconds" in both["this"] and "seconds" in both["against"]:
        this = {"seconds.p50": both["this"]["seconds"]["p50"], **both["this"].get("figures", {})}
        other = {"seconds.p50": both["against"]["seconds"]["p50"], **both["against"].get("figures", {})}
        record["ratios"] = results.ratios(this, other)


def failed(payload: dict) -> list[str]:
    """The steps (and the commands that prepared their homes) that did not exit 0, by checkout."""
    return [
        f"{key} ({side})"
        for key, record in payload["steps"].items()
        for side, runs in record["sides"].items()
        if any(run["returncode"] != 0 for run in runs["runs"])
    ] + [
        f"{key} (prepare {name})"
        for key, record in payload["steps"].items()
        for name, run in record.get("prepared", {}).items()
        if run["returncode"] != 0
    ]
