# bench_common.sh — shell helpers the benchmark scripts share (bench_postgres.sh, the others
# until Python): usage from the script's header comment, errors with the script's name
# and exit codes (1 failure, 2 bad usage), stopping processes by PID, CPU ticks from /proc, free
# ports, splitting connections over client threads, asking a binary's --help for a flag, and
# starting cache_server and redis-server.
# Source it after setting BENCH_NAME (the prefix of every message). The caller owns: PIDS (the
# PIDs its cleanup stops), SRV_PID/SRV_PORT (associative arrays of its servers), SERVER_CPU,
# CLIENT_CPU, CLIENT_THREADS, CACHE_SERVER, SERVER_THREADS, OUT (results, with raw/), WORK (its
# temporary directory), record_cmd NAME CMD; and its own cleanup and traps.

CLK_TCK="$(getconf CLK_TCK)"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "$BENCH_NAME: $*" >&2; exit 1; }
bad_usage() { echo "$BENCH_NAME: $* (see --help)" >&2; exit 2; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
stop_pid() {  # stop_pid PID: TERM, wait up to 15 s (write-behind flushes, fsyncs), then KILL
  local pid="$1" i
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2> /dev/null || { wait "$pid" 2> /dev/null || true; return 0; }
  kill -TERM "$pid" 2> /dev/null || true
  for i in $(seq 1 150); do
    kill -0 "$pid" 2> /dev/null || { wait "$pid" 2> /dev/null || true; return 0; }
    sleep 0.1
  done
  echo "$BENCH_NAME: PID $pid did not exit on TERM; sending KILL" >&2
  kill -KILL "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
}
forget_pid() {
  local p keep=()
  for p in "${PIDS[@]:-}"; do [ -z "$p" ] || [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]:-}")
}
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
cpu_ticks() {  # cpu_ticks PID -> utime+stime of the process (all its threads), in clock ticks
  local s
  s="$(cat "/proc/$1/stat" 2> /dev/null)" || { echo 0; return 0; }
  s="${s##*) }"
  set -- $s
  echo $(( ${12} + ${13} ))
}
cpu_snap() {
  awk -v s="cpu$SERVER_CPU" -v c="cpu$CLIENT_CPU" '
    /^cpu/ { t = $2+$3+$4+$5+$6+$7+$8+$9; i = $5+$6 }
    $1 == "cpu" { T = t; S = $9 } $1 == s { ST = t; SI = i } $1 == c { CT = t; CI = i }
    END { print T, S, ST, SI, CT, CI }' /proc/stat
}
free_port() {
  PYTHONPATH="$ROOT/scripts" python3 -m harness free-port
}
echo_cmd() { printf '%q ' "$@" | sed 's/ $//'; }
# help_has BINARY TEXT: does BINARY --help mention TEXT? (Not `--help | grep -q`: grep exits at
# its first match, the binary's next write then dies of SIGPIPE, and under pipefail the whole
# test fails, now and then, on a help text longer than one write.)
help_has() {
  local text
  text="$("$1" --help 2>&1)" || true
  grep -qF -- "$2" <<< "$text"
}
split_conns() {
  local c="$1" t
  for ((t = CLIENT_THREADS < c ? CLIENT_THREADS : c; t >= 1; t--)); do
    if [ $((c % t)) = 0 ]; then echo "$t $((c / t))"; return; fi
  done
}
stop_server() {
  local name="$1" pid="${SRV_PID[$1]:-}"
  [ -n "$pid" ] || return 0
  stop_pid "$pid"; forget_pid "$pid"
  unset "SRV_PID[$name]" "SRV_PORT[$name]"
}
# start_ours NAME FLAGS...: a cache_server on a free port (-p 0; it prints the port), its output
# in raw/server-NAME.log; waits START_WAIT_S (default 15) seconds for its listening line (a
# server that rebuilds millions of board members from its store needs more).
start_ours() {
  local name="$1" cmd pid port=""
  shift
  cmd=("$CACHE_SERVER" -t "$SERVER_THREADS" "$@" -s 127.0.0.1 -p 0)
  : > "$OUT/raw/server-$name.log"  # exists before the child opens it: the loop below reads it
  taskset -c "$SERVER_CPU" "${cmd[@]}" > "$OUT/raw/server-$name.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 $(( ${START_WAIT_S:-15} * 10 ))); do
    port="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$OUT/raw/server-$name.log" || true)"
    [ -n "$port" ] && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    cat "$OUT/raw/server-$name.log" >&2
    die "cache_server ($name) did not start: $(echo_cmd "${cmd[@]}" | sed "s|$WORK|\$DATA|g")"
  fi
  SRV_PID[$name]="$pid"; SRV_PORT[$name]="$port"
  record_cmd "$name server" "taskset -c $SERVER_CPU $(echo_cmd "${cmd[@]}")"
  log "$name: cache_server PID $pid on 127.0.0.1:$port ($*), CPU $SERVER_CPU"
}
alive() {  # alive NAME: dies with the tail of the server's log if it is gone
  kill -0 "${SRV_PID[$1]}" 2> /dev/null && return 0
  [ -f "$OUT/raw/server-$1.log" ] && tail -20 "$OUT/raw/server-$1.log" >&2
  [ -f "$WORK/$1/redis.log" ] && tail -20 "$WORK/$1/redis.log" >&2
  die "the $1 server (PID ${SRV_PID[$1]}) died"
}
start_redis_server() {  # start_redis_server NAME REDIS-FLAGS...: redis-server on a free port
  local name="$1" dir="$WORK/$1" port pid try cmd
  shift
  mkdir -p "$dir"
  for try in 1 2 3 4 5; do
    port="$(free_port)"
    cmd=(redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes --daemonize no
         --save "" "$@" --dir "$dir" --logfile "$dir/redis.log")
    taskset -c "$SERVER_CPU" "${cmd[@]}" > /dev/null 2>&1 &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2> /dev/null || break
      [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2> /dev/null)" = PONG ] && break
      sleep 0.1
    done
    if kill -0 "$pid" 2> /dev/null && [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2> /dev/null)" = PONG ]; then
      SRV_PID[$name]="$pid"; SRV_PORT[$name]="$port"
      record_cmd "$name server" "taskset -c $SERVER_CPU $(echo_cmd "${cmd[@]}")"
      log "$name: redis-server PID $pid on 127.0.0.1:$port ($*), CPU $SERVER_CPU"
      return 0
    fi
    stop_pid "$pid"; forget_pid "$pid"  # most likely the port was taken meanwhile: try another
  done
  tail -20 "$dir/redis.log" >&2 2> /dev/null || true
  die "redis-server ($name) did not start"
}
