"""rounds — interleaved rounds, the confidence interval of a ratio over them, and the one verdict
rule every report states a target with (issue 48; docs/studies.md, "Headlines: rounds, intervals,
verdicts"). Stdlib only, pure, unit-tested (tests/scripts/test_rounds.py).

- order(names, round_i, point_j): who goes first at one point of one round. The names rotate by
  round_i + point_j, so with two sides the order alternates from point to point and from round
  to round (A B, B A, A B ... then B A, A B ... in the next round): a slow minute on a shared
  machine lands on both sides. scripts/experiment.py, scripts/compare_nginx.py and
  scripts/compare_wrk.py interleave with it.
- ratio_interval(ratios): the headline ratio of R rounds: the median of the per-round ratios,
  and a 95% interval: Student's t on the logarithms of the per-round ratios (the ratio is
  multiplicative, so its logarithm is the scale on which round-to-round noise is roughly
  symmetric), exp(mean ± t(0.975, R-1) · sd / √R), widened to contain the median if it does
  not. Why not the order-statistic interval of the median: from R = 3 rounds it is [min, max]
  and covers the median only 1 − 2·0.5³ = 75% of the time (R = 5: 93.75%); no order statistic
  of 3 or 5 samples reaches 95%. The t interval does, under the assumption that the per-round
  log ratios are independent and normal; with 3 rounds it is wide (t = 4.30), which is what 3
  rounds can honestly claim. Fewer than 2 rounds: no interval (None, None).
- verdict(ci, target): "met" only if the whole interval is at or above the target, "missed" only
  if it lies wholly below, else "within noise"; verdict_text() adds the interval to the last.
- spread(values): median, min and max (the per-point cells of the tables and the JSON).
- headline_entry(): one line of run.json's "headline": {"name", "ratio", "ci": [low, high],
  "rounds", "target", "verdict"}.
"""
from __future__ import annotations

import math
import statistics

MET, MISSED, NOISE = "met", "missed", "within noise"
VERDICTS = (MET, MISSED, NOISE)
HEADLINE_KEYS = ("name", "ratio", "ci", "rounds", "target", "verdict")
CONFIDENCE = 0.95
# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom; 30+ uses 30's (2.042)
# rather than the normal 1.96: the reports never run that many rounds, and it errs wide.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
        17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042}
CI_METHOD = ("median of the per-round ratios; 95% interval: Student's t on the log ratios, "
             "exp(mean ± t·sd/√R), widened to contain the median")


def t975(df: int) -> float:
    """The two-sided 95% Student t quantile for `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("a t interval needs at least 2 samples")
    if df in T975:
        return T975[df]
    return T975[max(k for k in T975 if k <= df)]  # the next lower tabulated df: wider, never narrower


def order(names: list, round_i: int, point_j: int = 0) -> list:
    """The sides in the order they run at point `point_j` of round `round_i` (both from 0)."""
    if not names:
        return []
    k = (round_i + point_j) % len(names)
    return list(names[k:]) + list(names[:k])


def ratio_interval(ratios: list[float]) -> tuple[float, float | None, float | None]:
    """(median, low, high) of per-round ratios (each > 0); low/high None with fewer than 2."""
    rs = [float(r) for r in ratios]
    if not rs:
        raise ValueError("no ratios")
    if any(not r > 0 or math.isinf(r) for r in rs):
        raise ValueError(f"ratios must be positive and finite: {rs}")
    med = statistics.median(rs)
    if len(rs) < 2:
        return med, None, None
    logs = [math.log(r) for r in rs]
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    half = t975(len(rs) - 1) * sd / math.sqrt(len(rs))
    return med, min(math.exp(mean - half), med), max(math.exp(mean + half), med)


def verdict(ci: tuple | list | None, target: float) -> str:
    """MET when the whole interval clears the target (low >= target), MISSED when it lies wholly
    below (high < target), else NOISE (it straddles the target, or there is no interval)."""
    low, high = (ci or (None, None))
    if low is None or high is None:
        return NOISE
    if low >= target:
        return MET
    if high < target:
        return MISSED
    return NOISE


def fci(ci, digits: int = 2) -> str:
    """An interval as the reports print it: "0.97–1.05" ("no interval" without one)."""
    low, high = (ci or (None, None))
    if low is None or high is None:
        return "no interval"
    return f"{low:.{digits}f}–{high:.{digits}f}"


def verdict_text(ci, target: float) -> str:
    """The verdict as a report prints it: "met", "missed" or "within noise (CI a–b)"."""
    v = verdict(ci, target)
    if v != NOISE:
        return v
    low, high = (ci or (None, None))
    if low is None or high is None:
        return f"{v} (no interval: fewer than 2 rounds)"
    return f"{v} (CI {fci(ci)})"


def spread(values: list[float]) -> dict:
    """{"median", "min", "max"} of the values that are not None (all None when none are)."""
    vs = [v for v in values if v is not None]
    if not vs:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(vs), "min": min(vs), "max": max(vs)}


def headline_entry(name: str, ratios: list[float], target: float) -> dict:
    """One line of run.json's "headline", from the per-round ratios of one pair."""
    med, low, high = ratio_interval(ratios)
    return {"name": name, "ratio": med, "ci": [low, high], "rounds": len(ratios),
            "target": target, "verdict": verdict((low, high), target)}
