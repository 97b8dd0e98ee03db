"""The bench harness's pure parts: the cut of a BEIR corpus, figures and ratios of two runs, the ABBA
order of checkouts, what a script printed, and where results may go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.harness import corpora, results, timing
from bench.harness.checkouts import Checkout
from bench.runner import parse_output, side_order
from bench.suites import SUITES

ROOT = Path(__file__).resolve().parents[2]


def beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    rows = [{"_id": f"d{n}", "title": f"t{n}", "text": f"text {n}"} for n in range(10)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": q}) + "\n" for q in "abc"))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na\td7\t1\nb\td8\t1\nb\td9\t1\nc\td1\t1\n")
    return folder


def test_a_cut_keeps_the_first_judged_queries_their_documents_and_the_first_others(tmp_path):
    cut = corpora.cut(beir(tmp_path / "scifact"), tmp_path / "cut" / "scifact", documents=4, queries=2)
    documents = [json.loads(line)["_id"] for line in (cut / "corpus.jsonl").read_text().splitlines()]
    assert documents == ["d7", "d8", "d9", "d0"]  # the judged ones first, then the corpus's first
    assert [json.loads(line)["_id"] for line in (cut / "queries.jsonl").read_text().splitlines()] == ["a", "b"]
    assert (cut / "qrels" / "test.tsv").read_text().splitlines()[1:] == ["a\td7\t1", "b\td8\t1", "b\td9\t1"]


def test_a_missing_corpus_is_named_and_never_fetched(tmp_path):
    with pytest.raises(corpora.MissingCorpus, match="never downloaded"):
        corpora.corpus("scifact", tmp_path)


def test_figures_are_every_number_by_path_and_ratios_those_both_runs_have():
    this = results.median_figures([{"a": {"p50": 2.0}, "n": [1, 3], "ok": True}, {"a": {"p50": 4.0}, "n": [1, 3]}])
    assert this == {"a.p50": 3.0, "n.0": 1.0, "n.1": 3.0}
    assert results.ratios(this, {"a.p50": 6.0, "n.0": 0.0}) == {"a.p50": 0.5}


def test_rounds_alternate_abba():
    this, other = (Checkout(side, ROOT, "python", "c") for side in ("this", "against"))
    assert [side_order([this, other], n)[0].side for n in range(4)] == ["this", "against", "this", "against"]


def test_a_scripts_json_is_all_its_output_or_its_last_json_line():
    assert parse_output('{"a": 1}\n') == {"a": 1}
    assert parse_output('indexing...\n{"a": 1}\n') == {"a": 1}
    assert parse_output("a table\n") is None


def test_p95_is_the_nearest_rank():
    assert timing.percentile(list(range(1, 101)), 95) == 95
    assert timing.summary([3.0, 1.0, 2.0]) == {"p50": 2.0, "p95": 3.0, "min": 1.0, "max": 3.0, "n": 3}


def test_results_inside_the_checkout_are_refused(tmp_path):
    assert results.results_dir(tmp_path) == tmp_path.resolve()
    with pytest.raises(results.ResultsInsideTree):
        results.results_dir(ROOT / "results")


def test_every_suite_names_scripts_of_bench():
    for suite in SUITES.values():
        assert suite.measures and suite.steps
        assert all((ROOT / "bench" / step.script).is_file() for step in suite.steps)
