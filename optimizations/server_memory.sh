#!/usr/bin/env bash
# server_memory.sh — resident memory per item through the server, the issue-30 method: start
# cache_server, PUT ITEMS distinct keys (11 bytes, "k%010d") with 100-byte values over HTTP with
# wrk, and report the server's VmRSS growth above the key+value bytes it holds, per item held.
#   optimizations/server_memory.sh [--json] EVICTOR[:MAXMEM] ...
#     EVICTOR   s3fifo | clock | ... (cache_server -e)
#     MAXMEM    --maxmem (default 2G: nothing is evicted); "fit90" is 90% of the data (eviction
#               runs, 10% of the items leave; the figure is per item still held)
#   ITEMS=N (default 1000000)  SETTLE=S longest wait before the second reading (default 60): it is
#   taken once RSS has not fallen for 6 s, since jemalloc returns freed pages (the slot tables a
#   shard outgrew) over its 10 s decay; read at once, RSS still holds them (+16 B/item)
#   CACHE_SERVER, WRK: binaries (default build/release/server/cache_server, wrk)
# The server runs with one worker thread pinned to CPU 0 and wrk (-t1 -c8) on CPU 1. One JSON line
# per run with --json (optimizations/report.py reads them), else a table.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SERVER="${CACHE_SERVER:-$ROOT/build/release/server/cache_server}"
WRK="${WRK:-wrk}"
ITEMS="${ITEMS:-1000000}"
SETTLE="${SETTLE:-60}"
KEY_BYTES=11 VALUE_BYTES=100
json=0
if [ "${1:-}" = "--json" ]; then json=1; shift; fi
[ $# -ge 1 ] || { sed -n 2,13p "$0" >&2; exit 2; }
[ -x "$SERVER" ] || { echo "server_memory.sh: no $SERVER (build it first)" >&2; exit 2; }
command -v "$WRK" > /dev/null || { echo "server_memory.sh: wrk not found" >&2; exit 2; }

rss_bytes() { awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
stat_of() { python3 -c 'import json,sys,urllib.request; print(json.load(urllib.request.urlopen(sys.argv[1]))[sys.argv[2]])' "http://127.0.0.1:$1/stats" "$2"; }

# settle PID: waits until the RSS has not fallen for 6 s (jemalloc hands freed pages back over its
# 10 s decay, in steps), at most SETTLE s.
settle() {
  local low now still=0 waited=0
  low="$(rss_bytes "$1")"
  while [ "$still" -lt 6 ] && [ "$waited" -lt "$SETTLE" ]; do
    sleep 1
    waited=$((waited + 1)) now="$(rss_bytes "$1")"
    if [ "$now" -lt "$low" ]; then low="$now" still=0; else still=$((still + 1)); fi
  done
}

# measure EVICTOR MAXMEM LABEL: one fresh server, one load, one JSON line on stdout.
measure() {
  local evictor="$1" maxmem="$2" label="$3" port pid wrk_pid before after items used
  port="$(free_port)"
  taskset -c 0 "$SERVER" -t 1 -p "$port" -e "$evictor" -m "$maxmem" > /dev/null 2>&1 &
  pid=$!
  trap 'kill "$pid" 2> /dev/null || true' RETURN
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/stats" > /dev/null 2>&1 && break
    sleep 0.1
  done
  sleep 1
  before="$(rss_bytes "$pid")"
  taskset -c 1 "$WRK" -t1 -c8 -d600s -s "$ROOT/optimizations/wrk_put_keys.lua" \
    "http://127.0.0.1:$port" -- "$ITEMS" "$VALUE_BYTES" > /dev/null &
  wrk_pid=$!
  until [ "$(stat_of "$port" sets)" -ge "$ITEMS" ]; do
    kill -0 "$wrk_pid" 2> /dev/null || { echo "server_memory.sh: wrk ended early" >&2; exit 1; }
    sleep 0.2
  done
  kill "$wrk_pid"
  wait "$wrk_pid" 2> /dev/null || true
  settle "$pid"
  after="$(rss_bytes "$pid")"
  items="$(stat_of "$port" items)"
  used="$(stat_of "$port" space_used)"
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  python3 - "$label" "$items" "$used" "$before" "$after" "$maxmem" << 'PY'
import json, sys
label, items, used, before, after, maxmem = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
print(json.dumps({"store": label, "via": "server", "items": items, "maxmem": maxmem,
                  "key_value_bytes": used, "rss_delta_bytes": after - before,
                  "overhead_bytes_per_item": round((after - before - used) / items, 1)}))
PY
}

[ "$json" = 1 ] || printf '%-24s %10s %14s %16s\n' store items "RSS delta MB" "overhead B/item"
for spec in "$@"; do
  evictor="${spec%%:*}" maxmem=2G label="server $evictor"
  [ "$spec" != "$evictor" ] && maxmem="${spec#*:}"
  if [ "$maxmem" = fit90 ]; then
    maxmem=$((ITEMS * (KEY_BYTES + VALUE_BYTES) * 9 / 10))
    label="server $evictor, cache 90% of the data"
  fi
  line="$(measure "$evictor" "$maxmem" "$label")"
  if [ "$json" = 1 ]; then echo "$line"; else
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%-24s %10d %14.1f %16.1f" % (r["store"], r["items"], r["rss_delta_bytes"]/1e6, r["overhead_bytes_per_item"]))' "$line"
  fi
done
