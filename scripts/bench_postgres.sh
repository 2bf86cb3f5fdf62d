#!/usr/bin/env bash
# bench_postgres.sh — cache_server write-through to PostgreSQL beside the naive design (one commit
# per request, pgbench) and beside RocksDB, in one run, same machine.
#
# 1. PUT-ALL, 100-byte values, --keys keys, one request outstanding per connection, at each
#    connection count (--conns), the three measured back to back per count:
#      ours postgres  cache_server --store postgres:CONNINFO --write-mode through (bench_client
#                     --workload put-all), PostgreSQL with fsync=on, synchronous_commit=on
#      pgbench        pgbench -c C -j C -T S -M prepared, a one-row upsert script: every request
#                     its own committed transaction, on a table of the same shape and key count
#      ours rocksdb   cache_server --store rocksdb:DIR --write-mode through
#    Every point starts with a CHECKPOINT. With --repeat N the sweep runs N times, medians shown.
# 2. GET-POPULAR (all cache hits) against --store postgres: and --store none, 3 times each,
#    alternated (the order swapped every round).
# 3. Cold-cache read-through: --keys keys PUT through a write-through server (wrk, each key once),
#    POST /reset?scope=cache, then every key read once (wrk, --read-conns connections): keys/s.
# Per point: throughput, p50/p99 latency, PostgreSQL's CPU (utime+stime of all its processes,
# /proc/PID/stat), cache_server's CPU, the load generator's CPU, the disk's %util (as iostat:
# delta of /proc/diskstats field 13, ms doing I/O, of the device holding the PostgreSQL data
# directory, over elapsed ms; the device is named in the report), writes/s and flushes/s, and the
# store's commits (from /stats), so that the bottleneck is named. Servers (cache_server, and
# PostgreSQL: its postmaster is started under taskset, every backend inherits the CPU, checked
# before each point) run on CPU $SERVER_CPU (0); load generators (bench_client, pgbench, wrk) on
# CPU $CLIENT_CPU (1). Prints summary.md (Markdown tables, the targets as PASS/MISS lines) and
# writes it, summary.json and the raw files to --out.
#
# Usage: scripts/bench_postgres.sh [options]
#   --duration S        seconds per point, decimals allowed (default 10; --quick: 1). pgbench's
#                       -T takes whole seconds: it runs ceil(S)
#   --conns "LIST"      connection counts of the PUT sweep (default "1 4 16 64")
#   --repeat N          run the PUT sweep N times, interleaved, and report the medians (default 1)
#   --keys N            key space of every part (default 100000; --quick: 2000)
#   --out DIR           results directory (default results/postgres-<stamp>/)
#   --quick             smoke test: short points, few keys, short warm-ups
#   --build DIR         where cache_server and bench_client are (default build/release; env
#                       CACHE_SERVER / BENCH_CLIENT name the binaries)
#   --data-dir DIR      parent of the data directories (PostgreSQL's, RocksDB's; default $TMPDIR
#                       or /tmp; must be a real disk)
#   --server-threads N  cache_server -t N (default 1)
#   --client-threads N  most bench_client threads: C connections = T threads x C/T each, T the
#                       largest divisor of C up to N (default 8)
#   --store-connections N  cache_server --store-connections (default 4: 1 writer, 3 readers)
#   --get-conns N       connections of the GET-POPULAR part (default 8)
#   --read-conns N      connections of the cold read (default 16); the load uses the largest
#                       of --conns
#   -h, --help          this text
# env: SERVER_CPU (0), CLIENT_CPU (1).
# Needs PostgreSQL 15 (initdb, pg_ctl, pgbench, psql: postgresql-15), wrk, curl, python3,
# taskset, timeout. Runs about 3 x (duration + 2 s) per connection count and repeat, plus 6 x
# (duration + 1 s) for GET, plus the loads (a few seconds each at 100,000 keys, the cold load
# more at a slow disk): about 4 minutes with the defaults.
# Exit status: 0 measured (whatever the targets say), 1 a failure (a message says which),
# 2 bad usage, 130 interrupted. Everything listens on 127.0.0.1 only, on free ports; every
# process started is stopped by PID on exit, and the data directories (the cluster's too) are
# removed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELPER="$ROOT/scripts/bench_postgres_report.py"
BENCH_NAME=bench_postgres
# usage, die, bad_usage, is_uint, stop_pid, forget_pid, log, cpu_ticks, cpu_snap, free_port,
# echo_cmd, split_conns, stop_server, start_ours, alive, start_redis_server
source "$ROOT/scripts/lib/bench_common.sh"

