#!/usr/bin/env bash
# cluster.sh — N cache_server nodes behind one nginx (or HAProxy) front that shards keys by
# consistent hashing, on this machine (docs/cluster.md). The front's configuration is rendered
# from the templates in cluster/, which are also what to copy to real machines.
#
#   scripts/cluster.sh up N [--front nginx|haproxy] [--store-dir DIR] [--weight W] [--netns]
#                           [--subnet A.B.C] [--admin-token-file FILE] [--tls CERT KEY]
#                           [-- SERVER_FLAGS...]
#       starts N cache_server nodes (each with --served-by on) and the front, all on 127.0.0.1
#       (ephemeral ports), prints "front HOST:PORT", then "node I HOST:PORT PID" for I = 1..N,
#       and returns, leaving them running.
#       --front      nginx (default, Debian's nginx-light) or haproxy
#       --store-dir  each node gets --store rocksdb:DIR/nodeI (kept by down)
#       --admin-token-file  every node gets the same --admin-token-file FILE (the full POST
#                    /reset then needs its token; `reset` below sends it)
#       --tls        the front serves HTTPS with this certificate (PEM, its chain after it) and
#                    key; the nodes still speak plain HTTP to the front (docs/cluster.md, "TLS")
#       --weight     every node's weight in the ring (default 10 = 1,600 nginx points per node;
#                    bench_client --target-weight must be the same)
#       --netns      each node in a network namespace of its own, joined by veth pairs to a
#                    bridge: node I listens on A.B.C.(I+1), the bridge is A.B.C.254 (root only)
#       --subnet     the netns subnet's first three octets (default 10.213.X, X from the state
#                    directory's name)
#       SERVER_FLAGS are passed to every node (e.g. -t 2 -m 256M)
#   scripts/cluster.sh down    stops everything `up` started (and removes its namespaces)
#   scripts/cluster.sh stats   every node's GET /stats ("node I HOST:PORT {json}"), then their
#                              sums ("sum {json}": every numeric field added up)
#   scripts/cluster.sh reset   POST /reset on every node (with the token of --admin-token-file)
#   scripts/cluster.sh remove I   takes node I out of the front's ring (the node keeps running;
#                                 its keys move to the other nodes) and reloads the front
#   scripts/cluster.sh add I      puts node I back into the ring (its keys move back)
#                                 (remove/add: nginx front only; HAProxy would need a restart)
#
# State (addresses, PIDs, rendered configuration, logs) lives in $CLUSTER_DIR, default
# build/cluster; set it to run several clusters at once. Exit codes: 0 ok, 1 failure, 2 usage.
set -Eeuo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "cluster.sh: $*" >&2; exit 1; }
bad_usage() { echo "cluster.sh: $* (see --help)" >&2; exit 2; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
echo_cmd() { printf '%q ' "$@" | sed 's/ $//'; }
harness() { PYTHONPATH="$ROOT" python3 -m scripts.harness "$@"; }  # scripts/harness/__main__.py
free_port() { harness free-port; }

DIR="${CLUSTER_DIR:-$ROOT/build/cluster}"
STATE="$DIR/state"
CACHE_SERVER="${CACHE_SERVER:-$ROOT/build/release/server/cache_server}"
START_WAIT_S="${START_WAIT_S:-30}"
MAX_NODES=64

# --- state file: "front HOST:PORT PID KIND", "node I HOST:PORT PID [NETNS]", "netns BRIDGE" ---
state_nodes() { awk '$1 == "node" { print $2, $3, $4, $5 }' "$STATE"; }
state_front() { awk '$1 == "front" { print $2, $3, $4 }' "$STATE"; }

http() {  # http METHOD HOST:PORT PATH [CURL_ARGS...]: prints the body; fails on a non-2xx answer
  curl -sS --fail-with-body --max-time 10 -X "$1" "http://$2$3" "${@:4}"
}

# The admin token file of the cluster (`up --admin-token-file`), or nothing.
state_token_file() { awk '$1 == "token" { sub(/^token /, ""); print }' "$STATE"; }

cmd_down() {
  [ -f "$STATE" ] || { echo "cluster.sh: no cluster is up in $DIR" >&2; return 0; }
  local kind addr pid i ns bridge
  if read -r addr pid kind < <(state_front); then
    stop_pid_quiet "$pid"
  fi
  # All nodes at once: each takes a moment to finish its connections and flush its store.
  local pids=()
  while read -r i addr pid ns; do pids+=("$pid"); done < <(state_nodes)
  for pid in "${pids[@]}"; do stop_pid_quiet "$pid" & done
  wait
  while read -r i addr pid ns; do
    [ -n "$ns" ] && ip netns del "$ns" 2> /dev/null || true
  done < <(state_nodes)
  bridge="$(awk '$1 == "bridge" { print $2 }' "$STATE")"
  [ -n "$bridge" ] && ip link del "$bridge" 2> /dev/null || true
  rm -f "$STATE" "$DIR/front.pem"
  echo "cluster.sh: stopped the cluster in $DIR" >&2
}

# running PID: the process exists and is not a zombie (a daemonized nginx, or a node whose
# cluster.sh has exited, is reaped by init, which may take its time; kill -0 succeeds on a zombie).
running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2> /dev/null)" || return 1
  stat="${stat##*) }"
  [ "${stat:0:1}" != Z ]
}

