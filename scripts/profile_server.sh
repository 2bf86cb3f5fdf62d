#!/usr/bin/env bash
# profile_server.sh — where a GET hit's cost goes, per request, baseline against optimized.
#
# For each server variant and each pipeline depth it starts `cache_server -t 1` pinned to CPU
# $SERVER_CPU, loads it with wrk (keep-alive, $CONNS connections, pinned to CPU $CLIENT_CPU;
# depth N = a Lua script sending N GETs per write) on a 100-byte value, and measures over the
# same window:
#   - requests (the server's own /stats counter), reads and writes per request (/stats)
#   - syscalls per request: perf stat on the raw_syscalls:sys_enter tracepoint (these VMs have
#     no hardware counters, but tracepoints work), with the busiest syscalls named
#   - CPU µs per request, user and system, from /proc/PID/stat
#   - the top symbols by CPU samples (perf record -e cpu-clock, kernel included)
#   - user-space instructions per request: a second run under valgrind --tool=callgrind with
#     collection switched on only around the load (instruction counts repeat run to run)
# and writes DIR/PROFILE.md (tables) plus the raw perf/callgrind outputs beside it.
#
# Usage: scripts/profile_server.sh [DIR]        (default results/profile-<stamp>)
#   env: VARIANTS ("baseline optimized"), PIPELINES ("1 16"), CONNS (16), DURATION (s, 3),
#        CALLGRIND_DURATION (s, 3), CACHE_SERVER (build/release/server/cache_server),
#        SERVER_CPU (0), CLIENT_CPU (1), NO_CALLGRIND (1 skips valgrind), NO_RECORD (1 skips
#        perf record)
# Needs wrk, perf and (unless NO_CALLGRIND=1) valgrind: `scripts/setup.sh --peers` installs
# them. Everything listens on 127.0.0.1 only; every process started is stopped on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/results/profile-$(date +%Y%m%d-%H%M%S)}"
VARIANTS="${VARIANTS:-baseline optimized}"
PIPELINES="${PIPELINES:-1 16}"
CONNS="${CONNS:-16}"
DURATION="${DURATION:-3}"
CALLGRIND_DURATION="${CALLGRIND_DURATION:-3}"
CACHE_SERVER="${CACHE_SERVER:-$ROOT/build/release/server/cache_server}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
NO_CALLGRIND="${NO_CALLGRIND:-0}"
NO_RECORD="${NO_RECORD:-0}"

need=(wrk perf taskset curl python3)
[ "$NO_CALLGRIND" = 1 ] || need+=(valgrind callgrind_control callgrind_annotate)
for tool in "${need[@]}"; do
  command -v "$tool" > /dev/null || {
    echo "profile_server: $tool not found (scripts/setup.sh --peers installs it)" >&2
    exit 1
  }
done
[ -x "$CACHE_SERVER" ] || { echo "profile_server: no cache_server at $CACHE_SERVER" >&2; exit 1; }
mkdir -p "$OUT"

for n in "$DURATION" "$CALLGRIND_DURATION" "$CONNS" $PIPELINES; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "profile_server: '$n' is not a positive integer" >&2; exit 2; }
done

source "$ROOT/scripts/lib/nginx.sh"  # BODY100, stop_pid
LUA="$ROOT/scripts/lib/wrk_pipeline.lua"
WORK="$(mktemp -d /tmp/profile_server.XXXXXX)"
SERVER_PID=""
SERVER_PORT=""
WRK_PID=""
cleanup() {  # only what is still running: a PID once waited for may belong to someone else
  [ -n "$WRK_PID" ] && stop_pid "$WRK_PID" TERM
  [ -n "$SERVER_PID" ] && stop_pid "$SERVER_PID" TERM
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "profile_server: $*" >&2; exit 1; }

# start_server LOG CMD... : runs CMD pinned and waits for its `listening on` line, then stores
# the 100-byte value.
start_server() {
  local log="$1"
  shift
  : > "$log"  # exists before the child opens it: the loop below reads it (a race on a busy machine)
  taskset -c "$SERVER_CPU" "$@" > "$log" 2>&1 &
  SERVER_PID=$!
  SERVER_PORT=""
  for _ in $(seq 1 300); do  # valgrind needs a few seconds to start
    SERVER_PORT="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$log")"
    [ -n "$SERVER_PORT" ] && break
    kill -0 "$SERVER_PID" 2> /dev/null || { cat "$log" >&2; fail "the server exited at start-up"; }
    sleep 0.1
  done
  [ -n "$SERVER_PORT" ] || { cat "$log" >&2; fail "the server did not start within 30 s"; }
  local url="http://127.0.0.1:$SERVER_PORT/key/bench"
  [ "$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary "$BODY100" "$url")" = 201 ] \
    || fail "PUT $url was not answered 201"
  [ "$(curl -s "$url")" = "$BODY100" ] || fail "GET $url did not return the value just stored"
}

stop_server() {
  stop_pid "$SERVER_PID" TERM
  SERVER_PID=""
}

