"""A small BEIR-format dataset: six documents, four judged queries and one unjudged."""

import json
from pathlib import Path

DOCUMENTS = {
    "d1": (
        "Sourdough starters",
        "A sourdough starter is a culture of wild yeast and lactobacilli fed with flour and water.",
    ),
    "d2": ("Tidal energy", "Tidal turbines convert the kinetic energy of moving sea water into electricity."),
    "d3": ("Glacier retreat", "Mountain glaciers retreat as summer melt exceeds winter snow accumulation."),
    "d4": ("Error E-4711", "The ledger export fails with error code E-4711 when storage throttles reads."),
    "d5": ("Error E-4712", "Invoice rendering fails with error code E-4712 when a template variable is missing."),
    "d6": ("Beekeeping", "Honey bees overwinter as a cluster that shivers to keep the queen warm."),
}
QUERIES = {
    "q1": "how do I feed a sourdough starter",
    "q2": "electricity from tides",
    "q3": "E-4711",
    "q4": "bees in winter",
}
QRELS = {"q1": "d1", "q2": "d2", "q3": "d4", "q4": "d6"}


def write_dataset(folder: Path) -> Path:
    """The dataset's corpus.jsonl, queries.jsonl and qrels/test.tsv in `folder`."""
    (folder / "qrels").mkdir(parents=True)
    with open(folder / "corpus.jsonl", "w") as out:
        for doc_id, (title, text) in DOCUMENTS.items():
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as out:
        for query_id, text in {**QUERIES, "unjudged": "nothing"}.items():
            out.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in QRELS.items())
    )
    return folder
