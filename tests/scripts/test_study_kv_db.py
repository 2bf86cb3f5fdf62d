"""scripts/studies/kv_db.py end to end at a reduced size, against the real release binaries and a
throwaway PostgreSQL cluster: every number of its section is the summary's, the summary's are the
raw bench_client JSON's, each verdict follows from its figures, and nothing is left running."""
import pytest

import md_tables
import study_checks as sc

pytestmark = pytest.mark.skipif(not (sc.ROOT / "build/release/client/bench_client").exists(),
                                reason="build/release is not built (bash scripts/setup.sh)")


def test_kv_db_quick_form_reduced(tmp_path):
    sc.need_postgres()
    out = tmp_path / "kv-db"
    sc.run_study("kv_db", out, "--levels", "1,3", "--duration", "0.5", "--slo-precision", "0.25")
    md, summary = sc.load(out)
    assert md.startswith("## Study: kv-db — ")
    assert summary["levels"] == [1, 3]
    # Published numbers beside ours: the published rows are there, ours at our levels.
    _, rows = md_tables.table(md, "| clients | published req/s")
    by_level = {r[0]: r for r in rows}
    assert by_level["1"][1] == "8,382" and by_level["20"][1] == "14,571"
    configs = summary["configurations"]
    assert set(configs) == {f"{s} {w}" for s in ("rocksdb", "postgres")
                            for w in ("GET-POPULAR", "PUT-ALL")}
    for name, r in configs.items():
        store, wl = name.split(" ")
        for pt in r["points"]:
            sc.check_point_against_raw(pt, out / "raw" / f"{store}-{wl}-{pt['connections']}.json")
            sc.check_verdict(pt)
            if store == "postgres":
                assert pt["db_cpu_pct"] is not None and pt["db_cpu_pct"] >= 0
            assert pt["disk_device"] is None or pt["disk_util_pct"] is not None
        sc.check_slo_against_raw(r["slo"], out / "raw" / f"{store}-{wl}-slo.json")
        # the per-level table: ours at each level
        col = md_tables.table(md, f"| clients | published req/s | published avg ms | "
                                  f"published {'CPU' if wl == 'GET-POPULAR' else 'disk busy'}")
        header, trows = col
        i = header.index(f"{store} req/s")
        for pt in r["points"]:
            row = next(t for t in trows if t[0] == str(pt["connections"]))
            assert row[i] == sc.cell(pt["throughput_rps"])
            assert row[i + 1] == sc.cell(pt["mean_us"] / 1000, 3)
    # The configuration table: every cell from the summary.
    header, rows = md_tables.table(md, "| configuration | saturation (clients)")
    assert len(rows) == 4
    for row in rows:
        r = configs[row[0]]
        s = r["saturation"]
        assert row[1] == str(s["connections"])
        assert row[2] == sc.cell(s["throughput_rps"])
        assert row[3] == r["slo"]["spec"]
        assert row[4] == sc.cell(r["slo"]["capacity_rps"])
        assert row[5] == sc.cell(s["server_cpu_pct"], 1)
        assert row[6] == sc.cell(s["db_cpu_pct"], 1)
        assert row[7] == sc.cell(s["client_cpu_pct"], 1)
        assert row[8] == sc.cell(s["disk_util_pct"], 1)
        assert row[9] == sc.common.bottleneck_cell(f"{s['verdict']} ({s['verdict_why']})",
                                                   s["measured_client"])
        # saturation = the first level at >= 95% of the peak
        peak = max(p["throughput_rps"] for p in r["points"])
        first = next(p for p in r["points"] if p["throughput_rps"] >= 0.95 * peak)
        assert first["connections"] == s["connections"]
    sc.figures_exist(out, summary, md, "kv-db")
    assert not list(out.glob("kv-db-rocksdb-*")), "RocksDB's data directory was left behind"
    sc.no_process_left(out)