# stop_pid_quiet PID: TERM, wait up to 15 s, then KILL; a PID that is no longer a node or front
# of ours (reused) is left alone.
stop_pid_quiet() {
  local pid="$1" comm
  [ -n "$pid" ] && [ "$pid" != - ] && running "$pid" || return 0
  comm="$(cat "/proc/$pid/comm" 2> /dev/null || true)"
  case "$comm" in cache_server|nginx|haproxy) ;; *) return 0 ;; esac
  kill -TERM "$pid" 2> /dev/null || return 0
  for _ in $(seq 1 300); do running "$pid" || return 0; sleep 0.05; done
  echo "cluster.sh: PID $pid ($comm) did not exit on TERM; sending KILL" >&2
  kill -KILL "$pid" 2> /dev/null || true
}

cmd_stats() {
  [ -f "$STATE" ] || die "no cluster is up in $DIR (scripts/cluster.sh up N)"
  local i addr pid ns body all=()
  while read -r i addr pid ns; do
    body="$(http GET "$addr" /stats)" || die "node $i ($addr): GET /stats failed"
    body="$(tr -d '\n' <<< "$body")"
    echo "node $i $addr $body"
    all+=("$body")
  done < <(state_nodes)
  printf '%s\n' "${all[@]}" | PYTHONPATH="$ROOT" python3 -m scripts.cluster_tools stats-sum
}

