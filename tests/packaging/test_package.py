"""The Debian package and the systemd unit (packaging/; docs/server.md, "Install as a service").

Builds the .deb once with `cpack -G DEB` from the release tree ($CACHE_BUILD_DIR) into a scratch
folder, inspects it with `dpkg-deb`, unpacks it with `dpkg -x`, and checks: the files, the
Depends (every library the binaries link is covered, Boost needs none), the unpacked binaries'
--help, the unit (`systemd-analyze verify`, the settings issue 32 names, its security rating,
which docs/server.md and README.md quote, and TimeoutStopSec above the environment file's store
steps), the server run from the package with the environment file's flags under the unit's
MemoryDenyWriteExecute (prctl PR_SET_MDWE, the same rule) and its system-call filter (every
call strace sees must be allowed), and `cmake --install` into a scratch prefix.
"""
import ctypes
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.harness.procs import ListeningServer

SOURCE = Path(os.environ.get("CACHE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("CACHE_BUILD_DIR", SOURCE / "build" / "release"))

UNIT = "usr/lib/systemd/system/cache-server.service"
ENV_FILE = "etc/default/cache-server"
EXPECTED_FILES = ["usr/bin/cache_server", "usr/bin/bench_client", UNIT, ENV_FILE,
                  "usr/share/doc/cache-server/README.md",
                  "usr/share/doc/cache-server/docs/server.md",
                  "usr/share/doc/cache-server/docs/api.md"]
# Issue 32's unit settings, exactly.
REQUIRED_SETTINGS = {
    "DynamicUser": "yes", "StateDirectory": "cache-server", "ProtectSystem": "strict",
    "ProtectHome": "yes", "NoNewPrivileges": "yes", "PrivateTmp": "yes",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "MemoryDenyWriteExecute": "yes",
    "Restart": "on-failure",
}
# systemd-analyze security's words for an exposure "OK" or better (< 5.0).
GOOD_RATINGS = ("OK", "SAFE", "PERFECT")
# Shutdown's waits on the store (server/store_tier.cc, docs/server.md "Shutdown"): the drain,
# then at most five steps of --store-timeout (the flusher's flush, a pending reset, the final
# flush, and two closes), the closes with 5 s of grace each.
DRAIN_S, CLOSE_GRACE_S, STORE_STEPS = 1.5, 5.0, 5
PR_SET_MDWE, PR_GET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 66, 1
# Starts argv[1:] with MemoryDenyWriteExecute's rule in force (inherited across execve).
MDWE_LAUNCHER = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    f"if libc.prctl({PR_SET_MDWE}, {PR_MDWE_REFUSE_EXEC_GAIN}, 0, 0, 0) != 0:\n"
    "    sys.exit('prctl(PR_SET_MDWE): errno %d' % ctypes.get_errno())\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n")


def run(argv, **kw):
    """Runs argv; fails the test with its output when it exits non-zero."""
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=240, **kw)
    command = " ".join(map(str, argv))
    assert r.returncode == 0, f"{command}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    return r.stdout


def need(tool, package):
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} not found: apt-get install {package} (bash scripts/setup.sh does)")


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    """The .deb cpack builds from the release tree, in a scratch folder."""
    need("cpack", "cmake")
    need("dpkg-shlibdeps", "dpkg-dev")
    assert (BUILD / "CPackConfig.cmake").exists(), f"{BUILD} is not a configured build tree"
    out = tmp_path_factory.mktemp("deb")
    run(["cpack", "-G", "DEB", "-B", out, "--config", BUILD / "CPackConfig.cmake"])
    found = sorted(out.glob("cache-server_*.deb"))
    assert len(found) == 1, f"expected one cache-server_*.deb in {out}: {os.listdir(out)}"
    return found[0]


@pytest.fixture(scope="module")
def unpacked(deb, tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    run(["dpkg", "-x", deb, root])
    return root


def unit_settings(path):
    """{key: [values...]} of a unit file's assignments (every section)."""
    settings = {}
    for line in Path(path).read_text().splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line.strip())
        if m:
            settings.setdefault(m.group(1), []).append(m.group(2))
    return settings


