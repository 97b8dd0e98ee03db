"""The memories' page and forms, against another checkout: page weight, page time, write time.

    .venv/bin/python bench/web_memories_bench.py --home /tmp/pgrecall-web-bench --against ../main-checkout

Serves the home bench/web_bench.py built (its index and memories) with `pgrecall api`, first
from this checkout, then from `--against` (a checkout with its own .venv, e.g. the previous
commit: `git archive <commit> | tar -x -C DIR`, then its venv), in alternating rounds, one
server at a time, and measures over plain HTTP (httpx):

- weight: the bytes of `/` and of `/memories` as a browser loads them (HTML, CSS, JS), uncompressed;
- page: GET /memories (HTML) time, p50 of --reads;
- JSON write: POST /memories (JSON) time, p50 of --writes, each memory purged after;
- form write (this checkout only): the remember form's POST and the redirect it answers with,
  followed to the memory's page, p50 of --writes: what a person waits for.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
HTML = {"accept": "text/html"}
ASSET = re.compile(r'<(?:link rel="stylesheet" href|script src)="(/static/[^"]+)"')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def page_bytes(client: httpx.Client, path: str) -> int:
    html = client.get(path, headers=HTML)
    html.raise_for_status()
    return len(html.content) + sum(len(client.get(asset).content) for asset in ASSET.findall(html.text))


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def measure(client: httpx.Client, reads: int, writes: int, forms: bool, round_number: int) -> dict:
    times: dict[str, list[float]] = {"page": [], "json_write": [], "form_write": []}
    weight = {"/": page_bytes(client, "/"), "/memories": page_bytes(client, "/memories")}
    for _ in range(reads):
        times["page"].append(timed(lambda: client.get("/memories", headers=HTML).raise_for_status()))
    for number in range(writes):
        text = f"Bench memory {round_number}-{number}: the JSON API writes it, then it is purged."
        started = time.perf_counter()
        created = client.post("/memories", json={"text": text})
        times["json_write"].append((time.perf_counter() - started) * 1000)
        created.raise_for_status()
        client.delete(f"/memories/{created.json()['id']}", params={"purge": "true"}).raise_for_status()
    if forms:
        for number in range(writes):
            text = f"Bench memory {round_number}-{number}: the page's form writes it, then it is purged."
            started = time.perf_counter()
            shown = client.post("/memories", data={"text": text, "tags": "bench"}, headers=HTML, follow_redirects=True)
            times["form_write"].append((time.perf_counter() - started) * 1000)
            shown.raise_for_status()
            memory_id = str(shown.url).split("/memories/")[1].split("?")[0]
            client.delete(f"/memories/{memory_id}", params={"purge": "true"}).raise_for_status()
    return {"weight": weight, "times": times}


def serve(checkout: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    python = checkout / ".venv" / "bin" / "python"
    server = subprocess.Popen(
        [str(python), "-m", "pgrecall.cli", "api", "--port", str(port)],
        env=env,
        cwd=checkout,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return server, base
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.terminate()
            raise SystemExit(f"the API of {checkout} did not come up")
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", default="/tmp/pgrecall-web-bench", help="a home bench/web_bench.py built")
    parser.add_argument("--against", required=True, help="the other checkout (with its .venv)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reads", type=int, default=30)
    parser.add_argument("--writes", type=int, default=15)
    args = parser.parse_args()
    env = dict(
        os.environ,
        PGRECALL_HOME=args.home,
        PGRECALL_LOG_FORMAT="json",
        PGRECALL_CONFIG=str(Path(args.home) / "none.toml"),
    )
    for name in ("PGRECALL_API_TOKEN", "PGRECALL_DATABASE_URL", "PGRECALL_SEARCH_DATABASE_URL"):
        env.pop(name, None)
    checkouts = {"ours": ROOT, "against": Path(args.against).resolve()}
    results: dict[str, list[dict]] = {"ours": [], "against": []}
    for round_number in range(args.rounds):
        for name, checkout in checkouts.items():
            server, base = serve(checkout, env)
            try:
                with httpx.Client(base_url=base, timeout=120) as client:
                    text = f"Bench warm-up {round_number}: opens the memory client (migration, model)."
                    warm = client.post("/memories", json={"text": text})  # the client starts on the first write
                    warm.raise_for_status()
                    client.delete(f"/memories/{warm.json()['id']}", params={"purge": "true"}).raise_for_status()
                    results[name].append(measure(client, args.reads, args.writes, name == "ours", round_number))
            finally:
                server.terminate()
                server.wait(30)

    def p50(name: str, kind: str) -> float | None:
        values = [t for result in results[name] for t in result["times"][kind]]
        return round(statistics.median(values), 1) if values else None

    summary = {
        name: {
            "weight_bytes": results[name][0]["weight"],
            "memories_page_ms_p50": p50(name, "page"),
            "json_write_ms_p50": p50(name, "json_write"),
            "form_write_ms_p50": p50(name, "form_write"),
        }
        for name in checkouts
    }
    ours, against = summary["ours"], summary["against"]
    summary["ratios_ours_to_against"] = {
        "weight /": round(ours["weight_bytes"]["/"] / against["weight_bytes"]["/"], 3),
        "weight /memories": round(ours["weight_bytes"]["/memories"] / against["weight_bytes"]["/memories"], 3),
        "memories page time": round(ours["memories_page_ms_p50"] / against["memories_page_ms_p50"], 2),
        "json write time": round(ours["json_write_ms_p50"] / against["json_write_ms_p50"], 2),
    }
    summary["form_write_to_json_write"] = round(ours["form_write_ms_p50"] / ours["json_write_ms_p50"], 2)
    summary["load"] = os.getloadavg()
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
