"""scripts/bench_cluster.py end to end in --quick mode, and its usage errors.

The quick run (10,000 keys, 1 s points, one round, about 15 s) starts real clusters through
scripts/cluster.sh (nginx in front) and the built bench_client, and must leave summary.md and
summary.json whose numbers are those of the raw bench_client JSON and the nodes' /stats, and
must stop every process it started. Performance is not checked (the balance target is: the
placement of 10,000 keys over 4 nodes with weight 10 is deterministic for given addresses, and
within 1.10 for any, see docs/cluster.md). Skipped without nginx, the build or a second CPU.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from bench_checks import BUILD, CLIENT, help_text, run_module, usage_error

SCRIPT = "bench_cluster"


def missing():
    if subprocess.run(["which", "nginx"], capture_output=True).returncode != 0:
        return "nginx is not installed (bash scripts/setup.sh --peers)"
    if not CLIENT.exists():
        return f"no {CLIENT}"
    if len(os.sched_getaffinity(0)) < 2:
        return "needs 2 CPUs"
    return None


def ours(pid) -> bool:
    """Whether a bench_cluster run started process PID: its environment (the nodes inherit
    CLUSTER_DIR) or its command line (nginx's -p) names the run's bench_cluster.XXXXXXXX."""
    d = Path(f"/proc/{pid}")
    try:
        return any(b"/bench_cluster." in (d / f).read_bytes() for f in ("environ", "cmdline"))
    except OSError:
        return False


def running(comm):
    """PIDs of the live processes named `comm` that a bench_cluster run started (nginx's
    workers: whose master it started); others on the machine may run cache_server and nginx
    meanwhile."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() != comm:
                    continue
                state, ppid = (d / "stat").read_text().split(") ")[1].split()[:2]
                if state != "Z" and (ours(d.name) or ours(ppid)):
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return set(out)


def test_quick_run_end_to_end(tmp_path):
    why = missing()
    if why:
        pytest.skip(why)
    before = running("cache_server") | running("nginx")
    out = tmp_path / "out"
    env = dict(os.environ, BUILD=str(BUILD))
    p = run_module(SCRIPT, ["--quick", "--out", out], timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    b = summary["balance"]
    stats = [json.loads(line.split(" ", 3)[3]) for line in
             (out / "raw" / "balance-stats.txt").read_text().splitlines() if line.startswith("node ")]
    assert b["keys_per_node"] == [s["items"] for s in stats] and sum(b["keys_per_node"]) == 10_000
    assert b["keys_max_over_mean"] == round(max(b["keys_per_node"]) / 2500, 4)
    assert b["keys_max_over_mean"] <= 1.10 and b["pass"]
    zipf = json.loads((out / "raw" / "balance-zipf.json").read_text())["points"][0]
    assert b["zipf_requests_per_node"] == [n["requests"] for n in zipf["nodes"]]
    assert sum(b["zipf_requests_per_node"]) == zipf["requests"] and zipf["errors"] == 0
    assert [e["connections"] for e in summary["front_cost"]] == [1, 16]
    for e in summary["front_cost"]:
        for via in ("direct", "front"):
            point = json.loads((out / "raw" / f"cost-{via}-c{e['connections']}-r1.json")
                               .read_text())["points"][0]
            assert e[via]["throughput_rps"] == round(point["throughput_rps"], 1)
            assert e[via]["p99_us"] == point["p99_us"] and e[via]["errors"] == 0
        assert e["front"]["nginx_cpu_us_per_request"] > 0  # nginx did the forwarding
        assert e["direct"]["nginx_cpu_pct"] < 5             # and nothing when bypassed
    md = (out / "summary.md").read_text()
    assert "| keys stored through nginx |" in md and "PASS" in md
    assert (out / "commands.txt").read_text().count("bench_client") >= 6
    assert (running("cache_server") | running("nginx")) <= before, "processes left running"


@pytest.mark.parametrize("args,message", [
    (["--rounds", "0"], "--rounds"),
    (["--conns", "x"], "--conns"),
    (["--duration"], "--duration"),
    (["--bogus"], "unknown argument"),
])
def test_usage_errors(args, message):
    assert message in usage_error(SCRIPT, args)


def test_help():
    h = help_text(SCRIPT)
    assert "--quick" in h and "Balance" in h