cmd_reset() {
  [ -f "$STATE" ] || die "no cluster is up in $DIR (scripts/cluster.sh up N)"
  local i addr pid ns token_file token=""
  token_file="$(state_token_file)"
  if [ -n "$token_file" ]; then
    token="$(cat "$token_file")" || die "cannot read the admin token file $token_file"
    token="${token%"${token##*[![:space:]]}"}"  # trailing whitespace trimmed, as the nodes do
  fi
  while read -r i addr pid ns; do
    # The token goes to curl on stdin (-H @-), never on a command line other users can read.
    if [ -n "$token" ]; then
      printf 'Authorization: Bearer %s\n' "$token" | http POST "$addr" /reset -H @- > /dev/null \
        || die "node $i ($addr): POST /reset failed"
    else
      http POST "$addr" /reset > /dev/null || die "node $i ($addr): POST /reset failed"
    fi
    echo "node $i $addr reset"
  done < <(state_nodes)
}

# start_node I LISTEN_HOST NETNS: starts node I; prints "HOST:PORT PID" once it listens.
start_node() {
  local i="$1" host="$2" ns="$3" log="$DIR/node$i.log" pid addr="" cmd
  cmd=("$CACHE_SERVER" "${SERVER_FLAGS[@]}" --served-by on -s "$host" -p 0)
  [ -n "$STORE_DIR" ] && cmd+=(--store "rocksdb:$STORE_DIR/node$i")
  [ -n "$TOKEN_FILE" ] && cmd+=(--admin-token-file "$TOKEN_FILE")
  [ -n "$ns" ] && cmd=(ip netns exec "$ns" "${cmd[@]}")
  : > "$log"
  "${cmd[@]}" < /dev/null > "$log" 2>&1 &
  pid=$!
  # The harness reads the node's listening line (HOST:PORT) from its log.
  addr="$(harness listening "$log" "$pid" "$START_WAIT_S")" || addr=""
  if [ -z "$addr" ]; then
    tail -5 "$log" >&2
    stop_pid_quiet "$pid"
    echo "cluster.sh: node $i did not start: $(echo_cmd "${cmd[@]}")" >&2
    return 1
  fi
  echo "$host:${addr##*:} $pid"
}

# write_servers STATE_FILE: the front's server lines for every node in the ring (not removed).
write_servers() {
  awk '$1 == "weight" { w = $2 } $1 == "removed" { out[$2] = 1 }
       $1 == "node" && $4 != "-" { addr[$2] = $3; order[++n] = $2 }
       END {
         for (k = 1; k <= n; k++) {
           i = order[k]; if (i in out) continue
           printf "    server %s weight=%d max_fails=0;\n", addr[i], w > nginx
           printf "  server n%s %s weight %d\n", i, addr[i], w > haproxy
         }
       }' nginx="$DIR/servers.nginx" haproxy="$DIR/servers.haproxy" "$1"
  [ -s "$DIR/servers.nginx" ] || { : > "$DIR/servers.nginx"; : > "$DIR/servers.haproxy"; }
}

# cmd_ring remove|add I: edits the ring and reloads nginx; returns once the new workers run.
cmd_ring() {
  local op="$1" i="${2:-}" addr pid kind left
  [ -f "$STATE" ] || die "no cluster is up in $DIR (scripts/cluster.sh up N)"
  is_uint "$i" && grep -q "^node $i " "$STATE" || bad_usage "$op needs the number of a node of the cluster"
  read -r addr pid kind < <(state_front)
  [ "$kind" = nginx ] || die "$op needs the nginx front (HAProxy would have to be restarted)"
  if [ "$op" = remove ]; then
    grep -q "^removed $i$" "$STATE" && die "node $i is not in the ring"
    left="$(awk '$1 == "node" { n++ } $1 == "removed" { r++ } END { print n - r }' "$STATE")"
    [ "$left" -gt 1 ] || die "node $i is the last node in the ring"
    echo "removed $i" >> "$STATE"
  else
    grep -q "^removed $i$" "$STATE" || die "node $i is already in the ring"
    sed -i "/^removed $i$/d" "$STATE"
  fi
  write_servers "$STATE"
  render "$ROOT/cluster/nginx.conf.template" "$DIR/nginx.conf" "$DIR/servers.nginx" "$addr"
  nginx -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/nginx-error.log" -t 2>> "$DIR/front.log" \
    || die "the new nginx configuration is invalid (see $DIR/front.log)"
  # Reload, then wait for the old worker to be replaced: after that, every new connection
  # sees the new ring.
  local old new gone w word=removed
  [ "$op" = add ] && word=added
  old="$(pgrep -P "$pid" || true)"
  kill -HUP "$pid"
  for _ in $(seq 1 100); do
    new="$(pgrep -P "$pid" || true)"
    gone=1
    for w in $old; do grep -qx "$w" <<< "$new" && gone=0; done
    [ -n "$new" ] && [ "$gone" = 1 ] && break
    sleep 0.1
  done
  [ "$gone" = 1 ] || die "nginx did not replace its workers within 10 s"
  echo "cluster.sh: node $i $word; the ring has $(grep -c . "$DIR/servers.nginx") nodes" >&2
}

# render TEMPLATE OUT SERVERS-FILE LISTEN: fills the @...@ tokens; with TLS (the state's "tls"
# line, or $TLS_CERT/$TLS_KEY while `up` runs) the template's TLS lines replace its plain ones.
render() {
  local cert="${TLS_CERT:-}" key="${TLS_KEY:-}" tls=()
  if [ -z "$cert" ] && [ -f "$STATE" ]; then
    read -r cert key < <(awk '$1 == "tls" { print $2, $3 }' "$STATE") || true
  fi
  [ -n "$cert" ] && tls=(--tls "$cert" "$key" "$DIR/front.pem")
  PYTHONPATH="$ROOT" python3 -m scripts.cluster_tools render "$1" "$2" "$3" "$4" "$DIR" "${tls[@]}"
}

# start_front KIND: renders the front's configuration and starts it on a free 127.0.0.1 port;
# prints "HOST:PORT PID".
start_front() {
  local kind="$1" port conf pidfile try scheme=http
  [ -n "$TLS_CERT" ] && scheme=https
  for try in 1 2 3; do
    port="$(free_port)"
    if [ "$kind" = nginx ]; then
      conf="$DIR/nginx.conf"; pidfile="$DIR/nginx.pid"
      mkdir -p "$DIR/tmp"
      render "$ROOT/cluster/nginx.conf.template" "$conf" "$DIR/servers.nginx" "127.0.0.1:$port"
      rm -f "$pidfile"
      nginx -p "$DIR" -c "$conf" -e "$DIR/nginx-error.log" 2>> "$DIR/front.log" || continue
    else
      conf="$DIR/haproxy.cfg"; pidfile="$DIR/haproxy.pid"
      render "$ROOT/cluster/haproxy.cfg.template" "$conf" "$DIR/servers.haproxy" "127.0.0.1:$port"
      rm -f "$pidfile"
      haproxy -D -f "$conf" >> "$DIR/front.log" 2>&1 || continue
    fi
    for _ in $(seq 1 50); do [ -s "$pidfile" ] && break; sleep 0.1; done
    [ -s "$pidfile" ] || continue
    for _ in $(seq 1 50); do  # ready once it answers (-k: any name the certificate has)
      curl -s -k -o /dev/null --max-time 1 "$scheme://127.0.0.1:$port/" && break
      sleep 0.1
    done
    echo "127.0.0.1:$port $(head -1 "$pidfile")"
    return 0
  done
  tail -5 "$DIR/front.log" >&2
  echo "cluster.sh: $kind did not start (see $DIR/front.log)" >&2
  return 1
}

cmd_up() {
  local n="" front=nginx weight=10 netns=0 subnet=""
  STORE_DIR=""; TOKEN_FILE=""; TLS_CERT=""; TLS_KEY=""
  SERVER_FLAGS=()
  [ $# -gt 0 ] || bad_usage "up needs the number of nodes"
  n="$1"; shift
  is_uint "$n" && [ "$n" -ge 1 ] && [ "$n" -le "$MAX_NODES" ] \
    || bad_usage "the number of nodes must be 1..$MAX_NODES, not '$n'"
  while [ $# -gt 0 ]; do
    case "$1" in
      --front) [ $# -ge 2 ] || bad_usage "--front needs nginx or haproxy"; front="$2"; shift ;;
      --store-dir) [ $# -ge 2 ] || bad_usage "--store-dir needs a directory"; STORE_DIR="$2"; shift ;;
      --weight) [ $# -ge 2 ] || bad_usage "--weight needs a number"; weight="$2"; shift ;;
      --netns) netns=1 ;;
      --subnet) [ $# -ge 2 ] || bad_usage "--subnet needs A.B.C"; subnet="$2"; shift ;;
      --admin-token-file) [ $# -ge 2 ] || bad_usage "--admin-token-file needs a file"; TOKEN_FILE="$2"; shift ;;
      --tls) [ $# -ge 3 ] || bad_usage "--tls needs a certificate and a key file"
             TLS_CERT="$2"; TLS_KEY="$3"; shift 2 ;;
      --) shift; SERVER_FLAGS=("$@"); break ;;
      *) bad_usage "unknown argument '$1'" ;;
    esac
    shift
  done
  case "$front" in nginx|haproxy) ;; *) bad_usage "--front must be nginx or haproxy, not '$front'" ;; esac
  is_uint "$weight" && [ "$weight" -ge 1 ] && [ "$weight" -le 100 ] \
    || bad_usage "--weight must be 1..100, not '$weight'"
  command -v "$front" > /dev/null || die "$front is not installed (bash scripts/setup.sh --peers)"
  [ -x "$CACHE_SERVER" ] || die "no cache_server at $CACHE_SERVER (bash scripts/setup.sh, or set CACHE_SERVER)"
  [ -f "$STATE" ] && die "a cluster is already up in $DIR (scripts/cluster.sh down first, or set CLUSTER_DIR)"
  if [ -n "$STORE_DIR" ]; then
    mkdir -p "$STORE_DIR" || die "cannot create --store-dir $STORE_DIR"
    STORE_DIR="$(cd "$STORE_DIR" && pwd)"
  fi
  # Absolute paths: the nodes and the front do not run in this directory.
  if [ -n "$TOKEN_FILE" ]; then
    [ -f "$TOKEN_FILE" ] && [ -r "$TOKEN_FILE" ] || die "cannot read --admin-token-file $TOKEN_FILE"
    TOKEN_FILE="$(cd "$(dirname "$TOKEN_FILE")" && pwd)/$(basename "$TOKEN_FILE")"
  fi
  if [ -n "$TLS_CERT" ]; then
    local f
    for f in "$TLS_CERT" "$TLS_KEY"; do
      [ -f "$f" ] && [ -r "$f" ] || die "cannot read the --tls file $f"
    done
    TLS_CERT="$(cd "$(dirname "$TLS_CERT")" && pwd)/$(basename "$TLS_CERT")"
    TLS_KEY="$(cd "$(dirname "$TLS_KEY")" && pwd)/$(basename "$TLS_KEY")"
  fi
  mkdir -p "$DIR"
  DIR="$(cd "$DIR" && pwd)"; STATE="$DIR/state"
  : > "$STATE.partial"
  [ -n "$TOKEN_FILE" ] && echo "token $TOKEN_FILE" >> "$STATE.partial"
  [ -n "$TLS_CERT" ] && echo "tls $TLS_CERT $TLS_KEY" >> "$STATE.partial"
  # Whatever fails from here on, what was started is stopped again.
  trap 'mv -f "$STATE.partial" "$STATE" 2> /dev/null; cmd_down > /dev/null 2>&1 || true' ERR

  local tag bridge="" ns host i started addr pid
  if [ "$netns" = 1 ]; then
    [ "$(id -u)" = 0 ] || die "--netns needs root (network namespaces)"
    tag="$(printf '%s' "$DIR" | cksum | awk '{ printf "%05d", $1 % 100000 }')"
    [ -n "$subnet" ] || subnet="10.213.$(( 10#$tag % 250 ))"
    [[ "$subnet" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || bad_usage "--subnet must be A.B.C, not '$subnet'"
    bridge="cbr$tag"
    ip link add "$bridge" type bridge || die "cannot create the bridge $bridge (network namespaces unavailable?)"
    echo "bridge $bridge" >> "$STATE.partial"
    ip addr add "$subnet.254/24" dev "$bridge"
    ip link set "$bridge" up
  fi
  local lines=()
  for i in $(seq 1 "$n"); do
    ns=""; host=127.0.0.1
    if [ "$netns" = 1 ]; then
      ns="cn$tag-$i"; host="$subnet.$(( i + 1 ))"
      ip netns add "$ns"
      echo "node $i - - $ns" >> "$STATE.partial"  # the namespace is cleaned up even if the node fails
      ip link add "cv$tag-$i" type veth peer name eth0 netns "$ns"
      ip link set "cv$tag-$i" master "$bridge" up
      ip -n "$ns" addr add "$host/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" link set lo up
    fi
    started="$(start_node "$i" "$host" "$ns")" || { cmd_down_partial; exit 1; }
    read -r addr pid <<< "$started"
    sed -i "/^node $i - - /d" "$STATE.partial"
    echo "node $i $addr $pid $ns" >> "$STATE.partial"
    lines+=("node $i $addr $pid")
  done
  echo "weight $weight" >> "$STATE.partial"
  write_servers "$STATE.partial"
  started="$(start_front "$front")" || { cmd_down_partial; exit 1; }
  read -r addr pid <<< "$started"
  echo "front $addr $pid $front" >> "$STATE.partial"
  mv -f "$STATE.partial" "$STATE"
  trap - ERR
  echo "front $addr"
  printf '%s\n' "${lines[@]}"
}

cmd_down_partial() { mv -f "$STATE.partial" "$STATE" 2> /dev/null || true; cmd_down > /dev/null 2>&1 || true; }

[ $# -gt 0 ] || bad_usage "want up, down, stats, reset, remove or add"
case "$1" in
  -h|--help) usage; exit 0 ;;
  up) shift; cmd_up "$@" ;;
  down) shift; [ $# -eq 0 ] || bad_usage "down takes no arguments"; cmd_down ;;
  stats) shift; [ $# -eq 0 ] || bad_usage "stats takes no arguments"; cmd_stats ;;
  reset) shift; [ $# -eq 0 ] || bad_usage "reset takes no arguments"; cmd_reset ;;
  remove|add) [ $# -eq 2 ] || bad_usage "$1 takes one node number"; cmd_ring "$1" "$2" ;;
  *) bad_usage "unknown command '$1' (want up, down, stats, reset, remove or add)" ;;
esac
