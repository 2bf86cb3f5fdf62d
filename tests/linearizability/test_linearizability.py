"""Black-box linearizability test of cache_server with a store: the checker (lincheck, the Go
program beside this file, Porcupine inside) runs 16 keep-alive clients on 16 keys for the whole
scenario while this driver restarts the server under it on the same port and the same store
(kill -9 and SIGTERM), and the checker empties the cache (`POST /reset?scope=cache`) on a
timer. The history must be linearizable under the model of docs/api.md ("What a
linearizability checker may assume"); a failure prints the shortest failing stretch of a key's
history and the path of Porcupine's HTML visualization (README.md here says how to read it).

Scenarios (the server at -t 4 in each):
  write_through[rocksdb]              kill -9 every ~3 s (every 4th restart a SIGTERM), reset every 100 ms
  write_through[postgres]             kill -9 every ~3 s, reset every 250 ms
  write_through_slow_store[rocksdb]   --store-faults read-delay=3ms,sync-delay=2ms, reset every 50 ms
  write_through_full_speed[rocksdb]   unpaced, -t 2, no restarts or resets (writes meet in group commits)
  write_behind[rocksdb|postgres]      SIGTERM every ~3 s (kill -9 may lose the last flush
                                      interval by contract), reset every 250 ms

LIN_OPS (default 100000) operations per scenario, paced over about LIN_PACE_S seconds (default
15: a server faster than that, write-behind's 50,000 op/s, would otherwise end the load before
its first restart, and give a key histories longer than the checker needs); LIN_LOAD_S (default
150) bounds the load of one scenario (hitting it first is a failure), LIN_CHECK_S (default 90)
the checker. Per scenario the counts are printed (pytest -s): ops, restarts, resets,
unknown-outcome ops, check time.
"""
import json
import os
import random
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

import pytest

from harness.procs import CacheServer, ServerError, free_port  # on sys.path: tests/server/conftest.py

OPS = int(os.environ.get("LIN_OPS", "100000"))
LOAD_BOUND_S = float(os.environ.get("LIN_LOAD_S", "150"))
CHECK_BOUND_S = float(os.environ.get("LIN_CHECK_S", "90"))
PACE_S = float(os.environ.get("LIN_PACE_S", "15"))
CLIENTS = int(os.environ.get("LIN_CLIENTS", "16"))
KEYS = int(os.environ.get("LIN_KEYS", "16"))
THREADS = int(os.environ.get("LIN_THREADS", "4"))


@dataclass
class Scenario:
    mode: str                  # --write-mode
    reset_every_ms: int        # POST /reset?scope=cache period
    restart_every_s: float = 0  # ~ this often (+-30 %); 0: no restarts
    kill9: bool = False        # restarts are kill -9 ...
    sigterm_every: int = 0     # ... except every Nth, a SIGTERM (0: none); all SIGTERM without kill9
    faults: str = ""           # --store-faults
    threads: int = 0           # the server's -t (0: LIN_THREADS, default 4)
    paced: bool = True         # False: the clients go as fast as the server answers


@dataclass
class Outcome:
    summary: dict
    output: str
    kills: int
    sigterms: int
    events: list
    seconds: float


def restart_signal(sc, n):
    if not sc.kill9:
        return signal.SIGTERM
    if sc.sigterm_every and n % sc.sigterm_every == sc.sigterm_every - 1:
        return signal.SIGTERM
    return signal.SIGKILL


def start_server(server_bin, flags):
    """cache_server with flags (its -p PORT wins over CacheServer's -p 0), ready once listening.
    A restart right after a kill may meet the port still held for a moment: retried."""
    for attempt in range(20):
        srv = CacheServer(server_bin, flags, stderr_apart=True)
        try:
            return srv.start()
        except ServerError as e:
            err = b"\n".join(srv.stderr_lines).decode(errors="replace")
            if "in use" not in err or attempt == 19:
                raise ServerError(f"{e}\nstderr: {err[-2000:]}") from None
            time.sleep(0.1)


