"""scripts/harness/ against the real components: cache_server (the release build), PostgreSQL,
Redis, nginx and HAProxy start pinned on free ports, become ready, answer, and are gone after
their with-block, also when the block raised. Plus the pure parts: the listening line, the
/proc arithmetic, the run metadata, the tables, and a script's command line and run (cli,
bench: usage errors in one line with exit 2, the CPU checks, the directories, the exit
status). A component that is not installed fails
its test naming the package (scripts/setup.sh --peers installs them all); the cache_server tests
need the release build (EXPERIMENT_TEST_BUILD names another)."""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from scripts.harness import bench, cli, metadata, peers, postgres, procs, resources, tables

ROOT = Path(__file__).resolve().parents[2]

BUILD = Path(os.environ.get("EXPERIMENT_TEST_BUILD", ROOT / "build" / "release"))
SERVER = BUILD / "server" / "cache_server"


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie of ours counts as gone: Popen.wait reaps it; check its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
    except OSError:
        return True


def http(port, method, path):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n".encode())
        return s.recv(4096)


# --- the listening line ----------------------------------------------------------------------

def test_listening_line_is_read_in_one_place():
    assert procs.parse_listening("listening on 127.0.0.1:8080\n") == ("127.0.0.1", 8080)
    assert procs.parse_listening(b"listening on 10.0.0.2:1") == ("10.0.0.2", 1)
    assert procs.parse_listening("config threads=1") is None
    assert procs.parse_listening("not listening on 1.2.3.4:5") is None


def test_listening_line_with_a_resp_port():
    line = "listening on 127.0.0.1:8080, resp on 127.0.0.1:6379\n"
    assert procs.parse_listening(line) == ("127.0.0.1", 8080)  # callers keep (host, HTTP port)
    assert procs.parse_resp_port(line) == 6379
    assert procs.parse_resp_port(b"listening on 10.0.0.2:1, resp on 10.0.0.2:2") == 2
    assert procs.parse_resp_port("listening on 127.0.0.1:8080") is None
    assert procs.parse_resp_port("config threads=1") is None
    assert procs.parse_resp_port("listening on 127.0.0.1:8080, resp on") is None
    assert procs.parse_listening("listening on 127.0.0.1:8080, resp on") is None


def test_a_listening_server_reads_its_resp_port(tmp_path):
    code = ("import time\nprint('listening on 127.0.0.1:1234, resp on 127.0.0.1:5678', "
            "flush=True)\ntime.sleep(60)")
    with procs.ListeningServer([sys.executable, "-c", code], name="fake") as p:
        assert (p.port, p.resp_port) == (1234, 5678)
    code = "import time\nprint('listening on 127.0.0.1:1234', flush=True)\ntime.sleep(60)"
    with procs.ListeningServer([sys.executable, "-c", code], name="fake") as p:
        assert (p.port, p.resp_port) == (1234, None)


def test_a_process_that_exits_before_ready_says_so(tmp_path):
    p = procs.ListeningServer([sys.executable, "-c", "print('boom'); raise SystemExit(3)"],
                              name="fake")
    with pytest.raises(procs.ServerError, match="fake exited.*boom"):
        p.start()


def test_a_fake_server_is_ready_on_its_line_and_logged(tmp_path):
    code = ("import socket,time\ns=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
            "print('hello'); print('listening on 127.0.0.1:%d' % s.getsockname()[1], flush=True)\n"
            "time.sleep(60)")
    with procs.ListeningServer([sys.executable, "-c", code], log_path=tmp_path / "x.log",
                               cpu=0) as p:
        assert p.port > 0 and p.host == "127.0.0.1"
        assert p.stdout_lines[0] == b"hello"
        pid = p.pid
    assert gone(pid)
    assert b"listening on" in (tmp_path / "x.log").read_bytes()


# --- cache_server ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server_bin():
    if not SERVER.exists():
        pytest.fail(f"no {SERVER}: build it (bash scripts/setup.sh --build release)")
    return SERVER


