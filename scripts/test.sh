#!/usr/bin/env bash
# The README's test command: sets up everything (packages, builds) and runs every test.
#   1. release, ASan+UBSan and TSan builds, each running the whole ctest suite
#   2. the libFuzzer targets under ASan for a bounded time (when tests/fuzz exists)
#   3. the Python tests (pytest) of graphs/ and scripts/
# Ends with one line "tests: N passed, M failed" and exits non-zero if anything failed.
#   FAST=1 scripts/test.sh   runs the release build only (a quick local loop; CI never sets it)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

builds=(release)
[ "${FAST:-0}" = 1 ] || builds+=(asan tsan)
fuzz=0
if [ "${FAST:-0}" != 1 ] && [ -f tests/fuzz/CMakeLists.txt ]; then fuzz=1; fi
setup_args=()
for b in "${builds[@]}"; do setup_args+=(--build "$b"); done
[ "$fuzz" = 1 ] && setup_args+=(--build fuzz)
# --peers: Redis, nginx, wrk, memcached, perf and valgrind, so the tests of the comparison and
# profiling scripts run here too instead of skipping.
bash scripts/setup.sh --peers "${setup_args[@]}" || { echo "tests: 0 passed, 1 failed (setup/build)"; exit 1; }

passed=0; failed=0
# ctest_counts LOG: adds ctest's "N% tests passed, F tests failed out of T" to the totals.
ctest_counts() {
  local line total fails
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -1)
  if [ -z "$line" ]; then failed=$((failed + 1)); return; fi
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<< "$line")
  fails=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<< "$line")
  passed=$((passed + total - fails)); failed=$((failed + fails))
}

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
for b in "${builds[@]}"; do
  echo "=== ctest: build/$b ==="
  log="build/$b/ctest.log"
  ctest --test-dir "build/$b" --output-on-failure -j 2 --timeout 300 -LE fuzz 2>&1 | tee "$log" | grep -vE '^ +(Start|[0-9]+/[0-9]+ Test) ' || true
  ctest_counts "$log"
done

if [ "$fuzz" = 1 ]; then
  echo "=== fuzz: build/fuzz ==="
  log="build/fuzz/ctest.log"
  ctest --test-dir build/fuzz --output-on-failure -L fuzz --timeout 600 2>&1 | tee "$log" | tail -5
  ctest_counts "$log"
fi

echo "=== pytest ==="
pytest_dirs=()
for d in graphs tests/graphs tests/optimizations tests/scripts; do
  if compgen -G "$d/test_*.py" > /dev/null || compgen -G "$d/**/test_*.py" > /dev/null; then pytest_dirs+=("$d"); fi
done
if [ ${#pytest_dirs[@]} -gt 0 ]; then
  log="build/pytest.log"
  python -m pytest -q "${pytest_dirs[@]}" 2>&1 | tee "$log" | tail -15
  p=$(grep -oE '[0-9]+ passed' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
  f=$(grep -oE '[0-9]+ (failed|error)' "$log" | awk '{s+=$1} END {print s+0}')
  passed=$((passed + p)); failed=$((failed + f))
  [ "$p" -gt 0 ] || failed=$((failed + 1))
else
  echo "(no Python tests yet)"
fi

echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
