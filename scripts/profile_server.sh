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

source "$ROOT/scripts/lib/nginx.sh"  # BODY100, stop_pid
WORK="$(mktemp -d /tmp/profile_server.XXXXXX)"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && stop_pid "$p" TERM; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CLK_TCK="$(getconf CLK_TCK)"
SERVER_PID=""
SERVER_PORT=""

# start_server LOG CMD... : runs CMD pinned, waits for its `listening on` line.
start_server() {
  local log="$1"
  shift
  taskset -c "$SERVER_CPU" "$@" > "$log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  SERVER_PORT=""
  for _ in $(seq 1 300); do  # valgrind needs a few seconds to start
    SERVER_PORT="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$log")"
    [ -n "$SERVER_PORT" ] && break
    kill -0 "$SERVER_PID" 2> /dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$SERVER_PORT" ] || { echo "profile_server: server did not start" >&2; cat "$log" >&2; exit 1; }
  local url="http://127.0.0.1:$SERVER_PORT/key/bench"
  [ "$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary "$BODY100" "$url")" = 201 ]
  [ "$(curl -s "$url")" = "$BODY100" ] || { echo "profile_server: GET mismatch" >&2; exit 1; }
}

stop_server() {
  stop_pid "$SERVER_PID" TERM
  SERVER_PID=""
}

stats() { curl -s "http://127.0.0.1:$SERVER_PORT/stats"; }
cpu_ticks() { awk '{print $14, $15}' "/proc/$SERVER_PID/stat"; }  # utime stime

# wrk_script DEPTH : a Lua script that sends DEPTH GETs per write (depth 1: plain wrk).
wrk_args() {
  local depth="$1"
  if [ "$depth" -gt 1 ]; then
    cat > "$WORK/pipeline$depth.lua" << EOF
-- $depth GETs of /key/bench per write; wrk counts each response as a request.
init = function(args)
  local one = wrk.format("GET", "/key/bench")
  batch = string.rep(one, $depth)
end
request = function() return batch end
EOF
    echo "-s $WORK/pipeline$depth.lua"
  fi
}

# load SECONDS DEPTH : wrk in the background against the running server.
load() {
  # shellcheck disable=SC2046
  taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$1"s $(wrk_args "$2") \
    "http://127.0.0.1:$SERVER_PORT/key/bench" > "$WORK/wrk.out" 2>&1 &
  WRK_PID=$!
  PIDS+=("$WRK_PID")
}

ROWS="$WORK/rows.jsonl"
: > "$ROWS"
for variant in $VARIANTS; do
  for depth in $PIPELINES; do
    tag="$variant-P$depth"
    echo "[profile] $tag: load, perf stat, perf record" >&2
    start_server "$WORK/server.log" "$CACHE_SERVER" -s 127.0.0.1 -p 0 -t 1 --variant "$variant"
    # Warm-up second, then the measured window inside one longer wrk run.
    load "$((DURATION * 2 + 3))" "$depth"
    sleep 1
    s0="$(stats)"
    read -r u0 k0 < <(cpu_ticks)
    perf stat -x, -o "$OUT/$tag.perfstat.csv" -p "$SERVER_PID" \
      -e raw_syscalls:sys_enter -e syscalls:sys_enter_recvmsg -e syscalls:sys_enter_sendmsg \
      -e syscalls:sys_enter_epoll_wait -e syscalls:sys_enter_read -e syscalls:sys_enter_write \
      -e syscalls:sys_enter_recvfrom -e syscalls:sys_enter_sendto \
      -- sleep "$DURATION" 2> /dev/null
    read -r u1 k1 < <(cpu_ticks)
    s1="$(stats)"
    if [ "$NO_RECORD" != 1 ]; then
      perf record -q -e cpu-clock -F 2000 -p "$SERVER_PID" -o "$WORK/perf.data" \
        -- sleep "$DURATION" > /dev/null 2>&1
      perf report -i "$WORK/perf.data" --no-children --sort sym --stdio 2> /dev/null \
        | grep -E '^ +[0-9]' | head -15 > "$OUT/$tag.top.txt" || true
    fi
    wait "$WRK_PID" || true
    stop_server

    instr=""
    if [ "$NO_CALLGRIND" != 1 ]; then
      echo "[profile] $tag: callgrind" >&2
      cg="$OUT/$tag.callgrind.out"
      start_server "$WORK/server.log" valgrind -q --tool=callgrind --instr-atstart=no \
        --callgrind-out-file="$cg" "$CACHE_SERVER" -s 127.0.0.1 -p 0 -t 1 --variant "$variant"
      load "$((CALLGRIND_DURATION + 2))" "$depth"
      sleep 1
      c0="$(stats)"
      callgrind_control -i on "$SERVER_PID" > /dev/null
      sleep "$CALLGRIND_DURATION"
      callgrind_control -i off "$SERVER_PID" > /dev/null
      c1="$(stats)"
      wait "$WRK_PID" || true
      stop_server
      ir="$(callgrind_annotate "$cg" 2> /dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)"
      instr="$(python3 -c 'import json,sys; a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2]); n=b["requests"]-a["requests"]-1; print(json.dumps({"ir": int(sys.argv[3] or 0), "requests": n}))' "$c0" "$c1" "$ir")"
    fi
    python3 - "$tag" "$variant" "$depth" "$s0" "$s1" "$u0" "$k0" "$u1" "$k1" "$CLK_TCK" \
      "$DURATION" "$OUT/$tag.perfstat.csv" "$WORK/wrk.out" "${instr:-null}" >> "$ROWS" << 'EOF'
