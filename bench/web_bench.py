"""The web page, measured in headless Chromium: first-load weight of / and search-as-you-type latency.

    .venv/bin/python bench/web_bench.py [--scifact 300] [--queries 30] [--screenshots docs]

Builds a home of its own (--home, default /tmp/pgrecall-web-bench): examples/notes, the first
--scifact SciFact documents as notes, one file that cannot be indexed (for the status page) and
three memories; indexes it with `pgrecall index`, serves it with `pgrecall api` on 127.0.0.1, and
drives Debian's chromium with Playwright (never a downloaded browser).

- first load: the bytes of every response of GET / (HTML, JS, CSS), uncompressed;
- as-you-type: for each SciFact claim (its first six words), typed key by key (60 ms apart),
  the time from the last key's input event to the frame after htmx settled the results of that
  whole query (`requestAnimationFrame`), as `performance.now()` in the page measures it. That
  includes the page's 200 ms debounce; the server's share (GET /?q=... with HX-Request) is
  reported beside it.
With --screenshots, PNGs of the search, a document, the memories and the status page are written there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from pgrecall.evaluate import percentile

ROOT = Path(__file__).resolve().parents[1]
MARK_LAST_KEY = """() => {
  window.__bench = {painted: []};
  document.getElementById('q').addEventListener('input', () => { window.__bench.last = performance.now(); });
  document.body.addEventListener('htmx:afterSettle', () => {
    const list = document.querySelector('#results .hits');
    const q = list ? list.dataset.q : null;
    requestAnimationFrame(() => window.__bench.painted.push({q: q, at: performance.now()}));
  });
}"""


def run(args: list[str], env: dict[str, str], timeout: float = 3600) -> None:
    subprocess.run([sys.executable, "-m", "pgrecall.cli", *args], env=env, check=True, timeout=timeout)


def build_home(home: Path, dataset: Path, count: int, env: dict[str, str]) -> Path:
    notes = home / "notes"
    if notes.exists():
        shutil.rmtree(notes)
    shutil.copytree(ROOT / "examples" / "notes", notes)
    scifact = notes / "scifact"
    scifact.mkdir()
    with open(dataset / "corpus.jsonl", encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if number >= count:
                break
            doc = json.loads(line)
            (scifact / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")
    (notes / "broken").mkdir()
    (notes / "broken" / "latin1.txt").write_bytes(b"caf\xe9 cr\xe8me")
    run(["index", str(notes)], env)
    run(
        [
            "remember",
            "Deploys go out on Tuesdays: Friday deploys broke on-call twice.",
            "--title",
            "Deploy day",
            "--tag",
            "ops",
            "--project",
            "apollo",
        ],
        env,
    )
    run(
        [
            "remember",
            "The export job retries E-4711 three times before paging.",
            "--title",
            "E-4711 retries",
            "--tag",
            "ops",
            "--tag",
            "incidents",
        ],
        env,
    )
    run(
        [
            "remember",
            "Release notes are written in the pull request, not after the release: the changelog is built from them.",
            "--title",
            "Release notes",
            "--tag",
            "process",
            "--project",
            "apollo",
        ],
        env,
    )
    return notes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def first_load_bytes(browser, base: str) -> dict:
    context = browser.new_context()
    page = context.new_page()
    responses = []
    page.on("response", lambda response: responses.append(response))
    page.goto(base + "/", wait_until="load")
    sizes = {}
    for response in responses:
        sizes[response.url.removeprefix(base)] = len(response.body())
    context.close()
    return {"bytes": sum(sizes.values()), "by_url": sizes}


def typing_latency(browser, base: str, queries: list[str]) -> list[float]:
    context = browser.new_context()
    page = context.new_page()
    page.goto(base + "/")
    page.evaluate(MARK_LAST_KEY)
    box = page.locator("#q")
    times = []
    for query in queries:
        box.fill("")
        page.locator('#results .hits[data-q=""]').wait_for(state="attached")
        page.evaluate("() => { window.__bench.painted = []; }")
        box.press_sequentially(query, delay=60)
        selector = f"#results .hits[data-q={json.dumps(query)}]"
        page.locator(selector).wait_for(state="attached", timeout=30000)
        page.wait_for_timeout(50)  # the frame after the swap
        last, painted = page.evaluate(
            "q => [window.__bench.last, (window.__bench.painted.find(p => p.q === q) || {}).at]", query
        )
        if painted is not None:
            times.append(painted - last)
    context.close()
    return times


def server_latency(base: str, queries: list[str]) -> list[float]:
    times = []
    with httpx.Client(timeout=60) as client:
        for query in queries:
            started = time.perf_counter()
            client.get(base + "/", params={"q": query}, headers={"hx-request": "true"}).raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    return times


def screenshots(browser, base: str, folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    page = context.new_page()
    written = []
    page.goto(base + "/?q=E-4711+export")
    page.screenshot(path=str(folder / "web-search.png"))
    page.goto(base + "/?q=DEC-0054+incremental+snapshots")  # a chunk in the middle of a note
    page.locator("#results .hit-link").first.click()
    page.wait_for_url("**/documents/**")
    page.screenshot(path=str(folder / "web-document.png"))
    page.goto(base + "/memories")
    page.locator("details.remember summary").click()  # the remember form, open
    page.locator("#remember textarea").fill("Staging runs 4 replicas since the load test of March.")
    page.screenshot(path=str(folder / "web-memories.png"))
    page.goto(base + "/status")
    page.screenshot(path=str(folder / "web-status.png"), full_page=True)
    written = sorted(str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p) for p in folder.glob("web-*.png"))
    context.close()
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", default="/tmp/pgrecall-web-bench")
    parser.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--scifact", type=int, default=300, help="how many SciFact documents to add as notes")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--screenshots", default=None, help="a folder for the PNGs (docs)")
    parser.add_argument("--reuse", action="store_true", help="serve the home as it is, without indexing again")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    home = Path(args.home)
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PGRECALL_HOME=str(home), PGRECALL_LOG_FORMAT="json", PGRECALL_CONFIG=str(home / "none.toml"))
    for name in ("PGRECALL_API_TOKEN", "PGRECALL_DATABASE_URL", "PGRECALL_SEARCH_DATABASE_URL"):
        env.pop(name, None)
    dataset = Path(args.dataset)
    if not args.reuse:
        build_home(home, dataset, args.scifact, env)
    with open(dataset / "queries.jsonl", encoding="utf-8") as lines:
        claims = [json.loads(line)["text"] for line in lines]
    queries = [" ".join(claim.split()[:6]) for claim in claims[: args.queries]]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
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
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the API did not come up")
            time.sleep(0.2)
        documents_total = httpx.get(base + "/health", timeout=10).json()["documents"]
        httpx.get(base + "/", params={"q": "warm up"}, timeout=60)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), headless=True)
            weight = first_load_bytes(browser, base)
            typed = typing_latency(browser, base, queries)
            pictures = screenshots(browser, base, Path(args.screenshots)) if args.screenshots else []
            browser.close()
        served = server_latency(base, queries)
    finally:
        server.terminate()
        server.wait(30)
    print(
        json.dumps(
            {
                "documents": documents_total,
                "first_load": weight,
                "as_you_type_ms": {
                    "queries": len(typed),
                    "p50": round(statistics.median(typed), 1),
                    "p95": round(percentile(typed, 95), 1),
                    "debounce_ms": 200,
                },
                "server_ms": {"p50": round(statistics.median(served), 1), "p95": round(percentile(served, 95), 1)},
                "screenshots": pictures,
                "load": os.getloadavg(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
