# nginx.sh — a pinned nginx serving one fixed 100-byte body, for side-by-side measurements.
# Source it (bash). Provides:
#   BODY100                  the 100-byte body
#   stop_pid PID SIGNAL      signal one process we started, wait up to 5 s, then KILL it
#   nginx_start DIR PORT CPU starts `worker_processes 1` nginx pinned to CPU on 127.0.0.1:PORT,
#                            serving BODY100 at /bench; waits until it answers. Sets NGINX_PID
#                            and NGINX_URL. DIR is a scratch directory the caller removes.
#   nginx_worker_pid         prints the PID of the worker of the nginx started above
#   nginx_stop               graceful stop (QUIT) of the nginx started above
# Everything listens on 127.0.0.1 only.

BODY100="$(printf 'v%.0s' $(seq 1 100))"
NGINX_PID=""
NGINX_URL=""

stop_pid() {
  local pid="$1" sig="$2" i
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2> /dev/null || return 0
  kill -"$sig" "$pid" 2> /dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2> /dev/null || { wait "$pid" 2> /dev/null || true; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
}

nginx_start() {
  local dir="$1" port="$2" cpu="$3"
  command -v nginx > /dev/null || { echo "nginx is not installed (scripts/setup.sh --peers)" >&2; return 1; }
  if ss -Hltn "sport = :$port" | grep -q .; then echo "port $port is busy" >&2; return 1; fi
  chmod 755 "$dir"
  mkdir -p "$dir/nginx/tmp"
  cat > "$dir/nginx/nginx.conf" << CONF
worker_processes 1;
daemon off;
master_process on;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  tcp_nodelay on;
  client_body_temp_path $dir/nginx/tmp/body;
  proxy_temp_path $dir/nginx/tmp/proxy;
  fastcgi_temp_path $dir/nginx/tmp/fastcgi;
  uwsgi_temp_path $dir/nginx/tmp/uwsgi;
  scgi_temp_path $dir/nginx/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    location = /bench { default_type application/octet-stream; return 200 "$BODY100"; }
  }
}
CONF
  nginx -t -q -e "$dir/nginx/error.log" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" || return 1
  taskset -c "$cpu" nginx -e "$dir/nginx/error.log" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" &
  NGINX_PID=$!
  NGINX_URL="http://127.0.0.1:$port/bench"
  local i
  for i in $(seq 1 100); do
    [ "$(curl -s "$NGINX_URL" 2> /dev/null)" = "$BODY100" ] && return 0
    kill -0 "$NGINX_PID" 2> /dev/null || break
    sleep 0.1
  done
  echo "nginx did not start (see $dir/nginx/error.log)" >&2
  return 1
}

nginx_worker_pid() {  # the master's child: worker_processes 1 gives exactly one
  local i pid
  for i in $(seq 1 50); do
    pid="$(pgrep -P "$NGINX_PID" | head -1 || true)"
    [ -n "$pid" ] && { echo "$pid"; return 0; }
    sleep 0.1
  done
  return 1
}

nginx_stop() { stop_pid "$NGINX_PID" QUIT; NGINX_PID=""; }
