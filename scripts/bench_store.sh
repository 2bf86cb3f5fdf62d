#!/usr/bin/env bash
# bench_store.sh — cache_server's durable tier beside Redis AOF, in one run, same machine.
#
# PUT/SET throughput, 100-byte values, 100,000 keys, one request outstanding per connection, at
# each connection count (--conns), the configurations measured back to back per count:
#   redis always    redis-server --appendonly yes --appendfsync always  (redis-benchmark -t set)
#   ours through    cache_server --store rocksdb:DIR --write-mode through (bench_client put-all)
#   redis everysec  redis-server --appendonly yes --appendfsync everysec
#   ours behind     cache_server --store rocksdb:DIR --write-mode behind
#   ours none       cache_server --store none (memory only: the baseline of write-behind)
# then GET-hit throughput at 8 connections (bench_client get-popular, preloaded, all hits) with
# and without a store, interleaved none, rocksdb, none, rocksdb, none, rocksdb: medians of 3.
# Every server runs pinned to CPU $SERVER_CPU (0), every load generator to $CLIENT_CPU (1); each
# configuration gets a fresh data directory. Per point: throughput, both sides' CPU, the store's
# commits/s and writes per commit (from /stats before and after), the disk's utilization (as
# iostat's %util: delta of "ms doing I/O" in /proc/diskstats for the device holding the data
# directory / elapsed ms), writes/s and flushes/s. Prints summary.md (a Markdown table, the
# GET-hit ratio and the targets as PASS/FAIL lines) and writes it with the raw files to --out.
#
# Usage: scripts/bench_store.sh [options]
#   --duration S        seconds per point, decimals allowed (default 5; --quick: 1)
#   --conns "LIST"      connection counts (default "1 8 50 200")
#   --out DIR           results directory (default results/store-<stamp>/)
#   --quick             smoke test: short points and warm-ups (default --duration 1)
#   --build DIR         where cache_server and bench_client are (default build/release, or
#                       build/bench-release when only that one has both; env CACHE_SERVER /
#                       BENCH_CLIENT name the binaries themselves)
#   --data-dir DIR      parent of the data directories of Redis and RocksDB (default $TMPDIR
#                       or /tmp; must be a real disk, both systems use the same one)
#   --server-threads N  cache_server -t N (default 1; Redis has one main thread)
#   --client-threads N  most bench_client threads: C connections = T threads x C/T each, T the
#                       largest divisor of C up to N (default 8: 200 = 8 x 25, 50 = 5 x 10)
#   --perf              also sample our server during every through/behind PUT point
#                       (perf record -e cpu-clock -g) and report how much of a PUT's server CPU
#                       went to RocksDB's Write() and to its memtable insert, and the ceilings
#                       that implies (needs perf: Debian linux-perf). perf shares the client's
#                       CPU and slows the server a little: take the targets from a run without it
#   -h, --help          this text
# env: SERVER_CPU (0), CLIENT_CPU (1).
# Needs redis-server, redis-benchmark and redis-cli (Redis 7), curl, python3, taskset, timeout.
# Runs about 6 x (duration + 1 s) per connection count + 6 x (duration + 1 s) for GET, plus
# start-ups: about 3 minutes with the defaults.
# Exit status: 0 measured (whatever the targets say), 1 a failure (a message says which),
# 2 bad usage, 130 interrupted. Everything listens on 127.0.0.1 only, on free ports; every
# process started is stopped by PID on exit, and the data directories are removed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_NAME=bench_store
# usage, die, bad_usage, is_uint, stop_pid, forget_pid, log, cpu_ticks, cpu_snap, free_port,
# echo_cmd, help_has, split_conns, stop_server, start_ours, alive, start_redis_server
source "$ROOT/scripts/lib/bench_common.sh"

