"""scripts/harness/rounds.py: the interleaving order, the interval arithmetic, the one verdict
rule and the shape of run.json's "headline" entries (issue 48)."""
import json
import math
import statistics

import pytest

from scripts.harness import rounds


def test_two_sides_alternate_point_to_point_and_round_to_round():
    names = ["baseline", "optimized"]
    firsts = [[rounds.order(names, r, j)[0] for j in range(4)] for r in range(3)]
    assert firsts == [["baseline", "optimized", "baseline", "optimized"],
                      ["optimized", "baseline", "optimized", "baseline"],
                      ["baseline", "optimized", "baseline", "optimized"]]
    # Every point runs every side exactly once.
    for r in range(3):
        for j in range(4):
            assert sorted(rounds.order(names, r, j)) == sorted(names)
    # Over two rounds each side goes first equally often at every point.
    for j in range(5):
        assert {rounds.order(names, r, j)[0] for r in range(2)} == set(names)


def test_three_sides_rotate():
    assert rounds.order(["a", "b", "c"], 0) == ["a", "b", "c"]
    assert rounds.order(["a", "b", "c"], 1) == ["b", "c", "a"]
    assert rounds.order(["a", "b", "c"], 1, 1) == ["c", "a", "b"]
    assert rounds.order([], 3) == []


def test_interval_is_the_t_interval_on_log_ratios():
    rs = [1.02, 0.98, 1.10]
    med, lo, hi = rounds.ratio_interval(rs)
    logs = [math.log(r) for r in rs]
    half = 4.303 * statistics.stdev(logs) / math.sqrt(3)
    assert med == 1.02
    assert lo == pytest.approx(math.exp(statistics.fmean(logs) - half))
    assert hi == pytest.approx(math.exp(statistics.fmean(logs) + half))
    assert lo < min(rs) and hi > max(rs)  # with 3 rounds wider than [min, max] (75% coverage)


def test_interval_contains_the_median_and_is_symmetric_in_log():
    med, lo, hi = rounds.ratio_interval([2.0, 2.0, 2.0])
    assert (med, lo, hi) == (2.0, 2.0, 2.0)
    # Inverting every ratio inverts the interval (log scale).
    _, lo1, hi1 = rounds.ratio_interval([1.1, 0.9, 1.3, 1.0])
    _, lo2, hi2 = rounds.ratio_interval([1 / 1.1, 1 / 0.9, 1 / 1.3, 1.0])
    assert lo1 == pytest.approx(1 / hi2) and hi1 == pytest.approx(1 / lo2)
    # A skewed set whose geometric-mean interval would miss the median is widened to it.
    med, lo, hi = rounds.ratio_interval([1.0] * 32 + [5.0] * 30)
    assert med == 1.0 and lo == med <= hi


def test_t_quantiles():
    assert rounds.t975(2) == 4.303 and rounds.t975(4) == 2.776
    assert rounds.t975(27) == rounds.T975[25]  # between tabulated rows: the wider one
    with pytest.raises(ValueError):
        rounds.t975(0)


def test_one_round_has_no_interval_and_bad_ratios_are_errors():
    assert rounds.ratio_interval([1.3]) == (1.3, None, None)
    with pytest.raises(ValueError):
        rounds.ratio_interval([])
    with pytest.raises(ValueError):
        rounds.ratio_interval([1.0, 0.0])


@pytest.mark.parametrize("ci, target, want", [
    ((1.01, 1.20), 1.0, "met"),
    ((1.00, 1.20), 1.0, "met"),          # the whole interval at or above the target
    ((0.80, 0.99), 1.0, "missed"),       # wholly below
    ((0.95, 1.05), 1.0, "within noise"),  # straddles
    ((0.99, 1.00), 1.0, "within noise"),  # touches the target from below: not wholly below
    ((None, None), 1.0, "within noise"),
    (None, 1.3, "within noise"),
])
def test_verdict_rule(ci, target, want):
    assert rounds.verdict(ci, target) == want
    assert want in rounds.VERDICTS


def test_verdict_text():
    assert rounds.verdict_text((1.01, 1.2), 1.0) == "met"
    assert rounds.verdict_text((0.8, 0.9), 1.0) == "missed"
    assert rounds.verdict_text((0.947, 1.052), 1.0) == "within noise (CI 0.95–1.05)"
    assert rounds.verdict_text((None, None), 1.0).startswith("within noise (no interval")


def test_headline_entry_shape():
    e = rounds.headline_entry("cache_server ÷ nginx, pipeline depth 1", [0.95, 1.01, 0.99], 1.0)
    assert tuple(e) == rounds.HEADLINE_KEYS
    assert e["name"] == "cache_server ÷ nginx, pipeline depth 1"
    assert e["ratio"] == 0.99 and e["rounds"] == 3 and e["target"] == 1.0
    assert isinstance(e["ci"], list) and len(e["ci"]) == 2 and e["ci"][0] <= 0.99 <= e["ci"][1]
    assert e["verdict"] == "within noise"
    assert json.loads(json.dumps(e)) == e  # plain JSON


def test_spread():
    assert rounds.spread([3, None, 1, 2]) == {"median": 2, "min": 1, "max": 3}
    assert rounds.spread([None]) == {"median": None, "min": None, "max": None}