def env_opts(root):
    """CACHE_SERVER_OPTS of the packaged environment file, split as systemd splits $VAR."""
    text = (root / ENV_FILE).read_text()
    m = re.search(r'^CACHE_SERVER_OPTS="([^"]*)"$', text, re.M)
    assert m, f"{ENV_FILE} sets no CACHE_SERVER_OPTS"
    return m.group(1).split()


def test_contents(deb, tmp_path):
    listing = run(["dpkg-deb", "-c", deb])
    paths = {line.split()[-1].removeprefix("./") for line in listing.splitlines()}
    missing = [f for f in EXPECTED_FILES if f not in paths]
    assert not missing, f"missing from {deb.name}: {missing}\n{listing}"
    assert re.fullmatch(r"cache-server_[^_]+_[a-z0-9]+\.deb", deb.name), deb.name
    assert run(["dpkg-deb", "-f", deb, "Package"]).strip() == "cache-server"
    ctrl = tmp_path / "DEBIAN"
    run(["dpkg-deb", "-e", deb, ctrl])
    assert (ctrl / "conffiles").read_text().split() == ["/" + ENV_FILE]
    for script in ("postinst", "prerm", "postrm"):
        run(["sh", "-n", ctrl / script])


def needed_libraries(binary):
    """{soname: resolved path} of what the dynamic loader loads directly for binary."""
    needed = re.findall(r"\(NEEDED\).*\[(.+)\]", run(["readelf", "-d", binary]))
    resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", run(["ldd", binary]), re.M))
    missing = [n for n in needed if n not in resolved]
    assert not missing, f"{binary}: cannot resolve {missing}"
    return {n: resolved[n] for n in needed}


def owning_package(path):
    out = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True, text=True)
    if out.returncode != 0:  # merged /usr: dpkg knows the /lib spelling
        alt = re.sub(r"^/usr/lib/", "/lib/", os.path.realpath(path))
        out = subprocess.run(["dpkg", "-S", alt], capture_output=True, text=True)
    assert out.returncode == 0, f"no package owns {path}: {out.stderr}"
    return out.stdout.split(":")[0].strip()


def test_depends_cover_every_linked_library(deb, unpacked):
    depends = run(["dpkg-deb", "-f", deb, "Depends"])
    names = {d.strip().split()[0] for d in depends.split(",") if d.strip()}
    owners = {}
    for exe in ("cache_server", "bench_client"):
        for soname, path in needed_libraries(unpacked / "usr/bin" / exe).items():
            owners[soname] = owning_package(path)
    uncovered = {s: p for s, p in owners.items() if p not in names}
    assert not uncovered, f"Depends ({depends.strip()}) lacks the packages of {uncovered}"
    # The ones issue 32 names, when linked (jemalloc unless built with ALLOCATOR=system).
    for soname, package in (("librocksdb.so.7.8", "librocksdb7.8"), ("libpq.so.5", "libpq5"),
                            ("libjemalloc.so.2", "libjemalloc2")):
        if soname in owners:
            assert package in names, f"{package} missing from Depends: {depends}"
    assert "librocksdb7.8" in names and "libpq5" in names, depends
    # Boost is header-only here: a libboost dependency would mean something links it.
    assert not any(n.startswith("libboost") for n in names), depends


def test_unpacked_binaries_run(unpacked):
    for exe, flag in (("cache_server", "--store"), ("bench_client", "--max-threads")):
        out = run([unpacked / "usr/bin" / exe, "--help"])
        assert flag in out, f"{exe} --help does not mention {flag}:\n{out}"


def test_unit_has_the_required_settings(unpacked):
    settings = unit_settings(unpacked / UNIT)
    wrong = {k: settings.get(k) for k, v in REQUIRED_SETTINGS.items() if settings.get(k) != [v]}
    assert not wrong, f"{UNIT}: expected {REQUIRED_SETTINGS}, got {wrong}"
    assert settings["EnvironmentFile"] == ["/" + ENV_FILE]
    exec_start = settings["ExecStart"][0].split()
    assert exec_start == ["/usr/bin/cache_server", "$CACHE_SERVER_OPTS"], exec_start
    assert (unpacked / exec_start[0].lstrip("/")).is_file()
    opts = env_opts(unpacked)
    store = opts[opts.index("--store") + 1]
    assert store.startswith("rocksdb:/var/lib/cache-server/"), \
        f"the store must be in the StateDirectory, /var/lib/cache-server: {store}"


