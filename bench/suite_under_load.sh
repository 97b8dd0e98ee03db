#!/usr/bin/env bash
# The whole suite RUNS times in a row (default 5) beside a CPU hog: `pgrecall eval` of SciFact under
# torch, in a fresh home each time it ends. Each run has its own --basetemp (two pytest sessions at
# once delete each other's temporary folders otherwise). Prints, per run, its exit code, seconds,
# load average and pytest's last line; the logs stay in OUT.
#
#     bench/suite_under_load.sh [CHECKOUT] [RUNS] [OUT]    (CHECKOUT with its own .venv; default .)
cd "${1:-.}" || exit 2
runs=${2:-5}
out=${3:-/tmp/pgrecall-suite-under-load}
mkdir -p "$out"
hog_home=$(mktemp -d)
hog() {
  while true; do
    rm -rf "$hog_home/home"
    PGRECALL_HOME="$hog_home/home" PGRECALL_EMBED_BACKEND=torch .venv/bin/pgrecall eval ../shared/data/scifact \
      --mode hybrid --fresh --json >/dev/null 2>&1
  done
}
hog &
hog_pid=$!
trap 'kill $hog_pid 2>/dev/null; pkill -f "pgrecall eval ../shared/data/scifact --mode hybrid --fresh"; rm -rf "$hog_home"' EXIT
echo "commit $(git rev-parse --short HEAD), $runs runs beside the hog" | tee "$out/summary.txt"
for run in $(seq 1 "$runs"); do
  started=$(date +%s)
  rm -rf "$out/basetemp"
  .venv/bin/python -m pytest -q -p no:cacheprovider --basetemp="$out/basetemp" > "$out/run$run.log" 2>&1
  code=$?
  echo "run $run rc=$code $(( $(date +%s) - started ))s load=$(cut -d' ' -f1-3 /proc/loadavg) $(tail -1 "$out/run$run.log")" \
    | tee -a "$out/summary.txt"
done
