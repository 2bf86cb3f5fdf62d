#!/usr/bin/env bash
# compare_nginx.sh — GET-hit throughput of cache_server beside nginx, same machine, same run.
#
# Both servers get one worker pinned to CPU $SERVER_CPU; wrk (one thread, keep-alive) is pinned
# to CPU $CLIENT_CPU. cache_server serves a 100-byte value from GET /key/bench; nginx answers
# `return 200 "<the same 100 bytes>"` from memory (worker_processes 1, access log off). For each
# pipeline depth and connection count it measures cache_server, then nginx, and prints req/s, each
# server's CPU % over the point (utime+stime of its process from /proc/PID/stat; nginx: the
# worker; 100 = one core), wrk's p50/p99 and the ratio cache_server / nginx.
#
# Usage: scripts/compare_nginx.sh [--json FILE]
#   env: DURATION (s per point, integer, default 5), CONNS ("1 2 4 8 16 32"),
#   PIPELINE (depths, space-separated, default "1"; N > 1 sends N pipelined GETs per write with
#     scripts/lib/wrk_pipeline.lua), WARMUP (s per server and depth, default 1; 0 = none),
#   CACHE_SERVER (binary; default build/release/server/cache_server), CACHE_SERVER_FLAGS (extra
#     flags, default none = the optimized variant, e.g. "--variant baseline"), NGINX_PORT (18181),
#   SERVER_CPU (0), CLIENT_CPU (1), JSON (same as --json).
# --json FILE also writes the measurements as JSON (rewritten after every point; "complete" is
# true once every point is in): per depth, connection count and server: req/s, the server's CPU %,
# wrk's own CPU % (user+sys over its wall time), wrk's p50/p99 as printed and in µs, and errors.
# wrk's percentiles are wrk's "corrected" ones (it adds synthetic samples for the expected
# interval) and, when pipelining, one sample per batch of N: read them with care.
# Everything listens on 127.0.0.1 only; every process started is stopped by PID on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
JSON="${JSON:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --json) [ $# -ge 2 ] || { echo "compare_nginx: --json needs a FILE" >&2; exit 2; }; JSON="$2"; shift 2 ;;
    --json=*) JSON="${1#--json=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare_nginx: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
DURATION="${DURATION:-5}"
CONNS="${CONNS:-1 2 4 8 16 32}"
PIPELINE="${PIPELINE:-1}"
CACHE_SERVER="${CACHE_SERVER:-$ROOT/build/release/server/cache_server}"
CACHE_SERVER_FLAGS="${CACHE_SERVER_FLAGS:-}"
NGINX_PORT="${NGINX_PORT:-18181}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
WARMUP="${WARMUP:-1}"
LUA="$ROOT/scripts/lib/wrk_pipeline.lua"

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_uint "$DURATION" && [ "$DURATION" -ge 1 ] || { echo "compare_nginx: DURATION must be whole seconds >= 1 (wrk)" >&2; exit 2; }
is_uint "$WARMUP" || { echo "compare_nginx: WARMUP must be whole seconds" >&2; exit 2; }
for c in $CONNS; do is_uint "$c" && [ "$c" -ge 1 ] || { echo "compare_nginx: CONNS: '$c' is not a positive integer" >&2; exit 2; }; done
for d in $PIPELINE; do is_uint "$d" && [ "$d" -ge 1 ] || { echo "compare_nginx: PIPELINE: '$d' is not a positive integer" >&2; exit 2; }; done
[ -n "$CONNS" ] && [ -n "$PIPELINE" ] || { echo "compare_nginx: CONNS and PIPELINE must not be empty" >&2; exit 2; }
read -r -a CS_FLAGS <<< "$CACHE_SERVER_FLAGS"

for tool in wrk nginx taskset curl ss pgrep; do
  command -v "$tool" > /dev/null || { echo "compare_nginx: $tool not found" >&2; exit 1; }
done
[ -z "$JSON" ] || command -v python3 > /dev/null || { echo "compare_nginx: --json needs python3" >&2; exit 1; }
[ -x "$CACHE_SERVER" ] || { echo "compare_nginx: no cache_server at $CACHE_SERVER (build it first)" >&2; exit 1; }

