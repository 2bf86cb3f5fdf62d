#!/usr/bin/env bash
# bench_board_source.sh — boards durable through the store: the in-memory boards against the
# database answering the same reads with SQL (--board-source memory vs store, PostgreSQL), and how
# long a restart takes to rebuild the boards from each store (PostgreSQL and RocksDB).
#
# 1. PostgreSQL (a throwaway cluster pinned to $SERVER_CPU: tests/support/pg_cluster.py through
#    scripts/bench_postgres_report.py pg-start, shared_buffers=256MB) and
#    cache_server --store postgres:... --write-mode through; bench_client preloads one board of
#    --members members (every member PUT once: each a committed row). Timed.
# 2. The server is restarted twice: once with --board-source memory, once with store. Each prints
#    "boards rebuilt from the store: N members in B boards, ... in T ms": the rebuild time.
# 3. Points, alternated between the two (memory first in odd rounds), --repeat rounds, medians,
#    each at --conns connections (throughput: the saturation point) and at 1 connection (the
#    latency of one request on an idle server, as the PostgreSQL-backed service compared them):
#      top   bench_client --workload board-top --top-n 100   (GET /board/b0/top?n=100)
#      rank  bench_client --workload board-score             (GET /board/b0/member/m<i>)
#    bench_client's socket timeout is 120 s, so the database's slow answers are measured (they
#    queue behind each other), not counted as errors.
#    memory answers from boards/ (and its top-N cache); store answers with SQL: ORDER BY score
#    DESC, seq LIMIT 100 plus a count(*) for top, a COUNT of the members ranked above for rank
#    (store/postgres_store.cc). Per point: req/s, p50/p99, and the CPU of cache_server and of
#    PostgreSQL (all its processes, exited backends included), as % of one core and per request
#    (CPU over bench_client's whole run, warm-up and drain included, divided by the measured
#    rate times that run's wall time).
# 4. RocksDB: the same preload into --store rocksdb:DIR, then a restart: its rebuild time.
# Prints summary.md and writes it, summary.json, commands.txt and the raw files to --out.
#
# Usage: scripts/bench_board_source.sh [options]
#   --members N     members of the board, 100..10000000 (default 1000000; --quick: 20000)
#   --conns N       connections of every point, 1..1000 (default 50)
#   --duration S    seconds per point (default 10; --quick: 1)
#   --repeat N      rounds, 1..20 (default 3; --quick: 1)
#   --out DIR       results directory (default results/board-source-<stamp>/)
#   --quick         smoke test: few members, short points, one round
#   --build DIR     where cache_server and bench_client are (default build/release)
#   -h, --help      this text
# env: SERVER_CPU (0), CLIENT_CPU (1).
# Needs PostgreSQL 15 (postgresql-15), curl, python3, taskset, timeout. With the defaults it runs
# about 2 x 35 s of preloads, 3 rebuilds and 24 points: about 10 minutes.
# Exit status: 0 measured, 1 a failure (a message says which), 2 bad usage, 130 interrupted.
# Everything listens on 127.0.0.1 only, on free ports; every process started is stopped on exit
# and the temporary directory (the database files included) is removed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_NAME=bench_board_source

# usage, die, bad_usage, is_uint, stop_pid, forget_pid, log, cpu_ticks, free_port, echo_cmd,
# help_has, split_conns, stop_server, start_ours, alive
source "$ROOT/scripts/lib/bench_common.sh"

MEMBERS="" CONNS=50 DURATION="" REPEAT="" OUT="" QUICK=0 BUILD="" SERVER_THREADS=1 CLIENT_THREADS=2
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) QUICK=1; shift ;;
    --members|--conns|--duration|--repeat|--out|--build)
      [ $# -ge 2 ] || bad_usage "$1 needs a value"
      case "$1" in
        --members) MEMBERS="$2" ;; --conns) CONNS="$2" ;; --duration) DURATION="$2" ;;
        --repeat) REPEAT="$2" ;; --out) OUT="$2" ;; --build) BUILD="$2" ;;
      esac
      shift 2 ;;
    *) bad_usage "unknown argument '$1'" ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