def seconds(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|min)?", text)
    assert m, f"not a duration: {text}"
    return float(m.group(1)) * {"ms": 0.001, "s": 1, None: 1, "min": 60}[m.group(2)]


def test_stop_timeout_covers_the_flush(unpacked):
    """systemctl stop sends SIGTERM, then SIGKILL after TimeoutStopSec: it must outlast the
    shutdown's bounded waits on the store for the environment file's --store-timeout."""
    settings = unit_settings(unpacked / UNIT)
    assert settings.get("KillSignal", ["SIGTERM"]) == ["SIGTERM"]
    opts = env_opts(unpacked)
    store_timeout = seconds(opts[opts.index("--store-timeout") + 1]) \
        if "--store-timeout" in opts else 2.0  # cache_server's default
    longest = DRAIN_S + STORE_STEPS * store_timeout + 2 * CLOSE_GRACE_S
    stop = seconds(settings["TimeoutStopSec"][0])
    assert stop > longest, f"TimeoutStopSec {stop} s <= the longest stop, {longest} s"


def test_unit_verifies(unpacked, tmp_path):
    """systemd-analyze verify, with ExecStart pointed at the unpacked binary (verify checks
    that the command exists on this machine, where the package is not installed)."""
    need("systemd-analyze", "systemd")
    text = (unpacked / UNIT).read_text()
    unit = tmp_path / "cache-server.service"
    unit.write_text(text.replace("/usr/bin/cache_server", str(unpacked / "usr/bin/cache_server")))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr.strip(), f"verify: {r.stdout}{r.stderr}"


def security_rating(unit):
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=49",
                        "--no-pager", str(unit)], capture_output=True, text=True)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d) (\w+)", r.stdout)
    assert m, f"no rating in:\n{r.stdout}{r.stderr}"
    return r.returncode, m.group(1), m.group(2)


def test_unit_security_rating(unpacked):
    need("systemd-analyze", "systemd")
    rc, score, word = security_rating(unpacked / UNIT)
    assert word in GOOD_RATINGS and rc == 0, f"systemd-analyze security: {score} {word}"
    for doc in ("docs/server.md", "README.md"):
        assert f"{score} {word}" in (SOURCE / doc).read_text(), \
            f"{doc} does not quote the rating, {score} {word}"


def allowed_syscalls(settings):
    """The system calls the unit's SystemCallFilter= lines allow (allow lists minus ~ lists)."""
    groups, current = {}, None
    for line in run(["systemd-analyze", "syscall-filter"]).splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif line.strip() and not line.strip().startswith("#") and current is not None:
            current.append(line.strip())

    def expand(name, seen=()):
        if not name.startswith("@"):
            return {name}
        return set().union(*(expand(m, seen + (name,)) for m in groups[name] if m not in seen))

    allowed, denied = set(), set()
    for value in settings["SystemCallFilter"]:
        target = denied if value.startswith("~") else allowed
        for name in value.lstrip("~").split():
            target |= expand(name)
    return allowed - denied