DURATION="" CONNS="1 4 16 64" REPEAT=1 KEYS="" OUT="" QUICK=0 BUILD="" DATA_PARENT="${TMPDIR:-/tmp}"
SERVER_THREADS=1 CLIENT_THREADS=8 STORE_CONNS=4 GET_CONNS=8 READ_CONNS=16
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) QUICK=1; shift ;;
    --duration|--conns|--repeat|--keys|--out|--build|--data-dir|--server-threads|--client-threads|--store-connections|--get-conns|--read-conns)
      [ $# -ge 2 ] || bad_usage "$1 needs a value"
      case "$1" in
        --duration) DURATION="$2" ;; --conns) CONNS="$2" ;; --repeat) REPEAT="$2" ;;
        --keys) KEYS="$2" ;; --out) OUT="$2" ;; --build) BUILD="$2" ;;
        --data-dir) DATA_PARENT="$2" ;; --server-threads) SERVER_THREADS="$2" ;;
        --client-threads) CLIENT_THREADS="$2" ;; --store-connections) STORE_CONNS="$2" ;;
        --get-conns) GET_CONNS="$2" ;; --read-conns) READ_CONNS="$2" ;;
      esac
      shift 2 ;;
    --*=*)
      flag="${1%%=*}"
      case "$flag" in
        --duration|--conns|--repeat|--keys|--out|--build|--data-dir|--server-threads|--client-threads|--store-connections|--get-conns|--read-conns)
          set -- "$flag" "${1#*=}" "${@:2}" ;;
        *) bad_usage "unknown argument '$1'" ;;
      esac ;;
    *) bad_usage "unknown argument '$1'" ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"

