"""graphs/plot.py end to end: figures from checked-in fixture JSON, and clear errors."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLOT = ROOT / "graphs" / "plot.py"
FIXTURE = Path(__file__).parent / "fixture"
FIGURES = ("throughput_vs_threads", "p95_vs_threads", "throughput_vs_p95", "latency_spectrum",
           "cpu_vs_threads")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

sys.path.insert(0, str(ROOT / "graphs"))
import results  # noqa: E402


def run(*args):
    return subprocess.run([sys.executable, str(PLOT), *map(str, args)], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def results_dir(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    return d


def test_directory_gives_every_figure_as_valid_png_and_svg(results_dir):
    r = run(results_dir)
    assert r.returncode == 0, r.stderr
    printed = r.stdout.split()
    for name in FIGURES:
        png = results_dir / f"{name}.png"
        svg = results_dir / f"{name}.svg"
        assert str(png) in printed and str(svg) in printed
        data = png.read_bytes()
        assert data.startswith(PNG_SIGNATURE)
        assert len(data) > 10_000  # a real figure, not an empty canvas
        assert svg.read_text().lstrip().startswith("<?xml")


def test_explicit_files_write_next_to_the_first(results_dir):
    r = run(results_dir / "baseline-t2.json")
    assert r.returncode == 0, r.stderr
    assert (results_dir / "throughput_vs_threads.png").exists()


def test_saturation_is_reported_per_configuration(results_dir):
    r = run(results_dir)
    assert "saturation optimized -t 2: 4 threads" in r.stderr
    assert "saturation baseline-t2: 4 threads" in r.stderr


def test_repetitions_reduce_to_median_with_spread():
    s = results.load_series(FIXTURE / "optimized-t2.json")
    p = s.points[0]
    assert p.repetitions == 3
    assert p.low["throughput_rps"] < p.get("throughput_rps") < p.high["throughput_rps"]
    assert p.get("throughput_rps") == pytest.approx(20000 * 1.02)


def test_saturation_rule_stops_where_p95_doubles(tmp_path):
    doc = {"points": [{"threads": t, "throughput_rps": rps, "p50_us": 1, "p95_us": p95, "p99_us": 1}
                      for t, rps, p95 in ((1, 100, 50), (2, 190, 60), (4, 260, 99), (8, 300, 400))]}
    f = tmp_path / "x.json"
    f.write_text(json.dumps(doc))
    assert results.load_series(f).saturation().threads == 4  # 8 threads has the most req/s, but p95 > 2x


def fails_clearly(path, message):
    """plot.py PATH exits 1 saying `message`, without a traceback."""
    r = run(path)
    assert r.returncode == 1
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_path_is_a_clear_error(tmp_path):
    fails_clearly(tmp_path / "nothing-here", "no such file or directory")


def test_malformed_json_is_a_clear_error(results_dir):
    (results_dir / "broken.json").write_text("{\"points\": [")
    fails_clearly(results_dir, "broken.json: not valid JSON")


def test_point_without_required_fields_is_a_clear_error(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"points": [{"threads": 1, "throughput_rps": 5}]}))
    fails_clearly(f, "missing p50_us, p95_us, p99_us")


def test_directory_without_results_is_a_clear_error(tmp_path):
    (tmp_path / "meta.json").write_text("{}")
    fails_clearly(tmp_path, "no bench_client result JSON")


def test_aborted_and_unsustained_points_are_flagged_and_not_saturation(tmp_path):
    pts = [{"threads": t, "throughput_rps": rps, "p50_us": 1, "p95_us": 50, "p99_us": 1}
           for t, rps in ((1, 100), (2, 190), (4, 900))]
    pts[2]["aborted"] = True          # the server died during the 4-thread point
    pts[1]["rate_sustained"] = False  # open loop fell behind at 2 threads
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"points": pts}))
    s = results.load_series(f)
    assert s.points[2].notes == ["aborted"] and s.points[1].notes == ["rate not sustained"]
    assert s.saturation().threads == 2  # not the aborted point, whatever its req/s


def _nginx_doc():
    def m(depth, conns, server, rps, errors=0):
        return {"pipeline": depth, "connections": conns, "server": server, "rps": rps, "errors": errors,
                "failed": False, "server_cpu_pct": 99.0, "wrk_cpu_pct": 90.0, "p50": "1.00ms",
                "p99": "2.00ms", "p50_us": 1000.0, "p99_us": 2000.0}
    return {"complete": True, "measurements": [
        m(d, c, s, rps * (3 if d > 1 else 1) * (1.1 if s == "cache_server" else 1.0))
        for d in (1, 16) for c, rps in ((1, 20000), (4, 60000), (16, 90000)) for s in ("cache_server", "nginx")]}


def test_nginx_json_beside_the_results_gives_the_nginx_figure(results_dir):
    (results_dir / "nginx.json").write_text(json.dumps(_nginx_doc()))
    r = run(results_dir)
    assert r.returncode == 0, r.stderr
    png = results_dir / "nginx_vs_connections.png"
    assert str(png) in r.stdout.split()
    assert png.read_bytes().startswith(PNG_SIGNATURE) and len(png.read_bytes()) > 10_000


def test_no_nginx_json_no_nginx_figure(results_dir):
    assert run(results_dir).returncode == 0
    assert not (results_dir / "nginx_vs_connections.png").exists()


def test_malformed_nginx_json_is_a_clear_error(results_dir):
    (results_dir / "nginx.json").write_text(json.dumps({"measurements": [{"pipeline": 1}]}))
    r = run(results_dir)
    assert r.returncode == 1 and "nginx.json: measurement 0: missing" in r.stderr
    assert "Traceback" not in r.stderr


def test_nginx_peaks_skip_points_with_errors(tmp_path):
    doc = _nginx_doc()
    doc["measurements"].append({**doc["measurements"][0], "connections": 32, "rps": 1e9, "errors": 3})
    f = tmp_path / "nginx.json"
    f.write_text(json.dumps(doc))
    cmp = results.load_nginx(f)
    d1 = cmp.depths[0]
    assert [d.pipeline for d in cmp.depths] == [1, 16]
    assert d1.peak("cache_server") == (pytest.approx(99000), 16)
    assert d1.peak_ratio() == pytest.approx(1.1)
    assert d1.rows[-1].ratio() is None  # the row with errors has no ratio


def test_pipelined_series_are_told_apart(results_dir):
    doc = json.loads((results_dir / "baseline-t2.json").read_text())
    doc["pipeline"] = 16
    f = results_dir / "piped.json"
    f.write_text(json.dumps(doc))
    s = results.load_series(f)
    assert s.pipelined and s.pipeline == 16 and s.label == "piped -P 16"
    assert not results.load_series(results_dir / "baseline-t2.json").pipelined
    import plot
    series = [results.load_series(results_dir / "baseline-t2.json"), s]
    kept, note = plot._latency_series(series)
    assert kept == series[:1] and note == " (pipeline depth 1)"
    assert plot._style(s)["marker"] != plot._style(series[0])["marker"]
    assert run(results_dir).returncode == 0


def test_get_rps_is_gets_over_duration(tmp_path):
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"points": [{"threads": 1, "throughput_rps": 100, "p50_us": 1, "p95_us": 1,
                                         "p99_us": 1, "gets": 150, "duration_s": 2.0}]}))
    s = results.load_series(f)
    assert s.points[0].get("get_rps") == 75
    assert s.peak("get_rps").threads == 1


def test_bad_pipeline_field_is_a_clear_error(tmp_path):
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"pipeline": "deep", "points": [{"threads": 1, "throughput_rps": 1, "p50_us": 1,
                                                             "p95_us": 1, "p99_us": 1}]}))
    with pytest.raises(results.ResultError, match="pipeline"):
        results.load_series(f)
