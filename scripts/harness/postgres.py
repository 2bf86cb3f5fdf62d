"""postgres — a throwaway PostgreSQL cluster for the tests and benchmarks that need one: initdb
into a fresh directory, a server on 127.0.0.1 and an ephemeral port, durable settings (fsync and
synchronous_commit on: durability is part of the store's contract), and removal of everything
afterwards, on every exit path (the with-block, cleanup(), interpreter exit).

    with PgCluster() as pg:          # or pg = PgCluster(); pg.start(); ...; pg.cleanup()
        connect(pg.conninfo)         # "host=127.0.0.1 port=N dbname=postgres user=postgres"
        pg.stop(); pg.start()        # down, then up again on the same port and data
    with pinned_cluster(cpu=0, max_connections=200) as pg: ...   # a benchmark's: pinned, bigger
    psql(pg.conninfo, "SELECT 1")

PostgreSQL refuses to run as root: as root, every PostgreSQL binary runs as the `postgres` user
(runuser), and the directory is chowned to it. Binaries: $PG_BINDIR, `pg_config --bindir`, else
/usr/lib/postgresql/15/bin. Missing PostgreSQL is a clear error naming the package.
tests/support/pg_cluster.py is the command-line face of this module (the C++ tests call it).
"""

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from .procs import HarnessError, free_port, taskset

PACKAGE_HINT = ("PostgreSQL server binaries not found (initdb, pg_ctl): install postgresql-15 "
                "(apt-get install postgresql-15; `bash scripts/setup.sh` installs it)")


class PgClusterError(HarnessError):
    pass


def find_bindir():
    candidates = []
    env = os.environ.get("PG_BINDIR")
    if env:
        candidates.append(env)
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                             check=True, timeout=10).stdout.strip()
        if out:
            candidates.append(out)
    except (OSError, subprocess.SubprocessError):
        pass
    candidates.append("/usr/lib/postgresql/15/bin")
    for d in candidates:
        if os.path.isfile(os.path.join(d, "initdb")) and os.path.isfile(os.path.join(d, "pg_ctl")):
            return d
    raise PgClusterError(PACKAGE_HINT)


