#!/usr/bin/env bash
# The README's main job: sets up everything, builds Release, runs the experiment and writes a
# report under results/<timestamp>/ (results/latest points at the newest run).
#
# Today the experiment is the cache library's micro-benchmarks (optimizations/):
#   memory per item at 1M items, hit ratio per evictor on Zipf(0.99) with and without a scan,
#   get/set throughput per evictor x lock scheme x shards at 1 and 2 threads.
# It ends by printing results/<timestamp>/MICROBENCH.md.
#   REPS=N        repetitions of each throughput point (default 3; the report uses the median)
#   MIN_TIME=S    minimum seconds per throughput point (default 0.2)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
REPS="${REPS:-3}"
MIN_TIME="${MIN_TIME:-0.2}"
case "$REPS" in ''|*[!0-9]*|0) echo "experiment.sh: REPS must be a positive integer" >&2; exit 2 ;; esac

bash scripts/setup.sh --build release

stamp="$(date +%Y%m%d-%H%M%S)"
out="results/$stamp"
mkdir -p "$out"
bin="build/release/optimizations"
log() { echo "[experiment $(date +%H:%M:%S)] $*" >&2; }

{
  echo "{"
  echo "  \"date\": \"$(date -Is)\","
  echo "  \"git_revision\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\","
  echo "  \"cpu\": \"$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)\","
  echo "  \"cores\": $(nproc),"
  echo "  \"kernel\": \"$(uname -r)\""
  echo "}"
} > "$out/meta.json"

log "memory per item (1M items, fresh process per store)"
"$bin/memory_per_item" --json > "$out/memory_per_item.jsonl"
log "hit ratio per evictor (pinned to CPU 0)"
taskset -c 0 "$bin/hit_ratio_bench" --benchmark_out="$out/hit_ratio.json" \
  --benchmark_out_format=json > /dev/null
log "throughput: evictor x lock x shards x {1,2} threads, $REPS repetition(s) of ${MIN_TIME}s"
"$bin/cache_throughput_bench" --benchmark_repetitions="$REPS" --benchmark_min_time="$MIN_TIME" \
  --benchmark_out="$out/cache_throughput.json" --benchmark_out_format=json > /dev/null

python optimizations/report.py "$out"
ln -sfn "$stamp" results/latest
log "done: $out/MICROBENCH.md"
