#!/usr/bin/env bash
# The README's test command: sets up everything (packages, builds) and runs every test.
#   1. release, ASan+UBSan and TSan builds, each running the whole ctest suite
#   2. the libFuzzer targets under ASan for a bounded time (when tests/fuzz exists)
#   3. the Python tests (pytest) of graphs/ and scripts/
# Ends with one line "tests: N passed, M failed" and exits non-zero if anything failed. A ctest
# test that fails is run once more, alone: above that line the tail then shows what each failed
# test printed, and lists as flaky those that passed alone (rerun_failed).
#   FAST=1 scripts/test.sh   runs the release build only (a quick local loop; CI never sets it)
#   CTEST_JOBS=N               ctest's parallelism in each tree (default 3)
# Pipelined: after the release build, the ASan, TSan and fuzz trees are built one after the
# other in the background at the lowest priority (SCHED_IDLE, nice 19) while the tests run in the
# foreground (release ctest, pytest, then each sanitizer tree's ctest as soon as its tree is
# built). The tests leave about half of the 2 CI cores idle (they wait on servers, sockets and
# databases); the compiler takes only that idle time, the scheduler giving the tests' processes
# the CPU whenever they want it. Each tree's build log is printed when its tests start; a failed
# build counts as one failed test.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

builds=(release)
[ "${FAST:-0}" = 1 ] || builds+=(asan tsan)
fuzz=0
if [ "${FAST:-0}" != 1 ] && [ -f tests/fuzz/CMakeLists.txt ]; then fuzz=1; fi
# The trees built in the background, in the order their tests need them.
bg_builds=("${builds[@]:1}")
[ "$fuzz" = 1 ] && bg_builds+=(fuzz)
# --peers: Redis, nginx, wrk, memcached, perf and valgrind, so the tests of the comparison and
# profiling scripts run here too instead of skipping. This first call installs everything and
# builds the release tree; the background builds below then find every package present.
bash scripts/setup.sh --peers --build release || { echo "tests: 0 passed, 1 failed (setup/build)"; exit 1; }
echo "=== setup and the release build took $SECONDS s ==="