if [ -z "$MEMBERS" ]; then MEMBERS=1000000; [ "$QUICK" = 1 ] && MEMBERS=20000; fi
if [ -z "$DURATION" ]; then DURATION=10; [ "$QUICK" = 1 ] && DURATION=1; fi
if [ -z "$REPEAT" ]; then REPEAT=3; [ "$QUICK" = 1 ] && REPEAT=1; fi
is_uint "$MEMBERS" && [ "${#MEMBERS}" -le 9 ] && [ "$MEMBERS" -ge 100 ] && [ "$MEMBERS" -le 10000000 ] \
  || bad_usage "--members '$MEMBERS' must be a whole number 100..10000000"
is_uint "$CONNS" && [ "${#CONNS}" -le 5 ] && [ "$CONNS" -ge 1 ] && [ "$CONNS" -le 1000 ] \
  || bad_usage "--conns '$CONNS' must be a connection count 1..1000"
[[ "$DURATION" =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 1 ] && [ "$DURATION" -le 600 ] \
  || bad_usage "--duration '$DURATION' must be whole seconds 1..600"
is_uint "$REPEAT" && [ "$REPEAT" -ge 1 ] && [ "$REPEAT" -le 20 ] || bad_usage "--repeat '$REPEAT' must be 1..20"
is_uint "$SERVER_CPU" && is_uint "$CLIENT_CPU" && [ "$SERVER_CPU" != "$CLIENT_CPU" ] \
  || bad_usage "SERVER_CPU and CLIENT_CPU must be two different CPU numbers"
for tool in curl python3 taskset timeout awk pgrep; do
  command -v "$tool" > /dev/null || die "$tool not found (Debian: apt-get install curl python3 util-linux coreutils procps)"
done
for cpu in "$SERVER_CPU" "$CLIENT_CPU"; do
  taskset -c "$cpu" true 2> /dev/null || die "cannot pin to CPU $cpu; set SERVER_CPU/CLIENT_CPU"
done
python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import pg_cluster; pg_cluster.find_bindir()' \
  "$ROOT/tests/support" 2> /dev/null || die "PostgreSQL 15 not found (apt-get install postgresql-15)"
[ -n "$BUILD" ] || BUILD="$ROOT/build/release"
CACHE_SERVER="${CACHE_SERVER:-$BUILD/server/cache_server}"
BENCH_CLIENT="${BENCH_CLIENT:-$BUILD/client/bench_client}"
[ -x "$CACHE_SERVER" ] || die "no cache_server at $CACHE_SERVER (build it, or pass --build DIR)"
[ -x "$BENCH_CLIENT" ] || die "no bench_client at $BENCH_CLIENT (build it, or pass --build DIR)"
help_has "$CACHE_SERVER" --board-source || die "$CACHE_SERVER has no --board-source (an older build?)"

BOARD_MAXMEM="$(( MEMBERS * 320 / 1048576 + 64 ))M"
WARMUP=1; [ "$QUICK" = 1 ] && WARMUP=0.2
POINT_TIMEOUT=$(( 3 * DURATION + 180 ))  # the drain may wait out a 120 s socket timeout
PRELOAD_TIMEOUT=$(( MEMBERS / 1000 + 180 ))
read -r CT CK <<< "$(split_conns "$CONNS")"
STAMP="$(date +%Y%m%d-%H%M%S)"
[ -n "$OUT" ] || OUT="$ROOT/results/board-source-$STAMP"
mkdir -p "$OUT/raw" || die "cannot create $OUT"
OUT="$(cd "$OUT" && pwd)"
[ ! -e "$OUT/points.jsonl" ] || die "$OUT already holds a run (points.jsonl); pick another --out"
DATA_PARENT="${TMPDIR:-/tmp}"
WORK="$(mktemp -d "$DATA_PARENT/bench_board_source.XXXXXX")" || die "cannot create a temporary directory"
chmod 755 "$WORK"  # pg_cluster runs PostgreSQL as the postgres user when we are root

PIDS=()
PG_STARTED=0
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && stop_pid "$p"; done
  PIDS=()
  if [ "$PG_STARTED" = 1 ]; then
    python3 "$ROOT/tests/support/pg_cluster.py" stop "$WORK/pg" > /dev/null 2>&1 \
      || echo "$BENCH_NAME: stopping PostgreSQL in $WORK/pg failed" >&2
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

record_cmd() {
  local text="${2//"$WORK"/\$TMP}"
  text="${text//"$OUT/"/}"; text="${text//"$BENCH_CLIENT"/bench_client}"; text="${text//"$CACHE_SERVER"/cache_server}"
  echo "$1: $text" >> "$OUT/commands.txt"
}
jget() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# CPU ticks of every PostgreSQL process, exited backends included (bench_postgres_report.py's
# pg-ticks: the postmaster, its live children, and its cutime+cstime).
pg_ticks() {
  local pm
  pm="$(head -1 "$WORK/pg/data/postmaster.pid" 2> /dev/null || true)"
  [ -n "$pm" ] || { echo 0; return 0; }
  python3 "$ROOT/scripts/bench_postgres_report.py" pg-ticks "$pm" | awk '{ print $1 }'
}

# --- servers -------------------------------------------------------------------------------------
declare -A SRV_PID SRV_PORT
START_WAIT_S=120  # start_ours: a rebuild of 10M members takes a while
rebuild_ms() { sed -n 's/^boards rebuilt from the store: .* in \([0-9.]*\) ms$/\1/p' "$OUT/raw/server-$1.log"; }
preload() {  # preload NAME: every member PUT once (write-through: each a committed row)
  local name="$1" cmd rc=0
  cmd=("$BENCH_CLIENT" -s 127.0.0.1 -p "${SRV_PORT[$name]}" --workload board-score --boards 1
       --members "$MEMBERS" --threads 1 --connections-per-thread 32 -n 1 --warmup 0 -q
       --json "$OUT/raw/$name-preload.json")
  record_cmd "$name preload" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}")"
  timeout "$PRELOAD_TIMEOUT" taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/$name-preload.txt" 2>&1 || rc=$?
  [ "$rc" = 0 ] || die "the preload into $name failed (exit $rc): $(tail -3 "$OUT/raw/$name-preload.txt")"
  [ "$(jget "$OUT/raw/$name-preload.json" 'd["meta"]["preload"]["errors"]')" = 0 ] \
    || die "the preload into $name had errors (raw/$name-preload.json)"
  log "$name: $MEMBERS members preloaded in $(jget "$OUT/raw/$name-preload.json" '"%.1f" % d["meta"]["preload"]["seconds"]') s"
}

