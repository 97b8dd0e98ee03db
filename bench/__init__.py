"""pgrecall's benchmarks: named suites over the scripts of this folder, one entry point.

    python -m bench list
    python -m bench run SUITE [--size tiny|standard] [--against CHECKOUT] [--out DIR] [--data DIR]

Each script still runs alone (`python bench/warm_bench.py --runs 20`); a suite runs them as
processes, each in a PGRECALL_HOME of its own, and writes one JSON file outside the tree.
"""
