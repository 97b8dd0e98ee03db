"""A real-size Claude Code projects folder, indexed twice by `pgrecall index` as subprocesses.

    .venv/bin/python bench/sessions_bench.py [--sessions 200] [--records 50000] [--home DIR]

Builds ~/.claude/projects' shape in a temporary folder: projects of sessions (`<uuid>.jsonl`),
every fifth session with a subagent's transcript (`<uuid>/subagents/agent-*.jsonl`), records
of the shapes Claude Code writes (user prompts, assistant text with tool_use blocks, user
tool_result records, summary, system and file-history-snapshot lines), `--records` records
in all. Then runs `pgrecall index FOLDER --json` twice on a fresh home (an embedded database
of its own unless PGRECALL_DATABASE_URL is set) and prints JSON: both wall times with their
counts. The target: the second run, which finds everything unchanged, in <= 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

WORDS = [
    "index",
    "query",
    "vacuum",
    "migration",
    "worker",
    "queue",
    "retry",
    "backoff",
    "schema",
    "table",
    "column",
    "lock",
    "deadlock",
    "embedding",
    "vector",
    "chunk",
    "token",
    "search",
    "fusion",
    "keyword",
    "parser",
    "adapter",
    "session",
    "transcript",
    "commit",
    "branch",
    "merge",
    "rebase",
    "test",
    "fixture",
    "deploy",
    "service",
    "socket",
    "timeout",
    "cache",
    "config",
    "root",
    "folder",
    "file",
]
TOOLS = ("Bash", "Read", "Edit", "Grep", "Glob", "Write", "Task")


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _base(session_id: str, number: int, kind: str, sidechain: bool) -> dict:
    return {
        "parentUuid": None,
        "isSidechain": sidechain,
        "userType": "external",
        "cwd": "/home/ada/src/shop",
        "sessionId": session_id,
        "version": "2.1.173",
        "gitBranch": "main",
        "type": kind,
        "uuid": str(uuid.UUID(int=number)),
        "timestamp": f"2026-11-{1 + number % 28:02}T{number % 24:02}:{number % 60:02}:00.000Z",
    }


def records(rng: random.Random, session_id: str, count: int, first: int, sidechain: bool = False) -> list[dict]:
    """`count` records of one transcript: prompt, assistant turns with tool calls, their results."""
    out: list[dict] = [{"type": "summary", "summary": sentence(rng, 6), "leafUuid": str(uuid.UUID(int=first))}]
    number = first
    while len(out) < count:
        number += 1
        shape = rng.random()
        if shape < 0.2:
            record = _base(session_id, number, "user", sidechain)
            record["message"] = {"role": "user", "content": sentence(rng, rng.randint(8, 40))}
        elif shape < 0.6:
            record = _base(session_id, number, "assistant", sidechain)
            content = [{"type": "text", "text": " ".join(sentence(rng, 12) for _ in range(rng.randint(1, 4)))}]
            if rng.random() < 0.6:
                content.append(
                    {
                        "type": "tool_use",
                        "id": f"toolu_{number}",
                        "name": rng.choice(TOOLS),
                        "input": {"command": sentence(rng, 5)},
                    }
                )
            record["message"] = {"id": f"msg_{number}", "role": "assistant", "model": "claude", "content": content}
        elif shape < 0.9:
            record = _base(session_id, number, "user", sidechain)
            result = "\n".join(sentence(rng, 10) for _ in range(rng.randint(1, 20)))
            record["message"] = {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{number - 1}", "content": result}],
            }
            record["toolUseResult"] = {"stdout": result, "stderr": "", "interrupted": False}
        elif shape < 0.95:
            record = _base(session_id, number, "system", sidechain)
            record.update({"subtype": "compact_boundary", "content": "Conversation compacted", "level": "info"})
        else:
            record = {"type": "file-history-snapshot", "messageId": str(uuid.UUID(int=number)), "snapshot": {}}
        out.append(record)
    return out


def build(folder: Path, sessions: int, total_records: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    per_session = total_records // sessions
    written = files = 0
    for n in range(sessions):
        project = folder / f"-home-ada-src-project{n % 12}"
        project.mkdir(parents=True, exist_ok=True)
        session_id = str(uuid.UUID(int=rng.getrandbits(128)))
        own = per_session if n < sessions - 1 else total_records - written
        subagent = own // 5 if n % 5 == 0 else 0
        lines = records(rng, session_id, own - subagent, n * 1_000_000)
        (project / f"{session_id}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
        files += 1
        if subagent:
            agent = project / session_id / "subagents" / f"agent-{n:07x}.jsonl"
            agent.parent.mkdir(parents=True)
            agent_lines = records(rng, session_id, subagent, n * 1_000_000 + 500_000, sidechain=True)[1:]
            agent_lines.append(agent_lines[-1])  # exactly `subagent` records: the summary line dropped
            agent.write_text("".join(json.dumps(r) + "\n" for r in agent_lines))
            files += 1
        written += own
    size = sum(p.stat().st_size for p in folder.rglob("*.jsonl"))
    return {"sessions": sessions, "files": files, "records": written, "megabytes": round(size / 1e6, 1)}


def index(folder: Path, env: dict[str, str]) -> dict:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pgrecall.cli", "index", str(folder), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = round(time.perf_counter() - started, 2)
    if result.returncode != 0:
        raise SystemExit(f"pgrecall index failed: {result.stderr.strip().splitlines()[-1:]}")
    return {"wall_seconds": seconds, **json.loads(result.stdout.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--home", help="PGRECALL_HOME (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pgrecall-sessions-") as scratch:
        folder = Path(scratch) / "projects"
        corpus = build(folder, args.sessions, args.records)
        env = dict(os.environ, PGRECALL_HOME=args.home or str(Path(scratch) / "home"), PGRECALL_LOG_FORMAT="json")
        first = index(folder, env)
        second = index(folder, env)
        print(json.dumps({"corpus": corpus, "first": first, "second": second, "target_second_seconds": 5}))
        if not args.home:
            subprocess.run([sys.executable, "-m", "pgrecall.cli", "db", "stop"], env=env, capture_output=True)


if __name__ == "__main__":
    main()