import json, re, sys
tag, variant, depth, s0, s1, u0, k0, u1, k1, tck, dur, perfcsv, wrkout, instr = sys.argv[1:]
a, b = json.loads(s0), json.loads(s1)
req = b["requests"] - a["requests"] - 1  # the second /stats counts itself
tck, dur = int(tck), float(dur)
syscalls = {}
for line in open(perfcsv):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].isdigit():
        syscalls[f[2].split(":")[-1]] = int(f[0])
wrk = open(wrkout).read()
m = re.search(r"Requests/sec:\s*([\d.]+)", wrk)
row = {
    "tag": tag, "variant": variant, "pipeline": int(depth), "requests": req,
    "req_per_s": req / dur, "wrk_req_per_s": float(m.group(1)) if m else None,
    "server_cpu_pct": 100.0 * ((int(u1) - int(u0)) + (int(k1) - int(k0))) / tck / dur,
    "user_us_per_req": 1e6 * (int(u1) - int(u0)) / tck / max(req, 1),
    "sys_us_per_req": 1e6 * (int(k1) - int(k0)) / tck / max(req, 1),
    # (servers older than the reads/writes counters: null)
    "reads_per_req": (b["reads"] - a["reads"] - 1) / max(req, 1) if "reads" in b else None,
    "writes_per_req": (b["writes"] - a["writes"] - 1) / max(req, 1) if "writes" in b else None,
    "syscalls_per_req": syscalls.get("sys_enter", 0) / max(req, 1),
    "syscalls": syscalls,
}
cg = json.loads(instr)
if cg:
    row["instr_per_req"] = cg["ir"] / max(cg["requests"], 1)
    row["callgrind_requests"] = cg["requests"]
print(json.dumps(row))
EOF
  done
done

python3 - "$ROWS" "$OUT" "$CONNS" "$DURATION" << 'EOF'
import json, pathlib, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out, conns, dur = pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4]
(out / "profile.json").write_text(json.dumps(rows, indent=2) + "\n")
lines = [
    "# Server profile: cost per GET hit",
    "",
    f"`cache_server -t 1` on one CPU, wrk -t1 -c{conns} on the other, 100-byte value, "
    f"{dur} s windows. Requests, reads and writes are the server's own counters; syscalls from "
    "`perf stat -e raw_syscalls:sys_enter`; CPU from /proc/PID/stat; instructions (user space "
    "only) from a separate run under `valgrind --tool=callgrind`, so its rate is not the "
    "table's. Pipeline N = wrk sends N GETs per write.",
    "",
    "| variant | pipeline | req/s | server CPU % | user µs/req | sys µs/req | syscalls/req "
    "| reads/req | writes/req | instructions/req |",
    "|---|---|---|---|---|---|---|---|---|---|",
]
def fmt(x):
    return "n/a" if x is None else f"{x:.3f}"


for r in rows:
    ins = f"{r['instr_per_req']:,.0f}" if "instr_per_req" in r else "n/a"
    lines.append(
        f"| {r['variant']} | {r['pipeline']} | {r['req_per_s']:,.0f} | {r['server_cpu_pct']:.0f} "
        f"| {r['user_us_per_req']:.2f} | {r['sys_us_per_req']:.2f} | {r['syscalls_per_req']:.2f} "
        f"| {fmt(r['reads_per_req'])} | {fmt(r['writes_per_req'])} | {ins} |")
lines += ["", "Syscalls per request by name (the busiest):", ""]
for r in rows:
    named = {k: v for k, v in r["syscalls"].items() if k != "sys_enter" and v}
    top = sorted(named.items(), key=lambda kv: -kv[1])[:4]
    desc = ", ".join(f"{k.removeprefix('sys_enter_')} {v / max(r['requests'], 1):.3f}" for k, v in top)
    lines.append(f"- {r['variant']}, pipeline {r['pipeline']}: {desc or 'n/a'}")
for r in rows:
    top = out / f"{r['tag']}.top.txt"
    if top.exists() and top.read_text().strip():
        lines += ["", f"Top symbols by CPU samples, {r['variant']}, pipeline {r['pipeline']} "
                  "(`perf record -e cpu-clock`, kernel included):", "", "```",
                  top.read_text().rstrip(), "```"]
(out / "PROFILE.md").write_text("\n".join(lines) + "\n")
print(out / "PROFILE.md")
EOF