# --- PostgreSQL --------------------------------------------------------------------------------
# bench_postgres.sh's cluster: pg_cluster.py's settings (fsync on) with 256MB of shared buffers,
# so the 1M-row table and its index are PostgreSQL's own cache, not the kernel's.
CONNINFO="$(taskset -c "$SERVER_CPU" python3 "$ROOT/scripts/bench_postgres_report.py" pg-start "$WORK/pg" 40 | sed -n 1p)" \
  || die "PostgreSQL did not start (tests/support/pg_cluster.py; see above)"
PG_STARTED=1
[[ "$CONNINFO" == host=* ]] || die "PostgreSQL did not start: '$CONNINFO'"
record_cmd "postgres" "taskset -c $SERVER_CPU python3 scripts/bench_postgres_report.py pg-start \$TMP/pg 40   (tests/support/pg_cluster.py, shared_buffers=256MB)"
PG_FLAGS=(--store "postgres:$CONNINFO" --write-mode through --board-maxmem "$BOARD_MAXMEM")

start_ours pg-load "${PG_FLAGS[@]}"
preload pg-load
stop_server pg-load
start_ours memory "${PG_FLAGS[@]}" --board-source memory
start_ours store "${PG_FLAGS[@]}" --board-source store
log "rebuilt from PostgreSQL: memory server $(rebuild_ms memory) ms, store server $(rebuild_ms store) ms"

