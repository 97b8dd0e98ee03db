"""The benchmarks' entry point as a user runs it (`python -m bench`, a process): its list of suites,
and one suite at size tiny end to end on a few SciFact documents (the real embedded database,
the real model), its JSON written outside the tree. Figures are not checked: timing is the
machine's, not the code's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = Path("/work/shared/data/scifact")
SUITES = ("quick", "index", "write", "search", "service", "mcp", "memory", "hook", "web", "quality", "models", "scale")


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_list_names_each_suite_what_it_measures_and_scripts_that_exist():
    done = bench("list")
    assert done.returncode == 0, done.stderr
    names = [line for line in done.stdout.splitlines() if line and not line.startswith(" ")]
    assert names == list(SUITES)
    scripts = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("    - ")]
    assert scripts and all((ROOT / script).is_file() for script in scripts)
    assert "bench/write_bench.py --corpus {scifact}" in done.stdout


def small_scifact(folder: Path, documents: int = 12) -> Path:
    """A BEIR folder named scifact: the first `documents` abstracts, and the test claims judged on them."""
    kept = SCIFACT.joinpath("corpus.jsonl").read_text(encoding="utf-8").splitlines()[:documents]
    ids = {json.loads(line)["_id"] for line in kept}
    judged = [
        row for row in SCIFACT.joinpath("qrels", "test.tsv").read_text().splitlines()[1:] if row.split("\t")[1] in ids
    ]
    queries = {row.split("\t")[0] for row in judged}
    claims = [
        line
        for line in SCIFACT.joinpath("queries.jsonl").read_text().splitlines()
        if json.loads(line)["_id"] in queries
    ]
    (folder / "scifact" / "qrels").mkdir(parents=True)
    (folder / "scifact" / "corpus.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    (folder / "scifact" / "queries.jsonl").write_text("\n".join(claims) + "\n", encoding="utf-8")
    (folder / "scifact" / "qrels" / "test.tsv").write_text("\n".join(["query-id\tcorpus-id\tscore", *judged]) + "\n")
    return folder


@pytest.mark.skipif(not SCIFACT.is_dir(), reason=f"{SCIFACT} is not on this machine (corpora are never downloaded)")
def test_a_tiny_suite_runs_its_script_in_a_home_of_its_own_and_writes_json_outside_the_tree(tmp_path):
    data = small_scifact(tmp_path / "data")
    done = bench(
        "run",
        "write",
        "--size",
        "tiny",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "results"),
        "--work",
        str(tmp_path / "work"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [written] = (tmp_path / "results").glob("write-*.json")
    assert str(written) in done.stdout
    payload = json.loads(written.read_text(encoding="utf-8"))
    assert {
        "suite",
        "measures",
        "size",
        "rounds",
        "started",
        "finished",
        "checkouts",
        "data",
        "machine",
        "steps",
        "skipped",
    } <= set(payload)
    assert (payload["suite"], payload["size"], payload["rounds"], payload["skipped"]) == ("write", "tiny", 1, {})
    assert payload["checkouts"]["this"]["root"] == str(ROOT)
    [(key, step)] = payload["steps"].items()
    assert key == "0-write_bench" and step["script"] == "bench/write_bench.py"
    cut = tmp_path / "work" / "write" / "corpora" / "scifact"  # a tiny run's cut: here all 12 abstracts
    assert step["args"][:2] == ["--corpus", str(cut)]
    assert len((cut / "corpus.jsonl").read_text(encoding="utf-8").splitlines()) == 12
    [run] = step["sides"]["this"]["runs"]
    assert run["returncode"] == 0 and run["round"] == 0
    assert {"p50", "p95", "n"} <= set(step["sides"]["this"]["seconds"])
    assert run["result"]["documents"] == 12  # the script's own JSON, kept whole
    assert step["sides"]["this"]["figures"]["documents"] == 12
    home = tmp_path / "work" / "write" / "round0-this" / "0-write_bench"
    assert home.is_dir() and not any(ROOT.glob("write-*.json"))


def test_results_inside_the_checkout_are_refused_before_anything_runs(tmp_path):
    done = bench("run", "write", "--size", "tiny", "--data", str(tmp_path), "--out", str(ROOT / "results"))
    assert done.returncode != 0
    assert "outside the tree" in done.stderr and not (ROOT / "results").exists()


def test_a_missing_corpus_stops_the_run_and_names_the_folder(tmp_path):
    done = bench("run", "write", "--size", "tiny", "--data", str(tmp_path), "--out", str(tmp_path / "results"))
    assert done.returncode != 0
    assert f"{tmp_path / 'scifact'}: no such corpus" in done.stderr
    assert "never downloaded" in done.stderr