class PgCluster:
    """One PostgreSQL cluster in `directory` (a fresh temporary one by default).

    The directory holds data/ (the cluster), log (the server's log), port (so a stopped server
    comes back on the same port) and the server's Unix socket. cleanup() (or leaving the `with`
    block, or interpreter exit) stops the server and removes the directory.
    """

    def __init__(self, directory=None, settings=None):
        """settings: extra server settings, {name: value}, over the test defaults (a benchmark
        wants more connections and buffers than a test)."""
        self.bindir = find_bindir()
        self.settings = dict(settings or {})
        self.owns_dir = directory is None
        # The creator's PID in the name: a cluster whose creator has exited is a leak
        # (tests/scripts/study_checks.py), one whose creator runs is someone's, in use.
        self.dir = os.path.abspath(directory or tempfile.mkdtemp(prefix=f"pg_cluster_{os.getpid()}_"))
        os.makedirs(self.dir, exist_ok=True)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "log")
        self.port = self._read_port()
        self._cleaned = False
        atexit.register(self.cleanup)

    # --- public -------------------------------------------------------------------------------

    @property
    def conninfo(self):
        return f"host=127.0.0.1 port={self.port} dbname=postgres user=postgres"

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def start(self):
        """initdb on first use, then starts the server and waits until it accepts connections."""
        if not os.path.isfile(os.path.join(self.data, "PG_VERSION")):
            self._initdb()
        if self.port is not None:
            self._pg_ctl_start(self.port)
            return self
        last = None
        for _ in range(8):  # the port can be taken between the probe and the bind: pick another
            port = free_port()
            try:
                self._pg_ctl_start(port)
            except PgClusterError as e:
                last = e
                continue
            self.port = port
            with open(os.path.join(self.dir, "port"), "w") as f:
                f.write(str(port))
            return self
        raise last

    def stop(self, mode="fast"):
        """Stops the server (no error if it is not running); the data stays."""
        if not os.path.isfile(os.path.join(self.data, "postmaster.pid")):
            return
        self._run([self._bin("pg_ctl"), "stop", "-w", "-t", "60", "-m", mode, "-D", self.data],
                  check=False)

    def pids(self):
        """The postmaster and its children (the backends, the background processes); [] when
        the cluster is not running. For tests that stop them (SIGSTOP: a server that accepts
        nothing and closes nothing, as a network partition would)."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                master = int(f.readline())
        except (OSError, ValueError):
            return []
        pids = [master]
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = f.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                continue
            if ppid == str(master):
                pids.append(int(p))
        return pids

    @contextlib.contextmanager
    def hung(self):
        """Inside the block every process of the cluster is stopped (SIGSTOP): a server that
        accepts connections and answers nothing, as a hung one or a partition would. They are
        continued when the block ends, whatever happens in it. A process that exits meanwhile
        (a backend whose client left) is skipped."""
        stopped = []
        try:
            for pid in self.pids():
                try:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
                except ProcessLookupError:
                    pass
            yield stopped
        finally:
            for pid in stopped:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass

    def restart(self):
        self.stop()
        return self.start()

    def cleanup(self):
        """Stops the server (immediate: nothing is kept) and removes the directory."""
        if self._cleaned:
            return
        self._cleaned = True
        try:
            self.stop(mode="immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    # --- internals ----------------------------------------------------------------------------

    def _bin(self, name):
        return os.path.join(self.bindir, name)

    def _read_port(self):
        try:
            with open(os.path.join(self.dir, "port")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def _as_postgres(self, argv):
        if os.geteuid() != 0:
            return argv
        if shutil.which("runuser"):
            return ["runuser", "-u", "postgres", "--"] + argv
        return ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(map(_shell_quote, argv))]

    def _run(self, argv, check=True):
        p = subprocess.run(self._as_postgres(argv), capture_output=True, text=True, timeout=120)
        if check and p.returncode != 0:
            raise PgClusterError(f"{os.path.basename(argv[0])} failed ({p.returncode}): "
                                 f"{(p.stderr or p.stdout).strip()}{self._log_tail()}")
        return p

    def _log_tail(self):
        try:
            with open(self.log) as f:
                tail = f.read()[-2000:].strip()
            return "\n--- server log ---\n" + tail if tail else ""
        except OSError:
            return ""

    def _chown(self):
        if os.geteuid() != 0:
            return
        import pwd
        pw = pwd.getpwnam("postgres")
        for root, dirs, files in os.walk(self.dir):
            os.chown(root, pw.pw_uid, pw.pw_gid)
            for n in files:
                os.chown(os.path.join(root, n), pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o700)

    def _initdb(self):
        self._chown()
        self._run([self._bin("initdb"), "-D", self.data, "-A", "trust", "-U", "postgres",
                   "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"])

    def _pg_ctl_start(self, port):
        self._chown()
        opts = (f"-h 127.0.0.1 -p {port} -k {self.dir} -c fsync=on -c synchronous_commit=on "
                "-c shared_buffers=16MB -c max_connections=40 -c max_wal_size=256MB")
        for name, value in self.settings.items():  # later -c of a name wins
            opts += f" -c {name}={value}"
        self._run([self._bin("pg_ctl"), "start", "-w", "-t", "60", "-D", self.data, "-l",
                   self.log, "-o", opts])


@contextlib.contextmanager
def pinned_cluster(cpu=None, max_connections=100, settings=None, directory=None):
    """A benchmark's cluster: PgCluster with `max_connections`, 256MB of shared buffers and extra
    `settings`, its postmaster pinned to `cpu` (backends started later inherit the affinity), in
    `directory` (default a fresh temporary one). Yields the cluster, with .postmaster_pid set;
    removed when the block ends."""
    cluster = PgCluster(directory, settings={"max_connections": max_connections, "shared_buffers": "256MB",
                                  **(settings or {})})
    try:
        cluster.start()
        pids = cluster.pids()  # the postmaster first, then its children
        if not pids:
            raise PgClusterError("PostgreSQL started but its postmaster.pid cannot be read")
        if taskset(cpu):
            for p in pids:
                subprocess.run(["taskset", "-pc", str(cpu), str(p)], capture_output=True)
        cluster.postmaster_pid = pids[0]
        yield cluster
    finally:
        cluster.cleanup()


def psql(conninfo, sql, timeout_s=120, separator=None):
    """Runs SQL with psql against `conninfo`; its output (unaligned, tuples only; fields split by
    `separator` when given). PgClusterError with psql's stderr on failure."""
    argv = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-c", sql]
    if separator is not None:
        argv[5:5] = ["-F", separator]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise PgClusterError(f"psql failed: {sql}\n{r.stderr[-1000:]}")
    return r.stdout


def _shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main(argv):
    usage = "usage: pg_cluster.py {start|stop|stop-only|start-only|restart} DIR [MODE]"
    if len(argv) not in (3, 4) or (len(argv) == 4 and argv[1] != "stop-only"):
        print(usage, file=sys.stderr)
        return 2
    cmd, directory = argv[1], argv[2]
    try:
        if cmd == "stop":
            if not os.path.isdir(directory):
                return 0
            c = PgCluster(directory)
            c.cleanup()
            return 0
        c = PgCluster(directory)
        atexit.unregister(c.cleanup)  # the CLI leaves the cluster running for the caller
        if cmd == "start":
            try:
                c.start()
            except BaseException:
                c.cleanup()
                raise
            print(c.conninfo, flush=True)
        elif cmd == "start-only":
            c.start()
        elif cmd == "stop-only":
            mode = argv[3] if len(argv) == 4 else "fast"
            if mode not in ("smart", "fast", "immediate"):
                print(usage, file=sys.stderr)
                return 2
            c.stop(mode=mode)
        elif cmd == "restart":
            c.restart()
        else:
            print(usage, file=sys.stderr)
            return 2
    except PgClusterError as e:
        print(f"pg_cluster: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
