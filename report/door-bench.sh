#!/bin/sh
# remember p50: the parent commit (6df2c48, checked out in /tmp/door-base with its own venv) and
# branch door, alternated twice in one run on the same machine (2 cores shared with other work:
# alternating spreads the load's drift over both). The door runs in full (the new text embedded,
# its nearest memories queried) at a threshold of 1, so that the bench's templated texts (about one
# in five of which the default 0.75 refuses as a near-duplicate of an earlier one) are all saved
# and both trees do the same work. On the branch, --door also times the check on and off in turn
# within one process, the figure that the load's drift cannot skew.
# The base tree, made once:
#   git worktree add --detach /tmp/door-base 6df2c48 && cp -a /work/main/.venv /tmp/door-base/.venv
#   (cd /tmp/door-base && .venv/bin/python -m pip install -q --no-deps -e .)
for round in 1 2; do
  echo "== /tmp/door-base round $round"; uptime
  (cd /tmp/door-base && PGRECALL_MEMORY_DUPLICATE_SIMILARITY=1 nice -n 19 .venv/bin/python bench/memory_bench.py \
      --memories 60 --processes 4 --distinct 2 2>/dev/null)
  echo "== /work/wt-door round $round"; uptime
  (cd /work/wt-door && PGRECALL_MEMORY_DUPLICATE_SIMILARITY=1 nice -n 19 .venv/bin/python bench/memory_bench.py \
      --memories 60 --processes 4 --distinct 2 --door 2>/dev/null)
done
uptime