# --- validate ----------------------------------------------------------------------------------
if [ -z "$DURATION" ]; then DURATION=10; [ "$QUICK" = 1 ] && DURATION=1; fi
if [ -z "$KEYS" ]; then KEYS=100000; [ "$QUICK" = 1 ] && KEYS=2000; fi
[[ "$DURATION" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] || bad_usage "--duration '$DURATION' is not a number of seconds"
awk -v d="$DURATION" 'BEGIN { exit !(d >= 0.1 && d <= 600) }' || bad_usage "--duration must be 0.1..600 s"
read -r -a CONN_LIST <<< "$CONNS"
[ "${#CONN_LIST[@]}" -gt 0 ] || bad_usage "--conns is empty"
for c in "${CONN_LIST[@]}"; do
  is_uint "$c" && [ "$c" -ge 1 ] && [ "$c" -le 512 ] || bad_usage "--conns: '$c' is not a connection count 1..512"
done
[ "$(printf '%s\n' "${CONN_LIST[@]}" | sort -u | wc -l)" = "${#CONN_LIST[@]}" ] || bad_usage "--conns repeats a count"
is_uint "$REPEAT" && [ "$REPEAT" -ge 1 ] && [ "$REPEAT" -le 20 ] || bad_usage "--repeat must be 1..20"
is_uint "$KEYS" && [ "$KEYS" -ge 100 ] && [ "$KEYS" -le 10000000 ] || bad_usage "--keys must be 100..10000000"
is_uint "$SERVER_THREADS" && [ "$SERVER_THREADS" -ge 1 ] || bad_usage "--server-threads must be a positive integer"
is_uint "$CLIENT_THREADS" && [ "$CLIENT_THREADS" -ge 1 ] || bad_usage "--client-threads must be a positive integer"
is_uint "$STORE_CONNS" && [ "$STORE_CONNS" -ge 2 ] && [ "$STORE_CONNS" -le 64 ] || bad_usage "--store-connections must be 2..64"
is_uint "$GET_CONNS" && [ "$GET_CONNS" -ge 1 ] && [ "$GET_CONNS" -le 512 ] || bad_usage "--get-conns must be 1..512"
is_uint "$READ_CONNS" && [ "$READ_CONNS" -ge 1 ] && [ "$READ_CONNS" -le 512 ] || bad_usage "--read-conns must be 1..512"
is_uint "$SERVER_CPU" && is_uint "$CLIENT_CPU" || bad_usage "SERVER_CPU and CLIENT_CPU must be CPU numbers"
[ "$SERVER_CPU" != "$CLIENT_CPU" ] || bad_usage "SERVER_CPU and CLIENT_CPU must differ"
MAX_CONNS="$(printf '%s\n' "${CONN_LIST[@]}" | sort -n | tail -1)"
LOAD_CONNS="$MAX_CONNS"

for tool in wrk curl python3 taskset timeout awk pgrep; do
  command -v "$tool" > /dev/null || die "$tool not found (Debian: apt-get install wrk curl python3 util-linux coreutils procps)"
done
for cpu in "$SERVER_CPU" "$CLIENT_CPU"; do
  taskset -c "$cpu" true 2> /dev/null || die "cannot pin to CPU $cpu (online: $(cat /sys/devices/system/cpu/online 2> /dev/null || echo '?')); set SERVER_CPU/CLIENT_CPU"
done
PG_BINDIR="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import pg_cluster
try:
    print(pg_cluster.find_bindir())
except pg_cluster.PgClusterError as e:
    sys.exit(str(e))' "$ROOT/tests/support" 2>&1)" || die "$PG_BINDIR"
PGBENCH="$PG_BINDIR/pgbench" PSQL="$PG_BINDIR/psql"
[ -x "$PGBENCH" ] || PGBENCH="$(command -v pgbench || true)"
[ -x "$PSQL" ] || PSQL="$(command -v psql || true)"
[ -n "$PGBENCH" ] && [ -x "$PGBENCH" ] || die "pgbench not found in $PG_BINDIR (apt-get install postgresql-15)"
[ -n "$PSQL" ] && [ -x "$PSQL" ] || die "psql not found in $PG_BINDIR (apt-get install postgresql-client-15)"
[ -n "$BUILD" ] || BUILD="$ROOT/build/release"
CACHE_SERVER="${CACHE_SERVER:-$BUILD/server/cache_server}"
BENCH_CLIENT="${BENCH_CLIENT:-$BUILD/client/bench_client}"
[ -x "$CACHE_SERVER" ] || die "no cache_server at $CACHE_SERVER (build it, or pass --build DIR)"
[ -x "$BENCH_CLIENT" ] || die "no bench_client at $BENCH_CLIENT (build it, or pass --build DIR)"
SERVER_HELP="$("$CACHE_SERVER" --help 2>&1 || true)"
for flag in --store --write-mode --store-table --store-connections --store-timeout; do
  grep -q -- "$flag" <<< "$SERVER_HELP" || die "$CACHE_SERVER has no $flag flag (an older build, without the PostgreSQL store?)"
done
grep -q 'postgres:' <<< "$SERVER_HELP" || die "$CACHE_SERVER does not take --store postgres: (an older build?)"
[ -d "$DATA_PARENT" ] && [ -w "$DATA_PARENT" ] || die "--data-dir $DATA_PARENT is not a writable directory"

if [ "$QUICK" = 1 ]; then WARMUP=0.1; else WARMUP=1; fi
PGBENCH_T="$(awk -v d="$DURATION" 'BEGIN { t = int(d); if (t < d) t++; if (t < 1) t = 1; print t }')"
# Each point must end: warm-up + duration + a drain bounded by bench_client's 5 s socket timeout.
POINT_TIMEOUT="$(awk -v d="$DURATION" -v w="$WARMUP" 'BEGIN { printf "%d", 3 * d + w + 30 }')"
# wrk passes over the keys: bounded by this many seconds (at least 200 keys/s, whatever the disk)
WRK_LIMIT=$(( KEYS / 200 > 60 ? KEYS / 200 : 60 ))
PG_MAX_CONNECTIONS=$(( MAX_CONNS + 3 * STORE_CONNS + 10 ))

STAMP="$(date +%Y%m%d-%H%M%S)"
[ -n "$OUT" ] || OUT="$ROOT/results/postgres-$STAMP"
mkdir -p "$OUT/raw" || die "cannot create $OUT"
OUT="$(cd "$OUT" && pwd)"
[ ! -e "$OUT/points.jsonl" ] || die "$OUT already holds a run (points.jsonl); pick another --out"
WORK="$(mktemp -d "$DATA_PARENT/bench_postgres.XXXXXX")" || die "cannot create a directory in $DATA_PARENT"
chmod 755 "$WORK"  # pg_cluster runs PostgreSQL as the postgres user when we are root: it must reach $WORK/pg

# --- processes: every PID we start is stopped on exit -------------------------------------------
PIDS=()
PG_STARTED=0
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && stop_pid "$p"; done
  PIDS=()
  if [ "$PG_STARTED" = 1 ]; then
    python3 "$ROOT/tests/support/pg_cluster.py" stop "$WORK/pg" > /dev/null 2>&1 \
      || echo "bench_postgres: stopping PostgreSQL in $WORK/pg failed" >&2
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- measurement helpers -----------------------------------------------------------------------
# cpu_snap -> "total steal server_cpu_total server_cpu_idle client_cpu_total client_cpu_idle"
# (jiffies from /proc/stat; idle includes iowait)

# find_disk DIR: sets DISK, the block device holding DIR as named in /proc/diskstats, and
# DISK_HOW, how it was found (both "" if none).
DISK="" DISK_HOW=""
find_disk() {
  local dir="$1" mm name src
  mm="$(stat -c '%Hd:%Ld' "$dir" 2> /dev/null || true)"
  if [ -n "$mm" ] && [ -e "/sys/dev/block/$mm" ]; then
    name="$(basename "$(readlink -f "/sys/dev/block/$mm")")"
    if awk -v n="$name" '$3 == n { f = 1 } END { exit !f }' /proc/diskstats; then
      DISK="$name" DISK_HOW="stat -c %Hd:%Ld = $mm, /sys/dev/block/$mm -> $name"; return
    fi
  fi
  src="$(findmnt -n -o SOURCE --target "$dir" 2> /dev/null | head -1 || true)"
  name="$(basename "${src%%[*}")"
  if [ -n "$name" ] && awk -v n="$name" '$3 == n { f = 1 } END { exit !f }' /proc/diskstats; then
    DISK="$name" DISK_HOW="findmnt --target: source $src"
  fi
}
disk_snap() {  # the device's whole /proc/diskstats line ("" without a device)
  [ -n "$DISK" ] || return 0
  awk -v n="$DISK" '$3 == n { print; exit }' /proc/diskstats
}

record_cmd() {
  local text="${2//"$WORK"/\$DATA}" q
  if [ -n "${PGCONN:-}" ]; then
    q="$(printf '%q' "$PGCONN")"
    text="${text//"$q"/\"\$PG\"}"; text="${text//"$PGCONN"/\$PG}"
  fi
  echo "$1: $text" >> "$OUT/commands.txt"
}
# emit KEY=VALUE...: one JSON line into points.jsonl; a VALUE that parses as JSON is kept as
# such (numbers, lists, null), anything else is a string.
emit() {
  python3 - "$@" >> "$OUT/points.jsonl" << 'PY'
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

# --- PostgreSQL ----------------------------------------------------------------------------------
PGCONN="" PG_PID="" PG_PORT=""
psql_do() { "$PSQL" "$PGCONN" -X -q -v ON_ERROR_STOP=1 -At -c "$1"; }
start_pg() {
  local lines
  mkdir -p "$WORK/pg"
  PG_STARTED=1
  lines="$(taskset -c "$SERVER_CPU" python3 "$HELPER" pg-start "$WORK/pg" "$PG_MAX_CONNECTIONS")" \
    || die "PostgreSQL did not start (tests/support/pg_cluster.py; see above)"
  PGCONN="$(sed -n 1p <<< "$lines")"
  PG_PORT="$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<< "$PGCONN")"
  PG_PID="$(head -1 "$WORK/pg/data/postmaster.pid" 2> /dev/null || true)"
  [ -n "$PG_PORT" ] && is_uint "$PG_PID" && kill -0 "$PG_PID" 2> /dev/null \
    || die "PostgreSQL started but its port or postmaster PID is unknown ($PGCONN)"
  pg_pinned || die "PostgreSQL (postmaster $PG_PID) is not on CPU $SERVER_CPU"
  record_cmd "postgres" "taskset -c $SERVER_CPU python3 scripts/bench_postgres_report.py pg-start \$DATA/pg $PG_MAX_CONNECTIONS   (tests/support/pg_cluster.py + max_connections=$PG_MAX_CONNECTIONS)"
  log "postgres: postmaster PID $PG_PID on 127.0.0.1:$PG_PORT, CPU $SERVER_CPU ($PG_BINDIR)"
}
# pg_pinned: every PostgreSQL process allowed on $SERVER_CPU only; a stray one is re-pinned (and
# said), a failure to re-pin is an error.
pg_pinned() {
  local p list bad=0
  for p in "$PG_PID" $(pgrep -P "$PG_PID" || true); do
    list="$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$p/status" 2> /dev/null || true)"
    [ -z "$list" ] || [ "$list" = "$SERVER_CPU" ] && continue
    log "warning: postgres PID $p was on CPUs $list; pinning it to $SERVER_CPU"
    taskset -a -p -c "$SERVER_CPU" "$p" > /dev/null 2>&1 || bad=1
  done
  return "$bad"
}
pg_ticks() { python3 "$HELPER" pg-ticks "$PG_PID"; }  # -> "TICKS NPROCS"
pg_settings_json() {
  psql_do "SELECT json_object_agg(name, setting || coalesce(unit, '')) FROM pg_settings WHERE name IN
    ('fsync', 'synchronous_commit', 'wal_sync_method', 'shared_buffers', 'max_connections',
     'full_page_writes', 'wal_level', 'checkpoint_timeout', 'max_wal_size', 'commit_delay',
     'wal_buffers', 'autovacuum', 'server_version')"
}
TABLE_DDL='(key bytea primary key, value bytea not null, updated_at timestamptz not null default now())'

# --- servers -------------------------------------------------------------------------------------
declare -A SRV_PID SRV_PORT
# start_ours NAME FLAGS...: a fresh cache_server on a free port (-p 0; it prints the port).
stats() {  # stats NAME FILE: GET /stats into FILE
  curl -s -m 10 "http://127.0.0.1:${SRV_PORT[$1]}/stats" > "$2" || die "GET /stats of $1 failed"
}

# split_conns C -> "T K": T threads x K connections each = C, T the largest divisor of C <= max.

# --- a point's common measurements ---------------------------------------------------------------
# begin_point SERVER_PID(or "") CHECKPOINT(0/1) / end_point: the CPU, disk and time snapshots.
P_T0="" P_T1="" P_PG0="" P_PG1="" P_SV0="" P_SV1="" P_D0="" P_D1="" P_C0="" P_C1="" P_NPROCS0=""
begin_point() {
  P_SRV="$1"
  pg_pinned || die "cannot keep PostgreSQL on CPU $SERVER_CPU"
  if [ "$2" = 1 ]; then psql_do "CHECKPOINT" || die "CHECKPOINT failed"; fi
  read -r P_PG0 P_NPROCS0 <<< "$(pg_ticks)" || die "cannot read PostgreSQL's CPU"
  P_SV0=0; [ -z "$P_SRV" ] || P_SV0="$(cpu_ticks "$P_SRV")"
  P_D0="$(disk_snap)"; P_C0="$(cpu_snap)"
  P_T0="$EPOCHREALTIME"
}
end_point() {
  P_T1="$EPOCHREALTIME"
  P_SV1=0; [ -z "$P_SRV" ] || P_SV1="$(cpu_ticks "$P_SRV")"
  P_D1="$(disk_snap)"; P_C1="$(cpu_snap)"
  read -r P_PG1 _ <<< "$(pg_ticks)" || die "cannot read PostgreSQL's CPU"
}
# point_fields -> the KEY=VALUE arguments of emit for the snapshots above
point_fields() {
  local tot0 st0 sa0 si0 ca0 ci0 tot1 st1 sa1 si1 ca1 ci1
  read -r tot0 st0 sa0 si0 ca0 ci0 <<< "$P_C0"; read -r tot1 st1 sa1 si1 ca1 ci1 <<< "$P_C1"
  local busy_s busy_c steal
  busy_s="$(awk -v a="$sa0" -v b="$sa1" -v x="$si0" -v y="$si1" 'BEGIN { t = b - a; if (t <= 0) print "null"; else printf "%.1f", 100 - 100 * (y - x) / t }')"
  busy_c="$(awk -v a="$ca0" -v b="$ca1" -v x="$ci0" -v y="$ci1" 'BEGIN { t = b - a; if (t <= 0) print "null"; else printf "%.1f", 100 - 100 * (y - x) / t }')"
  steal="$(awk -v a="$tot0" -v b="$tot1" -v x="$st0" -v y="$st1" 'BEGIN { t = b - a; if (t <= 0) print "null"; else printf "%.2f", 100 * (y - x) / t }')"
  printf '%s\n' "t0=$P_T0" "t1=$P_T1" "wall_s=$(awk -v a="$P_T0" -v b="$P_T1" 'BEGIN { printf "%.6f", b - a }')" \
    "pg_ticks=[$P_PG0, $P_PG1]" "server_ticks=$([ -n "$P_SRV" ] && echo "[$P_SV0, $P_SV1]" || echo null)" \
    "disk=${DISK:-null}" "diskstats_before=${P_D0:-null}" "diskstats_after=${P_D1:-null}" \
    "server_core_busy_pct=$busy_s" "client_core_busy_pct=$busy_c" "steal_pct=$steal"
}

# --- one bench_client point --------------------------------------------------------------------
# ours_point PART NAME CONFIG CONNS REP CHECKPOINT WORKLOAD-FLAGS...
TIMEFORMAT='%3R %3U %3S'
ours_point() {
  local part="$1" name="$2" config="$3" c="$4" rep="$5" ckpt="$6" port="${SRV_PORT[$2]}" pid="${SRV_PID[$2]}"
  shift 6
  local t k tag cmd rc=0 fields
  read -r t k <<< "$(split_conns "$c")"
  tag="$part-$config-c$c-r$rep"
  cmd=("$BENCH_CLIENT" -s 127.0.0.1 -p "$port" --threads "$t" --connections-per-thread "$k"
       -d "${DURATION}s" --warmup "${WARMUP}s" "$@" --server-pid "$pid" --json "$OUT/raw/$tag.json" -q)
  [ "$rep" != 1 ] || record_cmd "$tag" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}" | sed "s|$OUT/||; s|$BENCH_CLIENT|bench_client|")"
  alive "$name"
  stats "$name" "$OUT/raw/$tag.stats0.json"
  begin_point "$pid" "$ckpt"
  { time timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/$tag.txt" 2>&1 ; } 2> "$OUT/raw/$tag.time" || rc=$?
  end_point
  alive "$name"
  stats "$name" "$OUT/raw/$tag.stats1.json"
  [ "$rc" = 0 ] || die "bench_client against $name (c=$c) failed (exit $rc): $(tail -3 "$OUT/raw/$tag.txt")"
  mapfile -t fields < <(point_fields)
  emit part="$part" system=ours config="$config" conns="$c" threads="$t" per_thread="$k" rep="$rep" \
    raw="raw/$tag.json" stats_before="raw/$tag.stats0.json" stats_after="raw/$tag.stats1.json" \
    client_times="raw/$tag.time" rc="$rc" "${fields[@]}"
  log "$tag: $(python3 -c 'import json,sys; p = json.load(open(sys.argv[1]))["points"][0]; print("%.0f req/s, %d errors, p50 %.0f µs, p99 %.0f µs" % (p["throughput_rps"], p["errors"], p["p50_us"], p["p99_us"]))' "$OUT/raw/$tag.json" || echo "?")"
}

# --- one pgbench point ---------------------------------------------------------------------------
pgbench_point() {
  local c="$1" rep="$2" tag="put-pgbench-c$1-r$2" cmd rc=0 fields n i
  mkdir -p "$WORK/pgbench-logs"
  rm -f "$WORK/pgbench-logs/"*
  cmd=("$PGBENCH" -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -f "$WORK/upsert.sql" -c "$c" -j "$c"
       -T "$PGBENCH_T" -M prepared -l --log-prefix="$WORK/pgbench-logs/log" postgres)
  [ "$rep" != 1 ] || record_cmd "$tag" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}" | sed "s|$PGBENCH|pgbench|")"
  begin_point "" 1
  { time timeout "$POINT_TIMEOUT" taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/$tag.txt" 2>&1 ; } 2> "$OUT/raw/$tag.time" || rc=$?
  # its backends exit after it: wait (bounded) until they are gone, so their CPU is in the
  # postmaster's cutime when end_point reads it
  for i in $(seq 1 50); do
    read -r _ n <<< "$(pg_ticks)"
    [ "$n" -gt "$P_NPROCS0" ] || break
    sleep 0.1
  done
  end_point
  [ "$rc" = 0 ] || die "pgbench (c=$c) failed (exit $rc): $(tail -5 "$OUT/raw/$tag.txt")"
  grep -q '^tps = ' "$OUT/raw/$tag.txt" || die "pgbench (c=$c) printed no tps: $(tail -5 "$OUT/raw/$tag.txt")"
  python3 "$HELPER" pgbench-latency "$OUT/raw/$tag.latency.json" "$WORK/pgbench-logs/"log.* \
    || die "reading pgbench's latency logs failed"
  rm -f "$WORK/pgbench-logs/"*
  mapfile -t fields < <(point_fields)
  emit part=put system=pgbench config=pgbench conns="$c" threads="$c" per_thread=1 rep="$rep" \
    raw="raw/$tag.txt" latency="raw/$tag.latency.json" client_times="raw/$tag.time" rc="$rc" "${fields[@]}"
  log "$tag: $(sed -n 's/^tps = \([0-9.]*\).*/\1 tps/p' "$OUT/raw/$tag.txt"), $(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print("p50 %s µs, p99 %s µs" % (d["p50_us"], d["p99_us"]))' "$OUT/raw/$tag.latency.json")"
}

# --- one wrk pass over every key ----------------------------------------------------------------
# wrk_pass PART NAME MODE(put|get) CONNS: one wrk thread, CONNS connections, keys c%015d each
# requested once; ends when the Lua script's marker says the last response is in.
wrk_pass() {
  local part="$1" name="$2" mode="$3" c="$4" port="${SRV_PORT[$2]}" pid="${SRV_PID[$2]}"
  local tag="$part" marks="$WORK/wrk-$part" cmd wpid rc=0 cticks fields
  mkdir -p "$marks"
  cmd=(wrk -t 1 -c "$c" -d "${WRK_LIMIT}s" --timeout 10s -s "$WORK/keys.lua"
       "http://127.0.0.1:$port" -- "$mode" "$KEYS" "$marks")
  record_cmd "$tag" "taskset -c $CLIENT_CPU $(echo_cmd "${cmd[@]}")   (stopped by SIGINT once every key is answered)"
  alive "$name"
  stats "$name" "$OUT/raw/$tag.stats0.json"
  begin_point "$pid" 0
  taskset -c "$CLIENT_CPU" "${cmd[@]}" > "$OUT/raw/$tag.txt" 2>&1 &
  wpid=$!
  PIDS+=("$wpid")
  while [ ! -e "$marks/done" ]; do
    kill -0 "$wpid" 2> /dev/null || break
    sleep 0.02
  done
  cticks="$(cpu_ticks "$wpid")"
  end_point
  kill -INT "$wpid" 2> /dev/null || true
  wait "$wpid" || rc=$?
  forget_pid "$wpid"
  [ -e "$marks/done" ] || die "wrk ($mode, $c conns) did not answer all $KEYS keys within ${WRK_LIMIT}s (exit $rc): $(tail -5 "$OUT/raw/$tag.txt")"
  alive "$name"
  stats "$name" "$OUT/raw/$tag.stats1.json"
  cp "$marks/done" "$OUT/raw/$tag.marker"
  mapfile -t fields < <(point_fields)
  emit part="$part" system=wrk config=postgres conns="$c" threads=1 per_thread="$c" rep=1 \
    raw="raw/$tag.txt" markers='["raw/'"$tag"'.marker"]' stats_before="raw/$tag.stats0.json" \
    stats_after="raw/$tag.stats1.json" client_ticks="[0, $cticks]" rc="$rc" "${fields[@]}"
  log "$tag: $(awk -v k="$KEYS" '{ printf "%d keys in %.3f s = %.0f keys/s, %d not ok", $4, $3 - $2, k / ($3 - $2), $5 }' "$marks/done")"
}

# The wrk script: one thread, its connections share one counter, so key i is requested once
# (after the last key, a connection re-requests key 0 until the last response is in: at most
# CONNS-1 extra requests). Writes "id t_first t_last ok bad" (CLOCK_MONOTONIC) when the KEYS-th
# response arrives; done() prints wrk's latency percentiles and error counts as JSON.
write_lua() {
  cat > "$WORK/keys.lua" << 'LUA'
local ffi = require("ffi")
ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } bp_timespec;
           int clock_gettime(int clk, bp_timespec *ts); ]]
