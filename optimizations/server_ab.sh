#!/usr/bin/env bash
# server_ab.sh — GET-hit and replacing-PUT throughput of two cache_server binaries, A/B in one
# run (issue 47's "through the server" target): each round starts each binary in turn (one worker,
# pinned to CPU 0), loads KEYS keys (11-byte keys, 100-byte values) with wrk_put_keys.lua, then
# runs wrk (-t1 -c8, CPU 1) for DURATION seconds of GETs of random loaded keys and of PUTs
# replacing them (wrk_random_keys.lua). Reports each binary's median req/s and the median of
# the per-round ratios B ÷ A. wrk's req/s is what is compared (its percentiles are corrected).
#   optimizations/server_ab.sh A_BINARY B_BINARY      (env: ROUNDS=5 DURATION=5 KEYS=100000
#                                                      EVICTOR=s3fifo WRK=wrk)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -eq 2 ] || { sed -n 2,10p "$0" >&2; exit 2; }
A="$1" B="$2"
ROUNDS="${ROUNDS:-5}" DURATION="${DURATION:-5}" KEYS="${KEYS:-100000}"
EVICTOR="${EVICTOR:-s3fifo}" WRK="${WRK:-wrk}"
for bin in "$A" "$B"; do [ -x "$bin" ] || { echo "server_ab.sh: no binary $bin" >&2; exit 2; }; done
command -v "$WRK" > /dev/null || { echo "server_ab.sh: wrk not found" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
stat_of() { python3 -c 'import json,sys,urllib.request; print(json.load(urllib.request.urlopen(sys.argv[1]))[sys.argv[2]])' "http://127.0.0.1:$1/stats" "$2"; }
reqs() { awk '/^Requests\/sec:/ { print $2 }'; }

# run BINARY: one fresh server; prints "GET_RPS PUT_RPS".
run() {
  local port pid load out_get out_put
  port="$(free_port)"
  taskset -c 0 "$1" -t 1 -p "$port" -e "$EVICTOR" -m 1G > /dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/stats" > /dev/null 2>&1 && break; sleep 0.1; done
  taskset -c 1 "$WRK" -t1 -c8 -d120s -s "$ROOT/optimizations/wrk_put_keys.lua" \
    "http://127.0.0.1:$port" -- "$KEYS" 100 > /dev/null &
  load=$!
  until [ "$(stat_of "$port" items)" -ge "$KEYS" ]; do
    kill -0 "$load" 2> /dev/null || { echo "server_ab.sh: the load ended early" >&2; kill "$pid"; exit 1; }
    sleep 0.2
  done
  kill "$load"; wait "$load" 2> /dev/null || true
  out_get="$(taskset -c 1 "$WRK" -t1 -c8 -d"${DURATION}s" -s "$ROOT/optimizations/wrk_random_keys.lua" \
    "http://127.0.0.1:$port" -- get "$KEYS" | reqs)"
  out_put="$(taskset -c 1 "$WRK" -t1 -c8 -d"${DURATION}s" -s "$ROOT/optimizations/wrk_random_keys.lua" \
    "http://127.0.0.1:$port" -- put "$KEYS" 100 | reqs)"
  kill "$pid"; wait "$pid" 2> /dev/null || true
  echo "$out_get $out_put"
}

rows=()
for r in $(seq "$ROUNDS"); do
  a="$(run "$A")"; b="$(run "$B")"
  echo "round $r: A get/put $a   B get/put $b" >&2
  rows+=("$a $b")
done
printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, line.split())) for line in sys.stdin if line.strip()]
for name, i in (("GET hit", 0), ("replacing PUT", 1)):
    a = [r[i] for r in rows]; b = [r[i + 2] for r in rows]
    ratios = [y / x for x, y in zip(a, b)]
    print(f"{name:14s} A {statistics.median(a):10.0f} req/s   B {statistics.median(b):10.0f} req/s"
          f"   B/A median {statistics.median(ratios):.3f} (rounds {min(ratios):.3f}..{max(ratios):.3f})")
'
