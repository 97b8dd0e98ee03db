"""One entry appended to a long journal: what `pgrecall index` embeds again, and how long it takes.

    .venv/bin/python bench/append_bench.py [--corpus ../shared/data/scifact] [--entries 300]
        [--backend onnx-int8|onnx|torch] [--appends 5]

Writes one Markdown journal of the first `--entries` SciFact abstracts, each a
`## Entry N: title` section, into a temporary folder with its own embedded
database (PGRECALL_HOME), runs `pgrecall index` on it as a subprocess (the
user's command), appends the next abstract as one more entry and runs
`pgrecall index` again, `--appends` times (one more entry each time). Prints the
first run's and the median append run's wall time (process start to exit), chunks
embedded and reused, the ratio of the two times, and the wall time of a run that
finds the file unchanged (what process start, model-free, costs).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.homes import machine_environment
from harness.processes import as_installed

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "scifact"
CLI = "import sys; from pgrecall.cli import main; sys.exit(main())"


def entries(corpus: Path, count: int) -> list[str]:
    sections = []
    with open(corpus / "corpus.jsonl", encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if number > count:
                break
            entry = json.loads(line)
            title = " ".join(entry.get("title", "").split()) or entry["_id"]
            sections.append(f"## Entry {number}: {title}\n\n{entry['text']}\n")
    return sections


def index(folder: Path, env: dict[str, str]) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI, "index", str(folder), "--json"], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pgrecall index: {done.stderr.strip()[-500:]}")
    return seconds, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--entries", type=int, default=300)
    parser.add_argument("--backend", default="onnx-int8")
    parser.add_argument("--appends", type=int, default=5)
    args = parser.parse_args()

    sections = entries(args.corpus, args.entries + args.appends)
    work = Path(tempfile.mkdtemp(prefix="pgrecall-append-"))
    env = machine_environment()
    env |= {"PGRECALL_HOME": str(work / "home"), "PGRECALL_EMBED_BACKEND": args.backend}
    env = as_installed(env, sys.executable)
    folder = work / "journal"
    folder.mkdir()
    journal = folder / "journal.md"
    try:
        journal.write_text("# Journal\n\n" + "\n".join(sections[: args.entries]), encoding="utf-8")
        first_seconds, first = index(folder, env)
        appended = []
        for section in sections[args.entries :]:
            with journal.open("a", encoding="utf-8") as file:
                file.write("\n" + section)
            appended.append(index(folder, env))
        unchanged_seconds, _ = index(folder, env)
    finally:
        subprocess.run([sys.executable, "-c", CLI, "db", "stop"], env=env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    second_seconds, second = sorted(appended, key=lambda run: run[0])[len(appended) // 2]
    for label, seconds, summary in (("first index", first_seconds, first), ("after append", second_seconds, second)):
        print(
            f"{label:<13} {summary['chunks']:5} chunks: {summary['chunks_embedded']:5} embedded, "
            f"{summary['chunks_reused']:5} reused; wall {seconds:6.2f} s (index {summary['seconds']} s)"
        )
    print(f"append walls: {', '.join(f'{seconds:.2f}' for seconds, _ in appended)} s (median above)")
    print(f"unchanged     wall {unchanged_seconds:6.2f} s")
    print(f"append / first wall time: {second_seconds / first_seconds:.3f} ({args.backend})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
