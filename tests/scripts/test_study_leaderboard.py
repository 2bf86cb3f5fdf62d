"""scripts/studies/leaderboard.py end to end at a reduced size (modes 0 and 3: PostgreSQL only,
and fully cached; two levels; 2,000 players): the mode mapping is in the section, every number of
its tables is the summary's, the summary's are the raw bench_client JSON's, each verdict follows
from its figures, the scores stayed in [0, 50,000), mode 0's plans as PostgreSQL logged them are
in the section (the top page an index-only scan with no count of the board), and nothing is left
running."""
import json

import pytest

import md_tables
import study_checks as sc

needs_build = pytest.mark.skipif(not (sc.ROOT / "build/release/client/bench_client").exists(),
                                reason="build/release is not built (bash scripts/setup.sh)")


@needs_build
def test_leaderboard_quick_form_reduced(tmp_path):
    sc.need_postgres()
    out = tmp_path / "leaderboard"
    sc.run_study("leaderboard", out, "--modes", "0,3", "--levels", "1,4", "--members", "2000",
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
                           sc.cell(s["disk_util_pct"], 1),
                           sc.common.bottleneck_cell(s["verdict"], s["measured_client"])]
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
    # Mode 0's plans, logged by auto_explain for real requests to the server.
    plans = summary["mode0_plans"]
    assert set(plans) == {"top page (top 100)", "a page mid-board (ranks N/2+1..N/2+100)",
                          "a member's rank"}
    assert all(p["status"] == 200 and p["plan"] for p in plans.values()), plans
    # The statements the server ran, one log entry each. (At 2,000 members PostgreSQL reads a page
    # mid-board or a rank count with a sequential scan and a sort, the whole table being 114
    # buffers; at 20,000, PostgresStoreTest.BoardTopIsAnIndexOnlyScanAndRanksCountTheIndex
    # checks they are index-only.)
    for p in plans.values():
        assert p["plan"].count("LOG:  duration: ") == 1, p["plan"]
        assert "Aggregate" in p["plan"] or "LIMIT $3 OFFSET $2" in p["plan"], p["plan"]
    top = plans["top page (top 100)"]["plan"]
    assert "Index Only Scan using leaderboard_rank" in top, top
    assert "Aggregate" not in top and "Seq Scan" not in top, top  # no count(*) per page
    _, facts = md_tables.table(md, "| read | HTTP status")
    assert [f[0] for f in facts] == ["top page (top 100)",
                                     "a page mid-board (ranks N/2+1..N/2+100)", "a member's rank"]
    assert "1–3 ms from the database" in md
    sc.figures_exist(out, summary, md, "leaderboard")
    sc.no_process_left(out)


def synthetic_results(levels):
    from scripts.studies import leaderboard as lb
    return {m: {wl: {"points": [{"connections": c, "throughput_rps": 1000.0 * (m + 1) * c}
                                for c in levels]} for wl in lb.WORKLOADS} for m in lb.MODES}


def test_figure_draws_four_levels_a_line_and_names_the_modes(tmp_path):
    """Needs no build: the figure's lines from synthetic results, at the quick form's levels."""
    from scripts.studies import leaderboard as lb
    assert len(lb.QUICK_LEVELS) >= 4 and len(lb.FULL_LEVELS) >= 4
    lines = lb.figure_lines(synthetic_results(lb.QUICK_LEVELS))
    assert set(lines) == set(lb.WORKLOADS)
    for wl, per_mode in lines.items():
        assert [label for label, _, _ in per_mode] == [
            "database only (mode 0)", "caches only (mode 1)", "cache + database (mode 2)",
            "everything (mode 3)"]
        for _, xs, ys in per_mode:
            assert xs == lb.QUICK_LEVELS and len(ys) == len(xs) >= 4
    assert lb.figure(tmp_path, synthetic_results(lb.QUICK_LEVELS)) == "leaderboard.png"
    assert (tmp_path / "leaderboard.png").read_bytes().startswith(b"\x89PNG")
