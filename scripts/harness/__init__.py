"""harness — the one Python package every script, study, trace tool and Python test uses to run
the things it measures (issue 31). Stdlib only.

- procs:     a pinned child process with its output drained, cleanup on every exit path;
             cache_server started on a free port and ready by its one listening line
             (LISTENING, parse_listening: the only place that line is read)
- postgres:  a throwaway PostgreSQL cluster (initdb as `postgres`, 127.0.0.1, ephemeral port)
- peers:     Redis, nginx and HAProxy, pinned, on free ports, in a scratch directory
- resources: CPU ticks from /proc/PID/stat, disk %util from /proc/diskstats, over a with-block
- metadata:  the run's machine, tool versions and git revision
- tables:    Markdown tables and the numbers in them
- bench:     what the benchmark scripts share around their measurements: one-line usage
             errors, --duration/--conns/SERVER_CPU checks, the scratch and results
             directories, the servers of a run, the exit status and the report
- report:    what the benchmark report scripts share (DIR [--quiet], cells, the targets)
- benchrun:  what a benchmark script's run shares: argparse with one-line usage errors,
             checks before it starts, its scratch and results directories, commands.txt,
             servers by name, pinned load generators with their CPU time
- cli:       a script's argparse parser: one-line usage errors (exit 2), option types, env defaults

Scripts import it with `sys.path.insert(0, "<repo>/scripts")` then `import harness`.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "build" / "release"
CACHE_SERVER = RELEASE / "server" / "cache_server"
BENCH_CLIENT = RELEASE / "client" / "bench_client"