DURATION="" CONNS="1 8 50 200" OUT="" QUICK=0 BUILD="" DATA_PARENT="${TMPDIR:-/tmp}"
SERVER_THREADS=1 CLIENT_THREADS=8 PERF=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) QUICK=1; shift ;;
    --perf) PERF=1; shift ;;
    --duration|--conns|--out|--build|--data-dir|--server-threads|--client-threads)
      [ $# -ge 2 ] || bad_usage "$1 needs a value"
      case "$1" in
        --duration) DURATION="$2" ;; --conns) CONNS="$2" ;; --out) OUT="$2" ;;
        --build) BUILD="$2" ;; --data-dir) DATA_PARENT="$2" ;;
        --server-threads) SERVER_THREADS="$2" ;; --client-threads) CLIENT_THREADS="$2" ;;
      esac
      shift 2 ;;
    --duration=*) DURATION="${1#*=}"; shift ;;
    --conns=*) CONNS="${1#*=}"; shift ;;
    --out=*) OUT="${1#*=}"; shift ;;
    --build=*) BUILD="${1#*=}"; shift ;;
    --data-dir=*) DATA_PARENT="${1#*=}"; shift ;;
    --server-threads=*) SERVER_THREADS="${1#*=}"; shift ;;
    --client-threads=*) CLIENT_THREADS="${1#*=}"; shift ;;
    *) bad_usage "unknown argument '$1'" ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"

# --- validate ----------------------------------------------------------------------------------
if [ -z "$DURATION" ]; then DURATION=5; [ "$QUICK" = 1 ] && DURATION=1; fi
[[ "$DURATION" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || bad_usage "--duration '$DURATION' is not a number of seconds"
awk -v d="$DURATION" 'BEGIN { exit !(d >= 0.1 && d <= 600) }' || bad_usage "--duration must be 0.1..600 s"
read -r -a CONN_LIST <<< "$CONNS"
[ "${#CONN_LIST[@]}" -gt 0 ] || bad_usage "--conns is empty"
for c in "${CONN_LIST[@]}"; do
  is_uint "$c" && [ "$c" -ge 1 ] && [ "$c" -le 4096 ] || bad_usage "--conns: '$c' is not a connection count 1..4096"
done
[ "$(printf '%s\n' "${CONN_LIST[@]}" | sort -u | wc -l)" = "${#CONN_LIST[@]}" ] || bad_usage "--conns repeats a count"
is_uint "$SERVER_THREADS" && [ "$SERVER_THREADS" -ge 1 ] || bad_usage "--server-threads must be a positive integer"
is_uint "$CLIENT_THREADS" && [ "$CLIENT_THREADS" -ge 1 ] || bad_usage "--client-threads must be a positive integer"
is_uint "$SERVER_CPU" && is_uint "$CLIENT_CPU" || bad_usage "SERVER_CPU and CLIENT_CPU must be CPU numbers"
[ "$SERVER_CPU" != "$CLIENT_CPU" ] || bad_usage "SERVER_CPU and CLIENT_CPU must differ"
GET_CONNS=8

for tool in redis-server redis-benchmark redis-cli curl python3 taskset timeout awk; do
  command -v "$tool" > /dev/null || die "$tool not found (Debian: apt-get install redis-server curl python3 util-linux coreutils)"
done
for cpu in "$SERVER_CPU" "$CLIENT_CPU"; do
  taskset -c "$cpu" true 2> /dev/null || die "cannot pin to CPU $cpu (online: $(cat /sys/devices/system/cpu/online 2> /dev/null || echo '?')); set SERVER_CPU/CLIENT_CPU"
done
if [ "$PERF" = 1 ]; then
  command -v perf > /dev/null || die "--perf needs perf (Debian: apt-get install linux-perf)"
  perf record -e cpu-clock -o /dev/null -- true > /dev/null 2>&1 \
    || die "--perf: perf record -e cpu-clock does not work here (kernel.perf_event_paranoid? $(cat /proc/sys/kernel/perf_event_paranoid 2> /dev/null))"
fi
REDIS_VERSION="$(redis-server --version 2> /dev/null | sed -n 's/.* v=\([0-9.]*\).*/\1/p')"
case "$REDIS_VERSION" in 7.*|8.*) ;; *) die "needs Redis 7 (redis-server --version says '${REDIS_VERSION:-nothing}')" ;; esac
if [ -z "$BUILD" ]; then
  BUILD="$ROOT/build/release"
  for b in "$ROOT/build/release" "$ROOT/build/bench-release"; do
    if [ -x "$b/server/cache_server" ] && [ -x "$b/client/bench_client" ]; then BUILD="$b"; break; fi
  done