source "$ROOT/scripts/lib/nginx.sh"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/compare_nginx.XXXXXX")"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && stop_pid "$p" TERM; done
  nginx_stop
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- cache_server ------------------------------------------------------------------------------
# The extra flags go before -s/-p so that the listen address stays 127.0.0.1 whatever they say.
taskset -c "$SERVER_CPU" "$CACHE_SERVER" -t 1 "${CS_FLAGS[@]}" -s 127.0.0.1 -p 0 > "$WORK/cache_server.log" 2>&1 &
CS_PID=$!
PIDS+=("$CS_PID")
CS_PORT=""
for _ in $(seq 1 100); do
  CS_PORT="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/cache_server.log")"
  [ -n "$CS_PORT" ] && break
  kill -0 "$CS_PID" 2> /dev/null || { cat "$WORK/cache_server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$CS_PORT" ] || { echo "compare_nginx: cache_server did not start" >&2; exit 1; }
CS_URL="http://127.0.0.1:$CS_PORT/key/bench"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary "$BODY100" "$CS_URL")" = 201 ]
[ "$(curl -s "$CS_URL")" = "$BODY100" ] || { echo "compare_nginx: cache_server GET mismatch" >&2; exit 1; }
curl -s "http://127.0.0.1:$CS_PORT/stats" > "$WORK/cache_server_stats.json" || true

# --- nginx ---------------------------------------------------------------------------------------
nginx_start "$WORK" "$NGINX_PORT" "$SERVER_CPU" || exit 1
NG_URL="$NGINX_URL"
NG_WORKER="$(nginx_worker_pid || true)"
[ -n "$NG_WORKER" ] || { echo "compare_nginx: no nginx worker process found" >&2; exit 1; }

# --- measure -------------------------------------------------------------------------------------
CLK_TCK="$(getconf CLK_TCK)"
cpu_ticks() {  # cpu_ticks PID -> utime+stime of the process (all threads), in clock ticks
  local s
  s="$(cat "/proc/$1/stat" 2> /dev/null)" || { echo ""; return 0; }
  s="${s##*) }"  # the fields after "pid (comm) ": state is $1, utime $12, stime $13
  set -- $s
  echo $(( ${12} + ${13} ))
}

wrk_args() {  # wrk_args CONNS DEPTH SECONDS -> sets WRK_ARGS (wrk's options; the URL goes last)
  WRK_ARGS=(-t1 -c"$1" -d"$3s" --latency)
  [ "$2" -gt 1 ] && WRK_ARGS+=(-s "$LUA")
  return 0
}

# run_point NAME URL SERVER_PID CONNS DEPTH: one wrk run; appends a row to $WORK/rows.tsv and sets
# ROW_RPS, ROW_CPU, ROW_P50, ROW_P99 for the table. Runs wrk in the foreground (no subshell), so an
# INT/TERM is handled as soon as wrk returns; an INT sent to the process group stops wrk at once.
TIMEFORMAT='%3R %3U %3S'
run_point() {
  local name="$1" url="$2" pid="$3" conns="$4" depth="$5" c0 c1 t0 t1 rc=0 extra=()
  wrk_args "$conns" "$depth" "$DURATION"
  [ "$depth" -gt 1 ] && extra=(-- "$depth")
  c0="$(cpu_ticks "$pid")"
  t0="$EPOCHREALTIME"
  { time taskset -c "$CLIENT_CPU" wrk "${WRK_ARGS[@]}" "$url" "${extra[@]}" > "$WORK/wrk.out" 2>&1 ; } 2> "$WORK/wrk.time" || rc=$?
  t1="$EPOCHREALTIME"
  c1="$(cpu_ticks "$pid")"
  local parsed
  parsed="$(awk -v rc="$rc" '
    /^Requests\/sec:/ { rps = $2 }
    /^ +50% / { p50 = $2 }
    /^ +99% / { p99 = $2 }
    /Socket errors:/ { gsub(/,/, ""); err += $4 + $6 + $8 + $10 }
    /Non-2xx or 3xx responses:/ { err += $5 }
    /unable to connect|[Ee]rror/ && !/Socket errors/ { failed = 1 }
    END {
      if (rps == "" || rc != 0) failed = 1
      printf "%s %d %s %s %d\n", (rps == "" ? "0" : rps), err, (p50 == "" ? "-" : p50), (p99 == "" ? "-" : p99), failed
    }' "$WORK/wrk.out")"
  local rps err p50 p99 failed
  read -r rps err p50 p99 failed <<< "$parsed"
  [ "$failed" = 0 ] || { echo "compare_nginx: wrk against $name (c=$conns, depth $depth) failed:" >&2; sed 's/^/  /' "$WORK/wrk.out" >&2; }
  local srv_cpu wrk_cpu
  srv_cpu="$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" \
    'BEGIN { if (a == "" || b == "" || t1 <= t0) print "-"; else printf "%.1f", (b - a) / hz / (t1 - t0) * 100 }')"
  wrk_cpu="$(awk '{ if ($1 > 0) printf "%.1f", ($2 + $3) / $1 * 100; else print "-" }' "$WORK/wrk.time")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$depth" "$conns" "$name" "$rps" "$err" "$failed" \
    "$srv_cpu" "$wrk_cpu" "$p50" "$p99" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" >> "$WORK/rows.tsv"
  ROW_RPS="$rps"; ROW_CPU="$srv_cpu"; ROW_P50="$p50"; ROW_P99="$p99"
  [ "$failed" = 0 ] && [ "$err" = 0 ] || ROW_RPS="ERR"
}

