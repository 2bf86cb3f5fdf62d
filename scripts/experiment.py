#!/usr/bin/env python3
"""The experiment runner: server configurations x client sweep -> JSON, figures, REPORT.md.

The headline pairs (the baseline and the optimized variant at -t 1, at depth 1 and at the
pipelined depth) are measured in --rounds interleaved rounds (default 3, --full 5): both servers
run at once, pinned to --server-cpus, and every point (one bench_client run per client thread
count, pinned to --client-cpus, with --server-pid) alternates which variant goes first, from point
to point and from round to round (scripts/harness/rounds.py), so a slow stretch of a shared
machine lands on both. Each headline ratio is the median of the per-round ratios of the peaks,
with a 95% interval; run.json's "headline" lists them with their verdicts (met, missed, within
noise). The other configurations (-t 2, -t 4) feed no headline: one shorter sweep each
(--sweep-duration), server started, swept, stopped. A noise meter, a fixed calibration point
(cache_server -t 1, 1 client thread), runs at the start and at the end (run.json "noise"). Each variant also gets
one pipelined configuration at -t 1 (bench_client --pipeline N, N = --pipeline-depth, default 16;
skipped with a note when bench_client has no --pipeline). Then, when nginx and wrk are installed,
scripts/compare_nginx.py measures cache_server beside nginx with wrk at pipeline depth 1 and N
(nginx.json), in the same number of interleaved rounds. Results go to results/<timestamp>/ (one JSON per configuration; results/latest
points at the newest run), followed by the figures (graphs/plot.py) and REPORT.md
(scripts/report.py).

  python3 -m scripts.experiment                    default: -t 1,2,4 (x baseline/optimized
                                                   when the server has variants) plus -t 1 -P 16,
                                                   3 rounds of the headline pairs, ~4 minutes, then
                                                   nginx vs cache_server in 3 rounds, ~3 minutes
  python3 -m scripts.experiment --full             5 rounds, longer points
  python3 -m scripts.experiment --rounds 7         more rounds of the headline pairs
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

from scripts import report
from scripts.harness import cli, metadata, rounds
from scripts.harness.procs import CacheServer, free_port, python_module

ROOT = Path(__file__).resolve().parent.parent

SERVER_STOP_TIMEOUT_S = 5
POINT_OVERHEAD_S = 0.6  # process start, connect, preload, barrier: for the time estimate only
CALIBRATION = {"threads": 1, "duration_s": 2.0, "warmup": "0.5s"}  # the noise meter's point
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
                   help="seconds per point of the headline pairs (default 2, --full 5)")
    p.add_argument("--sweep-duration", type=float, default=None,
                   help="seconds per point of the configurations that feed no headline "
                        "(-t 2, -t 4; default 1, --full 5)")
    p.add_argument("--warmup", default=None,
                   help="warm-up per point, bench_client syntax (default 0.5s, --full 1s)")
    p.add_argument("--rounds", type=int, default=None, metavar="R",
                   help="interleaved rounds of the headline pairs and of the nginx comparison "
                        "(default 3, --full 5; at least 2: one round has no interval)")
    p.add_argument("--repetitions", type=int, default=None,
                   help="sweeps of each configuration that feeds no headline (default 1)")
    p.add_argument("--full", action="store_true", help="5 rounds, longer points")
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
    a.warmup = a.warmup or ("1s" if a.full else "0.5s")
    a.repetitions = a.repetitions if a.repetitions is not None else 1
    a.rounds = a.rounds if a.rounds is not None else (5 if a.full else 3)
    a.duration = a.duration if a.duration is not None else (5.0 if a.full else 2.0)
    a.sweep_duration = a.sweep_duration if a.sweep_duration is not None else (5.0 if a.full else 1.0)
    a.nginx_duration = a.nginx_duration if a.nginx_duration is not None else (5 if a.full else 2)
    if a.duration <= 0 or a.sweep_duration <= 0 or a.repetitions < 1:
        p.error("--duration and --sweep-duration must be > 0 and --repetitions >= 1")
    if a.rounds < 2:
        p.error(f"--rounds must be at least 2 (got {a.rounds}): one round gives a ratio but no "
                "interval, and so no verdict")
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
              label: str, progress: Progress, pipeline: int = 1, threads: list[int] | None = None,
              duration: float | None = None, warmup: str | None = None) -> int:
    """One bench_client run (the sweep over `threads`, default --client-threads) into json_path."""
    threads = threads or args.client_thread_list
    cmd = ["taskset", "-c", args.client_cpus, args.client_bin, "-s", host, "-p", str(port),
           "--threads", ",".join(map(str, threads)),
           "-d", f"{duration if duration is not None else args.sweep_duration:g}",
           "--warmup", warmup or args.warmup, "--json", str(json_path), *args.client_args]
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


def merge_repetitions(parts: list[Path], dest: Path, extra_meta: dict,
                      part_rounds: list[int] | None = None) -> None:
    """The parts' points in one file, each point tagged with its "round" (part_rounds[i] for
    parts[i]; default: the part's index, one repetition = one round)."""
    docs = []
    for i, p in enumerate(parts):
        if not p.exists():
            continue
        try:
            doc = json.loads(p.read_text())
        except json.JSONDecodeError:
            log(f"{p.name}: incomplete JSON from an interrupted sweep, left out")
            continue
        rnd = part_rounds[i] if part_rounds is not None else i
        for pt in doc.get("points", []):
            pt["round"] = rnd
        docs.append(doc)
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
    n = 2 * len(depths) * len(args.nginx_connection_list) * args.rounds  # both servers per row
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
            "--duration", str(args.nginx_duration), "--warmup", "1", "--rounds", str(args.rounds),
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