def test_cache_server_starts_pinned_answers_and_stops(server_bin):
    with procs.CacheServer(server_bin, ["-t", "1"], cpu=0) as srv:
        assert srv.host == "127.0.0.1" and srv.port > 0
        assert srv.config_line.startswith("config ")
        assert os.sched_getaffinity(srv.pid) == {0}
        assert http(srv.port, "PUT", "/key/a/b").startswith(b"HTTP/1.1 ")
        assert b"\r\n\r\nb" in http(srv.port, "GET", "/key/a")
        pid = srv.pid
    assert gone(pid) and srv.proc.returncode == 0


def test_cache_server_is_stopped_when_the_block_raises(server_bin):
    with pytest.raises(KeyError):
        with procs.CacheServer(server_bin, ["-t", "1"]) as srv:
            pid = srv.pid
            raise KeyError("boom")
    assert gone(pid)


def test_bad_flags_fail_with_the_servers_words(server_bin):
    with pytest.raises(procs.ServerError, match="cache_server exited"):
        procs.CacheServer(server_bin, ["--no-such-flag"]).start()


def test_stop_reports_code_time_and_stderr(server_bin):
    srv = procs.CacheServer(server_bin, ["-t", "1"], stderr_apart=True).start()
    code, elapsed, err = srv.stop(signal.SIGINT)
    assert code == 0 and elapsed < procs.STOP_TIMEOUT_S and isinstance(err, str)


def test_stop_all_stops_what_is_left(server_bin):
    srv = procs.CacheServer(server_bin, ["-t", "1"]).start()
    procs.stop_all()
    assert gone(srv.pid)


# --- PostgreSQL ------------------------------------------------------------------------------

def test_postgres_cluster_runs_and_is_removed():
    with postgres.pinned_cluster(cpu=0, max_connections=20) as pg:
        assert postgres.psql(pg.conninfo, "SELECT 1+1").strip() == "2"
        assert os.sched_getaffinity(pg.postmaster_pid) == {0}
        directory = pg.dir
        pg.restart()
        assert postgres.psql(pg.conninfo, "SHOW max_connections").strip() == "20"
    assert not os.path.exists(directory)


def test_postgres_cleanup_on_error():
    with pytest.raises(RuntimeError):
        with postgres.PgCluster() as pg:
            directory, pid = pg.dir, pg.pids()[0]
            raise RuntimeError("boom")
    assert not os.path.exists(directory) and gone(pid)


# --- peers -----------------------------------------------------------------------------------

def test_redis_answers_and_stops(tmp_path):
    with peers.Redis(tmp_path / "r", ["--appendonly", "yes"], cpu=0) as r:
        with socket.create_connection(("127.0.0.1", r.port), timeout=5) as s:
            s.sendall(b"SET k v\r\n")
            assert s.recv(16) == b"+OK\r\n"
        pid = r.pid
    assert gone(pid)
    assert (tmp_path / "r" / "redis.log").exists()


def test_nginx_and_haproxy_in_front_of_it(tmp_path):
    with peers.Nginx(tmp_path / "n", cpu=0) as n:
        assert n.worker_pid() is not None
        with peers.HAProxy(tmp_path / "h", [n.address], cpu=1) as h:
            url = f"http://{h.address}/bench"
            with urllib.request.urlopen(url, timeout=5) as r:
                assert r.read().decode() == peers.BODY100
            hpid = h.pid
        npid = n.pid
    assert gone(hpid) and gone(npid)


# --- /proc, metadata, tables -----------------------------------------------------------------

def test_resources_see_a_busy_process():
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with resources.Resources([p.pid], disk_path=Path("/")) as r:
            time.sleep(0.4)
    finally:
        p.kill()
        p.wait()
    fig = r.figures()
    # A busy loop gets what a loaded machine leaves it: some CPU, at most one core.
    assert 2 < fig["server_cpu_pct"] <= 105
    assert fig["disk_note"] and fig["wall_s"] >= 0.4


def test_run_metadata_names_machine_and_revision():
    m = metadata.run_metadata("test", x=1)
    assert m["tool"] == "test" and m["x"] == 1 and m["cores"] >= 1
    assert m["git_revision"] != "unknown" and m["kernel"]
    assert "redis" in metadata.version(["redis-server", "--version"]).lower()


def test_metadata_write_and_the_redis_version(tmp_path):
    m = metadata.write(tmp_path, "test", x=2)
    assert json.loads((tmp_path / "meta.json").read_text()) == m and m["x"] == 2
    assert peers.redis7_version().split(".")[0] in ("7", "8")