fi
CACHE_SERVER="${CACHE_SERVER:-$BUILD/server/cache_server}"
BENCH_CLIENT="${BENCH_CLIENT:-$BUILD/client/bench_client}"
[ -x "$CACHE_SERVER" ] || die "no cache_server at $CACHE_SERVER (build it, or pass --build DIR)"
[ -x "$BENCH_CLIENT" ] || die "no bench_client at $BENCH_CLIENT (build it, or pass --build DIR)"
help_has "$CACHE_SERVER" --store || die "$CACHE_SERVER has no --store flag (an older build?)"
help_has "$CACHE_SERVER" --write-mode || die "$CACHE_SERVER has no --write-mode flag (an older build?)"
[ -d "$DATA_PARENT" ] && [ -w "$DATA_PARENT" ] || die "--data-dir $DATA_PARENT is not a writable directory"

if [ "$QUICK" = 1 ]; then WARMUP=0.1; PROBE_MIN=200; PROBE_PER_CONN=10
else WARMUP=1; PROBE_MIN=2000; PROBE_PER_CONN=50; fi
# Each point must end: warm-up + duration + a drain bounded by bench_client's 5 s socket timeout.
POINT_TIMEOUT="$(awk -v d="$DURATION" -v w="$WARMUP" 'BEGIN { printf "%d", 3 * d + w + 30 }')"

STAMP="$(date +%Y%m%d-%H%M%S)"
[ -n "$OUT" ] || OUT="$ROOT/results/store-$STAMP"
mkdir -p "$OUT/raw" || die "cannot create $OUT"
OUT="$(cd "$OUT" && pwd)"
[ ! -e "$OUT/points.jsonl" ] || die "$OUT already holds a run (points.jsonl); pick another --out"
WORK="$(mktemp -d "$DATA_PARENT/bench_store.XXXXXX")" || die "cannot create a directory in $DATA_PARENT"

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
# cpu_snap -> "total steal server_cpu_total server_cpu_idle client_cpu_total client_cpu_idle"
# (jiffies from /proc/stat; idle includes iowait): steal shows the VM's noise, and the busy share
# of the two pinned CPUs against our processes' own CPU shows what else ran on them.

# The block device holding the data directory, as named in /proc/diskstats ("" if none).
disk_of() {
  local dir="$1" mm name src
  mm="$(stat -c '%Hd:%Ld' "$dir" 2> /dev/null || true)"
  if [ -n "$mm" ] && [ -e "/sys/dev/block/$mm" ]; then
    name="$(basename "$(readlink -f "/sys/dev/block/$mm")")"
    awk -v n="$name" '$3 == n { f = 1 } END { exit !f }' /proc/diskstats && { echo "$name"; return; }
  fi
  src="$(findmnt -n -o SOURCE --target "$dir" 2> /dev/null | head -1 || true)"
  name="$(basename "${src%%[*}")"
  if [ -n "$name" ] && awk -v n="$name" '$3 == n { f = 1 } END { exit !f }' /proc/diskstats; then echo "$name"; fi
}
DISK="$(disk_of "$WORK")"
FS_TYPE="$(findmnt -n -o FSTYPE --target "$WORK" 2> /dev/null | head -1 || true)"
[ -n "$FS_TYPE" ] || FS_TYPE="$(stat -f -c %T "$WORK")"
case "$FS_TYPE" in tmpfs|ramfs) die "--data-dir $DATA_PARENT is on $FS_TYPE: fsync costs nothing there; use a directory on a disk" ;; esac
[ -n "$DISK" ] || log "warning: no block device found for $WORK (filesystem $FS_TYPE); disk utilization is not reported"
# disk_snap -> "ms_doing_io writes_completed flushes_completed" of $DISK (the kernel's fields 10,
# 5 and 16 of Documentation/admin-guide/iostats.rst: columns 13, 8 and 19, after major, minor
# and name; flushes exist since Linux 5.5)
disk_snap() {
  [ -n "$DISK" ] || { echo "- - -"; return; }
  awk -v n="$DISK" '$3 == n { print $13, $8, (NF >= 19 ? $19 : "-") }' /proc/diskstats
}
jnum() { case "$1" in ''|-) echo null ;; *) echo "$1" ;; esac; }  # a number or JSON null