local ts = ffi.new("bp_timespec")
local function now() ffi.C.clock_gettime(1, ts); return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
local mode, keys, dir, nexti, got, ok, bad, t0, value
function init(args)
  mode, keys, dir = args[1], tonumber(args[2]), args[3]
  nexti, got, ok, bad = 0, 0, 0, 0
  value = string.rep("v", 100)
end
function request()
  if not t0 then t0 = now() end
  local i = nexti
  if i < keys then nexti = nexti + 1 else i = 0 end
  local path = string.format("/key/c%015d", i)
  if mode == "put" then return wrk.format("PUT", path, nil, value) end
  return wrk.format("GET", path)
end
function response(status, headers, body)
  got = got + 1
  if got > keys then return end
  if (mode == "put" and (status == 200 or status == 201 or status == 204)) or
     (mode == "get" and status == 200 and #body == 100) then ok = ok + 1 else bad = bad + 1 end
  if got == keys then
    local t1 = now()
    local f = io.open(dir .. "/done.tmp", "w")
    f:write(string.format("0 %.6f %.6f %d %d\n", t0, t1, ok, bad))
    f:close()
    os.rename(dir .. "/done.tmp", dir .. "/done")
    wrk.thread:stop()
  end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests": %d, "p50_us": %d, "p99_us": %d, "errors": %d}\n',
    summary.requests, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout))
