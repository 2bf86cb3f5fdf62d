#!/usr/bin/env bash
# The README's main job: sets up everything (packages, Release build), then regenerates the load
# studies (docs/studies.md), each with its published numbers beside ours, the capacity at an SLO
# and a measured bottleneck, ending with figures and one REPORT.md:
#   crank        the multithreaded cache server (scripts/experiment.py: cache_server -t 1,2,4,
#                baseline and optimized, swept over client threads; nginx beside it; the cache
#                micro-benchmarks; the hit-ratio curves beside libCacheSim; the server profile;
#                REPORT.md by scripts/report.py), then scripts/studies/crank.py;
#   kv-db        a cache in front of a database: RocksDB and PostgreSQL, write-through;
#   leaderboard  leaderboard services: four modes from database only to fully cached;
#   threadpool   server threads against 100..3,000 concurrent connections.
# Results: results/<timestamp>/ (results/latest points at it); each study writes its own folder
# and section. The quick form of --study all takes about 22 minutes on 2 cores; --full runs the
# long form (the published grids, longer points, 5 rounds). The headlines (optimized ÷ baseline,
# ÷ nginx) are measured in interleaved rounds (--rounds, default 3) with a 95% interval and a
# verdict (met, missed, within noise): REPORT.md's headline and run.json's "headline".
#   bash scripts/experiment.sh [--study NAME|all] [--full] [experiment.py options] [-- bench_client options]
#   e.g. --study kv-db, --study crank --target HOST:PORT, --study crank -- --workload zipf
# experiment.py options and bench_client options apply to crank only.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STUDIES_ALL=(crank kv-db leaderboard threadpool)
case "${1:-}" in -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; python -m scripts.experiment --help; exit 0 ;; esac

study=all full=0 crank_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --study) [ $# -ge 2 ] || { echo "experiment.sh: --study needs a name: ${STUDIES_ALL[*]} or all" >&2; exit 2; }
             study="$2"; shift 2 ;;
    --study=*) study="${1#--study=}"; shift ;;
    --) crank_args+=("$@"); break ;;
    *) [ "$1" = --full ] && full=1; crank_args+=("$1"); shift ;;
  esac
done
if [ "$study" = all ]; then studies=("${STUDIES_ALL[@]}")
else
  case " ${STUDIES_ALL[*]} " in *" $study "*) studies=("$study") ;;
    *) echo "experiment.sh: unknown study '$study' (expected ${STUDIES_ALL[*]} or all)" >&2; exit 2 ;; esac
fi
form=(--quick); [ "$full" = 1 ] && form=(--full)

bash scripts/setup.sh --peers --build release
status=0
if [ "${studies[0]}" = crank ]; then
  python -m scripts.experiment "${crank_args[@]}" || status=$?
  run_dir="$(readlink -f results/latest)"
  if [ "$status" != 130 ] && [ -d "$run_dir" ]; then
    if [ "$full" = 1 ]; then REPS=3 MIN_TIME=0.5 bash scripts/microbench.sh "$run_dir"
    else REPS=1 MIN_TIME=0.1 SERVER_MEMORY="s3fifo s3fifo:fit90" bash scripts/microbench.sh "$run_dir"; fi
    # Without libcachesim the study still runs ours; the JSON (and so REPORT.md) says why.
    rm -f "$run_dir/miss_ratio_curves.skipped"
    if python traces/crosscheck.py --curves --json "$run_dir/miss_ratio_curves.json" > /dev/null; then
      python graphs/mrc.py "$run_dir" > /dev/null || echo "experiment: the miss-ratio figure failed" >&2
    else
      echo "traces/crosscheck.py --curves failed (see the experiment's output)" > "$run_dir/miss_ratio_curves.skipped"
    fi
    target=0
    for a in "${crank_args[@]}"; do [ "$a" = "--" ] && break; case "$a" in --target|--target=*) target=1 ;; esac; done
    if [ "$target" = 0 ]; then
      python -m scripts.profile_server "$run_dir/profile" > /dev/null \
        || echo "experiment: the server profile failed; REPORT.md goes without it" >&2
      python -m scripts.studies.crank --out "$run_dir/crank" --run "$run_dir" "${form[@]}" \
        || { echo "scripts/studies/crank.py failed (see its output)" > "$run_dir/crank/FAILED"; status=1; }
    fi
    python -m scripts.report "$run_dir" > /dev/null
  fi
  studies=("${studies[@]:1}")
else
  stamp="$(date +%Y%m%d-%H%M%S)"
  mkdir -p "results/$stamp"
  ln -sfn "$stamp" results/latest
  run_dir="$(readlink -f results/latest)"
fi
if [ "$status" != 130 ] && [ -d "$run_dir" ]; then
  for s in "${studies[@]}"; do
    mkdir -p "$run_dir/$s"
    rm -f "$run_dir/$s/FAILED"
    echo "[experiment] study $s" >&2
    python -m "scripts.studies.${s//-/_}" --out "$run_dir/$s" "${form[@]}" || {
      rc=$?
      echo "scripts/studies/${s//-/_}.py exited with status $rc (see its output)" > "$run_dir/$s/FAILED"
      status=1
      [ "$rc" = 130 ] && { status=130; break; }
    }
  done
  python -m scripts.studies.assemble "$run_dir" > /dev/null
fi
echo
echo "Report:  $run_dir/REPORT.md"
echo "Figures: $(find "$run_dir" -maxdepth 2 -name '*.png' 2>/dev/null | sort | tr '\n' ' ')"
exit "$status"
