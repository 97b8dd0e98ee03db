"""Resident memory of concurrent `pgrecall mcp` servers, each after one search_memory, with `pgrecall serve` running.

    .venv/bin/python bench/mcp_memory_bench.py [--servers 5] [--no-serve] [--python PYTHON] [--home DIR]

Indexes examples/notes into the embedded database of a data directory of its own
(default: a new temporary one), starts `pgrecall serve` (unless --no-serve) and waits
until it is ready (the service_ready event, and its warm socket where the code has one),
then starts SERVERS `PYTHON -m pgrecall.cli mcp` at side by side through the MCP SDK's stdio
client. Each answers one search_memory; then each server's VmRSS (/proc/PID/status) is
read, and whether it mapped onnxruntime or libtorch (a model loaded in it). PYTHON is
the interpreter of the checkout to measure: another checkout's venv measures that code
(e.g. /work/main/.venv/bin/python for the code before the warm path). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from harness.homes import indexed_home
from harness.processes import start, stop, stop_database, wait_until, warm_socket_answers
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


def children_running(word: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and word.encode() in words:
            found.append(int(entry.name))
    return found


def resident_kb(pid: int) -> int:
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS"))
    return int(line.split()[1])


def model_mapped(pid: int) -> bool:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return "onnxruntime" in maps or "libtorch" in maps


async def measure(python: str, env: dict[str, str], count: int) -> list[dict]:
    params = StdioServerParameters(command=python, args=["-m", "pgrecall.cli", "mcp"], env=env)
    async with contextlib.AsyncExitStack() as stack:
        # Entered one after the other (anyio's scopes belong to the task that entered them); the
        # handshake is answered at once, and all of them then run side by side.
        clients = [await stack.enter_async_context(Client(params)) for _ in range(count)]
        results = await asyncio.gather(
            *(client.call_tool("search_memory", {"query": "E-4711", "k": 3}) for client in clients)
        )
        for result in results:
            if result.is_error:
                raise SystemExit(f"search_memory failed: {result.content[0].text}")
        pids = children_running("mcp")
        return [
            {"pid": pid, "rss_mb": round(resident_kb(pid) / 1024, 1), "model_loaded": model_mapped(pid)} for pid in pids
        ]


def wait_ready(python: str, env: dict[str, str], serve: subprocess.Popen, log_path: Path) -> None:
    """Until serve logged service_ready and (an install that has one) its warm socket answers."""
    has_socket = subprocess.run([python, "-c", "import pgrecall.warm_client"], env=env).returncode == 0

    def ready() -> bool:
        logged = '"service_ready"' in log_path.read_text(errors="replace")
        return logged and (not has_socket or warm_socket_answers(python, env))

    wait_until(ready, serve, "serve")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=5)
    parser.add_argument("--no-serve", action="store_true", help="measure without a running serve")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs pgrecall")
    parser.add_argument("--home", help="the PGRECALL_HOME to use (default: a new temporary one)")
    args = parser.parse_args()
    if not 1 <= args.servers <= 50:
        parser.error("--servers must be from 1 to 50")

    home, env, pgrecall = indexed_home(args.python, args.home, "pgrecall-mcp-memory-")
    serve = None
    log_path = home / "serve.log"
    try:
        if not args.no_serve:
            serve = start([*pgrecall, "serve"], env, log_path)
            wait_ready(args.python, env, serve, log_path)
        servers = asyncio.run(measure(args.python, env, args.servers))
    finally:
        stop(serve)
        stop_database(pgrecall, env)
    rss = [server["rss_mb"] for server in servers]
    result = {
        "python": args.python,
        "serve": not args.no_serve,
        "servers": len(servers),
        "rss_mb_mean": round(statistics.fmean(rss), 1),
        "rss_mb_max": max(rss),
        "models_loaded": sum(server["model_loaded"] for server in servers),
        "each": servers,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