def run_scenario(server_bin, lincheck_bin, store_flags, sc, tmp_path, seed):
    port = free_port()
    flags = ["-t", str(sc.threads or THREADS), "-p", str(port), *store_flags, "--write-mode", sc.mode]
    if sc.faults:
        flags += ["--store-faults", sc.faults]
    rng = random.Random(seed)
    t_start = time.monotonic()
    srv = start_server(server_bin, flags)
    checker = subprocess.Popen(
        [str(lincheck_bin), "--addr", f"127.0.0.1:{port}", "--mode", sc.mode,
         "--ops", str(OPS), "--duration", f"{LOAD_BOUND_S:g}s", "--clients", str(CLIENTS),
         "--keys", str(KEYS), "--cache-reset-every", f"{sc.reset_every_ms}ms",
         "--rate", f"{OPS / PACE_S:g}" if PACE_S > 0 and sc.paced else "0",
         "--check-timeout", f"{CHECK_BOUND_S:g}s", "--viz-dir", str(tmp_path), "--seed", str(seed)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, load_done, origin_ns = [], threading.Event(), []

    def drain():
        for line in checker.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("lincheck: origin CLOCK_MONOTONIC "):
                origin_ns.append(int(line.split()[3]))
            if line.startswith("lincheck: load done") or line.startswith("lincheck-summary "):
                load_done.set()
        load_done.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()

    def at_ms():  # now on the checker's time axis (its history's call/return times)
        return (time.monotonic_ns() - origin_ns[0]) / 1e6 if origin_ns else float("nan")

    events, kills, sigterms, problem = [], 0, 0, None
    try:
        while sc.restart_every_s and not problem:
            wait = sc.restart_every_s * rng.uniform(0.7, 1.3)
            if load_done.wait(wait) or time.monotonic() - t_start > LOAD_BOUND_S + 10:
                break
            sig = restart_signal(sc, kills + sigterms)
            t_sig = at_ms()
            code, _, err = srv.stop(sig)
            if sig == signal.SIGTERM:
                sigterms += 1
                if code != 0:
                    problem = f"SIGTERM restart {sigterms}: exit {code}: {err[-2000:]}"
            else:
                kills += 1
            srv = start_server(server_bin, flags)
            events.append(f"{t_sig:10.1f} ms  {'kill -9' if sig == signal.SIGKILL else 'SIGTERM'}"
                          f" (exit {code}); listening again at {at_ms():.1f} ms")
        try:
            checker.wait(timeout=LOAD_BOUND_S + CHECK_BOUND_S + 120 - (time.monotonic() - t_start))
        except subprocess.TimeoutExpired:
            checker.kill()
            checker.wait()
            problem = problem or "the checker did not finish within its load and check bounds"
    finally:
        if checker.poll() is None:
            checker.kill()
            checker.wait()
        reader.join(timeout=10)
        code, _, err = srv.stop()
        if code != 0 and not problem:
            problem = f"the last server exited {code} on SIGTERM: {err[-2000:]}"
    output = "\n".join(lines)
    summary = {}
    for line in lines:
        if line.startswith("lincheck-summary "):
            summary = json.loads(line[len("lincheck-summary "):])
    if problem:
        pytest.fail(f"{problem}\n--- checker output ---\n{output[-6000:]}", pytrace=False)
    return Outcome(summary, output, kills, sigterms, events, time.monotonic() - t_start)


def verify(name, out, sc):
    s = out.summary
    print(f"\nlinearizability {name}: {s.get('result')}: {s.get('ops')} ops "
          f"({s.get('unknown')} of unknown outcome, {s.get('open_unknown')} never seen applied; "
          f"{s.get('lost_reads')} lost reads, "
          f"{s.get('status_503')} 503s of which {s.get('not_applied_503')} not applied), "
          f"restarts: {out.kills} kill -9, {out.sigterms} SIGTERM; cache resets: {s.get('resets')} "
          f"({s.get('reset_errors')} failed); load {s.get('load_s', 0):.1f} s, "
          f"check {s.get('check_s', 0):.2f} s; scenario {out.seconds:.1f} s; seed {s.get('seed')}",
          flush=True)
    if s.get("texts_503"):
        print("  503 reasons seen: " + " | ".join(s["texts_503"]), flush=True)
    if s.get("result") != "ok":
        timeline = "\n".join(out.events) or "(no restarts)"
        pytest.fail(f"{name}: {s.get('error') or 'the checker gave no summary'}\n"
                    f"--- checker output ---\n{out.output[-12000:]}\n"
                    f"--- restarts, on the checker's time axis ---\n{timeline}", pytrace=False)
    assert s["ops"] >= OPS
    if sc.restart_every_s:
        assert out.kills + out.sigterms >= 1, "the load ended before any restart"


def test_checker_model(go_tool):
    """The checker's own tests first (`go test`): the model accepts and rejects hand-written
    histories (a stale read after an acknowledged DELETE, a 201 over a present key, ...), every
    stretch of a simulated linearizable history passes, and a planted stale read is found in a
    short stretch."""
    r = subprocess.run([go_tool, "test", "-buildvcs=false", "-count=1", "./..."],
                       cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True,
                       text=True, timeout=600)
    print(r.stdout[-2000:], flush=True)
    assert r.returncode == 0, f"go test failed ({r.returncode}):\n{r.stdout[-6000:]}{r.stderr[-3000:]}"


def scenario_seed():
    seed = os.environ.get("LIN_SEED")
    return int(seed) if seed else random.randrange(1, 2**31)


def test_write_through(request, server_bin, lincheck_bin, store_backend, store_flags, tmp_path):
    sc = Scenario("through", reset_every_ms=100 if store_backend == "rocksdb" else 250,
                  restart_every_s=3, kill9=True, sigterm_every=4 if store_backend == "rocksdb" else 0)
    out = run_scenario(server_bin, lincheck_bin, store_flags, sc, tmp_path, scenario_seed())
    verify(request.node.name, out, sc)


@pytest.mark.rocksdb_only(reason="--store-faults sync-delay is RocksDB's fault injection")
def test_write_through_slow_store(request, server_bin, lincheck_bin, store_backend, store_flags,
                                  tmp_path):
    # Store reads slow enough that misses of one key meet in one store read while writes of the
    # key are acknowledged: the single-flight read must not answer a miss that arrived after one.
    sc = Scenario("through", reset_every_ms=50, faults="read-delay=3ms,sync-delay=2ms")
    out = run_scenario(server_bin, lincheck_bin, store_flags, sc, tmp_path, scenario_seed())
    verify(request.node.name, out, sc)


@pytest.mark.rocksdb_only(reason="one engine suffices: the race is in the tier's group-commit path")
def test_write_through_full_speed(request, server_bin, lincheck_bin, store_backend, store_flags,
                                  tmp_path):
    # Unpaced, -t 2, no resets or restarts: writes of a key meet in one group commit, applied
    # before their callbacks run; a miss that reads the newer value must not be followed by a
    # hit of the older one (found by this checker at full speed, before it was fixed).
    sc = Scenario("through", reset_every_ms=0, threads=2, paced=False)
    out = run_scenario(server_bin, lincheck_bin, store_flags, sc, tmp_path, scenario_seed())
    verify(request.node.name, out, sc)


def test_write_behind(request, server_bin, lincheck_bin, store_backend, store_flags, tmp_path):
    sc = Scenario("behind", reset_every_ms=250, restart_every_s=3)
    out = run_scenario(server_bin, lincheck_bin, store_flags, sc, tmp_path, scenario_seed())
    verify(request.node.name, out, sc)
