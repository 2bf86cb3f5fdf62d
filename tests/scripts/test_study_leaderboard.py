"""scripts/studies/leaderboard.py end to end at a reduced size (modes 0 and 3: PostgreSQL only,
and fully cached; two levels; 500 players): the mode mapping is in the section, every number of
its tables is the summary's, the summary's are the raw bench_client JSON's, each verdict follows
from its figures, the scores stayed in [0, 50,000), and nothing is left running."""
import json

import pytest

import md_tables
import study_checks as sc

pytestmark = pytest.mark.skipif(not (sc.ROOT / "build/release/client/bench_client").exists(),
                                reason="build/release is not built (bash scripts/setup.sh)")


def test_leaderboard_quick_form_reduced(tmp_path):
    sc.need_postgres()
    out = tmp_path / "leaderboard"
    sc.run_study("leaderboard", out, "--modes", "0,3", "--levels", "1,4", "--members", "500",
                 "--duration", "0.5", "--slo-precision", "0.25")
    md, summary = sc.load(out)
    assert md.startswith("## Study: leaderboard — ")
    # The modes' mapping onto cache_server flags is documented in the section.
    _, modes = md_tables.table(md, "| mode | meaning | cache_server flags")
    assert modes == [["0", "database only", "`--store postgres --board-source store`"],
                     ["3", "everything", "`--store postgres --board-top-cache on`"]]
    configs = summary["configurations"]
    header, rows = md_tables.table(md, "| configuration | saturation (conns)")
    assert len(rows) == 8 and {r[0] for r in rows} == set(configs)
    for row in rows:
        r = configs[row[0]]
        mode, wl = row[0].split(" ")[1], row[0].split(" ")[2]
        s = r["saturation"]
        for pt in r["points"]:
            sc.check_point_against_raw(pt, out / "raw" / f"mode{mode}-{wl}-{pt['connections']}.json")
            sc.check_verdict(pt)
        sc.check_slo_against_raw(r["slo"], out / "raw" / f"mode{mode}-{wl}-slo.json")
        assert row[1:] == [str(s["connections"]), sc.cell(s["throughput_rps"]),
                           sc.cell(s["mean_us"], 1), sc.cell(s["p99_us"], 1), r["slo"]["spec"],
                           sc.cell(r["slo"]["capacity_rps"]), sc.cell(s["server_cpu_pct"], 1),
                           sc.cell(s["db_cpu_pct"], 1), sc.cell(s["client_cpu_pct"], 1),
                           sc.cell(s["disk_util_pct"], 1), s["verdict"]]
    # Mode 0 reads come from PostgreSQL: its CPU shows; mode 3 reads touch no database.
    assert configs["mode 0 single-score"]["saturation"]["db_cpu_pct"] > 1
    # Published beside ours: the Redis+MongoDB tests against mode 3's peaks.
    _, redis = md_tables.table(md, "| test | published req/s")
    assert [r[0] for r in redis] == ["insert", "top-100", "combined"]
    for r in redis:
        peak = max(p["throughput_rps"] for p in configs[f"mode 3 {r[2]}"]["points"])
        assert r[3] == sc.cell(peak)
    # --score-max 50000: the preload's scores and the updates' stay below it.
    raw = json.loads((out / "raw" / "mode3-update-only-1.json").read_text())
    assert "--score-max 50000" in raw["meta"]["command_line"]
    sc.figures_exist(out, summary, md, "leaderboard")
    sc.no_process_left(out)