record_cmd() { echo "$1: ${2//$WORK/\$DATA}" >> "$OUT/commands.txt"; }

# --- servers -------------------------------------------------------------------------------------
declare -A SRV_PID SRV_PORT
# start_redis NAME FSYNC: a fresh redis-server with AOF (fsync policy FSYNC), no RDB snapshots.
start_redis() {
  start_redis_server "$1" --appendonly yes --appendfsync "$2"
}
# start_ours NAME FLAGS...: a fresh cache_server on a free port (-p 0; it prints the port).

# split_conns C -> "T K": T threads x K connections each = C, T the largest divisor of C <= max.

# --- one Redis point ---------------------------------------------------------------------------
# redis_point NAME CONNS: a probe sizes -n to about DURATION s, then the measured run.
TIMEFORMAT='%3R %3U %3S'
redis_point() {
  local name="$1" c="$2" port="${SRV_PORT[$1]}" pid="${SRV_PID[$1]}" base probe n rate rc=0
  local tag="$name-c$c" t0 t1 k0 k1 d0 d1 s0 s1
  base=(redis-benchmark -h 127.0.0.1 -p "$port" -t set -d 100 -r 100000 -c "$c" -P 1)
  probe=$(( PROBE_PER_CONN * c > PROBE_MIN ? PROBE_PER_CONN * c : PROBE_MIN ))
  t0="$EPOCHREALTIME"
  timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${base[@]}" -n "$probe" --csv > "$OUT/raw/$tag-probe.csv" 2>&1 \
    || die "redis-benchmark probe against $name (c=$c) failed: $(tail -3 "$OUT/raw/$tag-probe.csv")"
  t1="$EPOCHREALTIME"
  rate="$(tr -d '"' < "$OUT/raw/$tag-probe.csv" | awk -F, '$1 == "SET" { print $2 }')"
  [ -n "$rate" ] || rate="$(awk -v n="$probe" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')"
  n="$(awk -v r="$rate" -v d="$DURATION" -v c="$c" 'BEGIN { n = int(r * d + 0.5); if (n < 20 * c) n = 20 * c; if (n < 100) n = 100; print n }')"
  record_cmd "$tag" "taskset -c $CLIENT_CPU $(echo_cmd "${base[@]}") -n $n --csv   (probe: -n $probe, $rate SET/s)"
  alive "$name"
  k0="$(cpu_ticks "$pid")"; d0="$(disk_snap)"; s0="$(cpu_snap)"
  t0="$EPOCHREALTIME"
  { time timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${base[@]}" -n "$n" --csv > "$OUT/raw/$tag.csv" 2> "$OUT/raw/$tag.err" ; } 2> "$OUT/raw/$tag.time" || rc=$?
  t1="$EPOCHREALTIME"
  k1="$(cpu_ticks "$pid")"; d1="$(disk_snap)"; s1="$(cpu_snap)"
  alive "$name"
  [ "$rc" = 0 ] || die "redis-benchmark against $name (c=$c) failed (exit $rc): $(tail -3 "$OUT/raw/$tag.err")"
  emit_point put redis "${name#redis-}" "$c" "" "" 1 "raw/$tag.csv" "" "" "$rc" "$t0" "$t1" "$d0" "$d1" "$s0" "$s1" \
    "\"server_cpu_s\": $(awk -v a="$k0" -v b="$k1" -v hz="$CLK_TCK" 'BEGIN { printf "%.3f", (b - a) / hz }'), \"client_times\": \"raw/$tag.time\", \"n\": $n, \"probe_n\": $probe, \"probe_rps\": $(jnum "$rate")"
  log "$tag: $(tr -d '"' < "$OUT/raw/$tag.csv" | awk -F, '$1 == "SET" { print $2 " SET/s" }') (n=$n)"
}

# perf_shares FILE -> JSON: the % of the profile's samples (children: the function and everything
# it calls) in RocksDB's write path and in its memtable insert.
perf_shares() {
  perf report -i "$1" --children --sort sym -g none --stdio 2> /dev/null | awk '
    /^#/ || NF < 3 { next }
    $NF == "rocksdb::DBImpl::WriteImpl" && !w { w = $1 }
    $NF == "rocksdb::MemTable::Add" && !m { m = $1 }
    END { gsub("%", "", w); gsub("%", "", m)
          printf "{\"write_pct\": %s, \"memtable_pct\": %s}\n", (w == "" ? 0 : w), (m == "" ? 0 : m) }'
}

# --- one bench_client point --------------------------------------------------------------------
# ours_point PART NAME CONFIG CONNS REP WORKLOAD-FLAGS...
ours_point() {
  local part="$1" name="$2" config="$3" c="$4" rep="$5" port="${SRV_PORT[$2]}" pid="${SRV_PID[$2]}"
  shift 5
  local t k tag cmd rc=0 t0 t1 d0 d1 s0 s1
  read -r t k <<< "$(split_conns "$c")"
  tag="$name-c$c"; [ "$part" = get ] && tag="$name-c$c-r$rep"
  cmd=("$BENCH_CLIENT" -s 127.0.0.1 -p "$port" --threads "$t" --connections-per-thread "$k"
       -d "${DURATION}s" --warmup "${WARMUP}s" "$@" --server-pid "$pid" --json "$OUT/raw/$tag.json" -q)
  record_cmd "$tag" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}" | sed "s|$OUT/||; s|$BENCH_CLIENT|bench_client|")"
  alive "$name"
  curl -s -m 10 "http://127.0.0.1:$port/stats" > "$OUT/raw/$tag.stats0.json" || die "GET /stats of $name failed"
  local perf_pid="" extra=""
  if [ "$PERF" = 1 ] && [ "$part" = put ] && [ "$config" != none ]; then
    # perf runs on the client's CPU like the load; it samples the server's threads wherever
    # they run. Recorded for the whole bench_client run (warm-up included): only shares are used.
    # It starts disabled and the point waits for its answer to "enable" (--control): a perf
    # still attaching when a short point ended recorded nothing of it (a CI failure).
    local ctl ack reply=""
    mkfifo "$WORK/$tag.ctl" "$WORK/$tag.ack"
    exec {ctl}<> "$WORK/$tag.ctl" {ack}<> "$WORK/$tag.ack"  # read-write: opening never blocks
    taskset -c "$CLIENT_CPU" perf record -q -e cpu-clock -g -p "$pid" -D -1 \
      --control "fifo:$WORK/$tag.ctl,$WORK/$tag.ack" -o "$WORK/$tag.perf.data" \
      > "$OUT/raw/$tag.perf.log" 2>&1 &
    perf_pid=$!
    PIDS+=("$perf_pid")
    echo enable >&"$ctl"
    read -r -t 20 -u "$ack" reply || true
    exec {ctl}>&- {ack}>&-
    [ "$reply" = ack ] || die "perf did not start sampling within 20 s (see $OUT/raw/$tag.perf.log)"
  fi
  d0="$(disk_snap)"; s0="$(cpu_snap)"
  t0="$EPOCHREALTIME"
  timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/$tag.txt" 2>&1 || rc=$?
  t1="$EPOCHREALTIME"
  d1="$(disk_snap)"; s1="$(cpu_snap)"
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2> /dev/null || true
    wait "$perf_pid" 2> /dev/null || true
    forget_pid "$perf_pid"
    perf_shares "$WORK/$tag.perf.data" > "$OUT/raw/$tag.perf.json" \
      || die "perf report of $tag failed (see $OUT/raw/$tag.perf.log)"
    rm -f "$WORK/$tag.perf.data"
    extra="\"perf\": \"raw/$tag.perf.json\""
  fi
  alive "$name"
  curl -s -m 10 "http://127.0.0.1:$port/stats" > "$OUT/raw/$tag.stats1.json" || die "GET /stats of $name failed"
  [ "$rc" = 0 ] || die "bench_client against $name (c=$c) failed (exit $rc): $(tail -3 "$OUT/raw/$tag.txt")"
  emit_point "$part" ours "$config" "$c" "$t" "$k" "$rep" "raw/$tag.json" "raw/$tag.stats0.json" "raw/$tag.stats1.json" \
    "$rc" "$t0" "$t1" "$d0" "$d1" "$s0" "$s1" "$extra"
  log "$tag: $(python3 -c 'import json,sys; p = json.load(open(sys.argv[1]))["points"][0]; print("%.0f req/s, %d errors, server CPU %s%%, client CPU %s%%" % (p["throughput_rps"], p["errors"], p["server_cpu_pct"], p["client_cpu_pct"]))' "$OUT/raw/$tag.json" || echo "?")"
}

