#!/usr/bin/env bash
# Installs what the project needs and is missing, then configures and builds one build tree.
# Idempotent: when everything is present it only runs the (incremental) build.
#
#   scripts/setup.sh [--peers] [--build NAME]...
#     --peers        also install the peer servers and load tools used by the experiment
#                    (nginx-light, haproxy, wrk, redis-server, memcached) and the profilers (perf, valgrind)
#     --build NAME   configure+build build/NAME; NAME is release, asan (ASan+UBSan), tsan or fuzz.
#                    Repeatable. Default: release.
# After a release build, ./cache_server and ./bench_client at the repository root link to the
# binaries (the links are git-ignored).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

APT_PACKAGES=(g++ cmake ninja-build libboost1.81-dev libbenchmark-dev libcli11-dev libgtest-dev
              clang-16 libfuzzer-16-dev libclang-rt-16-dev librocksdb-dev
              libjemalloc-dev  # cache_server's allocator (docs/server.md, "Allocator")
              libpq-dev  # --store postgres: (store/postgres_store.hh)
              postgresql-15  # the tests start their own clusters (tests/support/pg_cluster.py)
              procps util-linux iproute2 curl python3 python3-pip
              prometheus  # promtool and a real Prometheus for the /metrics tests
              # the .deb and its unit (tests/packaging): dpkg-shlibdeps computes the package's
              # Depends, systemd-analyze verifies and rates the unit, strace lists the calls its
              # system-call filter must allow
              dpkg-dev systemd strace)
PEER_PACKAGES=(nginx-light haproxy wrk redis-server redis-tools memcached linux-perf valgrind)

peers=0
builds=()
while [ $# -gt 0 ]; do
  case "$1" in
    --peers) peers=1 ;;
    --build) [ $# -ge 2 ] || { echo "setup.sh: --build needs a name" >&2; exit 2; }; builds+=("$2"); shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#builds[@]} -gt 0 ] || builds=(release)

log() { echo "[setup] $*" >&2; }

# --- system packages --------------------------------------------------------------------------
wanted=("${APT_PACKAGES[@]}")
[ "$peers" = 1 ] && wanted+=("${PEER_PACKAGES[@]}")
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  log "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  # policy-rc.d 101: do not start nginx/redis/memcached/prometheus/postgresql services on install; the
  # scripts and tests start their own instances on 127.0.0.1 when they need them.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d; trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Go: tests/linearizability's checker (Porcupine, pinned in its go.mod) -------------------------
# Debian's golang-go (Go 1.19 on Debian 12) when no `go` is on PATH; then the module, once, so the
# test builds offline (a no-op once it is in Go's module cache).
if ! command -v go >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  log "installing golang-go"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends golang-go >/dev/null
fi
(cd tests/linearizability && go mod download) \
  || log "warning: go mod download failed in tests/linearizability; the linearizability test will fail saying why"

# --- python packages (matplotlib, pytest) -------------------------------------------------------
PY="$(command -v python || command -v python3)"
if ! "$PY" -c 'import matplotlib, pytest' 2>/dev/null; then
  log "installing python packages from graphs/requirements.txt"
  "$PY" -m pip install -q -r graphs/requirements.txt 2>/dev/null \
    || "$PY" -m pip install -q --break-system-packages -r graphs/requirements.txt
fi
# Test-only packages (tests/requirements.txt: libcachesim for the hit-ratio cross-check, redis-py
# for the RESP front's tests). A missing
# wheel or no network is not fatal here (the experiment runs without it, and says so); the
# cross-check test then fails and says why (tests/traces/test_crosscheck.py).
if ! "$PY" -c 'import libcachesim, redis' 2>/dev/null; then
  log "installing python packages from tests/requirements.txt"
  "$PY" -m pip install -q -r tests/requirements.txt 2>/dev/null \
    || "$PY" -m pip install -q --break-system-packages -r tests/requirements.txt \
    || log "warning: tests/requirements.txt not installed; the libCacheSim cross-check and RESP tests will fail"
fi
if ! command -v python >/dev/null; then   # the design card's usage says `python graphs/plot.py`
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python-is-python3 >/dev/null
fi

# --- builds -------------------------------------------------------------------------------------
JOBS="${JOBS:-$(nproc)}"
for b in "${builds[@]}"; do
  case "$b" in
    release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
    asan)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DSANITIZE=address,undefined") ;;
    tsan)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSANITIZE=thread) ;;
    fuzz)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUZZ=ON -DCMAKE_CXX_COMPILER=clang++-16) ;;
    *) echo "setup.sh: unknown build '$b' (release, asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
  dir="build/$b"
  if [ ! -f "$dir/build.ninja" ]; then
    log "configuring $dir"
    cmake -S . -B "$dir" -G Ninja "${flags[@]}" >/dev/null
  fi
  log "building $dir"
  # The fuzz tree exists for its fuzzers (ctest -L fuzz): the rest of it is built and tested in
  # the other trees.
  targets=()
  [ "$b" = fuzz ] && targets=(--target fuzz_targets)
  cmake --build "$dir" -j "$JOBS" "${targets[@]}" || { echo "setup.sh: build of $dir failed" >&2; exit 1; }
done

# Root links for the design card's usages (./cache_server -t 4, ./bench_client --max-threads 16).
for exe in server/cache_server client/bench_client; do
  if [ -x "build/release/$exe" ]; then ln -sfn "build/release/$exe" "$(basename "$exe")"; fi
done
log "ready"
