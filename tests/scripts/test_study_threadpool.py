"""scripts/studies/threadpool.py end to end at a reduced size: our server at one pool size and,
through --target, another HTTP server (a second cache_server serving GET /stats, standing in for
nginx), over two concurrency levels with a fixed request count per point: every number of its
tables is the summary's and the raw JSON's, each ab-like point measured exactly --requests-total
requests, each steady point is duration based, each verdict (and its "measured the client" flag)
follows from its figures, nothing is left running."""
import pytest

import md_tables
import study_checks as sc

pytestmark = pytest.mark.skipif(not (sc.ROOT / "build/release/client/bench_client").exists(),
                                reason="build/release is not built (bash scripts/setup.sh)")


def test_threadpool_quick_form_reduced(tmp_path):
    out = tmp_path / "threadpool"
    server = sc.common.Server([str(sc.ROOT / "build/release/server/cache_server"), "-p", "0"],
                              cpu=None, name="other")
    with server:
        url = f"http://{server.host}:{server.port}/stats"
        sc.run_study("threadpool", out, "--levels", "50,300", "--server-threads", "8",
                     "--requests-total", "1200", "--duration", "0.3", "--slo-precision", "0.25",
                     "--steady-duration", "0.3",
                     "--target", url)
    md, summary = sc.load(out)
    assert md.startswith("## Study: threadpool — ")
    configs = summary["configurations"]
    assert set(configs) == {"cache_server -t 8, tiny GET", "cache_server -t 8, 100 KiB GET",
                            "cache_server -t 8, PUT", f"{url}, GET"}
    _, rows = md_tables.table(md, "| configuration | peak req/s")
    for row in rows:
        r = configs[row[0]]
        s = r["saturation"]
        for pt in r["points"]:
            assert pt["requests"] == 1200  # --requests-total, like ab -n
            sc.check_verdict(pt)
        swept = url if row[0] == f"{url}, GET" else row[0]  # the raw files' name
        slug = "".join(ch if ch.isalnum() else "-" for ch in swept).strip("-").lower()
        sc.check_slo_against_raw(r["slo"], out / "raw" / f"{slug}-slo.json")
        for pt in r["points"]:
            sc.check_point_against_raw(pt, out / "raw" / f"{slug}-{pt['connections']}.json")
        for pt in r["steady"]["points"]:
            sc.check_verdict(pt)
            raw = out / "raw" / f"{slug}-{pt['connections']}-steady.json"
            sc.check_point_against_raw(pt, raw)
            mode = sc.json.loads(raw.read_text())["meta"]["mode"]
            assert mode["duration_s"] == pytest.approx(0.3) and mode["requests_total"] == 0
        peak = max(p["throughput_rps"] for p in r["steady"]["points"])
        first = next(p for p in r["steady"]["points"] if p["throughput_rps"] >= 0.95 * peak)
        assert r["steady"]["saturation"]["connections"] == first["connections"]
        # the capacity search ran at the steady saturation level
        slo_raw = sc.json.loads((out / "raw" / f"{slug}-slo.json").read_text())
        assert slo_raw["meta"]["mode"]["connections_per_thread"] == first["connections"]
        assert row[1:] == [sc.cell(r["peak"]["throughput_rps"]), str(s["connections"]),
                           sc.cell(s["throughput_rps"]), sc.cell(s["p99_us"] / 1000, 1),
                           r["slo"]["spec"], sc.cell(r["slo"]["capacity_rps"]),
                           sc.cell(s["server_cpu_pct"], 1), sc.cell(s["client_cpu_pct"], 1),
                           sc.common.bottleneck_cell(s["verdict"], s["measured_client"])]
    # The other server's CPU is not sampled (no pid): its verdict rests on the client's figures.
    assert configs[f"{url}, GET"]["saturation"]["server_cpu_pct"] is None
    _, rows = md_tables.table(md, "| configuration | steady peak req/s")
    for row in rows:
        st = configs[row[0]]["steady"]
        s = st["saturation"]
        assert row[1:] == [sc.cell(st["peak"]["throughput_rps"]), str(s["connections"]),
                           sc.cell(s["throughput_rps"]), sc.cell(s["p99_us"] / 1000, 1),
                           sc.cell(s["server_cpu_pct"], 1), sc.cell(s["client_cpu_pct"], 1),
                           sc.common.bottleneck_cell(s["verdict"], s["measured_client"])]
    header, rows = md_tables.table(md, "| connections |")
    assert [r[0] for r in rows] == ["50", "300"]
    # Beside each configuration's ab-like column, its steady-state column.
    assert header[1].endswith(", -n 1,200") and header[2].endswith(", steady")
    names = [r[0] for r in md_tables.table(md, "| configuration | peak req/s")[1]]  # run order
    assert header[1:] == [f"{n}, {m}" for n in names for m in ("-n 1,200", "steady")]
    for row in rows:
        n = int(row[0])
        for j, cell in enumerate(row[1:]):
            r = configs[names[j // 2]]
            pts = r["points"] if j % 2 == 0 else r["steady"]["points"]
            assert cell == sc.cell(next(p for p in pts if p["connections"] == n)["throughput_rps"])
    # What -n means at the largest level is stated: requests per connection.
    assert "1200 / 300" not in md and "4 requests per connection" in md
    sc.figures_exist(out, summary, md, "threadpool")
    sc.no_process_left(out)
