"""Two installs of pgrecall on one appended journal, alternating, in one run: ratios a loaded machine keeps.

    .venv/bin/python bench/append_compare.py OLD_PYTHON NEW_PYTHON [--appends 5]

Each interpreter (e.g. a worktree of an earlier commit with its own venv, and this one)
gets a home of its own and the same journal of 300 SciFact abstracts (bench/append_bench.py's);
both index it once, then each append of one more entry is indexed by one and then the other,
so both see the same load. Prints every run (wall seconds, chunks embedded, reused, the
queue's own seconds, load) and the medians of both with their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from append_bench import DEFAULT_CORPUS, entries  # noqa: E402
from processes import as_installed  # noqa: E402

CLI = "import sys; from pgrecall.cli import main; sys.exit(main())"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old_python")
    parser.add_argument("new_python")
    parser.add_argument("--appends", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    pythons = {"old": args.old_python, "new": args.new_python}
    sections = entries(args.corpus, 300 + args.appends)
    work = Path(tempfile.mkdtemp(prefix="pgrecall-compare-"))
    envs, folders = {}, {}
    for name in pythons:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
        env |= {"PGRECALL_HOME": str(work / name / "home"), "PGRECALL_EMBED_BACKEND": "onnx-int8"}
        envs[name] = as_installed(env, pythons[name])
        folders[name] = work / name / "journal"
        folders[name].mkdir(parents=True)
        (folders[name] / "journal.md").write_text("# Journal\n\n" + "\n".join(sections[:300]), encoding="utf-8")

    def index(name: str) -> tuple[float, dict]:
        started = time.perf_counter()
        done = subprocess.run(
            [pythons[name], "-c", CLI, "index", str(folders[name]), "--json"],
            env=envs[name], capture_output=True, text=True,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{name}: {done.stderr.strip()[-500:]}")
        return seconds, json.loads(done.stdout.strip().splitlines()[-1])

    walls: dict[str, list[float]] = {name: [] for name in pythons}
    queues: dict[str, list[float]] = {name: [] for name in pythons}
    try:
        for name in pythons:
            print(f"{name} first index {index(name)[0]:.1f} s", flush=True)
        for section in sections[300:]:
            for name in pythons:
                with (folders[name] / "journal.md").open("a", encoding="utf-8") as file:
                    file.write("\n" + section)
                seconds, summary = index(name)
                walls[name].append(seconds)
                queues[name].append(summary["seconds"])
                print(
                    f"{name} {seconds:.2f} s: {summary['chunks_embedded']} embedded, {summary['chunks_reused']} "
                    f"reused, queue {summary['seconds']} s, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        for name in pythons:
            subprocess.run([pythons[name], "-c", CLI, "db", "stop"], env=envs[name], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    old, new = (statistics.median(walls[n]) for n in pythons)
    old_queue, new_queue = (statistics.median(queues[n]) for n in pythons)
    print(f"median append wall: old {old:.2f} s, new {new:.2f} s, new/old {new / old:.3f}")
    print(f"median queue work: old {old_queue:.2f} s, new {new_queue:.2f} s, new/old {new_queue / old_queue:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