# load SECONDS DEPTH : wrk in the background against the running server (depth > 1: the
# pipelining script sends DEPTH GETs per write).
load() {
  local url="http://127.0.0.1:$SERVER_PORT/key/bench"
  if [ "$2" -gt 1 ]; then
    taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$1"s -s "$LUA" "$url" -- "$2" > "$WORK/wrk.out" 2>&1 &
  else
    taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$1"s "$url" > "$WORK/wrk.out" 2>&1 &
  fi
  WRK_PID=$!
}
end_load() {
  wait "$WRK_PID" || fail "wrk failed: $(cat "$WORK/wrk.out")"
  WRK_PID=""
}

# The counted window runs as perf stat's workload, so the syscall count, the /stats snapshots,
# the CPU ticks and the wall time all cover the same interval.
cat > "$WORK/window.sh" << 'EOF'
# window.sh PORT PID SECONDS DIR: /stats, CPU ticks and the time at both ends of SECONDS.
snap() {
  date +%s.%N > "$4/t$1"
  awk '{print $14, $15}' "/proc/$3/stat" > "$4/cpu$1"
  curl -s "http://127.0.0.1:$2/stats" > "$4/stats$1"
}
snap 0 "$1" "$2" "$4"
sleep "$3"
snap 1 "$1" "$2" "$4"
EOF

ROWS="$OUT/rows.jsonl"  # kept in OUT: a run that fails later keeps the finished rows
: > "$ROWS"
for variant in $VARIANTS; do
  for depth in $PIPELINES; do
    tag="$variant-P$depth"
    echo "[profile] $tag: load, perf stat, perf record" >&2
    start_server "$WORK/server.log" "$CACHE_SERVER" -s 127.0.0.1 -p 0 -t 1 --variant "$variant"
    # One wrk run covers a warm-up second, the counted window and the sampled window.
    load "$((DURATION * 2 + 4))" "$depth"
    sleep 1
    perf stat -x, -o "$OUT/$tag.perfstat.csv" -p "$SERVER_PID" \
      -e raw_syscalls:sys_enter -e syscalls:sys_enter_recvmsg -e syscalls:sys_enter_sendmsg \
      -e syscalls:sys_enter_epoll_wait -e syscalls:sys_enter_read -e syscalls:sys_enter_write \
      -e syscalls:sys_enter_recvfrom -e syscalls:sys_enter_sendto \
      -- bash "$WORK/window.sh" "$SERVER_PORT" "$SERVER_PID" "$DURATION" "$WORK" \
      2> "$WORK/perf.err" || fail "perf stat failed: $(cat "$WORK/perf.err")"
    if [ "$NO_RECORD" != 1 ]; then
      perf record -q -e cpu-clock -F 2000 -p "$SERVER_PID" -o "$WORK/perf.data" \
        -- sleep "$DURATION" > /dev/null 2> "$WORK/perf.err" \
        || fail "perf record failed: $(cat "$WORK/perf.err")"
      perf report -i "$WORK/perf.data" --no-children --sort sym --stdio 2> /dev/null \
        | grep -E '^ +[0-9]' | head -15 > "$OUT/$tag.top.txt" || true
    fi
    end_load
    stop_server

    instr="null"
    if [ "$NO_CALLGRIND" != 1 ]; then
      echo "[profile] $tag: callgrind" >&2
      cg="$OUT/$tag.callgrind.out"
      start_server "$WORK/server.log" valgrind -q --tool=callgrind --instr-atstart=no \
        --callgrind-out-file="$cg" "$CACHE_SERVER" -s 127.0.0.1 -p 0 -t 1 --variant "$variant"
      # Instrumented from before the load starts until after it ends: the server is idle at
      # both edges, so the instructions and the /stats requests cover the same work.
      c0="$(curl -s "http://127.0.0.1:$SERVER_PORT/stats")"
      callgrind_control -i on "$SERVER_PID" > /dev/null || fail "callgrind_control -i on failed"
      load "$CALLGRIND_DURATION" "$depth"
      end_load
      callgrind_control -i off "$SERVER_PID" > /dev/null || fail "callgrind_control -i off failed"
      c1="$(curl -s "http://127.0.0.1:$SERVER_PORT/stats")"
      stop_server
      ir="$(callgrind_annotate "$cg" 2> /dev/null \
        | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)" || true
      if [ -n "$ir" ]; then
        instr="$(python3 "$ROOT/scripts/profile_server_report.py" instr "$c0" "$c1" "$ir")"
      else
        echo "profile_server: no instruction total in $cg; instructions/req left out" >&2
      fi
    fi
    python3 "$ROOT/scripts/profile_server_report.py" row "$tag" "$variant" "$depth" "$WORK" \
      "$(getconf CLK_TCK)" "$OUT/$tag.perfstat.csv" "$WORK/wrk.out" "$instr" >> "$ROWS"
  done
done

python3 "$ROOT/scripts/profile_server_report.py" report "$ROWS" "$OUT" "$CONNS" "$DURATION"
