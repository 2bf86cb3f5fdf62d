"""scripts/experiment.py and scripts/report.py end to end, against the real release binaries.

A tiny sweep (seconds) must leave REPORT.md, the figures and one JSON per configuration, and
every number REPORT.md prints must be the JSON's. Ctrl-C must stop the server and keep what
finished. Needs build/release (scripts/test.sh builds it before running pytest).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = ROOT / "scripts" / "experiment.py"
REPORT = ROOT / "scripts" / "report.py"
SERVER = ROOT / "build/release/server/cache_server"
CLIENT = ROOT / "build/release/client/bench_client"
FIGURES = ("throughput_vs_threads", "p95_vs_threads", "throughput_vs_p95", "latency_spectrum",
           "cpu_vs_threads")


@pytest.fixture
def binaries(tmp_path):
    """Private copies, so a leftover server is findable by its path."""
    for b in (SERVER, CLIENT):
        assert b.exists(), f"{b} is not built: run bash scripts/setup.sh"
    server = tmp_path / "cache_server_under_test"
    shutil.copy(SERVER, server)
    return server, CLIENT


def experiment(out, server, client, *extra, **kw):
    cmd = [sys.executable, str(EXPERIMENT), "--server-bin", str(server), "--client-bin", str(client),
           "--out", str(out), "--duration", "0.5", "--warmup", "100", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, **kw)


def servers_running(path):
    r = subprocess.run(["pgrep", "-f", str(path)], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def report_rows(md, label):
    """The data rows of the table under '## label'."""
    section = md.split(f"## {label}\n", 1)[1].split("\n## ", 1)[0]
    return [l for l in section.splitlines() if re.match(r"\| \d+ \|", l)]


def test_tiny_sweep_leaves_report_figures_and_matching_numbers(tmp_path, binaries):
    server, client = binaries
    r = experiment(tmp_path, server, client, "--server-threads", "1,2", "--client-threads", "1,2",
                   "--variants", "auto")
    assert r.returncode == 0, r.stderr
    run_dir = (tmp_path / "latest").resolve()
    assert run_dir.parent == tmp_path
    md = (run_dir / "REPORT.md").read_text()
    for name in FIGURES:
        assert (run_dir / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert f"]({name}.png)" in md
    run = json.loads((run_dir / "run.json").read_text())
    assert run["order"], "no configuration recorded"
    for name in run["order"]:
        doc = json.loads((run_dir / name).read_text())
        label = doc["meta"]["label"]
        rows = report_rows(md, label)
        assert len(rows) == len(doc["points"]) == 2
        for row, p in zip(rows, doc["points"]):
            cells = [c.strip() for c in row.strip("|").split("|")]
            assert int(cells[0]) == p["threads"]
            assert cells[1] == f"{p['throughput_rps']:,.0f}"
            assert cells[3] == f"{p['p95_us']:,.0f}"
            assert cells[4] == f"{p['p99_us']:,.0f}"
            assert cells[8] == f"{p['errors']:,.0f}"
            assert p["errors"] == 0
            assert p["server_cpu_pct"] is not None  # --server-pid was passed
    assert "Saturation point = " in md
    assert "CPU: " in md and "Pinning: server on CPU 0, client on CPU 1" in md
    assert not servers_running(server)


def test_ctrl_c_stops_the_server_and_keeps_finished_configurations(tmp_path, binaries):
    server, client = binaries
    cmd = [sys.executable, str(EXPERIMENT), "--server-bin", str(server), "--client-bin", str(client),
           "--out", str(tmp_path), "--server-threads", "1,2", "--client-threads", "1",
           "--duration", "0.5", "--warmup", "100", "--variants", "auto"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    first = None
    while time.monotonic() < deadline and first is None:
        found = [p for p in tmp_path.glob("*/*.json") if p.name != "run.json"]
        first = found[0] if found else None
        time.sleep(0.05)
    assert first is not None, "the first configuration never finished"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 130), err  # 0 if the last configuration had already finished
    run_dir = first.parent
    assert (run_dir / "REPORT.md").exists()
    assert first.name in json.loads((run_dir / "run.json").read_text())["order"]
    time.sleep(0.2)
    assert not servers_running(server), "a cache_server was left running"


def test_unknown_flag_and_missing_binary_are_clear_errors(tmp_path):
    r = subprocess.run([sys.executable, str(EXPERIMENT), "--no-such-flag"], capture_output=True, text=True)
    assert r.returncode == 2 and "unrecognized arguments" in r.stderr
    r = subprocess.run([sys.executable, str(EXPERIMENT), "--client-bin", str(tmp_path / "nope"),
                        "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "is not built" in r.stderr


def test_report_names_the_bottleneck(tmp_path):
    def doc(server_cpu, client_cpu):
        return {"meta": {"label": f"s{server_cpu}c{client_cpu}", "server_cpus": "0", "client_cpus": "1"},
                "points": [{"threads": 1, "throughput_rps": 1000, "p50_us": 10, "p95_us": 20, "p99_us": 30,
                            "server_cpu_pct": server_cpu, "client_cpu_pct": client_cpu}]}
    (tmp_path / "a.json").write_text(json.dumps(doc(97, 40)))
    (tmp_path / "b.json").write_text(json.dumps(doc(40, 99)))
    (tmp_path / "c.json").write_text(json.dumps(doc(40, 40)))
    (tmp_path / "d.json").write_text(json.dumps(doc(95, 96)))
    r = subprocess.run([sys.executable, str(REPORT), str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "REPORT.md").read_text()
    line = {l.split("|")[1].strip(): l for l in md.splitlines() if l.startswith("| s")}
    assert "CPU-bound server" in line["s97c40"]
    assert "the client, not the server, is the limit" in line["s40c99"]
    assert "neither side's CPU is saturated" in line["s40c40"]
    assert "both sides saturated" in line["s95c96"] and "CPU-bound server" not in line["s95c96"]
    assert "the client, not the server" not in line["s97c40"]


def test_report_shows_median_and_spread_of_repetitions(tmp_path):
    pts = [{"threads": 1, "throughput_rps": rps, "p50_us": 10, "p95_us": p95, "p99_us": 30}
           for rps, p95 in ((900, 21), (1000, 20), (1200, 25))]
    (tmp_path / "a.json").write_text(json.dumps({"meta": {"label": "rep"}, "points": pts}))
    (tmp_path / "run.json").write_text(json.dumps({"repetitions": 3}))
    r = subprocess.run([sys.executable, str(REPORT), str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "REPORT.md").read_text()
    row = report_rows(md, "rep")[0]
    assert "| 1,000 (900–1,200) |" in row and "| 21 (20–25) |" in row
    assert "min–max range over repetitions" in md


def test_repetitions_are_merged_into_one_file_per_configuration(tmp_path, binaries):
    server, client = binaries
    r = experiment(tmp_path, server, client, "--server-threads", "1", "--client-threads", "1",
                   "--repetitions", "2", "--variants", "auto", "--no-plots")
    assert r.returncode == 0, r.stderr
    run_dir = (tmp_path / "latest").resolve()
    assert not list(run_dir.glob("*.rep*")), "repetition parts left behind"
    (name,) = json.loads((run_dir / "run.json").read_text())["order"][:1]
    doc = json.loads((run_dir / name).read_text())
    assert [p["threads"] for p in doc["points"]] == [1, 1]
    assert "min–max range over repetitions" in (run_dir / "REPORT.md").read_text()
