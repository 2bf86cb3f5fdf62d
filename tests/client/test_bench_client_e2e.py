"""End-to-end tests of the bench_client binary.

Servers: a Python stand-in (fake_cache_server.py, always) and the real cache_server (when the
CACHE_SERVER environment variable names the binary; CMake sets it when the target exists).
BENCH_CLIENT names the client binary.
"""
import csv
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "scripts"))
from harness.procs import ListeningServer, ServerError  # noqa: E402

BENCH = os.environ.get("BENCH_CLIENT", "")
CACHE_SERVER = os.environ.get("CACHE_SERVER", "")
POINT_FIELDS = ["threads", "requests", "errors", "duration_s", "throughput_rps", "mean_us", "p50_us", "p90_us",
                "p95_us", "p99_us", "p999_us", "max_us", "hit_rate", "server_cpu_pct", "client_cpu_pct"]

pytestmark = pytest.mark.skipif(not BENCH or not Path(BENCH).exists(), reason="BENCH_CLIENT not set")


class Server(ListeningServer):
    """A server ready on its listening line (the harness reads it: scripts/harness/procs.py),
    started at once; stop() wakes a stopped (SIGSTOP) one before terminating it."""

    ready_timeout_s = 15

    def __init__(self, argv):
        super().__init__(argv, stop_timeout_s=5, new_session=False)
        try:
            self.start()
        except ServerError as e:
            raise RuntimeError(f"server {argv} did not start") from e

    def stop(self, sig=signal.SIGTERM):
        if self.alive:
            try:
                os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        return super().stop(sig)


def stand_in(script, *extra):
    """One of the Python stand-in servers beside this file (SCRIPT), started on a free port."""
    return Server([sys.executable, str(HERE / script), "-p", "0", *extra])


def fake_server(*extra):
    return stand_in("fake_cache_server.py", *extra)