# --- points --------------------------------------------------------------------------------------
declare -A WORKLOAD=([top]=board-top [rank]=board-score)
point() {  # point OP SOURCE REP CONNS
  local op="$1" src="$2" rep="$3" conns="$4" tag="$1-$2-c$4-r$3" pid="${SRV_PID[$2]}" cmd rc=0
  local k0 k1 p0 p1 t k w0 w1
  if [ "$conns" = 1 ]; then t=1 k=1; else t="$CT" k="$CK"; fi
  cmd=("$BENCH_CLIENT" -s 127.0.0.1 -p "${SRV_PORT[$src]}" --workload "${WORKLOAD[$op]}"
       --boards 1 --members "$MEMBERS" --threads "$t" --connections-per-thread "$k"
       -d "${DURATION}s" --warmup "${WARMUP}s" --no-preload --seed "$rep" --server-pid "$pid"
       --timeout 120s --json "$OUT/raw/$tag.json" -q)
  [ "$op" != top ] || cmd+=(--top-n 100)
  [ "$rep" != 1 ] || record_cmd "$op $src $conns conns" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}" | sed 's/--seed 1/--seed REP/')"
  alive "$src"
  k0="$(cpu_ticks "$pid")"; p0="$(pg_ticks)"; w0="$EPOCHREALTIME"
  timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/$tag.txt" 2>&1 || rc=$?
  k1="$(cpu_ticks "$pid")"; p1="$(pg_ticks)"; w1="$EPOCHREALTIME"
  [ "$rc" = 0 ] || die "bench_client ($op, $src) failed (exit $rc): $(tail -3 "$OUT/raw/$tag.txt")"
  python3 - "$OUT/raw/$tag.json" "$op" "$src" "$rep" "$conns" "$((k1 - k0))" "$((p1 - p0))" \
    "$CLK_TCK" "$(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.6f", b - a }')" \
    >> "$OUT/points.jsonl" << 'PY'
import json, sys
path, op, src, rep, conns, srv_ticks, pg_ticks, hz, wall = sys.argv[1:]
p = json.load(open(path))["points"][0]
wall = float(wall)
srv_s, pg_s = int(srv_ticks) / int(hz), int(pg_ticks) / int(hz)
# The CPU readings span bench_client's whole run (warm-up and drain too), its rate only the
# measured window: per request is CPU / (rate x the run's wall time), i.e. the run assumed to go
# at the measured rate throughout (it does, at a bound).
served = max(p["throughput_rps"] * wall, 1e-9)
print(json.dumps({"op": op, "source": src, "rep": int(rep), "conns": int(conns),
                  "rps": p["throughput_rps"],
                  "p50_us": p["p50_us"], "p99_us": p["p99_us"], "errors": p["errors"],
                  "requests": p["requests"], "wall_s": wall,
                  "server_cpu_pct": 100 * srv_s / wall, "postgres_cpu_pct": 100 * pg_s / wall,
                  "server_cpu_us_per_req": srv_s * 1e6 / served,
                  "postgres_cpu_us_per_req": pg_s * 1e6 / served}))
PY
  log "$tag: $(tail -1 "$OUT/points.jsonl")"
}
for rep in $(seq 1 "$REPEAT"); do
  for op in top rank; do
    if [ $((rep % 2)) = 1 ]; then order=(memory store); else order=(store memory); fi
    for src in "${order[@]}"; do
      point "$op" "$src" "$rep" "$CONNS"
      point "$op" "$src" "$rep" 1
    done
  done
done
PG_REBUILD_MEMORY="$(rebuild_ms memory)" PG_REBUILD_STORE="$(rebuild_ms store)"
stop_server memory
stop_server store

