#!/usr/bin/env bash
# bench_cluster.sh — what sharding across nodes costs and how evenly it spreads (docs/cluster.md).
#
#   scripts/bench_cluster.sh [--quick] [--out DIR] [--duration S] [--rounds R] [--conns LIST]
#
# 1. Balance: 4 nodes behind nginx (scripts/cluster.sh, weight 10). bench_client stores a
#    100,000-key space THROUGH nginx (its preload), so each node's item count is nginx's
#    placement; then a Zipf (theta 0.99) run with bench_client --targets reports the requests
#    each node received. Reported: max / mean keys per node (target <= 1.10) and max / mean
#    requests per node.
# 2. Cost of the front: one node, nginx (1 worker) in front of it, both on CPU 0, bench_client
#    on CPU 1. For each connection count, in each round: a run direct to the node and a run
#    through nginx, back to back. Reported per configuration: medians over the rounds of req/s,
#    p50 and p99, the node's and nginx's CPU, and nginx's CPU time per request. On this 2-core
#    machine the front shares the server's core, so scaling across machines cannot be shown;
#    the cost per request is what repeats on every front machine.
#   --quick      10,000 keys, 1 s points, 1 round (a smoke run; the tests use it)
#   --out DIR    results directory (default results/cluster-<UTC time>): summary.md,
#                summary.json, raw/ (every bench_client JSON), commands.txt
#   --duration S seconds per point (default 5)
#   --rounds R   rounds of the cost comparison (default 3)
#   --conns LIST connection counts of the cost comparison (default 1,16)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_NAME="bench_cluster.sh"
# shellcheck source=lib/bench_common.sh
source "$ROOT/scripts/lib/bench_common.sh"

BUILD="${BUILD:-$ROOT/build/release}"
CACHE_SERVER="$BUILD/server/cache_server"
BENCH_CLIENT="$BUILD/client/bench_client"
SERVER_CPU=0
CLIENT_CPU=1
OUT=""
DURATION=5
ROUNDS=3
CONNS="1,16"
KEYS=100000
QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --out) [ $# -ge 2 ] || bad_usage "--out needs a directory"; OUT="$2"; shift ;;
    --duration) [ $# -ge 2 ] && is_uint "$2" && [ "$2" -ge 1 ] || bad_usage "--duration needs seconds >= 1"; DURATION="$2"; shift ;;
    --rounds) [ $# -ge 2 ] && is_uint "$2" && [ "$2" -ge 1 ] || bad_usage "--rounds needs a count >= 1"; ROUNDS="$2"; shift ;;
    --conns) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+(,[0-9]+)*$ ]] || bad_usage "--conns needs a list like 1,16"; CONNS="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) bad_usage "unknown argument '$1'" ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then DURATION=1; ROUNDS=1; KEYS=10000; fi