# emit_point PART SYSTEM CONFIG CONNS THREADS PER_THREAD REP RAW STATS0 STATS1 RC T0 T1 D0 D1 S0 S1 EXTRA
# appends one JSON line to points.jsonl (the report computes everything from it and raw/).
emit_point() {
  local io0 w0 f0 io1 w1 f1 tot0 st0 tot1 st1 sa0 si0 sa1 si1 ca0 ci0 ca1 ci1 extra="${18}"
  read -r io0 w0 f0 <<< "${14}"; read -r io1 w1 f1 <<< "${15}"
  read -r tot0 st0 sa0 si0 ca0 ci0 <<< "${16}"; read -r tot1 st1 sa1 si1 ca1 ci1 <<< "${17}"
  busy() { awk -v a="$1" -v b="$2" -v x="$3" -v y="$4" 'BEGIN { t = b - a; if (t <= 0) print "null"; else printf "%.1f", 100 - 100 * (y - x) / t }'; }
  delta() { if [ "$1" = - ] || [ "$2" = - ] || [ -z "$1" ] || [ -z "$2" ]; then echo null; else echo $(( $2 - $1 )); fi; }
  printf '{"part": "%s", "system": "%s", "config": "%s", "conns": %s, "threads": %s, "per_thread": %s, "rep": %s, "raw": "%s", "stats_before": %s, "stats_after": %s, "rc": %s, "wall_s": %s, "disk": %s, "disk_io_ms": %s, "disk_writes": %s, "disk_flushes": %s, "steal_pct": %s, "server_core_busy_pct": %s, "client_core_busy_pct": %s%s}\n' \
    "$1" "$2" "$3" "$4" "$(jnum "$5")" "$(jnum "$6")" "$7" "$8" \
    "$([ -n "$9" ] && echo "\"$9\"" || echo null)" "$([ -n "${10}" ] && echo "\"${10}\"" || echo null)" "${11}" \
    "$(awk -v a="${12}" -v b="${13}" 'BEGIN { printf "%.6f", b - a }')" \
    "$([ -n "$DISK" ] && echo "\"$DISK\"" || echo null)" "$(delta "$io0" "$io1")" "$(delta "$w0" "$w1")" "$(delta "$f0" "$f1")" \
    "$(awk -v a="$tot0" -v b="$tot1" -v x="$st0" -v y="$st1" 'BEGIN { t = b - a; if (t <= 0) print "null"; else printf "%.2f", 100 * (y - x) / t }')" \
    "$(busy "$sa0" "$sa1" "$si0" "$si1")" "$(busy "$ca0" "$ca1" "$ci0" "$ci1")" \
    "${extra:+, $extra}" >> "$OUT/points.jsonl"
}

