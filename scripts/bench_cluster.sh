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

python3 - "$OUT" "$CLK_TCK" "$DURATION" "$ROUNDS" << 'PY'
import json, statistics, sys
from pathlib import Path
out, clk_tck, duration, rounds = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
raw = out / "raw"

def point(name):
    return json.loads((raw / f"{name}.json").read_text())["points"][0]

lines = (raw / "balance-stats.txt").read_text().strip().split("\n")
items = [json.loads(l.split(" ", 3)[3])["items"] for l in lines if l.startswith("node ")]
keys_ratio = max(items) / (sum(items) / len(items))
z = point("balance-zipf")
reqs = [n["requests"] for n in z["nodes"]]
req_ratio = max(reqs) / (sum(reqs) / len(reqs))

rows, summary = [], {"balance": {"nodes": len(items), "keys_per_node": items,
                                 "keys_max_over_mean": round(keys_ratio, 4),
                                 "zipf_requests_per_node": reqs,
                                 "zipf_requests_max_over_mean": round(req_ratio, 4),
                                 "target_keys_max_over_mean": 1.10,
                                 "pass": keys_ratio <= 1.10},
                     "front_cost": []}
ticks = {}
for line in (raw / "cost-ticks.txt").read_text().split("\n"):
    if line.strip():
        via, c, r, nginx_t, node_t = line.split()
        ticks[(via, int(c), int(r))] = (int(nginx_t), int(node_t))
conns = sorted({c for _, c, _ in ticks})
for c in conns:
    entry = {"connections": c}
    for via in ("direct", "front"):
        pts = [point(f"cost-{via}-c{c}-r{r}") for r in range(1, rounds + 1)]
        rps = statistics.median(p["throughput_rps"] for p in pts)
        p50 = statistics.median(p["p50_us"] for p in pts)
        p99 = statistics.median(p["p99_us"] for p in pts)
        nginx_cpu = statistics.median(ticks[(via, c, r)][0] / clk_tck / p["duration_s"] * 100
                                      for r, p in enumerate(pts, start=1))
        node_cpu = statistics.median(ticks[(via, c, r)][1] / clk_tck / p["duration_s"] * 100
                                     for r, p in enumerate(pts, start=1))
        per_req = statistics.median(ticks[(via, c, r)][0] / clk_tck / max(p["requests"], 1) * 1e6
                                    for r, p in enumerate(pts, start=1))
        node_per_req = statistics.median(ticks[(via, c, r)][1] / clk_tck / max(p["requests"], 1) * 1e6
                                         for r, p in enumerate(pts, start=1))
        errors = sum(p["errors"] for p in pts)
        entry[via] = {"throughput_rps": round(rps, 1), "p50_us": p50, "p99_us": p99,
                      "nginx_cpu_pct": round(nginx_cpu, 1), "node_cpu_pct": round(node_cpu, 1),
                      "nginx_cpu_us_per_request": round(per_req, 2),
                      "node_cpu_us_per_request": round(node_per_req, 2), "errors": errors,
                      "client_cpu_pct": statistics.median(p["client_cpu_pct"] for p in pts)}
    entry["front_over_direct_rps"] = round(entry["front"]["throughput_rps"] /
                                           entry["direct"]["throughput_rps"], 3)
    summary["front_cost"].append(entry)
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

b = summary["balance"]
md = ["# Cluster: balance and the cost of the front", "",
      f"## Balance ({b['nodes']} nodes, nginx `hash $cache_key consistent`, weight 10)", "",
      "| measure | per node | max / mean | target |", "|---|---|---:|---|",
      f"| keys stored through nginx | {', '.join(map(str, items))} | {keys_ratio:.3f} | "
      f"<= 1.10: {'PASS' if b['pass'] else 'FAIL'} |",
      f"| requests, Zipf 0.99 (bench_client --targets) | {', '.join(map(str, reqs))} | "
      f"{req_ratio:.3f} | (hot keys: not a target) |", "",
      f"## Cost of the front (1 node + nginx on CPU 0, bench_client on CPU 1; "
      f"{rounds} round(s) x {duration:g} s, medians)", "",
      "| conns | path | req/s | p50 us | p99 us | node CPU % | nginx CPU % | node CPU us/req | nginx CPU us/req | errors |",
      "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for e in summary["front_cost"]:
    for via in ("direct", "front"):
        v = e[via]
        md.append(f"| {e['connections']} | {'direct to the node' if via == 'direct' else 'through nginx'} "
                  f"| {v['throughput_rps']:,.0f} | {v['p50_us']:.0f} | {v['p99_us']:.0f} | "
                  f"{v['node_cpu_pct']:.0f} | {v['nginx_cpu_pct']:.0f} | {v['node_cpu_us_per_request']:.1f} | "
                  f"{v['nginx_cpu_us_per_request'] if via == 'front' else 0:.1f} | {v['errors']} |")
md += ["", "Through nginx / direct, req/s: " +
       ", ".join(f"{e['front_over_direct_rps']:.2f} at {e['connections']} conn(s)"
                 for e in summary["front_cost"]), "",
       "CPU % and CPU time per request come from /proc/PID/stat ticks (10 ms) of the node and of "
       "nginx's worker around each run (no warm-up, so the ticks cover the measured window). ",
       "This machine has 2 cores: the front shares the node's core, so adding nodes cannot show "
       "scaling here. What repeats on every front machine is nginx's CPU per request (above).", ""]
(out / "summary.md").write_text("\n".join(md))
print("\n".join(md))
PY
log "results in $OUT"