write_json() {  # write_json COMPLETE(true|false): $WORK/rows.tsv -> $JSON (atomically)
  [ -n "$JSON" ] || return 0
  export DURATION CONNS PIPELINE WARMUP SERVER_CPU CLIENT_CPU CACHE_SERVER CACHE_SERVER_FLAGS
  COMPLETE="$1" WRK_VERSION="$(wrk -v 2>&1 | head -1 || true)" NGINX_VERSION="$(nginx -v 2>&1 || true)" \
  python3 "$ROOT/scripts/compare_nginx_json.py" "$WORK/rows.tsv" "$WORK/cache_server_stats.json" "$JSON"
}

: > "$WORK/rows.tsv"
for depth in $PIPELINE; do
  if [ "$WARMUP" -gt 0 ]; then
    wrk_args 4 "$depth" "$WARMUP"
    extra=(); [ "$depth" -gt 1 ] && extra=(-- "$depth")
    taskset -c "$CLIENT_CPU" wrk "${WRK_ARGS[@]}" "$CS_URL" "${extra[@]}" > /dev/null 2>&1 || true
    taskset -c "$CLIENT_CPU" wrk "${WRK_ARGS[@]}" "$NG_URL" "${extra[@]}" > /dev/null 2>&1 || true
  fi
  echo "# pipeline depth $depth: GET hit, 100-byte body, keep-alive; servers on CPU $SERVER_CPU, wrk -t1 on CPU $CLIENT_CPU, ${DURATION}s per point${CACHE_SERVER_FLAGS:+; cache_server $CACHE_SERVER_FLAGS}"
  printf '%-6s %14s %6s %9s %9s %14s %6s %9s %9s %7s\n' conns cache_server cpu% p50 p99 nginx cpu% p50 p99 ratio
  for c in $CONNS; do
    run_point cache_server "$CS_URL" "$CS_PID" "$c" "$depth"
    cs="$ROW_RPS" cs_cpu="$ROW_CPU" cs_p50="$ROW_P50" cs_p99="$ROW_P99"
    run_point nginx "$NG_URL" "$NG_WORKER" "$c" "$depth"
    ng="$ROW_RPS" ng_cpu="$ROW_CPU" ng_p50="$ROW_P50" ng_p99="$ROW_P99"
    ratio="$(awk -v a="$cs" -v b="$ng" 'BEGIN{ if (a+0 > 0 && b+0 > 0) printf "%.2f", a/b; else print "NA" }')"
    printf '%-6s %14s %6s %9s %9s %14s %6s %9s %9s %7s\n' "$c" "$cs" "$cs_cpu" "$cs_p50" "$cs_p99" \
      "$ng" "$ng_cpu" "$ng_p50" "$ng_p99" "$ratio"
    write_json false
  done
done
write_json true
[ -z "$JSON" ] || echo "# JSON: $JSON"