def counts(server):
    """A stand-in's GET /_counts (what it saw), as JSON."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_counts", timeout=5) as r:
        return json.loads(r.read())


SERVER_KINDS = ["fake"] + (["real"] if CACHE_SERVER else [])


def real_server():
    if not Path(CACHE_SERVER).exists():
        pytest.skip(f"CACHE_SERVER={CACHE_SERVER} is not built")
    return Server([CACHE_SERVER, "-p", "0"])


@pytest.fixture(params=SERVER_KINDS)
def server(request):
    if request.param == "real":
        srv = real_server()
    else:
        srv = fake_server()
    yield srv
    srv.stop()


def run_bench(*args, timeout=90):
    return subprocess.run([BENCH, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def check_point_schema(point):
    for field in POINT_FIELDS:
        assert field in point, field
    assert point["requests"] > 0
    assert point["duration_s"] > 0
    # Throughput is requests over the window, not something derived from latency.
    assert point["throughput_rps"] == pytest.approx(point["requests"] / point["duration_s"], rel=0.01)
    assert 0 < point["p50_us"] <= point["p90_us"] <= point["p95_us"] <= point["p99_us"] <= point["p999_us"] <= point["max_us"]
    assert point["series"], "per-second time series missing"


def test_tiny_etc_sweep(server, tmp_path):
    out_json, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
    r = run_bench("-p", server.port, "--threads", "1,2", "-n", "1500", "--warmup", "300", "--keys", "2000",
                  "--server-pid", server.pid, "--json", out_json, "--csv", out_csv)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out_json.read_text())
    assert set(doc) == {"meta", "points", "slo"}
    assert doc["slo"] is None  # no --slo search
    assert all(p["valid"] is True and p["invalid_reason"] is None for p in doc["points"])
    meta = doc["meta"]
    for key in ("workload", "server_stats", "client_host", "client_cpus", "pinning", "git_revision", "date_utc"):
        assert key in meta, key
    assert meta["server_stats_available"] is True
    for key in ("items", "maxmem", "threads", "evictor"):
        assert key in meta["server_stats"], key
    assert meta["workload"]["name"] == "etc"
    assert [p["threads"] for p in doc["points"]] == [1, 2]
    for point in doc["points"]:
        check_point_schema(point)
        assert point["errors"] == 0, point["errors_by_code"]
        assert point["requests"] == 1500 * point["threads"]
        assert 0.7 <= point["hit_rate"] <= 0.9, point["hit_rate"]
        # Sampled (not null); /proc counts 10 ms ticks, so a short point may show 0.
        assert point["server_cpu_pct"] is not None and point["server_cpu_pct"] >= 0
        assert point["client_cpu_pct"] is not None
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 2
    for field in POINT_FIELDS:
        assert field in rows[0]
    assert float(rows[1]["throughput_rps"]) == pytest.approx(doc["points"][1]["throughput_rps"], rel=1e-3)
    # The JSON's per-point client figures are CSV columns too.
    for row, point in zip(rows, doc["points"]):
        assert int(row["verified"]) == point["verified"]
        assert float(row["client_cpu_us_per_response"]) == pytest.approx(
            point["client_cpu_us_per_response"], abs=1e-3)
    # The human table: a header and one row per thread count.
    lines = [l for l in r.stdout.splitlines() if not l.startswith("#")]
    assert lines[0].split()[:3] == ["threads", "requests", "req/s"]
    assert [l.split()[0] for l in lines[1:]] == ["1", "2"]


@pytest.mark.parametrize("workload", [["--workload", "put-all"], ["--workload", "get-popular"],
                                      ["--workload", "mixed", "--ratio", "6:3:1"], ["--workload", "zipf", "--theta", "1.2"],
                                      ["--workload", "uniform", "--value-size", "2000"]])
def test_other_workloads_run_clean(server, tmp_path, workload):
    out = tmp_path / "r.json"
    r = run_bench("-p", server.port, "--threads", "2", "-n", "500", "--warmup", "100", "--keys", "500",
                  *workload, "--json", out)
    assert r.returncode == 0, r.stderr
    point = json.loads(out.read_text())["points"][0]
    assert point["errors"] == 0, point["errors_by_code"]
    if workload[1] == "put-all":
        assert point["gets"] == 0 and point["sets"] == point["requests"]
    if workload[1] == "get-popular":
        assert point["hit_rate"] == 1.0
    if workload[1] == "mixed":
        assert point["deletes"] > 0


def test_duration_mode_and_time_series(tmp_path):
    srv = fake_server()
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--threads", "1", "-d", "2.2", "--warmup", "0.2s", "--keys", "500", "--json", out)
        assert r.returncode == 0, r.stderr
        point = json.loads(out.read_text())["points"][0]
        assert 2.1 <= point["duration_s"] <= 3.0
        assert [s["t_s"] for s in point["series"]] == [0, 1, 2]
        assert sum(s["requests"] for s in point["series"]) == point["requests"]
    finally:
        srv.stop()


def wrong_values_run(tmp_path, fault, verify):
    """1000 uniform requests on 300 keys, --verify VERIFY, against the stand-in giving wrong
    values (FAULT: its flag and N); the exit status must be 6 (a wrong answer): (the completed
    process, the point)."""
    srv = fake_server(*fault)
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--threads", "1", "-n", "1000", "--warmup", "0", "--keys",
                      "300", "--workload", "uniform", "--verify", verify, "--json", out)
        assert r.returncode == 6, r.stderr
        return r, json.loads(out.read_text())["points"][0]
    finally:
        srv.stop()


def test_value_corruption_is_counted_as_errors(tmp_path):
    """Every 10th GET hit has a flipped byte: --verify all checks every hit, so about a tenth are
    mismatches; the point is invalid and the exit status 6 (a wrong answer)."""
    r, point = wrong_values_run(tmp_path, ("--corrupt", "10"), "all")
    assert point["verified"] == point["get_hits"]
    assert point["valid"] is False and "mismatch" in point["invalid_reason"]
    assert point["errors_by_code"].get("mismatch", 0) > 50
    assert point["errors"] == point["errors_by_code"]["mismatch"]
    assert "mismatch=" in r.stdout


def test_a_short_value_is_caught_on_every_answer_even_unchecked(tmp_path):
    """Every 5th GET hit comes back one byte short (well framed): the answers not checked in full
    are still checked in length, so with --verify off every short one is a mismatch."""
    _, point = wrong_values_run(tmp_path, ("--short", "5"), "off")
    assert point["verified"] == 0
    assert point["errors_by_code"] == {"mismatch": point["get_hits"] // 5}, point


def test_server_without_stats_and_fixed_get(tmp_path):
    srv = fake_server("--no-stats")
    try:
        out = tmp_path / "r.json"
        # /reset answers 204 on the stand-in; a fixed path GET expecting 200.
        r = run_bench("-p", srv.port, "--threads", "1", "-n", "300", "--warmup", "10", "--path", "/missing", "--json", out)
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        assert doc["meta"]["server_stats_available"] is False
        assert doc["meta"]["server_stats"] is None
        assert "404" in doc["meta"]["server_stats_error"]
        # Every GET of a 404 path is an unexpected status in fixed-get mode.
        assert doc["points"][0]["errors_by_code"] == {"http_404": 300}
    finally:
        srv.stop()


def test_unreachable_server_fails_clearly():
    srv = fake_server()
    port = srv.port
    srv.stop()
    r = run_bench("-p", port, "--threads", "1", "-n", "10")
    assert r.returncode == 2
    assert "unreachable" in r.stderr and f"127.0.0.1:{port}" in r.stderr


def test_bad_flags_give_one_line_errors():
    for args in (["--bogus"], ["--threads", "x"], ["--rate"]):
        r = run_bench(*args)
        assert r.returncode == 1
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run_bench("--help")
    assert r.returncode == 0 and "default 8080" in r.stdout


def test_server_death_saves_partial_results(tmp_path):
    srv = fake_server()
    out_json, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
    try:
        proc = subprocess.Popen([BENCH, "-p", str(srv.port), "--threads", "1,2", "-d", "2", "--warmup", "0",
                                 "--keys", "300", "--timeout", "1000", "--json", str(out_json), "--csv", str(out_csv)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        srv.proc.kill()
        srv.proc.wait()
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 3, err
        assert "aborted" in err
        doc = json.loads(out_json.read_text())
        assert doc["meta"]["aborted"] is True
        assert len(doc["points"]) == 1 and doc["points"][0]["aborted"] is True
        assert doc["points"][0]["requests"] > 0
        assert len(list(csv.DictReader(out_csv.open()))) == 1
    finally:
        srv.stop()


def run_open_loop_with_stall(tmp_path, kind, stop_after_s, stop_for_s):
    """A 3 s open-loop run at 200 req/s (1 thread) during which the server is SIGSTOPped
    `stop_after_s` after launch for `stop_for_s`. Returns (the point, bench_client's stdout)."""
    srv = real_server() if kind == "real" else fake_server()
    out = tmp_path / "r.json"
    try:
        proc = subprocess.Popen([BENCH, "-p", str(srv.port), "--threads", "1", "--rate", "200", "-d", "3",
                                 "--warmup", "0", "--keys", "200", "--json", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(stop_after_s)
        os.kill(srv.pid, signal.SIGSTOP)
        time.sleep(stop_for_s)
        os.kill(srv.pid, signal.SIGCONT)
        stdout, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        return json.loads(out.read_text())["points"][0], stdout
    finally:
        srv.stop()


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_open_loop_correction_shows_a_server_stall(tmp_path, kind):
    """SIGSTOP the server for 0.5 s during a 3 s run at 200 req/s: ~100 planned sends fall into the
    stall, so the corrected p99 must show it, while the uncorrected p99 (one request saw it) must not."""
    point, stdout = run_open_loop_with_stall(tmp_path, kind, 1.2, 0.5)
    assert point["open_loop"] is True and point["errors"] == 0
    assert point["p99_us"] >= 250_000, point             # corrected: the stall is visible
    assert point["uncorrected"]["p99_us"] < 100_000, point  # uncorrected: hidden
    assert point["uncorrected"]["max_us"] >= 400_000        # the one request that waited
    assert "uncorr_p99_us" in stdout


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_open_loop_records_sends_a_stall_left_unsent(tmp_path, kind):
    """SIGSTOP the server 2 s into a 3 s run at 200 req/s and keep it stopped past the end: the
    ~200 planned sends that never went out are counted and recorded at their lower bound
    (window end - planned time), so the corrected tail shows the stall instead of losing it."""
    point, _ = run_open_loop_with_stall(tmp_path, kind, 2.0, 2.5)
    assert point["unsent_planned"] >= 50, point
    assert point["p99_us"] >= 200_000, point                # the stall is in the tail
    assert point["uncorrected"]["p99_us"] < 100_000, point  # and invisible without correction


@pytest.mark.parametrize("rate", [None, "400"])
def test_several_connections_per_thread(server, tmp_path, rate):
    out = tmp_path / "r.json"
    extra = ["--rate", rate, "-d", "1.5"] if rate else ["-n", "1000"]
    r = run_bench("-p", server.port, "--threads", "2", "--connections-per-thread", "3", "--warmup", "50",
                  "--keys", "500", *extra, "--json", out)
    assert r.returncode == 0, r.stderr
    point = json.loads(out.read_text())["points"][0]
    assert point["connections"] == 6
    assert point["errors"] == 0, point["errors_by_code"]
    if rate:
        assert point["open_loop"] and point["rate_sustained"]
        assert point["throughput_rps"] == pytest.approx(400, rel=0.1)
    else:
        assert point["requests"] == 2000


def test_open_loop_says_when_the_rate_is_not_met(tmp_path):
    srv = fake_server()
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--threads", "1", "--rate", "5000000", "-d", "1", "--warmup", "0",
                      "--keys", "200", "--json", out)
        assert r.returncode == 0, r.stderr
        point = json.loads(out.read_text())["points"][0]
        assert point["rate_sustained"] is False
        assert "not sustained" in r.stdout
    finally:
        srv.stop()


def stats_of(port):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as resp:
        return json.loads(resp.read())


@pytest.mark.skipif(not CACHE_SERVER, reason="needs the real cache_server (CACHE_SERVER)")
def test_ttl_puts_a_ttl_on_every_key_put(tmp_path):
    """--ttl 1: every key the preload and the workload PUT expires, so within a few seconds
    the real server has reclaimed them all (docs/api.md, "Expiry")."""
    srv = real_server()
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--threads", "1", "-n", "400", "--warmup", "50", "--keys", "300",
                      "--workload", "mixed", "--ratio", "5:5:0", "--ttl", "1", "--json", out)
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        assert doc["meta"]["mode"]["ttl_s"] == 1
        point = doc["points"][0]
        assert point["errors"] == 0, point["errors_by_code"]
        assert point["sets"] > 0
        held = stats_of(srv.port)["items"]
        assert held > 0
        deadline = time.time() + 8
        while time.time() < deadline and stats_of(srv.port)["items"] > 0:
            time.sleep(0.1)
        s = stats_of(srv.port)
        assert s["items"] == 0, s
        assert s["expired"] >= held
    finally:
        srv.stop()


def test_ttl_outside_its_range_is_a_one_line_error():
    for bad in ("0", "-5", "315360001", "abc"):
        r = run_bench("--ttl", bad)
        assert r.returncode != 0
        assert "--ttl" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# --- the admin route: the reset before the preload (docs/server.md, "Security model") ---------

ADMIN_TOKEN = "bench-client-admin-token-0123"


def put_key(port, key, value):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/key/{key}", data=value, method="PUT")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status


def key_status(port, key):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/key/{key}", timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


SMALL_RUN = ("--threads", "1", "-n", "200", "--warmup", "0", "--keys", "100", "--workload",
             "uniform")


@pytest.mark.skipif(not CACHE_SERVER, reason="needs the real cache_server (CACHE_SERVER)")
def test_admin_token_file_sends_the_token_with_the_reset(tmp_path):
    token_file = tmp_path / "admin.token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    if not Path(CACHE_SERVER).exists():
        pytest.skip(f"CACHE_SERVER={CACHE_SERVER} is not built")
    srv = Server([CACHE_SERVER, "-p", "0", "--admin-token-file", str(token_file)])
    try:
        assert put_key(srv.port, "other", b"kept unless reset") == 201
        # Without the token: the server answers 401, and bench_client stops with an error that
        # names the flag, before the preload.
        r = run_bench("-p", srv.port, *SMALL_RUN)
        assert r.returncode == 3, r.stderr
        assert "POST /reset answered HTTP 401" in r.stderr, r.stderr
        assert "--admin-token-file" in r.stderr and "--no-reset" in r.stderr, r.stderr
        assert key_status(srv.port, "other") == 200
        assert stats_of(srv.port)["sets"] == 1  # no preload either
        # A wrong token: 403, the same clear error.
        wrong = tmp_path / "wrong.token"
        wrong.write_text("not-the-server-token-0123")
        r = run_bench("-p", srv.port, "--admin-token-file", wrong, *SMALL_RUN)
        assert r.returncode == 3 and "HTTP 403" in r.stderr, r.stderr
        assert "the token of --admin-token-file is not the server's" in r.stderr, r.stderr
        # The token: the reset runs (the other key is gone), then the preload and the point.
        r = run_bench("-p", srv.port, "--admin-token-file", token_file, *SMALL_RUN)
        assert r.returncode == 0, r.stderr
        assert key_status(srv.port, "other") == 404
        # --no-reset needs no token.
        assert put_key(srv.port, "other", b"v") == 201
        r = run_bench("-p", srv.port, "--no-reset", *SMALL_RUN)
        assert r.returncode == 0, r.stderr
        assert key_status(srv.port, "other") == 200
    finally:
        srv.stop()


@pytest.mark.skipif(not CACHE_SERVER, reason="needs the real cache_server (CACHE_SERVER)")
def test_a_server_with_a_store_refuses_the_reset_clearly(tmp_path):
    if not Path(CACHE_SERVER).exists():
        pytest.skip(f"CACHE_SERVER={CACHE_SERVER} is not built")
    srv = Server([CACHE_SERVER, "-p", "0", "--store", f"rocksdb:{tmp_path / 'db'}"])
    try:
        r = run_bench("-p", srv.port, *SMALL_RUN)
        assert r.returncode == 3, r.stderr
        assert "reset is disabled with a store" in r.stderr, r.stderr
        assert "pass --admin-token-file FILE" in r.stderr, r.stderr
    finally:
        srv.stop()


def test_a_bad_admin_token_file_is_a_one_line_error(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text(" \n")
    spaced = tmp_path / "spaced"
    spaced.write_text("two words\n")
    for path, why in ((tmp_path / "missing", "cannot read"), (empty, "is empty"),
                      (tmp_path, "is a directory"), (spaced, "whitespace or control bytes")):
        r = run_bench("--admin-token-file", path)
        assert r.returncode == 1, r
        assert "--admin-token-file" in r.stderr and why in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run_bench("--help")
    assert "--admin-token-file FILE" in r.stdout

