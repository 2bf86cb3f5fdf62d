#!/usr/bin/env bash
# compare_redis_boards.sh — our boards (bench_client) beside Redis 7 sorted sets (redis-benchmark),
# one board preloaded with --members members, at --conns connections, same machine.
#
# Operations, each measured on both sides, alternated (Redis first in odd rounds, ours first in
# even ones), --repeat rounds, medians:
#   update  ZADD b0 __rand_int__ m__rand_int__     vs  bench_client --workload board-update
#   rank    ZREVRANK b0 m__rand_int__               vs  bench_client --workload board-score
#   top     ZREVRANGE b0 0 99 WITHSCORES            vs  bench_client --workload board-top --top-n 100
# plus, for context, our top 100 by wrk (no answer check: bench_client's check of 100 entries
# saturates its own core first). Targets (the issue's): update >= 1.0x ZADD, rank >= 1.0x
# ZREVRANK, top-100 >= 2.0x ZREVRANGE, resident memory per member <= Redis's.
# Preloads: Redis by `redis-cli --pipe` of one ZADD per member (members m%012d: the names
# redis-benchmark's m__rand_int__ gives with -r MEMBERS, so ZADD updates and ZREVRANK finds
# them), ours by bench_client's own preload (members m<i>); both the same scores, both timed.
# Memory: VmRSS of each server before the preloads, right after its own, and settled (12 s after
# the last preload, all idle: both allocate with jemalloc, whose background thread returns freed
# pages after 10 s); per member = settled delta / members, on a second, memory-only Redis
# preloaded with our names m<i> (the target), and on the load's Redis; Redis's used_memory and
# our /stats board_bytes for context. Servers (no persistence:
# redis-server --save '' --appendonly no; cache_server -t 1, memory-only boards) run on CPU
# $SERVER_CPU (0), load generators on CPU $CLIENT_CPU (1). Per point: req/s, p50/p99, the
# server's CPU (/proc/PID/stat) and the load generator's (bash time), so the bound is named.
# Prints summary.md (tables and the targets as PASS/MISS lines) and writes it, summary.json,
# commands.txt and the raw files to --out.
#
# Usage: scripts/compare_redis_boards.sh [options]
#   --members N         members of the board, 100..10000000 (default 1000000; --quick: 20000)
#   --conns N           connections of every point, 1..1000 (default 50)
#   --duration S        seconds per point, decimals allowed (default 10; --quick: 1); wrk
#                       runs ceil(S)
#   --repeat N          rounds, 1..20 (default 3; --quick: 1); medians reported
#   --out DIR           results directory (default results/redis-boards-<stamp>/)
#   --quick             smoke test: few members, short points, one round
#   --no-wrk            skip the wrk top-100 context point
#   --build DIR         where cache_server and bench_client are (default build/release; env
#                       CACHE_SERVER / BENCH_CLIENT name the binaries)
#   --board-maxmem SIZE cache_server --board-maxmem (default 512M, or 320 bytes per member if
#                       more)
#   --server-threads N  cache_server -t N (default 1; Redis has one main thread)
#   --client-threads N  most bench_client threads: C connections = T threads x C/T each, T the
#                       largest divisor of C up to N (default 2: 50 = 2 x 25)
#   -h, --help          this text
# env: SERVER_CPU (0), CLIENT_CPU (1).
# Needs redis-server, redis-cli and redis-benchmark (Redis 7; Debian: redis-server, redis-tools),
# curl, python3, taskset, timeout; wrk for the context point. Runs about --repeat x (7 x
# (duration + 1.5 s)) plus the preloads (about 30 s at 1M members): about 5 minutes with the
# defaults.
# Exit status: 0 measured (whatever the targets say), 1 a failure (a message says which),
# 2 bad usage, 130 interrupted. Everything listens on 127.0.0.1 only, on free ports; every
# process started is stopped by PID on exit, and the temporary directory is removed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELPER="$ROOT/scripts/compare_redis_boards_report.py"
BENCH_NAME=compare_redis_boards
# usage, die, bad_usage, is_uint, stop_pid, forget_pid, log, cpu_ticks, cpu_snap, free_port,
# echo_cmd, help_has, split_conns, stop_server, start_ours, alive, start_redis_server
source "$ROOT/scripts/lib/bench_common.sh"

