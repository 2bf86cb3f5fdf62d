#!/usr/bin/env python3
"""The experiment runner: server configurations x client sweep -> JSON, figures, REPORT.md.

For each server configuration it starts cache_server pinned to --server-cpus on a free port,
waits until it prints its listening line, runs the bench_client sweep pinned to --client-cpus
(with --server-pid, so the server's CPU is sampled), and stops the server. Each variant also gets
one pipelined configuration at -t 1 (bench_client --pipeline N, N = --pipeline-depth, default 16;
skipped with a note when bench_client has no --pipeline). Then, when nginx and wrk are installed,
scripts/compare_nginx.py measures cache_server beside nginx with wrk at pipeline depth 1 and N
(nginx.json). Results go to results/<timestamp>/ (one JSON per configuration; results/latest
points at the newest run), followed by the figures (graphs/plot.py) and REPORT.md
(scripts/report.py).

  python3 -m scripts.experiment                    default: -t 1,2,4 (x baseline/optimized
                                                   when the server has variants) plus -t 1 -P 16,
                                                   ~4 minutes, then nginx vs cache_server, ~1 minute
  python3 -m scripts.experiment --full             longer points, 3 repetitions each
  python3 -m scripts.experiment --target H:P       measure an already-running server instead
  python3 -m scripts.experiment -- --workload zipf --theta 1.1    options after -- go to bench_client

Ctrl-C stops the servers (and the nginx comparison) it started and keeps (and reports) the
finished configurations.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from scripts.harness import cli, metadata
from scripts.harness.procs import CacheServer, free_port, python_module

ROOT = Path(__file__).resolve().parent.parent

SERVER_STOP_TIMEOUT_S = 5
POINT_OVERHEAD_S = 1.5  # connect, preload share, barrier: for the time estimate only
DEFAULT_BUDGET_S = 150  # the default run's measurement time, whatever the number of configurations
NGINX_POINT_OVERHEAD_S = 0.3  # wrk start-up and connect per point: for the time estimate only
NGINX_STOP_TIMEOUT_S = 10


def log(msg: str) -> None:
    print(f"[experiment {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_args(argv: list[str]):
    client_args: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, client_args = argv[:i], argv[i + 1:]
    p = cli.Parser(
        "experiment", allow_abbrev=True,
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Options after -- are passed to bench_client unchanged (see bench_client --help).")
    p.add_argument("--server-threads", default="1,2,4", help="cache_server -t values (default 1,2,4)")
    p.add_argument("--variants", default="auto",
                   help="comma list of server variants, or 'auto': baseline and optimized when "
                        "cache_server supports --variant, else the server's default (default auto)")
    p.add_argument("--client-threads", default="1,2,4,8,16", help="bench_client sweep (default 1,2,4,8,16)")
    p.add_argument("--duration", type=float, default=None,
                   help=f"seconds per point (default: what fits the whole sweep in ~{DEFAULT_BUDGET_S}s, "
                        "3..8 s; --full 10)")
    p.add_argument("--warmup", default=None, help="warm-up per point, bench_client syntax (default 1s)")
    p.add_argument("--repetitions", type=int, default=None, help="sweeps per configuration (default 1, --full 3)")
    p.add_argument("--full", action="store_true", help="longer points and 3 repetitions")
    p.add_argument("--server-cpus", default="0", help="taskset CPU list for the server (default 0)")
    p.add_argument("--client-cpus", default="1", help="taskset CPU list for the client (default 1)")
    p.add_argument("--target", metavar="HOST:PORT", help="benchmark this running server; start none")
    p.add_argument("--server-bin", default=str(ROOT / "build/release/server/cache_server"))
    p.add_argument("--client-bin", default=str(ROOT / "build/release/client/bench_client"))
    p.add_argument("--out", default=str(ROOT / "results"), help="parent of the run directory (default results/)")
    p.add_argument("--no-plots", action="store_true", help="skip figures (REPORT.md still written)")
    p.add_argument("--pipeline-depth", type=int, default=16, metavar="N",
                   help="one extra configuration per variant at -t 1 whose sweep runs bench_client "
                        "--pipeline N, and the nginx comparison's second depth (default 16; 0 disables)")
    p.add_argument("--no-nginx", action="store_true",
                   help="skip the cache_server vs nginx comparison (scripts/compare_nginx.py)")
    p.add_argument("--nginx-connections", default="1,2,4,8,16,32",
                   help="wrk connection counts of the nginx comparison (default 1,2,4,8,16,32)")
    p.add_argument("--nginx-duration", type=int, default=None, metavar="SECONDS",
                   help="seconds per nginx-comparison point, whole seconds (default 2, --full 5)")
    a = p.parse_args(argv)
    a.client_args = client_args
    a.warmup = a.warmup or ("2s" if a.full else "1s")
    a.repetitions = a.repetitions if a.repetitions is not None else (3 if a.full else 1)
    a.nginx_duration = a.nginx_duration if a.nginx_duration is not None else (5 if a.full else 2)
    if (a.duration is not None and a.duration <= 0) or a.repetitions < 1:
        p.error("--duration must be > 0 and --repetitions >= 1")
    if a.pipeline_depth < 0 or a.nginx_duration < 1:
        p.error("--pipeline-depth must be >= 0 and --nginx-duration >= 1")
    try:
        a.client_thread_list = [int(x) for x in a.client_threads.split(",")]
        a.server_thread_list = [int(x) for x in a.server_threads.split(",")]
        a.nginx_connection_list = [int(x) for x in a.nginx_connections.split(",")]
    except ValueError:
        p.error("--client-threads, --server-threads and --nginx-connections take comma-separated "
             "integers, e.g. 1,2,4")
    if a.target and not re.fullmatch(r"[^:\s]+:\d+", a.target):
        p.error(f"--target must be HOST:PORT, got '{a.target}'")
    for b in ([] if a.target else [a.server_bin]) + [a.client_bin]:
        if not os.access(b, os.X_OK):
            p.error(f"{b} is not built (run: bash scripts/setup.sh)")
    return a


def server_variants(args) -> list[str | None]:
    if args.variants != "auto":
        return [v for v in args.variants.split(",") if v]
    help_text = subprocess.run([args.server_bin, "--help"], capture_output=True, timeout=10).stdout
    return ["baseline", "optimized"] if b"--variant" in help_text else [None]


def client_supports_pipeline(client_bin: str) -> bool:
    """bench_client --pipeline N (N requests outstanding per connection) is in its --help."""
    try:
        r = subprocess.run([client_bin, "--help"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--pipeline" in r.stdout + r.stderr


def machine_info() -> dict:
    rev, dirty = metadata.git_revision()
    return {"cpu": metadata.cpu_model() or "?", "cores": os.cpu_count(), "kernel": os.uname().release,
            "git_revision": rev + ("-dirty" if dirty else "")}


class Progress:
    """Points done out of all points (bench_client points, then nginx-comparison points, each
    with its own estimated length), elapsed time and the estimated time left."""

    def __init__(self, point_costs_s: list[float]):
        self.costs, self.done, self.start = point_costs_s, 0, time.monotonic()
        self.total = len(point_costs_s)

    def estimate_s(self) -> float:
        return sum(self.costs)

    def show(self, config: str, detail: str) -> None:
        elapsed = time.monotonic() - self.start
        left = max(0.0, sum(self.costs[self.done:]))
        print(f"\r[{config}] {detail} | points {self.done}/{self.total} | elapsed {elapsed:4.0f}s | "
              f"~{left:4.0f}s left   ", end="", file=sys.stderr, flush=True)


def run_sweep(args, host: str, port: int, server_pid: int | None, json_path: Path,
              label: str, progress: Progress, pipeline: int = 1) -> int:
    cmd = ["taskset", "-c", args.client_cpus, args.client_bin, "-s", host, "-p", str(port),
           "--threads", ",".join(map(str, args.client_thread_list)), "-d", f"{args.duration:g}",
           "--warmup", args.warmup, "--json", str(json_path), *args.client_args]
    if pipeline > 1:
        cmd += ["--pipeline", str(pipeline)]
    if server_pid is not None:
        cmd += ["--server-pid", str(server_pid)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if re.match(r"\s*\d+\s", line):  # a finished point's table row
                progress.done += 1
                progress.show(label, f"{line.split()[0]} client threads done")
        rc = proc.wait()
    except KeyboardInterrupt:
        # A terminal's Ctrl-C reaches bench_client too; a signal sent to us alone does not.
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    err = proc.stderr.read()
    if rc != 0:
        print(file=sys.stderr)
        log(f"bench_client exited {rc} for {label}: {err.strip()}")
    return rc


def merge_repetitions(parts: list[Path], dest: Path, extra_meta: dict) -> None:
    docs = []
    for p in parts:
        if not p.exists():
            continue
        try:
            docs.append(json.loads(p.read_text()))
        except json.JSONDecodeError:
            log(f"{p.name}: incomplete JSON from an interrupted sweep, left out")
    if not docs or not any(d.get("points") for d in docs):
        for p in parts:
            p.unlink(missing_ok=True)
        return
    merged = {"meta": {**docs[0].get("meta", {}), **extra_meta}, "points": []}
    # Top-level fields besides meta/points (bench_client's "pipeline") are kept from the first.
    merged.update({k: v for k, v in docs[0].items() if k not in ("meta", "points")})
    for d in docs:
        merged["points"] += d.get("points", [])
    dest.write_text(json.dumps(merged, indent=1))
    for p in parts:
        if p != dest and p.exists():
            p.unlink()


def nginx_depths(args) -> list[int]:
    return [1] + ([args.pipeline_depth] if args.pipeline_depth > 1 else [])


def nginx_plan(args) -> tuple[str | None, list[float]]:
    """Why the nginx comparison is skipped (None: it runs), and its points' estimated lengths."""
    if args.target:
        return "not run: --target measures a server this script did not start", []
    if args.no_nginx:
        return "skipped (--no-nginx)", []
    missing = [t for t in ("nginx", "wrk") if shutil.which(t) is None]
    if missing:
        return (f"skipped: {' and '.join(missing)} not installed "
                "(bash scripts/setup.sh --peers installs them)"), []
    depths = nginx_depths(args)
    n = 2 * len(depths) * len(args.nginx_connection_list)  # cache_server and nginx per row
    warmups_s = 2 * len(depths) * 1  # compare_nginx.py's --warmup 1 per server and depth
    return None, [args.nginx_duration + NGINX_POINT_OVERHEAD_S + warmups_s / n] * n


