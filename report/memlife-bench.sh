#!/bin/sh
# remember p50, base commit then this branch, in one run on the same machine
for tree in /tmp/memlife-base /work/wt-memlife; do
  echo "== $tree"; uptime
  (cd $tree && .venv/bin/python bench/memory_bench.py --memories 40 --processes 4 --distinct 2)
done
uptime
