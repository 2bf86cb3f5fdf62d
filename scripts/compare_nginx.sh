#!/usr/bin/env bash
# compare_nginx.sh — GET-hit throughput of cache_server beside nginx, same machine, same run.
#
# Both servers get one worker pinned to CPU $SERVER_CPU; wrk (one thread, keep-alive) is pinned
# to CPU $CLIENT_CPU. cache_server serves a 100-byte value from GET /key/bench; nginx answers
# `return 200 "<the same 100 bytes>"` from memory (worker_processes 1, access log off). For each
# connection count it prints both req/s figures and the ratio cache_server / nginx.
#
# Usage: scripts/compare_nginx.sh            env: DURATION (s, default 5), CONNS ("1 2 4 8 16 32"),
#   CACHE_SERVER (binary; default build/release/server/cache_server), NGINX_PORT (18181),
#   SERVER_CPU (0), CLIENT_CPU (1), WARMUP (s, default 1)
# Everything listens on 127.0.0.1 only; every process started is stopped by PID on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DURATION="${DURATION:-5}"
CONNS="${CONNS:-1 2 4 8 16 32}"
CACHE_SERVER="${CACHE_SERVER:-$ROOT/build/release/server/cache_server}"
NGINX_PORT="${NGINX_PORT:-18181}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
WARMUP="${WARMUP:-1}"

for tool in wrk nginx taskset curl ss; do
  command -v "$tool" > /dev/null || { echo "compare_nginx: $tool not found" >&2; exit 1; }
done
[ -x "$CACHE_SERVER" ] || { echo "compare_nginx: no cache_server at $CACHE_SERVER (build it first)" >&2; exit 1; }

source "$ROOT/scripts/lib/nginx.sh"
WORK="$(mktemp -d /tmp/compare_nginx.XXXXXX)"
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
taskset -c "$SERVER_CPU" "$CACHE_SERVER" -s 127.0.0.1 -p 0 -t 1 > "$WORK/cache_server.log" 2>&1 &
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

# --- nginx ---------------------------------------------------------------------------------------
nginx_start "$WORK" "$NGINX_PORT" "$SERVER_CPU" || exit 1
NG_URL="$NGINX_URL"

# --- measure -------------------------------------------------------------------------------------
run_wrk() {  # run_wrk URL CONNS -> req/s (prints "ERR" if wrk saw errors or non-2xx)
  local out
  out="$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$2" -d"${DURATION}s" "$1" 2>&1)"
  if grep -qE 'Non-2xx|Socket errors' <<< "$out"; then echo "ERR"; return; fi
  awk '/^Requests\/sec:/{print $2}' <<< "$out"
}

taskset -c "$CLIENT_CPU" wrk -t1 -c4 -d"${WARMUP}s" "$CS_URL" > /dev/null
taskset -c "$CLIENT_CPU" wrk -t1 -c4 -d"${WARMUP}s" "$NG_URL" > /dev/null

echo "# GET hit, 100-byte value, keep-alive; servers on CPU $SERVER_CPU, wrk -t1 on CPU $CLIENT_CPU, ${DURATION}s per point"
printf '%-6s %16s %16s %8s\n' conns cache_server nginx ratio
for c in $CONNS; do
  cs="$(run_wrk "$CS_URL" "$c")"
  ng="$(run_wrk "$NG_URL" "$c")"
  ratio="$(awk -v a="$cs" -v b="$ng" 'BEGIN{ if (a+0 > 0 && b+0 > 0) printf "%.2f", a/b; else print "NA" }')"
  printf '%-6s %16s %16s %8s\n' "$c" "$cs" "$ng" "$ratio"
done