def request(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def packaged_flags(root, data_dir):
    """The environment file's flags, with the store moved to data_dir and port 0."""
    opts = env_opts(root)
    opts[opts.index("--store") + 1] = f"rocksdb:{data_dir}"
    return opts + ["--port", "0", "--write-mode", "behind"]  # a later flag wins


def start_packaged(root, data_dir, prefix=()):
    argv = [sys.executable, "-c", MDWE_LAUNCHER, *prefix,
            str(root / "usr/bin/cache_server"), *packaged_flags(root, data_dir)]
    return ListeningServer(argv, name="packaged cache_server").start()


def traced_server_pid(tracer_pid):
    children = Path(f"/proc/{tracer_pid}/task/{tracer_pid}/children").read_text().split()
    assert len(children) == 1, f"strace has children {children}"
    return int(children[0])


def test_server_runs_under_the_units_restrictions(unpacked, tmp_path):
    """Memory that is never writable and executable, and only the filter's system calls: a
    write-behind write, a read, a stop that flushes, and the value read back after a restart."""
    need("strace", "strace")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_GET_MDWE, 0, 0, 0, 0) < 0:  # kernels before 6.3 lack it
        pytest.fail("this kernel has no PR_SET_MDWE (Linux 6.3+) to check MemoryDenyWriteExecute")
    summary, data = tmp_path / "strace.txt", tmp_path / "rocksdb"
    srv = start_packaged(unpacked, data, [shutil.which("strace"), "-f", "-c", "-o", str(summary)])
    server_pid = traced_server_pid(srv.pid)  # strace's exit status is the server's
    try:
        assert request(srv.port, "PUT", "/key/pkg", b"packaged")[0] == 201
        assert request(srv.port, "GET", "/key/pkg") == (200, b"packaged")
        maps = Path(f"/proc/{server_pid}/maps").read_text()
        wx = [m for m in maps.splitlines() if re.match(r"\S+ .wx", m)]
        assert not wx, f"writable and executable mappings: {wx}"
        os.kill(server_pid, signal.SIGTERM)
        srv.proc.wait(30)
    finally:
        if srv.alive:  # a failure above: strace would detach and leave the server running
            os.kill(server_pid, signal.SIGKILL)
        code, _, _ = srv.stop()
    assert code == 0, f"the server under MDWE and strace exited {code}:\n{srv.output()[-2000:]}"
    calls = {line.split()[-1] for line in summary.read_text().splitlines()[2:]
             if re.fullmatch(r"[a-z_0-9]+", line.split()[-1] if line.split() else "")}
    calls.discard("total")
    refused = calls - allowed_syscalls(unit_settings(unpacked / UNIT))
    assert calls and not refused, f"the unit's SystemCallFilter refuses {sorted(refused)}"
    with start_packaged(unpacked, data) as again:  # the SIGTERM flush made it durable
        assert request(again.port, "GET", "/key/pkg") == (200, b"packaged")


def test_no_library_needs_an_executable_stack(unpacked):
    """An executable stack (PT_GNU_STACK RWE) in the binary or a library it loads would make
    the loader ask for W+X memory, which MemoryDenyWriteExecute refuses; so would text
    relocations."""
    binary = unpacked / "usr/bin/cache_server"
    for path in [binary, *needed_transitively(binary)]:
        headers = run(["readelf", "-lW", path])
        stack = re.search(r"GNU_STACK(?:\s+\S+){5}\s+(\S+)", headers)
        assert stack and "E" not in stack.group(1), f"{path}: executable stack"
        assert "TEXTREL" not in run(["readelf", "-dW", path]), f"{path}: text relocations"


def needed_transitively(binary):
    return sorted(set(re.findall(r"=> (/\S+)", run(["ldd", binary]))))


def test_cmake_install(tmp_path):
    """`cmake --install` with another prefix: the unit names that prefix's binary and
    environment file, and a second install keeps an edited environment file."""
    prefix = tmp_path / "prefix"
    run(["cmake", "--install", BUILD, "--prefix", prefix])
    for f in ("bin/cache_server", "bin/bench_client", "share/doc/cache-server/docs/server.md",
              "lib/systemd/system/cache-server.service", "etc/default/cache-server"):
        assert (prefix / f).is_file(), f"cmake --install did not install {f}"
    settings = unit_settings(prefix / "lib/systemd/system/cache-server.service")
    assert settings["ExecStart"][0].split()[0] == f"{prefix}/bin/cache_server"
    assert settings["EnvironmentFile"] == [f"{prefix}/etc/default/cache-server"]
    r = subprocess.run(["systemd-analyze", "verify",
                        str(prefix / "lib/systemd/system/cache-server.service")],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"verify: {r.stdout}{r.stderr}"
    env = prefix / "etc/default/cache-server"
    env.write_text('CACHE_SERVER_OPTS="--port 9999"\n')
    run(["cmake", "--install", BUILD, "--prefix", prefix])
    assert env.read_text() == 'CACHE_SERVER_OPTS="--port 9999"\n', "the edited file was replaced"