def run_nginx_comparison(args, out: Path, progress: Progress) -> tuple[str, bool]:
    """scripts/compare_nginx.py into out/nginx.json. Returns (outcome, interrupted); the outcome
    is "ok", or a one-line reason it failed. compare_nginx.py runs in its own session, with its
    cache_server and nginx in its process group; on Ctrl-C that whole group (wrk, cache_server,
    nginx) gets SIGINT, then SIGKILL if still there."""
    depths = nginx_depths(args)
    argv = [*python_module("compare_nginx"), "--json", str(out / "nginx.json"),
            "--cache-server", args.server_bin, "--cache-server-flags", "",
            "--duration", str(args.nginx_duration), "--warmup", "1",
            "--conns", " ".join(map(str, args.nginx_connection_list)),
            "--pipeline", " ".join(map(str, depths)), "--nginx-port", str(free_port()),
            "--server-cpu", args.server_cpus, "--client-cpu", args.client_cpus]
    err_path = out / "nginx.stderr"
    label = "nginx comparison"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
        try:
            progress.show(label, "starting cache_server and nginx")
            depth = 1
            for line in proc.stdout:
                m = re.match(r"# pipeline depth (\d+)", line)
                if m:
                    depth = int(m.group(1))
                elif re.match(r"\d+\s", line):  # a row: both servers measured at this count
                    progress.done += 2
                    progress.show(label, f"depth {depth}, {line.split()[0]} connections done")
            rc = proc.wait()
        except KeyboardInterrupt:
            try:
                os.killpg(proc.pid, signal.SIGINT)
                proc.wait(NGINX_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except (ProcessLookupError, KeyboardInterrupt):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
            rc = None
    text = err_path.read_text().strip()
    if not text:
        err_path.unlink()
    if rc is None:
        return "interrupted", True
    if rc != 0:
        print(file=sys.stderr)
        last = text.splitlines()[-1] if text else "no message"
        log(f"compare_nginx.py exited {rc}: {last} (all of it: {err_path.name})")
        return f"failed: compare_nginx.py exited {rc}: {last}", False
    return "ok", False


def plan_configs(args, depth: int) -> list[tuple[str, list[str] | None, int]]:
    """(label, server flags or None for --target, bench_client pipeline depth) of each
    configuration: every variant at every -t, plus one pipelined at -t 1 when depth > 1."""
    if args.target:
        return [(f"target {args.target}", None, 1)]
    configs = []
    for variant in server_variants(args):
        prefix = f"{variant} " if variant else ""
        for t in args.server_thread_list:
            flags = ["-t", str(t)] + (["--variant", variant] if variant else [])
            configs.append((f"{prefix}-t {t}", flags, 1))
        if depth > 1:
            flags = ["-t", "1"] + (["--variant", variant] if variant else [])
            configs.append((f"{prefix}-t 1 -P {depth}", flags, depth))
    return configs


def run_configs(args, configs, out: Path, run: dict, progress: Progress) -> tuple[int, bool]:
    """Each configuration: its server started (none with --target), its sweeps, their merged
    JSON listed in run["order"]. Returns (failures, interrupted)."""
    if args.target:
        host, port = args.target.rsplit(":", 1)
    failures = 0
    interrupted = False
    for label, flags, pipeline in configs:
        name = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-") + ".json"
        extra = {"label": label, "server_flags": " ".join(flags) if flags is not None else args.target,
                 "server_cpus": None if flags is None else args.server_cpus, "client_cpus": args.client_cpus,
                 "pipeline": pipeline}
        parts = [out / f"{name}.rep{r}" for r in range(args.repetitions)]
        server = None
        try:
            if flags is not None:
                # Its own session: a terminal's Ctrl-C reaches us, and we stop it.
                server = CacheServer(args.server_bin, flags, cpu=args.server_cpus,
                                     stop_timeout_s=SERVER_STOP_TIMEOUT_S).start()
                host, port, pid = server.host, server.port, server.pid
            else:
                pid = None
            for r, part in enumerate(parts):
                progress.show(label, f"repetition {r + 1}/{args.repetitions}")
                rc = run_sweep(args, host, int(port), pid, part, label, progress, pipeline)
                if rc != 0:
                    failures += 1
                    if not part.exists():
                        break
        except KeyboardInterrupt:
            interrupted = True
        except RuntimeError as e:
            print(file=sys.stderr)
            log(f"{label}: {e}")
            failures += 1
        finally:
            if server is not None:
                server.stop()
        merge_repetitions(parts, out / name, extra)
        if (out / name).exists():
            run["order"].append(name)
        if interrupted:
            print(file=sys.stderr)
            log("interrupted: servers stopped; reporting the finished configurations")
            break
    return failures, interrupted


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_root = Path(args.out)
    out = out_root / stamp
    out.mkdir(parents=True, exist_ok=False)

    notes: list[str] = []
    depth = args.pipeline_depth
    if depth > 1 and not args.target and not client_supports_pipeline(args.client_bin):
        notes.append(f"pipelined configurations (-P {depth}) skipped: {Path(args.client_bin).name} "
                     "has no --pipeline option (rebuild it)")
        log(notes[-1])
        depth = 0
    configs = plan_configs(args, depth)

    warmup_s = float(args.warmup[:-1]) if args.warmup.endswith("s") else 1.0
    n_points = len(configs) * len(args.client_thread_list) * args.repetitions
    if args.duration is None:
        args.duration = 10.0 if args.full else \
            max(3.0, min(8.0, round(DEFAULT_BUDGET_S / n_points - warmup_s - POINT_OVERHEAD_S)))
    point_s = args.duration + warmup_s + POINT_OVERHEAD_S
    nginx_skip, nginx_costs = nginx_plan(args)
    if nginx_skip:
        notes.append(f"cache_server vs nginx: {nginx_skip}")
        log(notes[-1])
    progress = Progress([point_s] * n_points + nginx_costs)
    run = {**machine_info(), "date": dt.datetime.now().isoformat(timespec="seconds"),
           "command": " ".join(["python3 -m scripts.experiment", *map(shlex.quote, argv)]),
           "server_cpus": None if args.target else args.server_cpus, "client_cpus": args.client_cpus,
           "repetitions": args.repetitions, "client_args": args.client_args,
           "point_duration_s": args.duration, "warmup": args.warmup,
           "client_threads": args.client_thread_list, "pipeline_depth": depth,
           "nginx": {"status": "skipped", "note": nginx_skip} if nginx_skip else
                    {"status": "pending", "point_duration_s": args.nginx_duration,
                     "connections": args.nginx_connection_list, "pipeline_depths": nginx_depths(args)},
           "notes": notes, "order": []}
    log(f"{len(configs)} configuration(s) x {len(args.client_thread_list)} points x "
        f"{args.repetitions} repetition(s)" +
        (f", then cache_server vs nginx ({len(nginx_costs)} points)" if nginx_costs else "") +
        f", ~{progress.estimate_s():.0f}s; results in {out}")

    failures, interrupted = run_configs(args, configs, out, run, progress)
    if nginx_costs and not interrupted:
        outcome, interrupted = run_nginx_comparison(args, out, progress)
        run["nginx"]["status"] = outcome
        if (out / "nginx.json").exists():
            run["nginx"]["file"] = "nginx.json"
        if interrupted:
            print(file=sys.stderr)
            log("interrupted: the nginx comparison's processes stopped; reporting what finished")
        elif outcome != "ok":
            failures += 1
    elif nginx_costs:
        run["nginx"] = {"status": "skipped", "note": "not run: the experiment was interrupted first"}
    print(file=sys.stderr)

    (out / "run.json").write_text(json.dumps(run, indent=1))
    if not run["order"]:
        log("no configuration produced results")
        return 1
    latest = out_root / "latest"
    if latest.is_symlink() or not latest.exists():
        if latest.is_symlink():
            latest.unlink()
        latest.symlink_to(stamp)
    if not args.no_plots:
        subprocess.run([sys.executable, str(ROOT / "graphs/plot.py"), str(out)], check=False,
                       stdout=subprocess.DEVNULL)
    rep = subprocess.run(python_module("report", out),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if rep.returncode != 0:
        log(f"REPORT.md not written: {rep.stderr.strip()}")
        return 1
    log(f"report: {out / 'REPORT.md'}")
    if interrupted:
        return 130
    return 1 if failures else 0


if __name__ == "__main__":
    # Ctrl-C (SIGINT) stops the run cleanly (KeyboardInterrupt, above) however we were started: a
    # non-interactive shell starts a background job with SIGINT ignored, and Python then installs
    # no handler of its own.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main(sys.argv[1:]))