MEMBERS="" CONNS=50 DURATION="" REPEAT="" OUT="" QUICK=0 WRK=1 BUILD="" BOARD_MAXMEM=""
SERVER_THREADS=1 CLIENT_THREADS=2
VALUE_FLAGS="--members|--conns|--duration|--repeat|--out|--build|--board-maxmem|--server-threads|--client-threads"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) QUICK=1; shift ;;
    --no-wrk) WRK=0; shift ;;
    --members|--conns|--duration|--repeat|--out|--build|--board-maxmem|--server-threads|--client-threads)
      [ $# -ge 2 ] || bad_usage "$1 needs a value"
      case "$1" in
        --members) MEMBERS="$2" ;; --conns) CONNS="$2" ;; --duration) DURATION="$2" ;;
        --repeat) REPEAT="$2" ;; --out) OUT="$2" ;; --build) BUILD="$2" ;;
        --board-maxmem) BOARD_MAXMEM="$2" ;; --server-threads) SERVER_THREADS="$2" ;;
        --client-threads) CLIENT_THREADS="$2" ;;
      esac
      shift 2 ;;
    --*=*)
      flag="${1%%=*}"
      [[ "$flag" =~ ^($VALUE_FLAGS)$ ]] || bad_usage "unknown argument '$1'"
      set -- "$flag" "${1#*=}" "${@:2}" ;;
    *) bad_usage "unknown argument '$1'" ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"

# --- validate ----------------------------------------------------------------------------------
if [ -z "$MEMBERS" ]; then MEMBERS=1000000; [ "$QUICK" = 1 ] && MEMBERS=20000; fi
if [ -z "$DURATION" ]; then DURATION=10; [ "$QUICK" = 1 ] && DURATION=1; fi
if [ -z "$REPEAT" ]; then REPEAT=3; [ "$QUICK" = 1 ] && REPEAT=1; fi
is_uint "$MEMBERS" && [ "${#MEMBERS}" -le 9 ] && [ "$MEMBERS" -ge 100 ] && [ "$MEMBERS" -le 10000000 ] \
  || bad_usage "--members '$MEMBERS' must be a whole number 100..10000000"
is_uint "$CONNS" && [ "${#CONNS}" -le 5 ] && [ "$CONNS" -ge 1 ] && [ "$CONNS" -le 1000 ] \
  || bad_usage "--conns '$CONNS' must be a connection count 1..1000"