# --- RocksDB rebuild -----------------------------------------------------------------------------
ROCKS_FLAGS=(--store "rocksdb:$WORK/rocks" --write-mode through --board-maxmem "$BOARD_MAXMEM")
start_ours rocks-load "${ROCKS_FLAGS[@]}"
preload rocks-load
stop_server rocks-load
start_ours rocks "${ROCKS_FLAGS[@]}"
ROCKS_REBUILD="$(rebuild_ms rocks)"
stop_server rocks
log "rebuilt from RocksDB in $ROCKS_REBUILD ms"

# --- summary -------------------------------------------------------------------------------------
python3 - "$OUT" "$MEMBERS" "$CONNS" "$DURATION" "$REPEAT" "$PG_REBUILD_MEMORY" "$PG_REBUILD_STORE" \
  "$ROCKS_REBUILD" << 'PY'
import json, statistics, sys
out, members, conns, duration, repeat, pg_mem, pg_store, rocks = sys.argv[1:]
points = [json.loads(l) for l in open(f"{out}/points.jsonl")]
def med(op, src, c, key):
    return statistics.median(p[key] for p in points
                             if p["op"] == op and p["source"] == src and p["conns"] == c)
rows, summary = [], {"members": int(members), "conns": int(conns), "duration_s": int(duration),
                     "repeat": int(repeat), "points": {}}
for op, label in (("top", "top-100"), ("rank", "rank")):
    for c in (int(conns), 1):
        for src in ("memory", "store"):
            m = {k: med(op, src, c, k) for k in ("rps", "p50_us", "p99_us", "errors",
                                                 "server_cpu_pct", "postgres_cpu_pct",
                                                 "server_cpu_us_per_req",
                                                 "postgres_cpu_us_per_req")}
            summary["points"][f"{op}-{src}-c{c}"] = m
            rows.append(f"| {label} | {c} | {src} | {m['rps']:,.0f} | {m['p50_us']:,.0f} | "
                        f"{m['p99_us']:,.0f} | {m['server_cpu_pct']:,.0f} | "
                        f"{m['postgres_cpu_pct']:,.0f} | {m['server_cpu_us_per_req']:,.1f} | "
                        f"{m['postgres_cpu_us_per_req']:,.1f} | {m['errors']:.0f} |")
    pts = summary["points"]
    summary[f"{op}_memory_over_store"] = (pts[f"{op}-memory-c{conns}"]["rps"] /
                                          max(pts[f"{op}-store-c{conns}"]["rps"], 1e-9))
    summary[f"{op}_p50_store_over_memory_1conn"] = (pts[f"{op}-store-c1"]["p50_us"] /
                                                    max(pts[f"{op}-memory-c1"]["p50_us"], 1e-9))
summary["rebuild_ms"] = {"postgres": [float(pg_mem), float(pg_store)], "rocksdb": float(rocks)}
md = [f"# Boards: memory against the database ({int(members):,} members, {conns} connections, "
      f"{repeat} x {duration} s, medians)", "",
      "| read | conns | --board-source | req/s | p50 µs | p99 µs | cache_server CPU% | "
      "PostgreSQL CPU% | cache_server CPU µs/req | PostgreSQL CPU µs/req | errors |",
      "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|", *rows,
      "",
      f"Throughput at {conns} connections, memory / store: top-100 "
      f"{summary['top_memory_over_store']:,.0f}x, rank {summary['rank_memory_over_store']:,.0f}x. "
      f"Latency at 1 connection (p50), store / memory: top-100 "
      f"{summary['top_p50_store_over_memory_1conn']:,.0f}x, rank "
      f"{summary['rank_p50_store_over_memory_1conn']:,.0f}x.", "",
      "| rebuild on restart | ms |", "|---|---:|",
      f"| PostgreSQL (two restarts) | {float(pg_mem):,.0f}, {float(pg_store):,.0f} |",
      f"| RocksDB | {float(rocks):,.0f} |", ""]
open(f"{out}/summary.md", "w").write("\n".join(md))
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print("\n".join(md), end="")
PY
log "results in $OUT"
