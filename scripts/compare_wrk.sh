#!/usr/bin/env bash
# Compares bench_client with wrk against nginx serving a 100-byte body from memory.
#   nginx: worker_processes 1, pinned to CPU $SERVER_CPU; each client pinned to CPU $CLIENT_CPU;
#   1 client thread, 1 connection, same duration; RUNS runs alternating which client goes first.
# Prints each run, the medians, and whether bench_client reaches >= 0.95x wrk's req/s with a p50
# within +-10% of wrk's. Exit status: 0 targets met, 1 targets missed, 2 setup failure.
#
#   scripts/compare_wrk.sh            env: DURATION (s, default 10) RUNS (3) PORT (18081)
#                                          SERVER_CPU (0) CLIENT_CPU (1) BENCH (bench_client path)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DURATION="${DURATION:-10}"
RUNS="${RUNS:-3}"
PORT="${PORT:-18081}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
BENCH="${BENCH:-}"
if [ -z "$BENCH" ]; then
  for candidate in "$ROOT/build/release/client/bench_client" "$ROOT/bench_client"; do
    [ -x "$candidate" ] && { BENCH="$candidate"; break; }
  done
fi
die() { echo "compare_wrk: $*" >&2; exit 2; }
[ -n "$BENCH" ] && [ -x "$BENCH" ] || die "bench_client not found (build it or set BENCH=path)"
command -v nginx >/dev/null || die "nginx not installed"
command -v wrk >/dev/null || die "wrk not installed"
command -v taskset >/dev/null || die "taskset not installed"
command -v python3 >/dev/null || die "python3 not installed"

source "$ROOT/scripts/lib/nginx.sh"
WORK="$(mktemp -d /tmp/compare_wrk.XXXXXX)"
cleanup() { nginx_stop; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
nginx_start "$WORK" "$PORT" "$SERVER_CPU" || die "nginx did not start"
URL="$NGINX_URL"

# wrk output -> "rps p50_us"
parse_wrk() {
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s*([\d.]+)", text).group(1))
val, unit = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
print(rps, float(val) * {"us": 1, "ms": 1e3, "s": 1e6}[unit])
PY
}
# bench_client JSON -> "rps p50_us"
parse_bench() {
  python3 - "$1" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["errors"] == 0, p["errors_by_code"]
print(p["throughput_rps"], p["p50_us"])
PY
}

run_wrk() {
  taskset -c "$CLIENT_CPU" wrk -t1 -c1 -d"${DURATION}s" --latency "$URL" > "$WORK/wrk.txt" 2>&1 || die "wrk failed"
  parse_wrk "$WORK/wrk.txt"
}
run_bench() {
  taskset -c "$CLIENT_CPU" "$BENCH" -p "$PORT" --path /bench --threads 1 --connections-per-thread 1 \
    -d "$DURATION" --warmup 1s --quiet --json "$WORK/bench.json" > "$WORK/bench.txt" || die "bench_client failed"
  parse_bench "$WORK/bench.json"
}

taskset -c "$CLIENT_CPU" wrk -t1 -c1 -d1s "$URL" > /dev/null  # warm-up

echo "# nginx 1 worker on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU, 1 thread, 1 connection, ${DURATION}s, GET /bench (100 B)"
printf '%-4s %-13s %12s %10s\n' run client req/s p50_us
WRK_RPS=(); WRK_P50=(); B_RPS=(); B_P50=()
for run in $(seq "$RUNS"); do
  if [ $((run % 2)) = 1 ]; then order="wrk bench"; else order="bench wrk"; fi
  for client in $order; do
    if [ "$client" = wrk ]; then
      read -r rps p50 <<< "$(run_wrk)"; WRK_RPS+=("$rps"); WRK_P50+=("$p50")
    else
      read -r rps p50 <<< "$(run_bench)"; B_RPS+=("$rps"); B_P50+=("$p50")
    fi
    printf '%-4s %-13s %12.1f %10.2f\n' "$run" "$client" "$rps" "$p50"
  done
done

python3 - "${WRK_RPS[*]}" "${WRK_P50[*]}" "${B_RPS[*]}" "${B_P50[*]}" <<'PY'
import statistics, sys
wr, wp, br, bp = ([float(x) for x in a.split()] for a in sys.argv[1:5])
mw, mwp, mb, mbp = map(statistics.median, (wr, wp, br, bp))
ratio, p50_delta = mb / mw, (mbp - mwp) / mwp
ok = ratio >= 0.95 and abs(p50_delta) <= 0.10
print(f"median wrk          {mw:12.1f} req/s  p50 {mwp:8.2f} us")
print(f"median bench_client {mb:12.1f} req/s  p50 {mbp:8.2f} us")
print(f"bench_client/wrk throughput {ratio:.3f} (target >= 0.95); p50 difference {p50_delta*100:+.1f}% (target within +-10%)")
print("RESULT:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