[ -x "$CACHE_SERVER" ] && [ -x "$BENCH_CLIENT" ] || die "build first: bash scripts/setup.sh ($BUILD)"
help_has "$BENCH_CLIENT" "--targets" || die "$BENCH_CLIENT has no --targets (an older build)"
command -v nginx > /dev/null || die "nginx is not installed (bash scripts/setup.sh --peers)"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (server side on CPU 0, load on CPU 1)"
[ -n "$OUT" ] || OUT="$ROOT/results/cluster-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT/raw"
OUT="$(cd "$OUT" && pwd)"
WORK="$(mktemp -d)"
export CLUSTER_DIR="$WORK/cluster"
export CACHE_SERVER
: > "$OUT/commands.txt"
record_cmd() { echo "$1: $2" >> "$OUT/commands.txt"; }
cleanup() { bash "$ROOT/scripts/cluster.sh" down > /dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

cluster_up() {  # cluster_up N: sets FRONT, NODE_ADDR[], NODE_PID[]
  local line n="$1" word
  NODE_ADDR=(); NODE_PID=()
  while read -r -a word; do
    case "${word[0]}" in
      front) FRONT="${word[1]}" ;;
      node) NODE_ADDR+=("${word[2]}"); NODE_PID+=("${word[3]}") ;;
    esac
  done < <(bash "$ROOT/scripts/cluster.sh" up "$n" -- -t 1)
  [ ${#NODE_ADDR[@]} = "$n" ] || die "cluster.sh up $n failed"
  record_cmd "cluster" "CLUSTER_DIR=\$DATA scripts/cluster.sh up $n -- -t 1"
  # The server side on CPU 0: every node's threads and nginx's master and worker.
  local pid
  for pid in "${NODE_PID[@]}" "$(head -1 "$CLUSTER_DIR/nginx.pid")"; do
    taskset -a -pc "$SERVER_CPU" "$pid" > /dev/null
  done
  for pid in $(pgrep -P "$(head -1 "$CLUSTER_DIR/nginx.pid")"); do taskset -a -pc "$SERVER_CPU" "$pid" > /dev/null; done
}
nginx_worker() { pgrep -P "$(head -1 "$CLUSTER_DIR/nginx.pid")" | head -1; }

client() {  # client NAME ARGS...: bench_client on CPU 1, JSON in raw/NAME.json
  local name="$1"; shift
  record_cmd "$name" "taskset -c $CLIENT_CPU bench_client $* --json raw/$name.json"
  taskset -c "$CLIENT_CPU" "$BENCH_CLIENT" "$@" --json "$OUT/raw/$name.json" -q > "$OUT/raw/$name.txt" \
    || die "bench_client failed ($name): $(tail -3 "$OUT/raw/$name.txt")"
}

# --- 1. balance ---------------------------------------------------------------------------------
log "balance: 4 nodes behind nginx, $KEYS keys stored through nginx"
cluster_up 4
client balance-store -s "${FRONT%:*}" -p "${FRONT##*:}" --workload zipf --keys "$KEYS" \
  --threads 1 -n 1000 --warmup 0
bash "$ROOT/scripts/cluster.sh" stats > "$OUT/raw/balance-stats.txt"
targets="$(IFS=,; echo "${NODE_ADDR[*]}")"
client balance-zipf --targets "$targets" --workload zipf --keys "$KEYS" --threads 1 \
  --connections-per-thread 4 -d "${DURATION}s" --warmup 0 --no-preload
bash "$ROOT/scripts/cluster.sh" down > /dev/null

# --- 2. cost of the front -----------------------------------------------------------------------
log "front cost: 1 node + nginx on CPU $SERVER_CPU, bench_client on CPU $CLIENT_CPU"
cluster_up 1
NODE="${NODE_ADDR[0]}"
client cost-preload -s "${NODE%:*}" -p "${NODE##*:}" --workload zipf --keys 10000 --threads 1 \
  -n 100 --warmup 0
IFS=, read -r -a conn_list <<< "$CONNS"
for round in $(seq 1 "$ROUNDS"); do
  for c in "${conn_list[@]}"; do
    for via in direct front; do
      target="$NODE"; [ "$via" = front ] && target="$FRONT"
      worker="$(nginx_worker)"
      # No warm-up: the CPU ticks around the run then cover its measured window (and the
      # client's few milliseconds of start-up), so CPU % = ticks / the window.
      n0="$(cpu_ticks "$worker")"; s0="$(cpu_ticks "${NODE_PID[0]}")"
      client "cost-$via-c$c-r$round" -s "${target%:*}" -p "${target##*:}" --workload zipf \
        --keys 10000 --threads 1 --connections-per-thread "$c" -d "${DURATION}s" --warmup 0 \
        --no-preload
      n1="$(cpu_ticks "$worker")"; s1="$(cpu_ticks "${NODE_PID[0]}")"
      echo "$via $c $round $((n1 - n0)) $((s1 - s0))" >> "$OUT/raw/cost-ticks.txt"
    done
  done
done

python3 "$ROOT/scripts/bench_cluster_report.py" "$OUT" "$CLK_TCK" "$DURATION" "$ROUNDS"
log "results in $OUT"