[[ "$DURATION" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || bad_usage "--duration '$DURATION' is not a number of seconds"
awk -v d="$DURATION" 'BEGIN { exit !(d >= 0.1 && d <= 600) }' || bad_usage "--duration must be 0.1..600 s"
is_uint "$REPEAT" && [ "$REPEAT" -ge 1 ] && [ "$REPEAT" -le 20 ] || bad_usage "--repeat '$REPEAT' must be 1..20"
is_uint "$SERVER_THREADS" && [ "$SERVER_THREADS" -ge 1 ] && [ "$SERVER_THREADS" -le 256 ] || bad_usage "--server-threads must be 1..256"
is_uint "$CLIENT_THREADS" && [ "$CLIENT_THREADS" -ge 1 ] && [ "$CLIENT_THREADS" -le 256 ] || bad_usage "--client-threads must be 1..256"
if [ -z "$BOARD_MAXMEM" ]; then
  BOARD_MAXMEM=$(( MEMBERS * 320 / 1048576 + 1 ))
  [ "$BOARD_MAXMEM" -ge 512 ] || BOARD_MAXMEM=512
  BOARD_MAXMEM="${BOARD_MAXMEM}M"
fi
[[ "$BOARD_MAXMEM" =~ ^[0-9]+[KMG]?$ ]] || bad_usage "--board-maxmem '$BOARD_MAXMEM' is not a size (bytes, or with K/M/G)"
is_uint "$SERVER_CPU" && is_uint "$CLIENT_CPU" || bad_usage "SERVER_CPU and CLIENT_CPU must be CPU numbers"
[ "$SERVER_CPU" != "$CLIENT_CPU" ] || bad_usage "SERVER_CPU and CLIENT_CPU must differ"

for tool in redis-server redis-benchmark redis-cli curl python3 taskset timeout awk; do
  command -v "$tool" > /dev/null || die "$tool not found (Debian: apt-get install redis-server redis-tools curl python3 util-linux coreutils)"
done
if [ "$WRK" = 1 ] && ! command -v wrk > /dev/null; then
  echo "compare_redis_boards: wrk not found: no wrk top-100 point (apt-get install wrk)" >&2
  WRK=0
fi
for cpu in "$SERVER_CPU" "$CLIENT_CPU"; do
  taskset -c "$cpu" true 2> /dev/null || die "cannot pin to CPU $cpu (online: $(cat /sys/devices/system/cpu/online 2> /dev/null || echo '?')); set SERVER_CPU/CLIENT_CPU"
done
REDIS_VERSION="$(redis-server --version 2> /dev/null | sed -n 's/.* v=\([0-9.]*\).*/\1/p')"
case "$REDIS_VERSION" in 7.*|8.*) ;; *) die "needs Redis 7 (redis-server --version says '${REDIS_VERSION:-nothing}')" ;; esac
[ -n "$BUILD" ] || BUILD="$ROOT/build/release"
CACHE_SERVER="${CACHE_SERVER:-$BUILD/server/cache_server}"
BENCH_CLIENT="${BENCH_CLIENT:-$BUILD/client/bench_client}"
[ -x "$CACHE_SERVER" ] || die "no cache_server at $CACHE_SERVER (build it, or pass --build DIR)"
[ -x "$BENCH_CLIENT" ] || die "no bench_client at $BENCH_CLIENT (build it, or pass --build DIR)"
help_has "$CACHE_SERVER" --board-maxmem || die "$CACHE_SERVER has no --board-maxmem flag (an older build, without boards?)"
help_has "$BENCH_CLIENT" board-score || die "$BENCH_CLIENT has no board workloads (an older build?)"

if [ "$QUICK" = 1 ]; then WARMUP=0.1; PROBE_N=2000; SETTLE=1; else WARMUP=1; PROBE_N=20000; SETTLE=12; fi
WRK_D="$(awk -v d="$DURATION" 'BEGIN { t = int(d); if (t < d) t++; if (t < 1) t = 1; print t }')"
# Each point must end: warm-up + duration + a drain bounded by bench_client's 5 s socket timeout;
# a Redis point is sized to about DURATION s from its probe (bounded: 3 x DURATION + 30 s).
POINT_TIMEOUT="$(awk -v d="$DURATION" -v w="$WARMUP" 'BEGIN { printf "%d", 3 * d + w + 30 }')"
PRELOAD_TIMEOUT=$(( MEMBERS / 2000 + 120 ))
# split_conns C -> "T K": T threads x K connections each = C, T the largest divisor of C <= max.
read -r CT CK <<< "$(split_conns "$CONNS")"

STAMP="$(date +%Y%m%d-%H%M%S)"
[ -n "$OUT" ] || OUT="$ROOT/results/redis-boards-$STAMP"
mkdir -p "$OUT/raw" || die "cannot create $OUT"
OUT="$(cd "$OUT" && pwd)"
[ ! -e "$OUT/points.jsonl" ] || die "$OUT already holds a run (points.jsonl); pick another --out"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/compare_redis_boards.XXXXXX")" || die "cannot create a temporary directory"

