"""The pure parts of scripts/studies/common.py: iostat's %util from two /proc/diskstats lines,
/proc/PID/stat ticks (real files of this process and its child), a process's CPU clock, the
verdict rules, measure_point's figures, the saturation rule and the Markdown helpers."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts.studies import common as c

ROOT = Path(__file__).resolve().parents[2]

BEFORE = "   8       0 sda 100 0 800 50 200 0 1600 300 0 1000 400 0 0 0 0 10 5"
AFTER = "   8       0 sda 110 0 880 55 400 0 3200 600 0 1850 800 0 0 0 0 30 9"


def test_disk_util_is_io_ticks_over_elapsed_ms():
    d = c.disk_delta(BEFORE, AFTER, 1.0)
    assert d["device"] == "sda"
    assert d["util_pct"] == pytest.approx(85.0)  # 850 ms of 1000 ms with I/O in flight
    assert d["writes_per_s"] == pytest.approx(200.0)
    assert d["flushes_per_s"] == pytest.approx(20.0)
    assert c.disk_delta(BEFORE, AFTER, 0.5)["util_pct"] == 100.0  # capped, as iostat
    with pytest.raises(ValueError):
        c.disk_delta(BEFORE, AFTER.replace("sda", "sdb"), 1.0)
    with pytest.raises(ValueError):
        c.diskstats_fields("8 0 sda 1 2")


def test_real_diskstats_line_parses():
    line = next(l for l in Path("/proc/diskstats").read_text().splitlines() if l.strip())
    assert len(c.diskstats_fields(line)) >= 14


def test_stat_ticks_of_this_process_and_a_command_with_spaces():
    text = Path(f"/proc/{os.getpid()}/stat").read_text()
    assert c.stat_ticks(text) >= 0
    fake = "42 (a b) c) S 1 " + " ".join(["0"] * 9) + " 7 5 3 2 " + " ".join(["0"] * 30)
    assert c.stat_ticks(fake) == 12 and c.stat_ticks(fake, children=True) == 17
    assert c.stat_ppid(fake) == 1


def test_tree_ticks_counts_an_exited_child():
    # A child that burns CPU and exits: its ticks reach this process's cutime/cstime.
    before = c.tree_ticks(os.getpid())
    subprocess.run([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<0.3: pass"],
                   check=True)
    after = c.tree_ticks(os.getpid())
    assert after - before >= 0.15 * c.CLK_TCK


def test_resources_sample_a_busy_process():
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with c.Resources([p.pid]) as r:
            time.sleep(0.5)
        fig = r.figures()
        assert fig["server_cpu_pct"] > 30
        assert fig["db_cpu_pct"] is None and fig["disk_util_pct"] is None
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("fig,cores,who", [
    ({"disk_util_pct": 92.0, "server_cpu_pct": 99.0}, {}, "disk"),
    ({"server_cpu_pct": 97.0, "client_cpu_pct": 40.0}, {}, "server CPU"),
    ({"server_cpu_pct": 97.0, "client_cpu_pct": 99.0}, {}, "client CPU + server CPU"),
    ({"server_cpu_pct": 40.0, "db_cpu_pct": 50.0, "client_cpu_pct": 10.0}, {}, "database CPU"),
    ({"server_cpu_pct": 40.0, "db_cpu_pct": 30.0, "client_cpu_pct": 10.0}, {}, "none saturated"),
    ({"server_cpu_pct": 170.0, "client_cpu_pct": 10.0}, {"server": 2}, "server CPU"),
    ({"server_cpu_pct": 150.0, "client_cpu_pct": 10.0}, {"server": 2}, "none saturated"),
    ({"client_cpu_pct": 84.9}, {}, "none saturated"),
])
def test_verdict_names_the_saturated_resource(fig, cores, who):
    got, why = c.verdict(fig, cores)
    assert got == who, why
    if who == "none saturated":
        assert why.startswith("latency-bound: ")


def test_saturation_is_the_first_point_at_95_percent_of_the_peak():
    pts = [{"n": 1, "throughput_rps": 50.0}, {"n": 2, "throughput_rps": 96.0},
           {"n": 3, "throughput_rps": 100.0}, {"n": 4, "throughput_rps": 99.0}]
    assert c.saturation(pts)["n"] == 2


def test_formatting_helpers():
    assert c.fnum(12345.678) == "12,346" and c.fnum(0.1184, 3) == "0.118" and c.fnum(None) == "–"
    assert c.md_table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---:|\n| 1 | 2 |\n"


@pytest.mark.parametrize("fig,cores,flagged", [
    # The client at its limit, the server with 48% of its core left: the row measured the client.
    ({"server_cpu_pct": 52.0, "client_cpu_pct": 99.5}, {}, True),
    # Exactly 15% left is not more than 15%; 14.9% left neither.
    ({"server_cpu_pct": 85.0, "client_cpu_pct": 99.0}, {}, False),
    ({"server_cpu_pct": 85.1, "client_cpu_pct": 99.0}, {}, False),
    ({"server_cpu_pct": 84.9, "client_cpu_pct": 99.0}, {}, True),
    # The server is the limit, or nothing is: never flagged, however idle the client.
    ({"server_cpu_pct": 97.0, "client_cpu_pct": 40.0}, {}, False),
    ({"server_cpu_pct": 40.0, "client_cpu_pct": 60.0}, {}, False),
    # PostgreSQL on the server's core counts against the server's headroom.
    ({"server_cpu_pct": 40.0, "db_cpu_pct": 50.0, "client_cpu_pct": 95.0}, {}, False),
    ({"server_cpu_pct": 40.0, "db_cpu_pct": 30.0, "client_cpu_pct": 95.0}, {}, True),
    ({"server_cpu_pct": 40.0, "db_cpu_pct": 50.0, "client_cpu_pct": 95.0},
     {"db_shares_server_cpu": False}, True),
    # Of two server cores, 150% busy leaves 25%.
    ({"server_cpu_pct": 150.0, "client_cpu_pct": 90.0}, {"server": 2}, True),
    ({"server_cpu_pct": 180.0, "client_cpu_pct": 90.0}, {"server": 2}, False),
    # Server CPU not sampled (a --target server): nothing says it had CPU left.
    ({"client_cpu_pct": 99.0}, {}, False),
])
def test_measured_the_client_flags_client_bound_rows_with_server_headroom(fig, cores, flagged):
    who, _ = c.verdict(fig, cores)
    assert c.measured_the_client(fig, cores) is flagged, (who, fig)
    assert c.measured_the_client(fig, cores, who) is flagged
    cell = c.bottleneck_cell(who, c.measured_the_client(fig, cores))
    assert cell.startswith(who) and (c.MEASURED_CLIENT in cell) is flagged


def test_measure_point_records_the_flag(tmp_path, monkeypatch):
    # measure_point() stores the flag beside the verdict, computed from the same figures.
    doc = {"points": [{"throughput_rps": 1000.0, "requests": 1000, "errors": 0, "mean_us": 50.0,
                       "p99_us": 90.0, "client_cpu_pct": 99.0}]}
    monkeypatch.setattr(c, "run_bench", lambda *a, **k: doc)
    busy = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(5)"])
    try:
        pt = c.measure_point(Path("bench_client"), [], tmp_path / "x.json", None, [busy.pid])
    finally:
        busy.kill()
        busy.wait()
    assert pt["verdict"] == "client CPU" and pt["server_cpu_pct"] < 85
    assert pt["measured_client"] is True


def test_measure_point_takes_the_servers_cpu_from_the_client_window(tmp_path, monkeypatch):
    # The server's CPU of a point is bench_client's, sampled over the same measured window as the
    # client's own (--server-pid, added when missing), not Resources' over the whole run: a 0.13 s
    # ab-like window behind 3,000 connects diluted it and flagged rows whose server was the limit.
    calls = []
    doc = {"points": [{"throughput_rps": 1000.0, "requests": 1000, "errors": 0, "mean_us": 50.0,
                       "p99_us": 90.0, "client_cpu_pct": 99.0, "server_cpu_pct": 97.5}]}
    monkeypatch.setattr(c, "run_bench", lambda client, args, *a, **k: calls.append(args) or doc)
    idle = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(5)"])
    try:
        pt = c.measure_point(Path("bench_client"), ["-p", "1"], tmp_path / "x.json", None,
                             [idle.pid])
        given = ["-p", "1", "--server-pid", "4242"]
        c.measure_point(Path("bench_client"), given, tmp_path / "y.json", None, [idle.pid])
    finally:
        idle.kill()
        idle.wait()
    assert calls[0] == ["-p", "1", "--server-pid", str(idle.pid)]
    assert calls[1] == given  # a caller's own --server-pid is kept, not doubled
    assert pt["server_cpu_pct"] == 97.5  # the idle process's whole-run figure is near 0
    assert pt["verdict"] == "client CPU + server CPU" and pt["measured_client"] is False


def test_pid_cpu_seconds_is_finer_than_clock_ticks():
    # A child spins to 5 ms past a 10 ms boundary of its own CPU time, prints it and sleeps:
    # /proc/PID/stat would be ~5 ms off (ticks of 1/CLK_TCK s), the process CPU clock is not.
    code = ("import sys, time\nt = (int(time.process_time() * 100) + 2) / 100 + 0.005\n"
            "while time.process_time() < t: pass\n"
            "print(time.process_time(), flush=True)\ntime.sleep(30)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        own = float(p.stdout.readline())
        seen = c.pid_cpu_seconds(p.pid)
    finally:
        p.kill()
        p.wait()
    assert seen == pytest.approx(own, abs=0.002)
    assert c.pid_cpu_seconds(p.pid) is None  # gone
