"""The web page, measured in headless Chromium: first-load weight of / and search-as-you-type latency.

    .venv/bin/python bench/web_bench.py [--scifact 300] [--queries 30] [--screenshots docs]
    .venv/bin/python bench/web_bench.py --eval ~/.local/share/pgrecall --queries 100   # SciFact, 23k chunks
    .venv/bin/python bench/web_bench.py --database postgresql://me@db.local/notes

Builds a home of its own (--home, default /tmp/pgrecall-web-bench): examples/notes, the first
--scifact SciFact documents as notes, one file that cannot be indexed (for the status page) and
three memories; indexes it with `pgrecall index`, serves it with `pgrecall api` on 127.0.0.1, and
drives Debian's chromium with Playwright (never a downloaded browser).

Or it serves an index that exists, as it is (nothing indexed, nothing written): --eval HOME, the
one `pgrecall eval DATASET` built with PGRECALL_HOME=HOME (all of SciFact: 5,183 documents, ~23k
chunks; the database pgrecall_eval_<dataset> on that home's embedded server), or --database URL.

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
import dataclasses
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
import psycopg
from psycopg.conninfo import make_conninfo

from pgrecall.composition.evaluation import eval_database_name, percentile

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


PASSED_ON = ("PGRECALL_API_TOKEN", "PGRECALL_DATABASE_URL", "PGRECALL_SEARCH_DATABASE_URL")


@dataclasses.dataclass(frozen=True)
class Plan:
    """What one run serves: `env` is the environment of its pgrecall commands; `build` says whether
    the bench's own home is built first; `eval_dataset` names the dataset whose eval database on the
    home's server is served (the URL is only known once that server runs: served_url)."""

    env: dict[str, str]
    build: bool
    existing: bool = False  # an index of someone else's: served --read-only, never written
    eval_dataset: str | None = None


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", default="/tmp/pgrecall-web-bench")
    parser.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--scifact", type=int, default=300, help="how many SciFact documents to add as notes")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--screenshots", default=None, help="a folder for the PNGs (docs)")
    parser.add_argument("--reuse", action="store_true", help="serve the home as it is, without indexing again")
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument(
        "--eval",
        metavar="HOME",
        help="serve, as it is, the index `pgrecall eval DATASET` built in the data directory HOME "
        "(the database of --dataset's name on HOME's embedded server)",
    )
    existing.add_argument("--database", metavar="URL", help="serve, as it is, the index in this database")
    return parser


def plan(argv: list[str], environ: dict[str, str]) -> tuple[argparse.Namespace, Plan]:
    """The arguments and what they serve; argparse's one-line error (exit 2) for a combination
    that cannot be run."""
    cli = parser()
    args = cli.parse_args(argv)
    existing = args.eval is not None or args.database is not None
    if existing and args.screenshots:
        cli.error(
            "--screenshots needs the bench's own home (its pages show examples/notes): not with --eval/--database"
        )
    if existing and args.reuse:
        cli.error("--reuse is for the bench's own home: --eval and --database always serve the index as it is")
    if args.queries < 1:
        cli.error("--queries must be at least 1")
    home = Path(args.eval if args.eval is not None else args.home).expanduser().resolve()
    env = {name: value for name, value in environ.items() if name not in PASSED_ON}
    env.update(PGRECALL_HOME=str(home), PGRECALL_LOG_FORMAT="json", PGRECALL_CONFIG=str(home / "none.toml"))
    if args.database is not None:
        env["PGRECALL_DATABASE_URL"] = args.database
    if not existing:
        env.setdefault("PGRECALL_EDITOR_COMMAND", "xdg-open {path}")  # the document screenshot shows its button
    dataset = Path(args.dataset).name if args.eval is not None else None
    return args, Plan(env=env, build=not existing and not args.reuse, existing=existing, eval_dataset=dataset)


def with_database(url: str, name: str) -> str:
    """`url` (a URI or key=value connection string) naming the database `name` instead."""
    return make_conninfo(url, dbname=name)


