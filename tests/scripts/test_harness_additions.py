"""What issue 31's script conversions added to scripts/harness/: the listening line read from the
log of a process started elsewhere (procs.listening_in_log and `python3 -m scripts.harness listening`,
which scripts/cluster.sh uses) and pinning a running process (procs.pin_running). No binaries
needed: the processes are Python stand-ins. The scripts' command line and run (cli, bench) are
tested in test_harness.py."""
import os
import subprocess
import sys
import time
from pathlib import Path

from scripts.harness import procs

ROOT = Path(__file__).resolve().parents[2]
HARNESS = procs.python_module("harness")  # run from ROOT

# Prints its "listening" line after a moment (as a server that binds, then says so).
LATE_LINE = ("import socket, sys, time; time.sleep(0.3); s = socket.socket(); "
             "s.bind(('127.0.0.1', 0)); print('config x'); "
             "print('listening on 127.0.0.1:%d' % s.getsockname()[1], flush=True); time.sleep(30)")


def background(code, log):
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT)


def test_listening_in_log_waits_for_the_line(tmp_path):
    log = tmp_path / "node.log"
    p = background(LATE_LINE, log)
    try:
        host, port = procs.listening_in_log(log, p.pid, timeout_s=10)
        assert host == "127.0.0.1" and 0 < port < 65536
        r = subprocess.run([*HARNESS, "listening", str(log), str(p.pid), "5"], cwd=ROOT,
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stdout == f"127.0.0.1:{port}\n"
    finally:
        p.kill()
        p.wait()


def test_listening_in_log_gives_up_when_the_process_exits_or_time_is_up(tmp_path):
    log = tmp_path / "node.log"
    p = background("print('no such line')", log)
    p.wait()
    t0 = time.monotonic()
    assert procs.listening_in_log(log, p.pid, timeout_s=10) is None
    assert time.monotonic() - t0 < 5  # gone: no waiting out the timeout
    assert procs.listening_in_log(tmp_path / "missing.log", None, timeout_s=0.2) is None
    r = subprocess.run([*HARNESS, "listening", str(log), str(p.pid), "1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and r.stdout == ""
    bad = subprocess.run([*HARNESS, "listening"], cwd=ROOT, capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode == 2 and "listening LOG" in bad.stderr


def test_pin_running_pins_every_thread(tmp_path):
    code = ("import threading, time\n"
            "for _ in range(3): threading.Thread(target=time.sleep, args=(30,)).start()")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.3)
        cpu = min(os.sched_getaffinity(0))
        procs.pin_running(p.pid, {cpu})
        tids = [int(t) for t in os.listdir(f"/proc/{p.pid}/task")]
        assert len(tids) >= 4 and all(os.sched_getaffinity(t) == {cpu} for t in tids)
    finally:
        p.kill()
        p.wait()
