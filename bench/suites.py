"""The named suites: which scripts each runs, with which arguments at each size.

An argument may name a corpus (`{scifact}`, `{germanquad}`, `{xquad-de-en}`, `{locomo-dev}`: its
folder, or at size tiny a cut of it), the step's home (`{home}`), the examples (`{notes}`), and,
for the scripts that alternate between two installs themselves, the other checkout
(`{against_root}`, `{against_python}`, `{against_commit}`). The standard arguments are those
docs/benchmarks.md reports figures for; tiny runs each script on a few documents, to check that it
runs, not to measure.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Step:
    script: str  # a file of bench/, run as `PYTHON bench/SCRIPT ARGS`
    tiny: tuple[str, ...] | None  # None: no small variant (the step runs at size standard only)
    standard: tuple[str, ...] = ()
    home: str = ""  # steps naming one home share it within a round (default: a home of the step's own)
    prepare: tuple[tuple[str, ...], ...] = ()  # pgrecall commands run first in the home, untimed
    # The script alternates between two installs itself: given --against, it runs once, on this
    # checkout, with these arguments added, instead of once per checkout.
    against: tuple[str, ...] | None = None
    needs_against: bool = False  # the script compares two checkouts and has nothing to do alone

    @property
    def name(self) -> str:
        return self.script.removesuffix(".py")


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    measures: str
    steps: tuple[Step, ...]


EVAL_SCIFACT = (("eval", "{scifact}", "--mode", "hybrid"),)

SUITES = {
    suite.name: suite
    for suite in (
        Suite(
            "quick",
            "a first look in minutes (make bench): indexing against the raw model, and `pgrecall search` "
            "end to end with and without serve",
            (
                Step(
                    "index_bench.py",
                    ("--corpus", "{scifact}", "--limit", "30", "--queries", "5", "--json"),
                    ("--corpus", "{scifact}", "--limit", "600", "--queries", "100", "--json"),
                ),
                Step("warm_bench.py", ("--runs", "3", "--home", "{home}"), ("--runs", "60", "--home", "{home}")),
            ),
        ),
        Suite(
            "index",
            "indexing: throughput against the raw model, embedding backends, an entry appended to a journal, "
            "Claude Code session folders indexed twice, secret redaction's false positives and cost",
            (
                Step(
                    "index_bench.py",
                    ("--corpus", "{scifact}", "--limit", "30", "--queries", "5", "--json"),
                    ("--corpus", "{scifact}", "--limit", "600", "--queries", "100", "--json"),
                ),
                Step(
                    "backend_bench.py",
                    ("--corpus", "{scifact}", "--documents", "10"),
                    ("--corpus", "{scifact}", "--documents", "150", "--repeats", "3"),
                ),
                Step(
                    "append_bench.py",
                    ("--corpus", "{scifact}", "--entries", "20", "--appends", "1"),
                    ("--corpus", "{scifact}", "--appends", "9"),
                ),
                Step(
                    "sessions_bench.py",
                    ("--sessions", "3", "--records", "300", "--home", "{home}"),
                    (
                        "--home",
                        "{home}",
                    ),
                ),
                Step(
                    "redaction_bench.py",
                    ("--corpus", "{scifact}", "--limit", "30", "--json"),
                    ("--corpus", "{scifact}", "--json"),
                ),
            ),
        ),
        Suite(
            "write",
            "the write path's cost per document with the model's time taken out",
            (
                Step(
                    "write_bench.py",
                    ("--corpus", "{scifact}", "--documents", "40", "--batch", "10", "--json"),
                    ("--corpus", "{scifact}", "--documents", "2000", "--writers", "1,2,4", "--json"),
                ),
            ),
        ),
        Suite(
            "search",
            "search latency: cold `pgrecall search` processes, with and without serve's warm socket, the "
            "keyword arm against another revision's, HTTP at 1 and 8 clients",
            (
                Step(
                    "cold_bench.py",
                    ("--backends", "onnx-int8", "--runs", "2", "--json"),
                    ("--backends", "torch,onnx-int8", "--runs", "9", "--json"),
                    against=("--before", "{against_commit}"),
                ),
                Step("warm_bench.py", ("--runs", "3", "--home", "{home}"), ("--runs", "60", "--home", "{home}")),
                Step(
                    "keyword_bench.py",
                    ("--dataset", "{scifact}", "--rounds", "1", "--end-to-end", "--json"),
                    ("--dataset", "{scifact}", "--rounds", "3", "--end-to-end", "--json"),
                    home="eval",
                    prepare=EVAL_SCIFACT,
                ),
                Step(
                    "http_bench.py",
                    ("--dataset", "{scifact}", "--requests", "10"),
                    (
                        "--dataset",
                        "{scifact}",
                    ),
                    home="eval",
                    prepare=EVAL_SCIFACT,
                ),
            ),
        ),
        Suite(
            "service",
            "`pgrecall serve`: time to READY=1, freshness and restart on thousands of notes, a session "
            "followed while it is written, a session's end to searchable",
            (
                Step("ready_bench.py", ("--runs", "1"), ("--runs", "3")),
                Step("service_bench.py", ("--edits", "2"), ("--edits", "20"), home="eval", prepare=EVAL_SCIFACT),
                Step("live_session_bench.py", ("--lines", "40", "--burst", "10", "--pause", "0.3"), ()),
                Step("session_end_bench.py", ("--mode", "serve", "--runs", "2"), ("--mode", "serve", "--runs", "10")),
            ),
        ),
        Suite(
            "mcp",
            "`pgrecall mcp`: from cold to `initialize` and a first search_memory, resident memory of "
            "several servers beside serve",
            (
                Step(
                    "mcp_cold_bench.py",
                    ("--starts", "1", "--delay", "1", "--home", "{home}"),
                    ("--starts", "5", "--home", "{home}"),
                ),
                Step(
                    "mcp_memory_bench.py",
                    ("--servers", "2", "--home", "{home}"),
                    (
                        "--home",
                        "{home}",
                    ),
                ),
            ),
        ),
        Suite(
            "memory",
            "memories: remember to searchable with and without a service, concurrent remembers, and the "
            "near-duplicate threshold on hand-written pairs",
            (
                Step(
                    "memory_bench.py",
                    ("--memories", "4", "--processes", "2", "--distinct", "1"),
                    ("--memories", "40", "--processes", "4", "--distinct", "2"),
                ),
                Step("duplicate_threshold.py", (), ()),
            ),
        ),
        Suite(
            "hook",
            "Claude Code's prompt hook: end to end with and without serve, its relevance threshold, and "
            "the tokens it injects against another checkout's",
            (
                Step("hook_bench.py", ("--runs", "4", "--json"), ("--runs", "100", "--json")),
                Step("hook_bench.py", ("--runs", "4", "--serve", "--json"), ("--runs", "100", "--serve", "--json")),
                Step("hook_threshold.py", ("--data", "{scifact}", "--json"), ("--data", "{scifact}", "--json")),
                Step(
                    "hook_tokens.py",
                    ("--json",),
                    ("--json",),
                    against=("--before", "{against_root}/.venv/bin/pgrecall"),
                    needs_against=True,
                ),
            ),
        ),
        Suite(
            "web",
            "the web page in headless Chromium (first-load weight, search as you type) and the memories' "
            "forms against another checkout (needs `make browser`)",
            (
                Step(
                    "web_bench.py",
                    ("--home", "{home}", "--dataset", "{scifact}", "--scifact", "20", "--queries", "3"),
                    ("--home", "{home}", "--dataset", "{scifact}"),
                    home="web",
                ),
                Step(
                    "web_memories_bench.py",
                    ("--home", "{home}", "--rounds", "1", "--reads", "3", "--writes", "2"),
                    (
                        "--home",
                        "{home}",
                    ),
                    home="web",
                    against=("--against", "{against_root}"),
                    needs_against=True,
                ),
            ),
        ),
        Suite(
            "quality",
            "ranking quality on the eval sets: how the hybrid figure depends on the fusion, fusion on "
            "one-language and mixed-language sets",
            (
                Step(
                    "fusion_bench.py",
                    (
                        "--dataset",
                        "{scifact}",
                    ),
                    (
                        "--dataset",
                        "{scifact}",
                    ),
                    home="eval",
                    prepare=EVAL_SCIFACT,
                ),
                Step(
                    "mixed_language_fusion.py",
                    ("{xquad-de-en}", "--json"),
                    ("{xquad-de-en}", "--json"),
                    home="eval",
                    prepare=(("eval", "{xquad-de-en}", "--mode", "hybrid"),),
                ),
            ),
        ),
        Suite(
            "models",
            "embedding models: a second model of another width beside the bundled one, and "
            "multilingual-e5-small as pgrecall runs it against its own engine",
            (
                Step(
                    "models_bench.py",
                    ("--dataset", "{scifact}", "--limit", "20", "--queries", "5", "--hidden", "64", "--json"),
                    ("--dataset", "{scifact}", "--limit", "1000", "--queries", "100", "--json"),
                ),
                Step(
                    "e5_bench.py",
                    None,
                    (
                        "--data",
                        "{data}",
                    ),
                ),
            ),
        ),
        Suite(
            "scale",
            "100,000 to 1,000,000 chunks: search latency, HNSW recall, write cost and disk use, recall on "
            "near-duplicates, what one write costs and where the time goes",
            (
                Step(
                    "scale_bench.py",
                    None,
                    ("--chunks", "1000000", "--growth", "mix", "--dataset", "{scifact}", "--json"),
                    home="scale",
                    prepare=EVAL_SCIFACT,
                ),
                Step(
                    "duplicate_recall.py",
                    None,
                    ("--database", "pgrecall_scale_bench_mix", "--dataset", "{scifact}"),
                    home="scale",
                ),
                Step(
                    "write_cost.py",
                    None,
                    ("--growth", "mix", "--writes", "40", "--passes", "2", "--json"),
                    home="scale",
                ),
            ),
        ),
    )
}
