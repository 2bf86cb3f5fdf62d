"""scripts/experiment.py's plan of the interleaved rounds, its noise meter's summary and its
warm-up arithmetic: pure, no binaries (issue 48)."""
import sys

import pytest

from scripts import experiment


def args(*extra):
    return experiment.parse_args(["--client-bin", sys.executable, "--server-bin", sys.executable,
                                  "--variants", "baseline,optimized", *extra])


def test_headline_pairs_are_the_t1_configurations_of_both_variants():
    a = args("--server-threads", "1,2")
    pairs, others = experiment.split_headline(experiment.plan_configs(a, 16))
    assert {v: [c[0] for c in cs] for v, cs in pairs.items()} == {
        "baseline": ["baseline -t 1", "baseline -t 1 -P 16"],
        "optimized": ["optimized -t 1", "optimized -t 1 -P 16"]}
    assert [c[0] for c in others] == ["baseline -t 2", "optimized -t 2"]
    one = experiment.parse_args(["--client-bin", sys.executable, "--server-bin", sys.executable,
                                 "--variants", "optimized"])
    pairs, others = experiment.split_headline(experiment.plan_configs(one, 16))
    assert pairs == {} and len(others) == 4  # no pair without both variants: plain sweeps


def test_plan_alternates_the_first_variant_point_to_point_and_round_to_round():
    a = args("--server-threads", "1", "--client-threads", "1,2,4", "--rounds", "3")
    pairs, _ = experiment.split_headline(experiment.plan_configs(a, 16))
    plan = experiment.headline_plan(a, pairs)
    assert len(plan) == 3 * 2 * 3 * 2  # rounds x depths x thread counts x variants
    # Both variants back to back at every point, then the next point.
    points = [plan[i:i + 2] for i in range(0, len(plan), 2)]
    for (r1, d1, t1, v1, c1), (r2, d2, t2, v2, c2) in points:
        assert (r1, d1, t1) == (r2, d2, t2) and {v1, v2} == {"baseline", "optimized"}
        assert c1[2] == c2[2] == (1 if d1 == 0 else 16)
    firsts = [p[0][3][0] for p in points]  # b / o
    # round 0: b o b (depth 1), o b o (depth 16); round 1 starts with o: the order alternates.
    assert "".join(firsts) == "bobobo" + "obobob" + "bobobo"
    # Rounds are outermost, then depths, then thread counts.
    assert [p[0][:3] for p in points][:4] == [(0, 0, 1), (0, 0, 2), (0, 0, 4), (0, 1, 1)]


def test_rounds_default_and_validation():
    assert args().rounds == 3 and args("--full").rounds == 5
    assert args().duration == 2.0 and args().sweep_duration == 1.0 and args().warmup == "0.5s"
    with pytest.raises(SystemExit) as e:
        args("--rounds", "1")
    assert e.value.code == 2


def test_rounds_one_is_a_clear_error(capsys):
    with pytest.raises(SystemExit):
        args("--rounds", "1")
    assert "--rounds must be at least 2" in capsys.readouterr().err


def test_noise_summary_spread():
    doc = experiment.noise_summary([{"when": "start", "rps": 100.0, "p99_us": 10.0, "loadavg": 1},
                                    {"when": "end", "rps": 90.0, "p99_us": 20.0, "loadavg": 2}])
    assert doc["rps_spread_pct"] == pytest.approx(10 / 95 * 100)
    assert doc["p99_us_spread_pct"] == pytest.approx(10 / 15 * 100)
    assert "start and at the end" in doc["point"]
    one = experiment.noise_summary([{"when": "start", "rps": 100.0, "p99_us": 10.0, "loadavg": 1}])
    assert one["rps_spread_pct"] is None


@pytest.mark.parametrize("text, want", [("2s", 2.0), ("0.5s", 0.5), ("500ms", 0.5), ("100", 0.0)])
def test_warmup_seconds(text, want):
    assert experiment.warmup_seconds(text) == want
