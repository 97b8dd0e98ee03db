"""Tokens the prompt hook injects, for the same prompts on the same index, printed by two pgrecalls:
this checkout's and another one's (`--before`, e.g. main's virtualenv), so a change of format is
measured on what it changes and nothing else.

    .venv/bin/python bench/hook_tokens.py --before OLD/.venv/bin/pgrecall [--notes examples/notes] [--json]

A home of its own indexes a copy of the notes, plus what the issue found in a real vault (three daily
notes that only link to [[Incident E-4711]]) and two memories (one with `project: apollo`). Each
prompt of PROMPTS goes to `pgrecall hook prompt` of both, as Claude Code sends it; the tokens are
the hook's own estimate (4 characters each) of what it printed. The right passage counts as
injected when the file or memory the prompt is about is named in the output (its file name, or
its memory id). Targets (issue 42): at most 0.6x the tokens, the right passage still injected for
at least 0.95 of the prompts that inject it before.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# prompt -> what must be injected: a file name, or "memory:<word in its text>"
PROMPTS = {
    "what happened in E-4711?": "incident-e4711.md",
    "how are search results ranked?": "welcome.md",
    "which postgres settings should I tune for a small server?": "postgres-tuning.txt",
    "when do apollo deploys go out?": "memory:Apollo",
    "how deep should raised beds for carrots be?": "gardening.md",
    "why did the ledger export fail?": "incident-e4711.md",
}
DAILY = {
    "2026-11-03.md": "# 2026-11-03\n\n- Standup: [[Incident E-4711]] follow-up still open.\n",
    "2026-11-04.md": "# 2026-11-04\n\n- [[Incident E-4711]]\n",
    "2026-11-05.md": "# 2026-11-05\n\n- Review of [[Incident E-4711]] with billing.\n",
}
MEMORIES = [
    ("Apollo deploys go out on Tuesdays: Friday deploys broke on-call twice.", "apollo"),
    ("The ledger export E-4711 fix: raised the read timeout to 120 s and added backoff in export_ledger_batch.", None),
]


def run(command: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    done = subprocess.run(command, env=env, input=stdin, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: {done.stderr.strip()[-500:]}")
    return done.stdout


def injected(output: str, expected: str, memory_ids: dict[str, str]) -> bool:
    if expected.startswith("memory:"):
        word = expected.split(":", 1)[1]
        return any(word in text and memory_id in output for text, memory_id in memory_ids.items())
    return expected in output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the other pgrecall executable")
    parser.add_argument("--notes", default=str(REPO / "examples" / "notes"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    this = [sys.executable, "-m", "pgrecall.cli"]
    with tempfile.TemporaryDirectory(prefix="pgrecall-hook-tokens-") as scratch:
        root = Path(scratch)
        vault = root / "vault"
        shutil.copytree(args.notes, vault)
        (vault / "daily").mkdir()
        for name, text in DAILY.items():
            (vault / "daily" / name).write_text(text, encoding="utf-8")
        env = dict(os.environ, PGRECALL_HOME=str(root / "home"), PGRECALL_HOOK_DEADLINE="120")
        env.pop("PGRECALL_DATABASE_URL", None)
        memory_ids: dict[str, str] = {}
        try:
            run([*this, "index", str(vault)], env)
            for text, project in MEMORIES:
                said = run([*this, "remember", text, *(["--project", project] if project else [])], env)
                memory_ids[text] = re.search(r"remembered ([0-9a-f]{12})", said)[1]
            rows = []
            for prompt, expected in PROMPTS.items():
                payload = json.dumps(
                    {"hook_event_name": "UserPromptSubmit", "session_id": "bench", "cwd": str(root), "prompt": prompt}
                )
                row = {"prompt": prompt}
                for name, command in (("before", [args.before]), ("after", this)):
                    output = run([*command, "hook", "prompt"], env, payload)
                    row[name] = {
                        "tokens": (len(output) + 3) // 4,
                        "right": injected(output, expected, memory_ids),
                        "output": output,
                    }
                rows.append(row)
        finally:
            subprocess.run([*this, "db", "stop"], env=env, capture_output=True, timeout=120)
    relevant = [r for r in rows if r["before"]["tokens"]]
    before = sum(r["before"]["tokens"] for r in relevant)
    after = sum(r["after"]["tokens"] for r in relevant)
    kept = [r for r in relevant if r["before"]["right"]]
    summary = {
        "prompts": len(rows),
        "injecting_before": len(relevant),
        "tokens_before": before,
        "tokens_after": after,
        "ratio": round(after / before, 3) if before else None,
        "right_still_injected": f"{sum(r['after']['right'] for r in kept)}/{len(kept)}",
    }
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows}, indent=1))
        return 0
    for row in rows:
        print(f"=== {row['prompt']}  before {row['before']['tokens']} tokens, after {row['after']['tokens']} tokens")
        for name in ("before", "after"):
            print(f"--- {name} (right passage injected: {row[name]['right']})")
            print(row[name]["output"], end="")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
