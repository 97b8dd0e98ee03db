#!/bin/sh
# remember p50: main (the branch's base, 6df2c48) then this branch, in one run on the same machine
for tree in /tmp/history-base /work/wt-history; do
  echo "== $tree $(git -C $tree rev-parse --short HEAD)"; uptime
  (cd $tree && nice -n 19 .venv/bin/python bench/memory_bench.py --memories 40 --processes 4 --distinct 2)
done
uptime
