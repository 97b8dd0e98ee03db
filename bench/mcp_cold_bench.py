"""`pgrecall mcp` from cold: time to `initialize`, and the first `search_memory` sent 5 s after start.

    .venv/bin/python bench/mcp_cold_bench.py [--starts 5] [--home DIR] [--delay 5]

Indexes examples/notes into the embedded database of a data directory of
its own (default: a new temporary one). Before each start it stops
the embedded database (`pgrecall db stop`), so every start is cold: the
server must start PostgreSQL and load the model. Each start is a fresh
`pgrecall mcp` driven by the MCP SDK's stdio client; the first `search_memory`
is sent `--delay` seconds after the process was started. Prints one JSON
object: the p50 and every sample, in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time

from harness.homes import EXAMPLES, home_environment, new_home
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


def pgrecall(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "-m", "pgrecall.cli", *args], env=env, check=True, capture_output=True, timeout=600)


async def one_start(env: dict[str, str], delay: float) -> dict[str, float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "pgrecall.cli", "mcp"], env=env)
    started = time.perf_counter()
    async with Client(params) as client:  # spawns the server and completes initialize
        initialized = time.perf_counter()
        await asyncio.sleep(max(0.0, started + delay - time.perf_counter()))
        sent = time.perf_counter()
        result = await client.call_tool("search_memory", {"query": "E-4711", "k": 3})
        answered = time.perf_counter()
        if result.is_error:
            raise SystemExit(f"search_memory failed: {result.content[0].text}")
    return {"initialize_ms": (initialized - started) * 1000, "first_search_ms": (answered - sent) * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--delay", type=float, default=5.0, help="seconds from start to the first search_memory")
    parser.add_argument("--home", help="the PGRECALL_HOME to use (default: a new temporary one)")
    args = parser.parse_args()
    if not 1 <= args.starts <= 50:
        parser.error("--starts must be from 1 to 50")

    env = home_environment(new_home(args.home, "pgrecall-mcp-bench-"))
    pgrecall(env, "index", "--quiet", str(EXAMPLES))  # unchanged notes are not indexed again
    samples = []
    try:
        for _ in range(args.starts):
            pgrecall(env, "db", "stop")
            samples.append(asyncio.run(one_start(env, args.delay)))
    finally:
        pgrecall(env, "db", "stop")
    result = {
        "starts": len(samples),
        "delay_s": args.delay,
        "initialize_p50_ms": round(statistics.median(s["initialize_ms"] for s in samples), 1),
        "first_search_p50_ms": round(statistics.median(s["first_search_ms"] for s in samples), 1),
        "initialize_ms": [round(s["initialize_ms"], 1) for s in samples],
        "first_search_ms": [round(s["first_search_ms"], 1) for s in samples],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