# --- processes: every PID we start is stopped on exit -------------------------------------------
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && stop_pid "$p"; done
  PIDS=()
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- measurement helpers -----------------------------------------------------------------------
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2> /dev/null || echo 0; }
# cpu_snap -> "total steal server_cpu_total server_cpu_idle client_cpu_total client_cpu_idle"
busy_fields() {  # busy_fields SNAP0 SNAP1 -> emit arguments: the two cores' busy % and steal %
  local tot0 st0 sa0 si0 ca0 ci0 tot1 st1 sa1 si1 ca1 ci1
  read -r tot0 st0 sa0 si0 ca0 ci0 <<< "$1"; read -r tot1 st1 sa1 si1 ca1 ci1 <<< "$2"
  printf '%s\n' \
    "server_core_busy_pct=$(awk -v a="$sa0" -v b="$sa1" -v x="$si0" -v y="$si1" 'BEGIN { t = b - a; if (t <= 0) print "null"; else printf "%.1f", 100 - 100 * (y - x) / t }')" \
    "client_core_busy_pct=$(awk -v a="$ca0" -v b="$ca1" -v x="$ci0" -v y="$ci1" 'BEGIN { t = b - a; if (t <= 0) print "null"; else printf "%.1f", 100 - 100 * (y - x) / t }')" \
    "steal_pct=$(awk -v a="$tot0" -v b="$tot1" -v x="$st0" -v y="$st1" 'BEGIN { t = b - a; if (t <= 0) print "null"; else printf "%.2f", 100 * (y - x) / t }')"
}
record_cmd() {
  local text="${2//"$WORK"/\$TMP}"
  text="${text//"$OUT/"/}"; text="${text//"$BENCH_CLIENT"/bench_client}"; text="${text//"$CACHE_SERVER"/cache_server}"
  echo "$1: $text" >> "$OUT/commands.txt"
}
# emit FILE KEY=VALUE...: one JSON line into FILE; a VALUE that parses as JSON is kept as such.
emit() {
  local file="$1"
  shift
  python3 - "$@" >> "$file" << 'PY'
import json, sys
rec = {}
for arg in sys.argv[1:]:
    k, _, v = arg.partition("=")
    try:
        rec[k] = json.loads(v)
    except ValueError:
        rec[k] = v
print(json.dumps(rec))
PY
}
jget() {  # jget FILE PYTHON-EXPR(d): a figure of a JSON file
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# --- servers -------------------------------------------------------------------------------------
declare -A SRV_PID SRV_PORT
rcli() { redis-cli -h 127.0.0.1 -p "${SRV_PORT[$1]}" "${@:2}"; }
used_memory() { rcli "$1" info memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p'; }
start_redis() {  # start_redis NAME: no persistence (our boards are memory-only too)
  start_redis_server "$1" --appendonly no
}
stats() { curl -s -m 10 "http://127.0.0.1:${SRV_PORT[$1]}/stats" > "$2" || die "GET /stats of $1 failed"; }

# --- preloads ------------------------------------------------------------------------------------
# redis_preload NAME FILE KEY: ZADDs of FILE through redis-cli --pipe; memory before/after into
# memory.json under KEY.
redis_preload() {
  local name="$1" file="$2" key="$3" pid="${SRV_PID[$1]}" r0 r1 u0 u1 t0 t1 n rc=0
  alive "$name"
  r0="$(rss_kb "$pid")"; u0="$(used_memory "$name")"
  record_cmd "$name preload" "taskset -c $CLIENT_CPU redis-cli -h 127.0.0.1 -p ${SRV_PORT[$name]} --pipe < $(basename "$file")   ($MEMBERS x ZADD b0 SCORE NAME, scripts/compare_redis_boards_report.py resp)"
  t0="$EPOCHREALTIME"
  timeout "$PRELOAD_TIMEOUT" taskset -c "$CLIENT_CPU" redis-cli -h 127.0.0.1 -p "${SRV_PORT[$name]}" --pipe \
    < "$file" > "$OUT/raw/$name-preload.txt" 2>&1 || rc=$?
  t1="$EPOCHREALTIME"
  [ "$rc" = 0 ] || die "redis-cli --pipe into $name failed (exit $rc): $(tail -3 "$OUT/raw/$name-preload.txt")"
  grep -q "errors: 0, replies: $MEMBERS" "$OUT/raw/$name-preload.txt" \
    || die "redis-cli --pipe into $name: $(tail -1 "$OUT/raw/$name-preload.txt")"
  n="$(rcli "$name" zcard b0)"
  [ "$n" = "$MEMBERS" ] || die "$name holds $n members after the preload, not $MEMBERS"
  r1="$(rss_kb "$pid")"; u1="$(used_memory "$name")"
  emit "$WORK/memory.jsonl" key="$key" rss_before_kb="$r0" rss_after_kb="$r1" \
    used_memory_before="$u0" used_memory_after="$u1" members="$n" \
    preload_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
  log "$name: $MEMBERS members in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s; RSS $r0 -> $r1 kB ($(awk -v a="$r0" -v b="$r1" -v n="$MEMBERS" 'BEGIN { printf "%.1f", (b - a) * 1024 / n }') B/member), used_memory $(awk -v a="$u0" -v b="$u1" -v n="$MEMBERS" 'BEGIN { printf "%.1f", (b - a) / n }') B/member"
}
ours_preload() {
  local pid="${SRV_PID[ours]}" r0 r1 t0 t1 cmd rc=0 n bytes
  alive ours
  r0="$(rss_kb "$pid")"
  cmd=("$BENCH_CLIENT" -s 127.0.0.1 -p "${SRV_PORT[ours]}" --workload board-score --boards 1
       --members "$MEMBERS" --threads 1 --connections-per-thread 1 -n 1 --warmup 0 -q
       --json "$OUT/raw/ours-preload.json")
  record_cmd "ours preload" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}")   (POST /reset, then every member PUT once; one measured request)"
  t0="$EPOCHREALTIME"
  timeout "$PRELOAD_TIMEOUT" taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/ours-preload.txt" 2>&1 || rc=$?
  t1="$EPOCHREALTIME"
  [ "$rc" = 0 ] || die "bench_client's preload failed (exit $rc): $(tail -3 "$OUT/raw/ours-preload.txt")"
  [ "$(jget "$OUT/raw/ours-preload.json" 'd["meta"]["preload"]["errors"]')" = 0 ] \
    || die "bench_client's preload had errors (raw/ours-preload.json)"
  stats ours "$OUT/raw/ours-preload-stats.json"
  n="$(jget "$OUT/raw/ours-preload-stats.json" 'd["board_members"]')"
  bytes="$(jget "$OUT/raw/ours-preload-stats.json" 'd["board_bytes"]')"
  [ "$n" = "$MEMBERS" ] || die "our board holds $n members after the preload, not $MEMBERS"
  r1="$(rss_kb "$pid")"
  emit "$WORK/memory.jsonl" key=ours rss_before_kb="$r0" rss_after_kb="$r1" board_members="$n" \
    board_bytes="$bytes" members="$n" \
    preload_s="$(jget "$OUT/raw/ours-preload.json" 'd["meta"]["preload"]["seconds"]')" \
    preload_wall_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
  log "ours: $MEMBERS members in $(jget "$OUT/raw/ours-preload.json" '"%.2f" % d["meta"]["preload"]["seconds"]') s; RSS $r0 -> $r1 kB ($(awk -v a="$r0" -v b="$r1" -v n="$MEMBERS" 'BEGIN { printf "%.1f", (b - a) * 1024 / n }') B/member), board_bytes $(awk -v b="$bytes" -v n="$MEMBERS" 'BEGIN { printf "%.1f", b / n }') B/member"
}

# --- points --------------------------------------------------------------------------------------
TIMEFORMAT='%3R %3U %3S'
declare -A REDIS_CMD=(
  [update]="ZADD b0 __rand_int__ m__rand_int__"
  [rank]="ZREVRANK b0 m__rand_int__"
  [top]="ZREVRANGE b0 0 99 WITHSCORES"
)
declare -A OUR_WORKLOAD=([update]=board-update [rank]=board-score [top]=board-top)
# redis_point OP REP ORDER: a probe sizes -n to about DURATION s, then the measured run.
redis_point() {
  local op="$1" rep="$2" order="$3" pid="${SRV_PID[redis]}" tag="$1-redis-r$2" base rate n rc=0
  local k0 k1 s0 s1 t0 t1 words zc
  read -r -a words <<< "${REDIS_CMD[$op]}"
  base=(redis-benchmark -h 127.0.0.1 -p "${SRV_PORT[redis]}" -c "$CONNS" -r "$MEMBERS" -P 1 --csv)
  alive redis
  timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${base[@]}" -n "$PROBE_N" "${words[@]}" \
    > "$OUT/raw/$tag-probe.csv" 2>&1 || die "redis-benchmark probe ($op) failed: $(tail -3 "$OUT/raw/$tag-probe.csv")"
  rate="$(tr -d '"' < "$OUT/raw/$tag-probe.csv" | awk -F, 'NR > 1 && $2 + 0 > 0 { print $2; exit }')"
  [ -n "$rate" ] || die "redis-benchmark probe ($op) printed no rate: $(tail -3 "$OUT/raw/$tag-probe.csv")"
  n="$(awk -v r="$rate" -v d="$DURATION" -v c="$CONNS" 'BEGIN { n = int(r * d + 0.5); if (n < 20 * c) n = 20 * c; if (n < 1000) n = 1000; print n }')"
  [ "$rep" != 1 ] || record_cmd "$op redis" "taskset -c $CLIENT_CPU $(echo_cmd "${base[@]}") -n N ${REDIS_CMD[$op]}   (N = probe rate x $DURATION s; probe: -n $PROBE_N)"
  k0="$(cpu_ticks "$pid")"; s0="$(cpu_snap)"
  t0="$EPOCHREALTIME"
  { time timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${base[@]}" -n "$n" "${words[@]}" \
      > "$OUT/raw/$tag.csv" 2> "$OUT/raw/$tag.err" ; } 2> "$OUT/raw/$tag.time" || rc=$?
  t1="$EPOCHREALTIME"
  k1="$(cpu_ticks "$pid")"; s1="$(cpu_snap)"
  alive redis
  [ "$rc" = 0 ] || die "redis-benchmark ($op) failed (exit $rc): $(tail -3 "$OUT/raw/$tag.err")"
  zc="$(rcli redis zcard b0)"
  [ "$zc" = "$MEMBERS" ] || die "after $op Redis's b0 holds $zc members, not $MEMBERS (member names do not match?)"
  mapfile -t busy < <(busy_fields "$s0" "$s1")
  emit "$OUT/points.jsonl" op="$op" system=redis rep="$rep" order="$order" raw="raw/$tag.csv" \
    stderr="raw/$tag.err" client_times="raw/$tag.time" n="$n" probe_n="$PROBE_N" probe_rps="$rate" \
    wall_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')" \
    server_ticks="[$k0, $k1]" zcard_after="$zc" "${busy[@]}"
  log "$tag: $(tr -d '"' < "$OUT/raw/$tag.csv" | awk -F, 'NR > 1 { printf "%.0f req/s", $2; exit }') (n=$n, probe $rate req/s)"
}
# ours_point OP REP ORDER
ours_point() {
  local op="$1" rep="$2" order="$3" pid="${SRV_PID[ours]}" tag="$1-ours-r$2" cmd rc=0 k0 k1 s0 s1 t0 t1
  cmd=("$BENCH_CLIENT" -s 127.0.0.1 -p "${SRV_PORT[ours]}" --workload "${OUR_WORKLOAD[$op]}"
       --boards 1 --members "$MEMBERS" --threads "$CT" --connections-per-thread "$CK"
       -d "${DURATION}s" --warmup "${WARMUP}s" --no-preload --seed "$rep" --server-pid "$pid"
       --json "$OUT/raw/$tag.json" -q)
  [ "$op" != top ] || cmd+=(--top-n 100)
  [ "$rep" != 1 ] || record_cmd "$op ours" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}" | sed "s/--seed 1/--seed REP/")"
  alive ours
  k0="$(cpu_ticks "$pid")"; s0="$(cpu_snap)"
  t0="$EPOCHREALTIME"
  { time timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/$tag.txt" 2>&1 ; } 2> "$OUT/raw/$tag.time" || rc=$?
  t1="$EPOCHREALTIME"
  k1="$(cpu_ticks "$pid")"; s1="$(cpu_snap)"
  alive ours
  [ "$rc" = 0 ] || die "bench_client ($op) failed (exit $rc): $(tail -3 "$OUT/raw/$tag.txt")"
  mapfile -t busy < <(busy_fields "$s0" "$s1")
  emit "$OUT/points.jsonl" op="$op" system=ours rep="$rep" order="$order" raw="raw/$tag.json" \
    client_times="raw/$tag.time" wall_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')" \
    server_ticks="[$k0, $k1]" "${busy[@]}"
  log "$tag: $(jget "$OUT/raw/$tag.json" '"%.0f req/s, %d errors, hit rate %s, server CPU %s%%, client CPU %s%%" % (d["points"][0]["throughput_rps"], d["points"][0]["errors"], d["points"][0].get("hit_rate"), d["points"][0].get("server_cpu_pct"), d["points"][0].get("client_cpu_pct"))' || echo "?")"
}
# wrk_point REP ORDER: our top 100 by wrk (answers not checked)
wrk_point() {
  local rep="$1" order="$2" pid="${SRV_PID[ours]}" tag="top-wrk-r$1" cmd rc=0 k0 k1 s0 s1 t0 t1
  cmd=(wrk -t 1 -c "$CONNS" -d "${WRK_D}s" --timeout 10s --latency "http://127.0.0.1:${SRV_PORT[ours]}/board/b0/top?n=100")
  [ "$rep" != 1 ] || record_cmd "top wrk" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}")"
  alive ours
  k0="$(cpu_ticks "$pid")"; s0="$(cpu_snap)"
  t0="$EPOCHREALTIME"
  { time timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/$tag.txt" 2>&1 ; } 2> "$OUT/raw/$tag.time" || rc=$?
  t1="$EPOCHREALTIME"
  k1="$(cpu_ticks "$pid")"; s1="$(cpu_snap)"
  alive ours
  [ "$rc" = 0 ] || die "wrk failed (exit $rc): $(tail -3 "$OUT/raw/$tag.txt")"
  mapfile -t busy < <(busy_fields "$s0" "$s1")
  emit "$OUT/points.jsonl" op=top system=ours-wrk rep="$rep" order="$order" raw="raw/$tag.txt" \
    client_times="raw/$tag.time" wall_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')" \
    server_ticks="[$k0, $k1]" "${busy[@]}"
  log "$tag: $(awk '/^Requests\/sec:/ { printf "%.0f req/s", $2 }' "$OUT/raw/$tag.txt")"
}

# --- the run ---------------------------------------------------------------------------------------
T_START="$EPOCHREALTIME"
EST="$(awk -v d="$DURATION" -v w="$WARMUP" -v r="$REPEAT" -v m="$MEMBERS" -v k="$WRK" -v st="$SETTLE" 'BEGIN { printf "%.0f", r * ((6 + k) * (d + 0.5) + 3 * w + 3) + m / 40000 + st + 5 }')"
log "compare_redis_boards: $MEMBERS members, $CONNS conns, ${DURATION}s per point, $REPEAT round(s); about ${EST}s; results in $OUT"
log "servers on CPU $SERVER_CPU, load generators on CPU $CLIENT_CPU; temporary files in $WORK"
: > "$OUT/commands.txt"
: > "$WORK/memory.jsonl"
: > "$WORK/settled.txt"
python3 - "$OUT/meta.json" << PY
import json, platform, subprocess, sys
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""
meta = {
    "tool": "scripts/compare_redis_boards.sh", "date_utc": sh("date -u +%Y-%m-%dT%H:%M:%SZ"),
    "git_revision": sh("git -C '$ROOT' rev-parse --short HEAD 2>/dev/null") or "unknown",
    "git_dirty": bool(sh("git -C '$ROOT' status --porcelain 2>/dev/null | head -1")),
    "host": platform.node(), "kernel": platform.release(),
    "cpu_model": sh("sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1"),
    "online_cpus": sh("cat /sys/devices/system/cpu/online"),
    "mem_total": sh("awk '/^MemTotal/ { print \$2, \$3 }' /proc/meminfo"),
    "members": $MEMBERS, "conns": $CONNS, "duration_s": float("$DURATION"),
    "warmup_s": float("$WARMUP"), "repeat": $REPEAT, "quick": $QUICK == 1, "wrk": $WRK == 1,
    "probe_n": $PROBE_N, "client_threads": $CT, "per_thread": $CK,
    "server_threads": $SERVER_THREADS, "board_maxmem": "$BOARD_MAXMEM",
    "server_cpu": $SERVER_CPU, "client_cpu": $CLIENT_CPU, "clk_tck": $CLK_TCK,
    "loadavg_start": " ".join(open("/proc/loadavg").read().split()[:3]),
    "redis_version": "$REDIS_VERSION", "redis_benchmark": sh("redis-benchmark --version"),
    "cache_server": "$CACHE_SERVER", "bench_client": "$BENCH_CLIENT",
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
PY

# 1. The three servers (their RSS is read before the preloads, after a few idle seconds): a Redis
#    for the memory target only (our names), the load's Redis, ours.
start_redis redis-mem
start_redis redis
start_ours ours --board-maxmem "$BOARD_MAXMEM"

# 2. Redis's preload files: the same scores, our names and the load's names.
t0="$EPOCHREALTIME"
python3 "$HELPER" resp "$MEMBERS" "$WORK/same.resp" "$WORK/padded.resp" || die "writing the RESP files failed"
log "RESP preload files ($MEMBERS members x 2) in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"

# 3. The preloads, then RSS once more when every server has been idle SETTLE s (both use jemalloc
#    with a background thread, which returns freed pages after its 10 s decay).
redis_preload redis-mem "$WORK/same.resp" redis_same
redis_preload redis "$WORK/padded.resp" redis_load
rm -f "$WORK/same.resp" "$WORK/padded.resp"
ours_preload
sleep "$SETTLE"
for s in redis-mem:redis_same redis:redis_load ours:ours; do
  alive "${s%%:*}"
  echo "${s#*:} $(rss_kb "${SRV_PID[${s%%:*}]}")" >> "$WORK/settled.txt"
done
log "RSS ${SETTLE}s after the preloads: $(tr '\n' ' ' < "$WORK/settled.txt")(kB)"
stop_server redis-mem

# 4. The rounds.
for rep in $(seq 1 "$REPEAT"); do
  for op in update rank top; do
    if [ $((rep % 2)) = 1 ]; then
      redis_point "$op" "$rep" 1; ours_point "$op" "$rep" 2
      [ "$op" != top ] || [ "$WRK" = 0 ] || wrk_point "$rep" 3
    else
      ours_point "$op" "$rep" 1
      [ "$op" != top ] || [ "$WRK" = 0 ] || wrk_point "$rep" 2
      redis_point "$op" "$rep" 3
    fi
  done
done

# 5. After the load: both boards still hold every member; RSS at the end.
stats ours "$OUT/raw/ours-final-stats.json"
n="$(jget "$OUT/raw/ours-final-stats.json" 'd["board_members"]')"
[ "$n" = "$MEMBERS" ] || die "after the load our board holds $n members, not $MEMBERS"
RSS_END_REDIS="$(rss_kb "${SRV_PID[redis]}")" RSS_END_OURS="$(rss_kb "${SRV_PID[ours]}")"
rcli redis info memory | tr -d '\r' > "$OUT/raw/redis-info-memory.txt" || true
python3 - "$WORK/memory.jsonl" "$OUT/memory.json" "$RSS_END_REDIS" "$RSS_END_OURS" "$WORK/settled.txt" "$SETTLE" << 'PY'
import json, sys
mem = {}
for line in open(sys.argv[1]):
    rec = json.loads(line)
    mem[rec.pop("key")] = rec
for line in open(sys.argv[5]):
    key, kb = line.split()
    mem[key]["rss_settled_kb"] = int(kb)
    mem[key]["settle_s"] = float(sys.argv[6])
mem["redis_load"]["rss_end_kb"] = int(sys.argv[3])
mem["ours"]["rss_end_kb"] = int(sys.argv[4])
json.dump(mem, open(sys.argv[2], "w"), indent=1)
PY
stop_server redis; stop_server ours

# 6. The report.
cp /proc/loadavg "$OUT/loadavg_end.txt"
python3 "$HELPER" "$OUT" || die "the report failed (raw files are in $OUT)"
log "done in $(awk -v a="$T_START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s; summary: $OUT/summary.md"