mkdir -p build
for b in "${bg_builds[@]}"; do rm -f "build/.built-$b"; done
bg_pid=""
# SCHED_IDLE (chrt -i 0) besides nice 19: a test process that wakes up preempts the compiler at
# once (latency-bound tests such as bench_client_slo_e2e pin a server on CPU 0).
idle=(nice -n 19)
if command -v chrt > /dev/null && chrt -i 0 true 2> /dev/null; then idle=(chrt -i 0 nice -n 19); fi
if [ ${#bg_builds[@]} -gt 0 ]; then
  (
    for b in "${bg_builds[@]}"; do
      rc=0
      "${idle[@]}" bash scripts/setup.sh --build "$b" > "build/build-$b.log" 2>&1 || rc=$?
      echo "$rc" > "build/.built-$b"
    done
  ) &
  bg_pid=$!
  trap 'if [ -n "$bg_pid" ]; then bg_signal CONT; kill "$bg_pid" 2>/dev/null; fi' EXIT
fi
# bg_signal SIG: sends SIG to every process under the background build (ninja, the compilers).
# STOP twice: a compiler ninja started while the first pass ran is caught by the second.
bg_signal() {
  [ -n "$bg_pid" ] || return 0
  local pass pids frontier next p c
  for pass in 1 2; do
    pids=(); frontier=("$bg_pid")
    while [ ${#frontier[@]} -gt 0 ]; do
      next=()
      for p in "${frontier[@]}"; do
        for c in $(pgrep -P "$p"); do next+=("$c"); done
      done
      pids+=("${next[@]}"); frontier=("${next[@]}")
    done
    [ ${#pids[@]} -eq 0 ] || kill -"$1" "${pids[@]}" 2> /dev/null
    [ "$1" = STOP ] || break
  done
  return 0
}
# wait_built NAME: waits for the background build of build/NAME, prints its log; fails if it failed.
wait_built() {
  local waited=$SECONDS
  until [ -f "build/.built-$1" ]; do
    if ! kill -0 "$bg_pid" 2>/dev/null && [ ! -f "build/.built-$1" ]; then
      echo "background build of build/$1 vanished"; return 1
    fi
    sleep 2
  done
  echo "=== build: build/$1 (waited $((SECONDS - waited)) s for it) ==="
  cat "build/build-$1.log"
  [ "$(cat "build/.built-$1")" = 0 ] || { echo "build of build/$1 failed"; return 1; }
}

passed=0; failed=0
# failures: one line per failed test ("TREE: name"), printed again just above the last line, so the
# tail of a long run names what failed.
failures=()
# failure_output: what the failed (and flaky) tests printed, shown at the end of the run.
failure_output=()
# note_failures TREE LOG: adds the names ctest (or pytest) listed as failed in LOG.
note_failures() {
  local line
  while IFS= read -r line; do [ -n "$line" ] && failures+=("$1: $line"); done < <(
    ctest_failed_lines "$2"
    grep -E '^(FAILED|ERROR) ' "$2" | sed -E 's/ - .*//')
}
# ctest_failed_lines LOG: the lines ctest listed under "The following tests FAILED:" in LOG
# ("570 - name (Failed)").
ctest_failed_lines() {
  sed -n '/The following tests FAILED:/,/^[^[:space:]]/p' "$1" | grep -E '^[[:space:]]+[0-9]+ - ' | sed -E 's/^[[:space:]]+//'
}
# ctest_summary LOG: "T F" from ctest's last "N% tests passed, F tests failed out of T" in LOG;
# nothing when LOG has no summary.
ctest_summary() {
  grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -1 |
    sed -E 's/.*passed, ([0-9]+) tests? failed out of ([0-9]+).*/\2 \1/'
}
# ctest_counts LOG: adds ctest's summary in LOG to the totals.
ctest_counts() {
  local total fails
  read -r total fails < <(ctest_summary "$1")
  if [ -z "$total" ]; then failed=$((failed + 1)); failures+=("$1: no ctest summary"); return; fi
  passed=$((passed + total - fails)); failed=$((failed + fails))
}

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
# run_ctest NAME: the whole ctest suite (fuzz aside) of build/NAME, CTEST_JOBS tests at a time
# (default 3 on these 2 cores: the suites against real servers mostly wait on sockets, timers and
# databases; at -j 2 the TSan tree's tests kept the CPUs 66% busy, and -j 3 took 193 s instead
# of 251). The tests labelled "serial" (they measure a server's capacity or CPU: RUN_SERIAL) run
# afterwards, alone, with the background build stopped, as they did before the builds were
# pipelined.
ctest_jobs=${CTEST_JOBS:-3}
# flaky: one line per test that failed in the parallel run and passed when run again alone.
flaky=()
# failed_names LOG: the names of the tests ctest listed as failed in LOG.
failed_names() {
  ctest_failed_lines "$1" | sed -E 's/^[0-9]+ - //; s/ \(.*\)$//'
}
# output_of NAME LOG: the output ctest printed for test NAME in LOG (--output-on-failure), its
# last 40 lines; in a parallel run it follows the test's result line up to the next result line.
output_of() {
  awk -v name="$1" '
    $0 ~ /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / { on = (index($0, " " name " ") > 0) ; if (on) print; next }
    /^[0-9]+% tests passed/ { on = 0 }
    on && $0 !~ /^ +Start +[0-9]+: / && NF { print }' "$2" | tail -40
}
# rerun_failed TREE LOG: the tests that failed in LOG (a run CTEST_JOBS at a time, beside a
# background build) run once more, alone. One that passes then counts as passed but is listed at
# the end as flaky with the output of its first failure, so a test that fails on a loaded machine
# is seen and can be diagnosed from the run's tail; one that fails again stays failed, and the
# tail shows its output.
rerun_failed() {
  local b=$1 log=$2 relog="build/$1/ctest-rerun.log" first again n total fails
  first=$(failed_names "$log")
  if [ -z "$first" ]; then note_failures "$b" "$log"; return; fi
  echo "=== ctest: build/$b: running the failed tests again, alone ==="
  ctest --test-dir "build/$b" --rerun-failed --output-on-failure --timeout 300 > "$relog" 2>&1 || true
  again=$(failed_names "$relog")
  read -r total fails < <(ctest_summary "$relog")
  if [ -n "$total" ]; then
    passed=$((passed + total - fails)); failed=$((failed - total + fails))
  fi
  while IFS= read -r n; do
    [ -n "$n" ] || continue
    if grep -qxF "$n" <<< "$again"; then
      failures+=("$b: $n (failed twice; its output below)")
      failure_output+=("--- $b: $n (run alone) ---" "$(output_of "$n" "$relog")")
    else
      flaky+=("$b: $n")
      failure_output+=("--- $b: $n (flaky: failed beside other tests, passed alone) ---" "$(output_of "$n" "$log")")
    fi
  done <<< "$first"
}
run_ctest() {
  local b=$1 log="build/$1/ctest.log" t0=$SECONDS
  echo "=== ctest: build/$b ==="
  ctest --test-dir "build/$b" --output-on-failure -j "$ctest_jobs" --timeout 300 -LE '^(fuzz|serial)$' 2>&1 | tee "$log" | grep -vE '^ +(Start|[0-9]+/[0-9]+ Test) ' || true
  ctest_counts "$log"; rerun_failed "$b" "$log"
  log="build/$b/ctest-serial.log"
  bg_signal STOP
  ctest --test-dir "build/$b" --output-on-failure --timeout 300 -L '^serial$' 2>&1 | tee "$log" | grep -vE '^ +(Start|[0-9]+/[0-9]+ Test) ' || true
  bg_signal CONT
  grep -q "No tests were found" "$log" || { ctest_counts "$log"; note_failures "$b serial" "$log"; }
  echo "=== ctest: build/$b took $((SECONDS - t0)) s ==="
}

run_ctest release

run_pytest() {
echo "=== pytest ==="
pytest_dirs=()
for d in graphs tests/graphs tests/optimizations tests/scripts; do
  if compgen -G "$d/test_*.py" > /dev/null || compgen -G "$d/**/test_*.py" > /dev/null; then pytest_dirs+=("$d"); fi
done
if [ ${#pytest_dirs[@]} -gt 0 ]; then
  log="build/pytest.log"
  python -m pytest -q --durations=10 "${pytest_dirs[@]}" 2>&1 | tee "$log" | tail -28
  p=$(grep -oE '[0-9]+ passed' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
  f=$(grep -oE '[0-9]+ (failed|error)' "$log" | awk '{s+=$1} END {print s+0}')
  passed=$((passed + p)); failed=$((failed + f))
  note_failures pytest "$log"
  [ "$p" -gt 0 ] || { failed=$((failed + 1)); failures+=("pytest: nothing passed"); }
else
  echo "(no Python tests yet)"
fi
}
t0=$SECONDS; run_pytest; echo "=== pytest took $((SECONDS - t0)) s ==="

for b in "${builds[@]:1}"; do
  if wait_built "$b"; then run_ctest "$b"; else failed=$((failed + 1)); failures+=("build/$b: build failed"); fi
done

if [ "$fuzz" = 1 ]; then
  if wait_built fuzz; then
    echo "=== fuzz: build/fuzz ==="
    t0=$SECONDS
    log="build/fuzz/ctest.log"
    # -j 3: the three targets (HTTP engine, HTTP response, RESP parser) run side by side, each
    # for its own seconds, sharing the 2 cores (a third more wall time each would cost 20 s).
    ctest --test-dir build/fuzz --output-on-failure -L fuzz -j 3 --timeout 600 2>&1 | tee "$log" | tail -5
    ctest_counts "$log"; note_failures fuzz "$log"
    echo "=== fuzz took $((SECONDS - t0)) s ==="
  else
    failed=$((failed + 1)); failures+=("build/fuzz: build failed")
  fi
fi
bg_pid=""

echo "=== all of scripts/test.sh took $SECONDS s ==="
if [ ${#failure_output[@]} -gt 0 ]; then
  printf '%s\n' "${failure_output[@]}"
fi
if [ ${#flaky[@]} -gt 0 ]; then
  echo "flaky (failed beside other tests, passed when run again alone):"
  printf '  %s\n' "${flaky[@]}"
fi
if [ ${#failures[@]} -gt 0 ]; then
  echo "failed:"
  printf '  %s\n' "${failures[@]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
