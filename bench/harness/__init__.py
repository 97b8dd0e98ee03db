"""What every benchmark shares: homes, processes, corpora, timing, checkouts and results.

The scripts import it as `harness` (their folder is the first entry of sys.path when run as
`python bench/NAME.py`); the entry point (`python -m bench`) as `bench.harness`.
"""