end
LUA
}

# --- the run ---------------------------------------------------------------------------------------
find_disk "$WORK"
FS_TYPE="$(findmnt -n -o FSTYPE --target "$WORK" 2> /dev/null | head -1 || true)"
[ -n "$FS_TYPE" ] || FS_TYPE="$(stat -f -c %T "$WORK")"
case "$FS_TYPE" in tmpfs|ramfs) die "--data-dir $DATA_PARENT is on $FS_TYPE: fsync costs nothing there; use a directory on a disk" ;; esac
[ -n "$DISK" ] || log "warning: no block device found for $WORK (filesystem $FS_TYPE); disk utilization is not reported"
EST="$(awk -v d="$DURATION" -v w="$WARMUP" -v n="${#CONN_LIST[@]}" -v r="$REPEAT" -v pt="$PGBENCH_T" 'BEGIN { printf "%.0f", r * n * (2 * (d + w + 1) + pt + 1) + 6 * (d + w + 1) + 20 }')"
log "bench_postgres: ${DURATION}s per point, conns ${CONN_LIST[*]}, $REPEAT repeat(s), $KEYS keys; about ${EST}s plus the loads; results in $OUT"
log "data in $WORK (filesystem $FS_TYPE, device ${DISK:-unknown}${DISK_HOW:+: $DISK_HOW}); servers and PostgreSQL on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU"
: > "$OUT/commands.txt"
write_lua

start_pg
pg_settings_json > "$OUT/raw/pg_settings.json" || die "reading PostgreSQL's settings failed"
PG_VERSION="$(psql_do 'SHOW server_version' | awk '{ print $1 }')"
python3 - "$OUT/meta.json" "$OUT/raw/pg_settings.json" << PY
import json, platform, subprocess, sys
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""
meta = {
    "tool": "scripts/bench_postgres.sh", "date_utc": sh("date -u +%Y-%m-%dT%H:%M:%SZ"),
    "git_revision": sh("git -C '$ROOT' rev-parse --short HEAD 2>/dev/null") or "unknown",
    "git_dirty": bool(sh("git -C '$ROOT' status --porcelain 2>/dev/null | head -1")),
    "host": platform.node(), "kernel": platform.release(),
    "cpu_model": sh("sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1"),
    "online_cpus": sh("cat /sys/devices/system/cpu/online"),
    "duration_s": float("$DURATION"), "warmup_s": float("$WARMUP"), "pgbench_T": $PGBENCH_T,
    "quick": $QUICK == 1, "repeat": $REPEAT, "keys": $KEYS,
    "conns": [int(c) for c in "${CONN_LIST[*]}".split()], "get_conns": $GET_CONNS,
    "read_conns": $READ_CONNS, "load_conns": $LOAD_CONNS,
    "server_cpu": $SERVER_CPU, "client_cpu": $CLIENT_CPU, "server_threads": $SERVER_THREADS,
    "client_threads_max": $CLIENT_THREADS, "store_connections": $STORE_CONNS, "clk_tck": $CLK_TCK,
    "loadavg_start": " ".join(open("/proc/loadavg").read().split()[:3]),
    "data_dir": "$WORK", "filesystem": "$FS_TYPE", "disk": "$DISK" or None, "disk_how": "$DISK_HOW",
    "pg_version": "$PG_VERSION", "pg_settings": json.load(open(sys.argv[2])),
    "pg_bindir": "$PG_BINDIR", "cache_server": "$CACHE_SERVER", "bench_client": "$BENCH_CLIENT",
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
PY

# Tables: ours (kv) loaded through a write-behind server, which flushes everything when stopped;
# pgbench's (kv_pgbench) by generate_series; the same key count, so every PUT of a point updates.
for t in kv kv_pgbench kv_get kv_cold; do psql_do "CREATE TABLE IF NOT EXISTS $t $TABLE_DDL" || die "CREATE TABLE $t failed"; done
psql_do "INSERT INTO kv_pgbench(key, value) SELECT convert_to(lpad(i::text, 16, 'k'), 'UTF8'),
           convert_to(rpad(i::text, 100, 'v'), 'UTF8') FROM generate_series(0, $((KEYS - 1))) i" \
  || die "filling kv_pgbench failed"
cat > "$WORK/upsert.sql" << SQL
\set id random(0, $((KEYS - 1)))
INSERT INTO kv_pgbench(key, value) VALUES (convert_to(lpad(:id::text, 16, 'k'), 'UTF8'), convert_to(rpad(:id::text, 100, 'v'), 'UTF8')) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();
SQL
cp "$WORK/upsert.sql" "$OUT/raw/pgbench-upsert.sql"
PG_STORE=(--store "postgres:$PGCONN" --store-connections "$STORE_CONNS")
KEY_FLAGS=(--key-size 16 --value-size 100 --keys "$KEYS")
# preload NAME STORE-FLAGS...: every key PUT once through a write-behind server (bench_client's
# preload: it resets the server first), which is then stopped (TERM: it flushes to the store).
preload() {
  local name="$1" rc=0
  shift
  start_ours "$name" "$@" --write-mode behind
  timeout 600 taskset -c "$CLIENT_CPU" "$BENCH_CLIENT" -s 127.0.0.1 -p "${SRV_PORT[$name]}" --threads 4 \
    --workload uniform --ratio 0:1:0 "${KEY_FLAGS[@]}" -n 1 --warmup 0 -q --json "$OUT/raw/$name.json" \
    > "$OUT/raw/$name.txt" 2>&1 || rc=$?
  [ "$rc" = 0 ] || die "preloading $name failed (exit $rc): $(tail -3 "$OUT/raw/$name.txt")"
  # written back before the stop (TERM flushes too, but stop_pid's KILL comes after 15 s)
  for _ in $(seq 1 1200); do
    [ "$(curl -s -m 10 "http://127.0.0.1:${SRV_PORT[$name]}/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("dirty_items", 0))')" = 0 ] && break
    sleep 0.1
  done
  stop_server "$name"
  log "$name: $(python3 -c 'import json,sys; p = json.load(open(sys.argv[1]))["meta"]["preload"]; print("%d keys in %.1f s, %d errors" % (p["keys"], p["seconds"], p["errors"]))' "$OUT/raw/$name.json" || echo "?")"
}
preload preload-postgres "${PG_STORE[@]}" --store-table kv
n="$(psql_do "SELECT count(*) FROM kv")"
[ "$n" = "$KEYS" ] || die "after the preload kv holds $n rows, not $KEYS (did the write-behind server flush on TERM?)"
preload preload-rocksdb --store "rocksdb:$WORK/rocksdb/db"
psql_do "VACUUM ANALYZE kv" && psql_do "VACUUM ANALYZE kv_pgbench" || die "VACUUM failed"

# 1. PUT-ALL: the two servers up all along, the three measured back to back per count.
start_ours postgres "${PG_STORE[@]}" --store-table kv --write-mode through
start_ours rocksdb --store "rocksdb:$WORK/rocksdb/db" --write-mode through
PUT_FLAGS=(--workload put-all "${KEY_FLAGS[@]}" --no-reset)
for rep in $(seq 1 "$REPEAT"); do
  for c in "${CONN_LIST[@]}"; do
    ours_point put postgres postgres "$c" "$rep" 1 "${PUT_FLAGS[@]}"
    pgbench_point "$c" "$rep"
    ours_point put rocksdb rocksdb "$c" "$rep" 1 "${PUT_FLAGS[@]}"
  done
done
stats postgres "$OUT/raw/postgres-final-stats.json"
stop_server postgres; stop_server rocksdb
rm -rf "${WORK:?}/rocksdb"

# 2. GET hit with postgres behind and without a store, alternated (ABBAAB), medians of 3.
start_ours get-none --store none
start_ours get-postgres "${PG_STORE[@]}" --store-table kv_get --write-mode through
GET_FLAGS=(--workload get-popular --value-size 100 --key-size 16)
for rep in 1 2 3; do  # none, postgres; postgres, none; none, postgres: a drift favours neither
  if [ "$rep" = 2 ]; then order=(postgres none); else order=(none postgres); fi
  for cfg in "${order[@]}"; do
    ours_point get "get-$cfg" "$cfg" "$GET_CONNS" "$rep" 0 "${GET_FLAGS[@]}"
  done
done
stop_server get-none; stop_server get-postgres

# 3. Cold-cache read-through: load every key through the server, drop the cache, read each once.
start_ours cold "${PG_STORE[@]}" --store-table kv_cold --write-mode through
psql_do "CHECKPOINT" > /dev/null || die "CHECKPOINT failed"
wrk_pass cold-load cold put "$LOAD_CONNS"
code="$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:${SRV_PORT[cold]}/reset?scope=cache")"
[ "$code" = 204 ] || [ "$code" = 200 ] || die "POST /reset?scope=cache answered $code"
record_cmd "cold reset" "curl -X POST http://127.0.0.1:PORT/reset?scope=cache"
items="$(curl -s -m 10 "http://127.0.0.1:${SRV_PORT[cold]}/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"])')"
[ "$items" = 0 ] || die "the cache still holds $items items after POST /reset?scope=cache"
wrk_pass cold-read cold get "$READ_CONNS"
stop_server cold

# 4. The report.
cp /proc/loadavg "$OUT/loadavg_end.txt"
python3 "$HELPER" "$OUT" || die "the report failed (raw files are in $OUT)"
log "summary: $OUT/summary.md"