# --- the run ---------------------------------------------------------------------------------------
EST="$(awk -v d="$DURATION" -v w="$WARMUP" -v n="${#CONN_LIST[@]}" 'BEGIN { printf "%.0f", n * (5 * d + 3 * w + 2 * 0.3 * d + 3) + 6 * (d + w + 1) + 10 }')"
log "bench_store: ${DURATION}s per point, conns ${CONN_LIST[*]}, GET at $GET_CONNS; about ${EST}s; results in $OUT"
log "data in $WORK (filesystem $FS_TYPE, device ${DISK:-unknown}); servers on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU"
: > "$OUT/commands.txt"
python3 - "$OUT/meta.json" << PY
import json, os, platform, subprocess, sys
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""
cpu = sh("sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1")
meta = {
    "tool": "scripts/bench_store.sh", "date_utc": sh("date -u +%Y-%m-%dT%H:%M:%SZ"),
    "git_revision": sh("git -C '$ROOT' rev-parse --short HEAD 2>/dev/null") or "unknown",
    "git_dirty": bool(sh("git -C '$ROOT' status --porcelain 2>/dev/null | head -1")),
    "host": platform.node(), "kernel": platform.release(), "cpu_model": cpu,
    "online_cpus": sh("cat /sys/devices/system/cpu/online"),
    "duration_s": float("$DURATION"), "warmup_s": float("$WARMUP"), "quick": $QUICK == 1,
    "conns": [int(c) for c in "${CONN_LIST[*]}".split()], "get_conns": $GET_CONNS,
    "server_cpu": $SERVER_CPU, "client_cpu": $CLIENT_CPU, "server_threads": $SERVER_THREADS,
    "client_threads_max": $CLIENT_THREADS, "clk_tck": $CLK_TCK, "perf": $PERF == 1,
    "loadavg_start": " ".join(open("/proc/loadavg").read().split()[:3]),
    "data_dir": "$WORK", "filesystem": "$FS_TYPE", "disk": "$DISK" or None,
    "redis_version": "$REDIS_VERSION", "cache_server": "$CACHE_SERVER", "bench_client": "$BENCH_CLIENT",
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
PY

# 1. PUT/SET: all five servers up at once (idle ones cost nothing), each count measured back to
#    back, so that each ratio compares figures taken within seconds of each other.
start_redis redis-always always
start_redis redis-everysec everysec
start_ours through --store "rocksdb:$WORK/through/db" --write-mode through
start_ours behind --store "rocksdb:$WORK/behind/db" --write-mode behind
start_ours none --store none
PUT_FLAGS=(--workload put-all --value-size 100 --key-size 16 --keys 100000 --no-reset)
for c in "${CONN_LIST[@]}"; do
  redis_point redis-always "$c"
  ours_point put through through "$c" 1 "${PUT_FLAGS[@]}"
  redis_point redis-everysec "$c"
  ours_point put behind behind "$c" 1 "${PUT_FLAGS[@]}"
  ours_point put none none "$c" 1 "${PUT_FLAGS[@]}"
done
for s in redis-always redis-everysec; do
  redis-cli -h 127.0.0.1 -p "${SRV_PORT[$s]}" info persistence > "$OUT/raw/$s-persistence.txt" 2>&1 || true
done
for s in redis-always redis-everysec through behind none; do stop_server "$s"; done
rm -rf "${WORK:?}"/redis-always "${WORK:?}"/redis-everysec "${WORK:?}"/through "${WORK:?}"/behind

# 2. GET hit with and without a store (write-through, the default), interleaved, medians of 3.
start_ours get-none --store none
start_ours get-rocksdb --store "rocksdb:$WORK/get-rocksdb/db"
GET_FLAGS=(--workload get-popular --value-size 100 --key-size 16)
for rep in 1 2 3; do
  ours_point get get-none none "$GET_CONNS" "$rep" "${GET_FLAGS[@]}"
  ours_point get get-rocksdb rocksdb "$GET_CONNS" "$rep" "${GET_FLAGS[@]}"
done
stop_server get-none; stop_server get-rocksdb

# 3. The report.
cp /proc/loadavg "$OUT/loadavg_end.txt"
python3 "$ROOT/scripts/bench_store_report.py" "$OUT" || die "the report failed (raw files are in $OUT)"
log "summary: $OUT/summary.md"