def config_file(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-") + ".json"


def config_meta(args, label: str, flags: list[str] | None, pipeline: int) -> dict:
    return {"label": label, "server_flags": " ".join(flags) if flags is not None else args.target,
            "server_cpus": None if flags is None else args.server_cpus,
            "client_cpus": args.client_cpus, "pipeline": pipeline}


def split_headline(configs) -> tuple[dict, list]:
    """The configurations of the headline pairs, variant -> [(label, flags, pipeline), ...] (the
    baseline and the optimized variant at -t 1, each depth), and the others. No pairs unless
    both variants are there."""
    pairs: dict[str, list] = {}
    for cfg in configs:
        flags = cfg[1]
        if flags is not None and flags[:2] == ["-t", "1"] and "--variant" in flags:
            v = flags[flags.index("--variant") + 1]
            if v in ("baseline", "optimized"):
                pairs.setdefault(v, []).append(cfg)
    if set(pairs) != {"baseline", "optimized"}:
        return {}, list(configs)
    chosen = {id(c) for cs in pairs.values() for c in cs}
    return pairs, [c for c in configs if id(c) not in chosen]


def headline_plan(args, pairs: dict) -> list[tuple[int, int, int, str, tuple]]:
    """Every point of the interleaved rounds, in the order it runs: (round, depth index, client
    threads, variant, configuration). At each (round, depth, thread count) both variants run,
    the first alternating (rounds.order by round + point)."""
    variants = ["baseline", "optimized"]
    depths = sorted({c[2] for cs in pairs.values() for c in cs})
    plan = []
    for r in range(args.rounds):
        for di, d in enumerate(depths):
            for j, t in enumerate(args.client_thread_list):
                for v in rounds.order(variants, r, j + di * len(args.client_thread_list)):
                    cfg = next((c for c in pairs[v] if c[2] == d), None)
                    if cfg is not None:
                        plan.append((r, di, t, v, cfg))
    return plan


def run_headline(args, pairs: dict, out: Path, run: dict, progress: Progress) -> tuple[int, bool]:
    """The headline pairs in interleaved rounds: one server per variant, both up throughout;
    one bench_client run per point. Returns (failures, interrupted)."""
    failures, interrupted = 0, False
    servers: dict[str, CacheServer] = {}
    parts: dict[str, list[tuple[Path, int]]] = {}
    try:
        for v, cfgs in pairs.items():
            servers[v] = CacheServer(args.server_bin, cfgs[0][1], cpu=args.server_cpus,
                                     stop_timeout_s=SERVER_STOP_TIMEOUT_S).start()
        for r, _, t, v, (label, flags, pipeline) in headline_plan(args, pairs):
            srv = servers[v]
            part = out / f"{config_file(label)}.r{r}.t{t}"
            parts.setdefault(label, []).append((part, r))
            progress.show(label, f"round {r + 1}/{args.rounds}, {t} client threads")
            rc = run_sweep(args, srv.host, int(srv.port), srv.pid, part, label, progress, pipeline,
                           threads=[t], duration=args.duration)
            if rc != 0:
                failures += 1
                if not srv.alive:
                    raise RuntimeError(f"cache_server ({v}) died")
    except KeyboardInterrupt:
        interrupted = True
    except RuntimeError as e:
        print(file=sys.stderr)
        log(f"headline pairs: {e}")
        failures += 1
    finally:
        for srv in servers.values():
            srv.stop()
    for cfgs in pairs.values():
        for label, flags, pipeline in cfgs:
            got = parts.get(label, [])
            name = config_file(label)
            merge_repetitions([p for p, _ in got], out / name, config_meta(args, label, flags, pipeline),
                              [r for _, r in got])
            if (out / name).exists():
                run["order"].append(name)
    if interrupted:
        print(file=sys.stderr)
        log("interrupted: servers stopped; reporting the finished points")
    return failures, interrupted


def calibrate(args, out: Path, when: str) -> dict | None:
    """The noise meter's point: cache_server -t 1 (the server's default variant) and one client
    thread, pinned as every configuration, CALIBRATION["duration_s"] seconds. {"when", "rps",
    "p99_us", "loadavg"}; None when it could not run (--target, or a failure: logged)."""
    if args.target:
        return None
    path = out / f"noise-meter-{when}.part"  # not *.json: no result file, even while it runs
    try:
        with CacheServer(args.server_bin, ["-t", "1"], cpu=args.server_cpus,
                         stop_timeout_s=SERVER_STOP_TIMEOUT_S) as srv:
            rc = run_sweep(args, srv.host, int(srv.port), srv.pid, path, f"noise meter ({when})",
                           Progress([]), threads=[CALIBRATION["threads"]],
                           duration=CALIBRATION["duration_s"], warmup=CALIBRATION["warmup"])
        (pt,) = json.loads(path.read_text())["points"] if rc == 0 else (None,)
    except (RuntimeError, OSError, ValueError) as e:
        log(f"noise meter ({when}): {e}")
        return None
    finally:
        path.unlink(missing_ok=True)
    if pt is None:
        return None
    return {"when": when, "rps": pt["throughput_rps"], "p99_us": pt["p99_us"],
            "loadavg": os.getloadavg()[0]}


def noise_summary(samples: list[dict]) -> dict:
    """run.json's "noise": the calibration point, its readings and their spread: (max - min) ÷
    the median, in percent, of req/s and of p99."""
    doc = {"point": f"cache_server -t 1, {CALIBRATION['threads']} client thread, "
                    f"{CALIBRATION['duration_s']:g} s after a {CALIBRATION['warmup']} warm-up, "
                    "at the start and at the end of the run",
           "readings": samples}
    for key in ("rps", "p99_us"):
        sp = rounds.spread([s[key] for s in samples])
        doc[f"{key}_spread_pct"] = (None if len(samples) < 2 or not sp["median"] else
                                   (sp["max"] - sp["min"]) / sp["median"] * 100)
    return doc


def run_configs(args, configs, out: Path, run: dict, progress: Progress) -> tuple[int, bool]:
    """Each configuration: its server started (none with --target), its sweeps, their merged
    JSON listed in run["order"]. Returns (failures, interrupted)."""
    if args.target:
        host, port = args.target.rsplit(":", 1)
    failures = 0
    interrupted = False
    for label, flags, pipeline in configs:
        name = config_file(label)
        extra = config_meta(args, label, flags, pipeline)
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


def warmup_seconds(text: str) -> float:
    """bench_client's --warmup in seconds: "2s", "500ms"; a bare number counts requests (~0 s)."""
    m = re.fullmatch(r"([\d.]+)(ms|s)?", text.strip())
    if not m or not m.group(2):
        return 0.0
    return float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)