def served_url(served: Plan) -> str:
    """The database the API will read: the home's own, or its eval database, or --database's."""
    if "PGRECALL_DATABASE_URL" in served.env:
        return served.env["PGRECALL_DATABASE_URL"]
    own = subprocess.run(
        [sys.executable, "-m", "pgrecall.cli", "db", "url"], env=served.env, check=True, capture_output=True, text=True
    ).stdout.strip()  # starts the home's embedded server when it is not running
    return with_database(own, eval_database_name(served.eval_dataset)) if served.eval_dataset else own


def index_size(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        documents, chunks = conn.execute(
            "SELECT (SELECT count(*) FROM pgrecall.documents), (SELECT count(*) FROM pgrecall.chunks)"
        ).fetchone()
    return {"documents": documents, "chunks": chunks}


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


# The query's own GET as the page saw it (fetch start to the response's last byte): the server's
# share of the same keystrokes, measured in the same run.
REQUEST_TIME = """q => {
  const mine = performance.getEntriesByType('resource').filter(r => {
    try { return new URL(r.name).searchParams.get('q') === q; } catch (e) { return false; }
  });
  const last = mine[mine.length - 1];
  return last ? last.responseEnd - last.startTime : null;
}"""


def typing_latency(browser, base: str, queries: list[str]) -> tuple[list[float], list[float]]:
    context = browser.new_context()
    page = context.new_page()
    page.goto(base + "/")
    page.evaluate(MARK_LAST_KEY)
    box = page.locator("#q")
    times = []
    requests = []
    for query in queries:
        box.fill("")
        page.locator('#results .hits[data-q=""]').wait_for(state="attached")
        page.evaluate("() => { window.__bench.painted = []; performance.clearResourceTimings(); }")
        box.press_sequentially(query, delay=60)
        # a CSS string: json.dumps escapes quotes and backslashes as CSS does, but \uXXXX is no CSS escape
        selector = f"#results .hits[data-q={json.dumps(query, ensure_ascii=False)}]"
        page.locator(selector).wait_for(state="attached", timeout=30000)
        page.wait_for_timeout(50)  # the frame after the swap
        last, painted = page.evaluate(
            "q => [window.__bench.last, (window.__bench.painted.find(p => p.q === q) || {}).at]", query
        )
        if painted is not None:
            times.append(painted - last)
            request = page.evaluate(REQUEST_TIME, query)
            if request is not None:
                requests.append(request)
    context.close()
    return times, requests


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


def main(argv: list[str] | None = None) -> int:
    args, chosen = plan(sys.argv[1:] if argv is None else argv, dict(os.environ))

    from playwright.sync_api import sync_playwright

    env = chosen.env
    home = Path(env["PGRECALL_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    dataset = Path(args.dataset)
    if chosen.build:
        build_home(home, dataset, args.scifact, env)
    url = served_url(chosen)
    size = index_size(url)
    if size["chunks"] == 0:
        raise SystemExit(f"web_bench: the index served holds no chunks ({url})")
    if chosen.eval_dataset:
        env = {**env, "PGRECALL_DATABASE_URL": url}
    with open(dataset / "queries.jsonl", encoding="utf-8") as lines:
        claims = [json.loads(line)["text"] for line in lines]
    queries = [" ".join(claim.split()[:6]) for claim in claims[: args.queries]]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "pgrecall.cli", "api", "--port", str(port)]
        + (["--read-only"] if chosen.existing else []),
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
            typed, requested = typing_latency(browser, base, queries)
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
                "chunks": size["chunks"],
                "served": f"eval {chosen.eval_dataset}" if chosen.eval_dataset else args.database or str(home),
                "first_load": weight,
                "as_you_type_ms": {
                    "queries": len(typed),
                    "p50": round(statistics.median(typed), 1),
                    "p95": round(percentile(typed, 95), 1),
                    "debounce_ms": 200,
                },
                "in_page_request_ms": {
                    "requests": len(requested),
                    "p50": round(statistics.median(requested), 1) if requested else None,
                    "p95": round(percentile(requested, 95), 1) if requested else None,
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
