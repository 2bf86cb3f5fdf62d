#!/usr/bin/env bash
# The README's main job: sets up everything (packages, Release build), then runs the benchmark
# experiment and ends with figures and a report:
#   1. scripts/experiment.py: each server configuration (cache_server -t 1,2,4, baseline and
#      optimized when the server has variants) started pinned to CPU 0, the bench_client sweep
#      pinned to CPU 1, one JSON per configuration, figures (graphs/plot.py), REPORT.md;
#   2. scripts/microbench.sh: the cache library's micro-benchmarks into the same directory;
#   3. traces/crosscheck.py --curves: hit ratio against cache size of every evictor, ours beside
#      libCacheSim's (Zipf 0.99 with and without a scan, ~15 s), miss_ratio_curves.json and its
#      figure (graphs/mrc.py); without libcachesim only ours, and REPORT.md says so;
#   4. scripts/profile_server.sh: syscalls, CPU and instructions per request, baseline against
#      optimized, at pipeline depth 1 and 16, into profile/ (skipped with --target).
# Results: results/<timestamp>/ (results/latest points at it). About 6 minutes on 2 cores.
#   bash scripts/experiment.sh [experiment.py options] [-- bench_client options]
#   e.g. --full (longer points, 3 repetitions), --target HOST:PORT, -- --workload zipf
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${1:-}" in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; python scripts/experiment.py --help; exit 0 ;; esac

bash scripts/setup.sh --peers --build release
python scripts/experiment.py "$@" || status=$?
status="${status:-0}"
run_dir="$(readlink -f results/latest)"
if [ "$status" != 130 ] && [ -d "$run_dir" ]; then
  full=0
  for a in "$@"; do [ "$a" = "--full" ] && full=1; [ "$a" = "--" ] && break; done
  if [ "$full" = 1 ]; then REPS=3 MIN_TIME=0.5 bash scripts/microbench.sh "$run_dir"
  else REPS=1 MIN_TIME=0.1 bash scripts/microbench.sh "$run_dir"; fi
  # Without libcachesim the study still runs ours; the JSON (and so REPORT.md) says why.
  rm -f "$run_dir/miss_ratio_curves.skipped"
  if python traces/crosscheck.py --curves --json "$run_dir/miss_ratio_curves.json" > /dev/null; then
    python graphs/mrc.py "$run_dir" > /dev/null || echo "experiment: the miss-ratio figure failed" >&2
  else
    echo "traces/crosscheck.py --curves failed (see the experiment's output)" > "$run_dir/miss_ratio_curves.skipped"
  fi
  target=0
  for a in "$@"; do [ "$a" = "--" ] && break; case "$a" in --target|--target=*) target=1 ;; esac; done
  if [ "$target" = 0 ]; then
    bash scripts/profile_server.sh "$run_dir/profile" > /dev/null \
      || echo "experiment: the server profile failed; REPORT.md goes without it" >&2
  fi
  python scripts/report.py "$run_dir" > /dev/null
fi
echo
echo "Report:  $run_dir/REPORT.md"
echo "Figures: $(ls "$run_dir"/*.png 2>/dev/null | tr '\n' ' ')"
exit "$status"