def headline_of(out: Path, run: dict) -> list[dict]:
    """run.json's "headline", from the files just written (report.headline_entries: the same
    function REPORT.md's headline comes from)."""
    try:
        series = report.load_run_series(out, run)
        nginx = report.load_nginx_in(out)
    except report.ResultError as e:
        log(f"headline: {e}")
        return []
    return report.headline_entries(series, nginx)


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

    warmup_s = warmup_seconds(args.warmup)
    pairs, others = split_headline(configs)
    n_headline = len(headline_plan(args, pairs)) if pairs else 0
    n_points = len(others) * len(args.client_thread_list) * args.repetitions
    nginx_skip, nginx_costs = nginx_plan(args)
    if nginx_skip:
        notes.append(f"cache_server vs nginx: {nginx_skip}")
        log(notes[-1])
    calib_s = 0 if args.target else 2 * (CALIBRATION["duration_s"] + 0.5 + POINT_OVERHEAD_S + 0.3)
    progress = Progress([args.duration + warmup_s + POINT_OVERHEAD_S] * n_headline +
                        [args.sweep_duration + warmup_s + 0.1] * n_points + nginx_costs +
                        [calib_s])
    run = {**machine_info(), "date": dt.datetime.now().isoformat(timespec="seconds"),
           "command": " ".join(["python3 -m scripts.experiment", *map(shlex.quote, argv)]),
           "server_cpus": None if args.target else args.server_cpus, "client_cpus": args.client_cpus,
           "repetitions": args.repetitions, "rounds": args.rounds, "client_args": args.client_args,
           "point_duration_s": args.duration, "sweep_duration_s": args.sweep_duration,
           "warmup": args.warmup, "ci_method": rounds.CI_METHOD,
           "headline_configurations": [config_file(c[0]) for cs in pairs.values() for c in cs],
           "client_threads": args.client_thread_list, "pipeline_depth": depth,
           "nginx": {"status": "skipped", "note": nginx_skip} if nginx_skip else
                    {"status": "pending", "point_duration_s": args.nginx_duration,
                     "connections": args.nginx_connection_list, "pipeline_depths": nginx_depths(args)},
           "notes": notes, "order": []}
    log(f"headline pairs: {n_headline} points in {args.rounds} interleaved rounds; "
        f"{len(others)} other configuration(s) x {len(args.client_thread_list)} points x "
        f"{args.repetitions} repetition(s)" +
        (f", then cache_server vs nginx ({len(nginx_costs)} points)" if nginx_costs else "") +
        f", ~{progress.estimate_s():.0f}s; results in {out}")

    noise = [c for c in [calibrate(args, out, "start")] if c]
    failures, interrupted = (run_headline(args, pairs, out, run, progress) if pairs else (0, False))
    if not interrupted:
        f2, interrupted = run_configs(args, others, out, run, progress)
        failures += f2
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
    if not interrupted:
        noise += [c for c in [calibrate(args, out, "end")] if c]
    print(file=sys.stderr)
    if noise:
        run["noise"] = noise_summary(noise)
    run["headline"] = headline_of(out, run)
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
