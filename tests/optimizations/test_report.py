"""optimizations/report.py: medians, tables, and clear errors on bad input."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "optimizations" / "report.py"
FIXTURE = Path(__file__).parent / "fixture"


def run(d):
    return subprocess.run([sys.executable, str(REPORT), str(d)], capture_output=True, text=True, timeout=60)


def test_fixture_run_produces_all_three_tables(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    r = run(d)
    assert r.returncode == 0, r.stderr
    md = (d / "MICROBENCH.md").read_text()
    assert md == r.stdout.rstrip("\n") or md in r.stdout
    for heading in ("## Cache throughput", "## Hit ratio", "## Memory per item"):
        assert heading in md
    assert "| clock | shared | 8 |" in md
    assert "| clock |" in md.split("## Hit ratio")[1]


def test_median_of_repetitions_is_used(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    name = "BM_Get/evictor:3/lock:0/shards:1/real_time/threads:{}"
    bench = [{"name": name.format(t), "run_type": "iteration", "items_per_second": v}
             for t, v in ((1, 1e6), (1, 3e6), (1, 2e6), (2, 8e6), (2, 4e6), (2, 6e6))]
    (d / "cache_throughput.json").write_text(json.dumps({"benchmarks": bench}))
    r = run(d)
    assert r.returncode == 0, r.stderr
    assert "| clock | shared | 1 | 2.00 | 6.00 | 3.00x |" in r.stdout
    assert "Median of 3 repetition(s)" in r.stdout


def test_missing_input_is_a_clear_error(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    (d / "hit_ratio.json").unlink()
    r = run(d)
    assert r.returncode == 1
    assert "missing" in r.stderr and "hit_ratio.json" in r.stderr


def test_malformed_json_is_a_clear_error(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    (d / "cache_throughput.json").write_text("{not json")
    r = run(d)
    assert r.returncode == 1
    assert "not valid JSON" in r.stderr


def test_not_a_directory(tmp_path):
    r = run(tmp_path / "nope")
    assert r.returncode == 1
    assert "not a directory" in r.stderr


def test_server_memory_rows_sit_beside_the_library_rows(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    row = {"store": "server s3fifo", "via": "server", "items": 1000000, "maxmem": "2G",
           "key_value_bytes": 111000000, "rss_delta_bytes": 141000000, "overhead_bytes_per_item": 30.0}
    (d / "server_memory.jsonl").write_text(json.dumps(row) + "\n")
    r = run(d)
    assert r.returncode == 0, r.stderr
    memory = (d / "MICROBENCH.md").read_text().split("## Memory per item")[1]
    assert "| server s3fifo | server, HTTP PUTs | 1000000 | 141.0 | 30.0 |" in memory
    assert "| library |" in memory
