"""harness — the one Python package every script, study, trace tool and Python test uses to run
the things it measures (issue 31). Stdlib only.

- procs:     a pinned child process with its output drained, cleanup on every exit path;
             cache_server started on a free port and ready by its one listening line
             (LISTENING, parse_listening: the only place that line is read)
- postgres:  a throwaway PostgreSQL cluster (initdb as `postgres`, 127.0.0.1, ephemeral port)
- peers:     Redis, nginx and HAProxy, pinned, on free ports, in a scratch directory (and
             redis7_version(): the Redis 7 the benchmarks need)
- resources: CPU ticks from /proc/PID/stat, disk %util from /proc/diskstats, over a with-block
- metadata:  the run's machine, tool versions and git revision (write(): a run's meta.json)
- tables:    Markdown tables and the numbers in them
- cli:       a script's command line: argparse whose usage errors are one line and exit 2,
             the shared checks (--duration, --conns, whole numbers, SERVER_CPU/CLIENT_CPU),
             option types, CPU options, environment defaults
- bench:     a benchmark script's run once its options are parsed: checks before it starts
             (tools, pinning, binaries and their flags), its scratch directory (on a real
             disk when asked) and results directory, `Run` (commands.txt, servers by name,
             pinned load generators with their CPU time, /stats, a board preload) and
             `run_main` (the exit status, the load average at the end, the report)
- report:    what the benchmark report scripts share (DIR [--quiet], cells, the targets)

scripts/ is a package: the scripts run as `python3 -m scripts.NAME` from the repository root
and import this one as `scripts.harness` (`from scripts.harness import bench`); inside it the
imports are relative, so the Python tests that still put scripts/ itself on their path (tests/
server, tests/client) import it as `harness`. procs.python_module() is the command line that
runs another script of the package.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "build" / "release"
CACHE_SERVER = RELEASE / "server" / "cache_server"
BENCH_CLIENT = RELEASE / "client" / "bench_client"