def test_md_table_and_numbers():
    assert tables.md_table(["a", "b"], [[1, tables.fnum(1234.5, 1)]]) == \
        "| a | b |\n|---|---:|\n| 1 | 1,234.5 |\n"
    assert tables.md_table(["a", "b"], [], align="ll") == "| a | b |\n|---|---|\n"
    assert tables.table_head(["a", "b"], "rl") == ["| a | b |", "|---:|---|"]
    assert tables.row([1, "x"]) == "| 1 | x |"
    # One mark for a figure not measured, whatever the formatting.
    assert tables.NONE == "–"
    for blank in (tables.fnum(None), tables.fnum(None, 2, unit="×"), tables.fratio(None),
                  tables.slashed([None]), tables.listed([None])):
        assert blank == tables.NONE
    assert tables.fnum(12345.678) == "12,346" and tables.fnum(0.1184, 3) == "0.118"
    assert tables.fnum(12345.678, 3, grouped=False) == "12345.678"
    assert tables.fratio(1234.5) == "1234.50" and tables.fratio(1.156, "×") == "1.16×"
    assert tables.slashed([1200, None], 0) == "1,200/–" and tables.listed([1, 2.5], 1) == "1.0, 2.5"


# --- cli: a script's command line ---------------------------------------------------------------

DOC = "demo.py — what it does.\n\nMore about it."


def demo_parser():
    p = cli.Parser("demo", DOC)
    p.add_argument("--n", metavar="N", type=cli.positive_int, default="2")
    p.add_argument("--out", metavar="DIR")
    cli.add_cpu_options(p, "the servers", "the clients")
    return p


def usage_error(capsys, call) -> str:
    """The one line a usage error prints; the exit status must be 2."""
    with pytest.raises(SystemExit) as e:
        call()
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("demo: ") and err.endswith(" (see --help)\n")
    return err


def test_parser_help_is_the_docstring():
    p = demo_parser()
    assert p.prog == "python3 -m scripts.demo" and p.description == "demo.py — what it does."
    assert p.epilog == "More about it." and not p.allow_abbrev
    assert p.parse_args([]).n == 2


@pytest.mark.parametrize("argv, message", [
    (["--out"], "--out: needs a value"),
    (["--bogus"], "unknown argument '--bogus'"),
    (["--n", "0"], "'0' is not a positive integer"),
    (["--ou", "x"], "unknown argument '--ou x'"),  # no abbreviations
    (["--server-cpu", "a"], "'a' is not a CPU list"),
])
def test_parser_usage_errors_are_one_line(capsys, argv, message):
    assert message in usage_error(capsys, lambda: demo_parser().parse_args(argv))


@pytest.mark.parametrize("check, message", [
    (lambda p: p.duration("abc"), "--duration 'abc' is not a number of seconds"),
    (lambda p: p.duration("0.05"), "--duration must be 0.1..600 s"),
    (lambda p: p.duration("601"), "--duration must be 0.1..600 s"),
    (lambda p: p.conns("", 8), "--conns is empty"),
    (lambda p: p.conns("1 x", 8), "--conns: 'x' is not a connection count 1..8"),
    (lambda p: p.conns("1 9", 8), "--conns: '9' is not a connection count 1..8"),
    (lambda p: p.conns("4 4", 8), "--conns repeats a count"),
    (lambda p: p.whole("--keys", "5", 100, 1000, "100..1000"), "--keys '5' must be 100..1000"),
    (lambda p: p.whole("--keys", "-1", 1, None, "positive"), "--keys '-1' must be positive"),
    (lambda p: p.decimal("--seconds", "0.4", 0.5, 60, "0.5..60"), "--seconds '0.4' must be 0.5..60"),
    (lambda p: p.decimal("--seconds", "61", 0.5, 60, "0.5..60"), "--seconds '61' must be 0.5..60"),
    (lambda p: p.decimal("--seconds", "nan", 0.5, 60, "0.5..60"), "--seconds 'nan' must be"),
    (lambda p: p.decimal("--seconds", "inf", 0.5, 60, "0.5..60"), "--seconds 'inf' must be"),
    (lambda p: p.decimal("--seconds", "1e1", 0.5, 60, "0.5..60"), "--seconds '1e1' must be"),
    (lambda p: p.decimal("--seconds", "-1", 0.5, 60, "0.5..60"), "--seconds '-1' must be"),
    (lambda p: p.decimal("--seconds", "2x", 0.5, 60, "0.5..60"), "--seconds '2x' must be"),
    (lambda p: p.decimal("--seconds", "", 0.5, 60, "0.5..60"), "--seconds '' must be"),
])
def test_option_checks_are_usage_errors(capsys, check, message):
    assert message in usage_error(capsys, lambda: check(demo_parser()))


