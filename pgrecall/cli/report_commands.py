"""`pgrecall report`: what the Claude Code hooks injected, what it cost, and whether it was used."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pgrecall.cli.common import command
from pgrecall.settings import Settings

SESSIONS_SHOWN = 20


def add_parser(commands: argparse._SubParsersAction) -> None:
    report = command(
        commands,
        "report",
        run,
        help="what the Claude Code hooks injected: tokens, latency, and whether the assistant used it",
        description="Read the hooks' records (PGRECALL_HOME/injections) and the sessions' transcripts, and print "
        "per session, per day and per project: hook runs, injections, items and estimated tokens injected, "
        "the hooks' time (p50, max, from the process's start), and how many injected items the assistant "
        "used later in its session (it opened them, named them, or reused their distinctive words: "
        "docs/claude-code-injections.md). Needs no database.",
        epilog="examples: pgrecall report\n          pgrecall report --json",
    )
    report.add_argument("--json", action="store_true", help="print one JSON object")
    report.add_argument("--session", help="only this session (its id), with each injected item")


def _share(tally: dict[str, Any]) -> str:
    known = tally["items"] - tally["unknown"]
    if not known:
        return "-"
    return f"{tally['used']}/{known} ({tally['used_share']:.0%})"


def _seconds(tally: dict[str, Any]) -> str:
    return f"{tally['p50_seconds']:.2f}/{tally['max_seconds']:.2f}" if tally["p50_seconds"] is not None else "-"


def table(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    header = (
        f"  {'':<38} {'runs':>5} {'inj.':>5} {'items':>6} {'tokens':>7} {'tok/inj':>8} {'used':>14} {'p50/max s':>11}"
    )
    lines = [header]
    for name, t in rows:
        per = f"{t['tokens_per_injection']:.0f}" if t["tokens_per_injection"] is not None else "-"
        lines.append(
            f"  {name[:38]:<38} {t['runs']:>5} {t['injections']:>5} {t['items']:>6} {t['tokens']:>7} {per:>8} "
            f"{_share(t):>14} {_seconds(t):>11}"
        )
    return lines


def text_of(found: dict[str, Any], session: str | None = None) -> str:
    overall = found["overall"]
    if not overall["runs"]:
        return "no hook runs recorded yet (PGRECALL_HOME/injections)\n"
    lines = ["overall", *table([("all sessions", overall)])]
    if overall["unknown"]:
        lines.append(f"  {overall['unknown']} items of sessions whose transcript cannot be read: use unknown")
    sessions = [s for s in found["sessions"] if session is None or s["session_id"] == session]
    lines += ["", "per session, latest first", *table([(s["session_id"], s) for s in sessions[:SESSIONS_SHOWN]])]
    if session is not None:
        for s in sessions:
            for item in s["injected"]:
                where = f"prompt {item['prompt']}" if item["event"] == "prompt" else "session start"
                lines.append(
                    f"    {where}: id {item['document_id']} {item['title'] or ''} - used: {item['used'] or 'no'}"
                )
    lines += ["", "per day", *table([(d["day"], d) for d in found["days"]])]
    lines += ["", "per project", *table([(p["project"], p) for p in found["projects"]])]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, settings: Settings) -> int:
    from pgrecall.claude_integration.injection_ledger import folder_of, report_of

    found = report_of(folder_of(settings.home))
    if args.json:
        print(json.dumps(found, ensure_ascii=False))
        return 0
    print(text_of(found, args.session), end="")
    return 0
