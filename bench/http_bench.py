"""HTTP API latency and throughput at 1 and 8 concurrent clients, and one MCP round trip.

    .venv/bin/python bench/http_bench.py [--requests 200]

Serves a clone of the SciFact index that `pgrecall eval ../shared/data/scifact`
built (about 23,000 chunks) with `pgrecall api` on 127.0.0.1, and sends the
SciFact test claims as GET /search?q=...&k=10 from a bounded loop of clients
(each request count and the whole run are capped; it stops by itself). Then
starts `pgrecall mcp` and times `search_memory` calls through the SDK's client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import httpx
import psycopg
from harness.timing import percentile
from psycopg import sql

SOURCE = "pgrecall_eval_scifact"
TARGET = "pgrecall_http_bench"


async def load(port: int, queries: list[str], clients: int, requests: int, cap_seconds: float = 120.0) -> dict:
    latencies: list[float] = []
    next_index = 0
    deadline = time.monotonic() + cap_seconds

    async def client_loop(client: httpx.AsyncClient) -> None:
        nonlocal next_index
        while next_index < requests and time.monotonic() < deadline:
            query = queries[next_index % len(queries)]
            next_index += 1
            started = time.perf_counter()
            response = await client.get(f"http://127.0.0.1:{port}/search", params={"q": query, "k": 10})
            response.raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)

    async with httpx.AsyncClient(timeout=60) as client:
        started = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "clients": clients,
        "requests": len(latencies),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "requests_per_s": round(len(latencies) / elapsed, 1),
    }


async def mcp_round_trips(env: dict, queries: list[str], calls: int = 20) -> dict:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "pgrecall.cli", "mcp"], env=env)
    times = []
    async with Client(params) as client:
        await client.call_tool("search_memory", {"query": "warm up", "k": 5})
        for query in queries[:calls]:
            started = time.perf_counter()
            await client.call_tool("search_memory", {"query": query, "k": 5})
            times.append((time.perf_counter() - started) * 1000)
    return {
        "calls": len(times),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(percentile(times, 95), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--dataset", default="../shared/data/scifact")
    args = parser.parse_args()

    from pgrecall.postgres import database
    from pgrecall.settings import load_settings

    settings = load_settings()
    admin = database.database_url(settings)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(TARGET)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(TARGET), sql.Identifier(SOURCE)))
    url = psycopg.conninfo.make_conninfo(admin, dbname=TARGET)
    with psycopg.connect(url) as conn:
        chunks = conn.execute("SELECT count(*) FROM pgrecall.chunks").fetchone()[0]
    with open(f"{args.dataset}/queries.jsonl", encoding="utf-8") as lines:
        queries = [json.loads(line)["text"] for line in lines]

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, PGRECALL_DATABASE_URL=url, PGRECALL_LOG_FORMAT="json")
    env.pop("PGRECALL_API_TOKEN", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "pgrecall.cli", "api", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the API did not come up")
            time.sleep(0.2)
        httpx.get(f"http://127.0.0.1:{port}/search", params={"q": "warm up"}, timeout=60)
        runs = [asyncio.run(load(port, queries, clients, args.requests)) for clients in (1, 8)]
    finally:
        server.terminate()
        server.wait(30)
    mcp = asyncio.run(mcp_round_trips(env, queries))
    print(json.dumps({"chunks": chunks, "http": runs, "mcp_search_memory": mcp}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