def test_option_checks_pass_good_values():
    p = demo_parser()
    assert p.duration("1.5") == 1.5 and p.duration(".5") == 0.5 and p.duration("600") == 600
    assert p.conns("1 8 50", 64) == [1, 8, 50]
    assert p.whole("--keys", "100", 100, None, "x") == 100
    assert p.decimal("--seconds", "0.5", 0.5, 60, "x") == 0.5
    assert p.decimal("--seconds", "60", 0.5, 60, "x") == 60 and p.decimal("--s", "1.", 1, 2, "x") == 1


def test_cpus_come_from_the_environment(capsys, monkeypatch):
    monkeypatch.delenv("SERVER_CPU", raising=False)
    monkeypatch.delenv("CLIENT_CPU", raising=False)
    assert demo_parser().cpus() == (0, 1)
    monkeypatch.setenv("SERVER_CPU", "3")
    monkeypatch.setenv("CLIENT_CPU", "2")
    assert demo_parser().cpus() == (3, 2)
    monkeypatch.setenv("CLIENT_CPU", "3")
    assert "SERVER_CPU and CLIENT_CPU must differ" in usage_error(capsys, demo_parser().cpus)
    assert "two CPUs" in usage_error(capsys, lambda: demo_parser().cpus("two CPUs"))
    monkeypatch.setenv("CLIENT_CPU", "x")
    assert "must be CPU numbers" in usage_error(capsys, demo_parser().cpus)


def test_cpu_options_default_to_the_environment(monkeypatch):
    monkeypatch.setenv("SERVER_CPU", "2,3")
    monkeypatch.setenv("CLIENT_CPU", "")  # empty: the default, as ${CLIENT_CPU:-1}
    a = demo_parser().parse_args([])
    assert (a.server_cpu, a.client_cpu) == ("2,3", "1")
    assert demo_parser().parse_args(["--client-cpu", "0-3"]).client_cpu == "0-3"


