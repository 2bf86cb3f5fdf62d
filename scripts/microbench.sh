#!/usr/bin/env bash
# The cache library's micro-benchmarks (optimizations/) into one results directory:
#   memory per item at 1M items (the library, and through cache_server over HTTP), hit ratio per evictor on Zipf(0.99) with and without a scan,
#   get/set throughput per evictor x lock scheme x shards at 1 and 2 threads,
# then MICROBENCH.md (optimizations/report.py) beside them.
#   scripts/microbench.sh [RESULTS_DIR]   default: a new results/<timestamp>-micro/
#   REPS=N        repetitions of each throughput point (default 3; the report uses the median)
#   MIN_TIME=S    minimum seconds per throughput point (default 0.2)
#   SERVER_MEMORY="CONFIGS"  optimizations/server_memory.sh's configurations (default
#                 "s3fifo clock s3fifo:fit90 clock:fit90"; the experiment's quick form: the default
#                 evictor's two, "s3fifo s3fifo:fit90")
# Expects build/release (scripts/setup.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
REPS="${REPS:-3}"
MIN_TIME="${MIN_TIME:-0.2}"
case "$REPS" in ''|*[!0-9]*|0) echo "microbench.sh: REPS must be a positive integer" >&2; exit 2 ;; esac
out="${1:-results/$(date +%Y%m%d-%H%M%S)-micro}"
mkdir -p "$out"
bin="build/release/optimizations"
[ -x "$bin/memory_per_item" ] || { echo "microbench.sh: $bin is not built (bash scripts/setup.sh)" >&2; exit 2; }
log() { echo "[microbench $(date +%H:%M:%S)] $*" >&2; }

log "memory per item (1M items, fresh process per store)"
"$bin/memory_per_item" --json > "$out/memory_per_item.jsonl"
if command -v wrk > /dev/null && [ -x build/release/server/cache_server ]; then
  read -r -a memory_configs <<< "${SERVER_MEMORY:-s3fifo clock s3fifo:fit90 clock:fit90}"
  log "memory per item through the server (1M wrk PUTs; 2G cache, and one 10% smaller than the data): ${memory_configs[*]}"
  bash optimizations/server_memory.sh --json "${memory_configs[@]}" > "$out/server_memory.jsonl"
else
  log "memory through the server skipped: needs wrk and build/release/server/cache_server"
fi
log "hit ratio per evictor (pinned to CPU 0)"
taskset -c 0 "$bin/hit_ratio_bench" --benchmark_out="$out/hit_ratio.json" \
  --benchmark_out_format=json > /dev/null
log "throughput: evictor x lock x shards x {1,2} threads, $REPS repetition(s) of ${MIN_TIME}s"
"$bin/cache_throughput_bench" --benchmark_repetitions="$REPS" --benchmark_min_time="$MIN_TIME" \
  --benchmark_out="$out/cache_throughput.json" --benchmark_out_format=json > /dev/null

python optimizations/report.py "$out" > /dev/null
log "done: $out/MICROBENCH.md"