def test_option_types():
    assert cli.positive_int("3") == 3 and cli.uint("0") == 0
    assert cli.int_list("1 2 4") == [1, 2, 4] and cli.int_list("1,16", ",") == [1, 16]
    for bad in ("0", "-1", "x", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            cli.positive_int(bad)
    for call in (lambda: cli.int_list("  "), lambda: cli.uint("-1"), lambda: cli.cpu_list("1,")):
        with pytest.raises(argparse.ArgumentTypeError):
            call()


# --- bench: a benchmark script's run ------------------------------------------------------------

def test_require_cpus_pins_or_names_the_online_cpus():
    bench.require_cpus(min(os.sched_getaffinity(0)))
    with pytest.raises(bench.Failure, match=r"cannot pin to CPU 4095 \(online: .+\); set SERVER"):
        bench.require_cpus(4095)


def test_require_tools_and_help(tmp_path):
    bench.require_tools(("sh",), "dash")
    with pytest.raises(bench.Failure, match=r"no-such-tool not found \(Debian: apt-get install pkg\)"):
        bench.require_tools(("sh", "no-such-tool"), "pkg")
    fake = tmp_path / "fake"
    fake.write_text("#!/bin/sh\necho '  --store SPEC'\necho '  --other' >&2\n")
    fake.chmod(0o755)
    assert bench.help_has(fake, "--store") and bench.help_has(fake, "--other")
    bench.require_help(fake, ("--store", "--other"))
    with pytest.raises(bench.Failure, match=r"fake has no --board \(an older build\?\)"):
        bench.require_help(fake, ("--store", "--board"))


def test_binaries_from_the_build_or_the_environment(tmp_path, monkeypatch):
    for rel in ("server/cache_server", "client/bench_client"):
        (tmp_path / rel).parent.mkdir()
        (tmp_path / rel).write_text("#!/bin/sh\n")
        (tmp_path / rel).chmod(0o755)
    monkeypatch.delenv("CACHE_SERVER", raising=False)
    monkeypatch.delenv("BENCH_CLIENT", raising=False)
    assert bench.binaries(tmp_path) == (tmp_path / "server/cache_server",
                                        tmp_path / "client/bench_client")
    monkeypatch.setenv("BENCH_CLIENT", str(tmp_path / "none"))
    with pytest.raises(bench.Failure, match="no bench_client at .*none .build it"):
        bench.binaries(tmp_path)


def test_split_conns():
    assert bench.split_conns(200, 8) == (8, 25) and bench.split_conns(50, 8) == (5, 10)
    assert bench.split_conns(7, 2) == (1, 7) and bench.split_conns(1, 8) == (1, 1)


def test_results_dir_refuses_a_finished_run(tmp_path):
    out = bench.results_dir(str(tmp_path / "r"), "unused")
    assert out.is_absolute() and (out / "raw").is_dir()
    (out / "points.jsonl").write_text("")
    with pytest.raises(bench.Failure, match="already holds a run"):
        bench.results_dir(str(out), "unused")


def test_scratch_dir_is_removed_however_the_block_ends(tmp_path):
    with bench.scratch_dir("demo", str(tmp_path)) as work:
        assert work.parent == tmp_path and work.name.startswith("demo.") and work.is_dir()
    assert not work.exists()
    with pytest.raises(RuntimeError), bench.scratch_dir("demo", str(tmp_path)) as work:
        (work / "f").write_text("x")
        raise RuntimeError
    assert not work.exists()


def test_scratch_dir_on_a_disk_refuses_tmpfs_and_missing_parents(tmp_path):
    with pytest.raises(bench.Failure, match="is not a writable directory"):
        with bench.scratch_dir("demo", str(tmp_path / "missing"), disk=True):
            pass
    if bench.filesystem(Path("/dev/shm")) == "tmpfs":
        with pytest.raises(bench.Failure, match="is on tmpfs"):
            with bench.scratch_dir("demo", "/dev/shm", disk=True):
                pass
        assert not list(Path("/dev/shm").glob("demo.*"))


def test_run_main_exit_status(tmp_path, capsys):
    def failing():
        raise bench.Failure("no luck")

    def interrupted():
        raise KeyboardInterrupt

    assert bench.run_main("demo", lambda: tmp_path) == 0
    assert (tmp_path / "loadavg_end.txt").read_text() != ""
    assert capsys.readouterr().err.endswith(f"results in {tmp_path}\n")
    assert bench.run_main("demo", lambda: None) == 0
    assert bench.run_main("demo", failing) == 1
    assert capsys.readouterr().err == "demo: no luck\n"
    assert bench.run_main("demo", failing, failed=2) == 2
    assert bench.run_main("demo", interrupted) == 130


def test_run_records_commands_and_times_its_clients(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    (out / "raw").mkdir(parents=True)
    work.mkdir()
    cpu = min(os.sched_getaffinity(0))
    run = bench.Run(out, work, Path("/b/cache_server"), Path("/b/bench_client"), cpu, cpu)
    run.record_cmd("x", run.pinned(cpu, ["/b/bench_client", "--json", out / "raw" / "x.json",
                                         "--dir", work / "d", "a b"]))
    assert (out / "commands.txt").read_text() == \
        f"x: taskset -c {cpu} bench_client --json raw/x.json --dir $TMP/d 'a b'\n"
    rc, real, user, sys_ = run.client(["sh", "-c", "echo out; echo err >&2; exit 3"],
                                      out / "raw" / "c.txt", times=out / "raw" / "c.time")
    assert rc == 3 and real >= 0 and user >= 0 and sys_ >= 0
    assert (out / "raw" / "c.txt").read_text() == "out\nerr\n"
    assert len((out / "raw" / "c.time").read_text().split()) == 3
    assert run.client(["sleep", "5"], out / "raw" / "s.txt", timeout_s=0.2)[0] == 124
    run.emit({"a": 1})
    assert (out / "points.jsonl").read_text() == '{"a": 1}\n'
