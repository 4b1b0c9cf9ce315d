"""Small statistics the book reuses: effect size, a share's interval, a paired difference's interval."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike


def eta_squared(values: Sequence[float], groups: Sequence) -> float:
    """One-way ANOVA effect size: SS_between / SS_total (share of variance explained by `groups`).

    NaN handling: pairs whose value is NaN/inf or whose group is missing (None/NaN) are dropped
    first. The result is NaN when fewer than two groups remain or when every remaining value is
    equal (SS_total = 0, so "share of variance" is 0/0). Otherwise it lies in [0, 1].
    """
    numbers = np.asarray(values, dtype=float)
    labels = list(groups)
    if len(numbers) != len(labels):
        raise ValueError(f"values and groups differ in length ({len(numbers)} vs {len(labels)})")
    frame = pd.DataFrame({"value": numbers, "group": labels})
    frame = frame[np.isfinite(frame["value"]) & frame["group"].notna()]
    if frame["group"].nunique() < 2:
        return math.nan
    grand_mean = frame["value"].mean()
    ss_total = float(((frame["value"] - grand_mean) ** 2).sum())
    if ss_total == 0.0:
        return math.nan
    by_group = frame.groupby("group", observed=True)["value"].agg(["mean", "size"])
    ss_between = float((by_group["size"] * (by_group["mean"] - grand_mean) ** 2).sum())
    return min(1.0, ss_between / ss_total)  # min(): rounding can push an exact 1 a hair above


def wilson_interval(
    successes: ArrayLike, n: ArrayLike, confidence: float = 0.95
) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a proportion `successes / n`; returns (low, high).

    Works on scalars (returns two floats) or array-likes (returns two arrays). Unlike the
    normal approximation it stays inside [0, 1] and behaves at 0 and n successes, which is
    the common case here (for example 0% of Beyond-K-5 passages retained). n = 0 gives
    (NaN, NaN): there is no information about the share.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    k = np.asarray(successes, dtype=float)
    total = np.asarray(n, dtype=float)
    if np.any(total < 0) or np.any(k < 0) or np.any(k > total):
        raise ValueError("need 0 <= successes <= n")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / total
        denominator = 1.0 + z**2 / total
        centre = (p + z**2 / (2.0 * total)) / denominator
        half = z * np.sqrt(p * (1.0 - p) / total + z**2 / (4.0 * total**2)) / denominator
        # exact bounds at 0 and n successes (rounding would leave e.g. 2.8e-17 instead of 0)
        low = np.where(total > 0, np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.nan)
        high = np.where(total > 0, np.where(k == total, 1.0, np.clip(centre + half, 0.0, 1.0)), np.nan)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def share_table(
    frame: pd.DataFrame, by: str | list[str], flag: str, confidence: float = 0.95
) -> pd.DataFrame:
    """Per group of `by`: documents `n`, how many have the boolean column `flag` true, their
    `share` and its Wilson interval (`ci_low`, `ci_high`). For retention tables such as
    "share kept per band and source"."""
    if frame[flag].isna().any():
        raise ValueError(f"column {flag!r} has missing values; decide what they mean before counting")
    table = frame.groupby(by, observed=True)[flag].agg(n="size", hits="sum")
    table["hits"] = table["hits"].astype(int)
    table = table.rename(columns={"hits": flag})
    table["share"] = table[flag] / table["n"]
    low, high = wilson_interval(table[flag].to_numpy(), table["n"].to_numpy(), confidence)
    table["ci_low"], table["ci_high"] = low, high
    return table


def paired_difference(
    before: ArrayLike, after: ArrayLike, n_boot: int = 2000, seed: int = 0, confidence: float = 0.95
) -> dict[str, float]:
    """Mean of `after - before` over paired items (the same problems under two conditions) with a
    percentile bootstrap interval that resamples items: {"difference", "low", "high", "n"}."""
    a, b = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"need two non-empty 1-D arrays of one length, got {a.shape} and {b.shape}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    diff = b - a
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n_boot, len(diff)))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return {"difference": float(diff.mean()), "low": float(low), "high": float(high), "n": int(len(diff))}


def bits_per_byte(sum_nats: float, n_bytes: int) -> float:
    """Bits per byte from summed token negative log-likelihoods (natural log) and UTF-8 bytes:
    Σ nats / (ln 2 · Σ bytes), summed over the whole corpus before dividing."""
    if n_bytes <= 0:
        raise ValueError(f"bits per byte needs a positive byte count, got {n_bytes}")
    return float(sum_nats) / (math.log(2) * n_bytes)


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space (exact up to float rounding)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n = math.lgamma(n + 1)
    terms = [
        log_n - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(k + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


def _solve_decreasing(f: Callable[[float], float], target: float) -> float:
    """The p in [0, 1] where the decreasing function f(p) crosses `target` (bisection, 60 halvings)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2.0
        if f(middle) > target:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def clopper_pearson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) binomial interval for `successes / n`; returns (low, high).

    The interval inverts two one-sided binomial tests: `low` is the p at which seeing `successes` or
    more has probability (1 - confidence) / 2, `high` the p at which seeing `successes` or fewer has.
    At 0 successes `low` is 0 and `high` is 1 - (alpha / 2) ** (1 / n) (0 of 32 gives [0, 10.9%]),
    never the [0, 0] a percentile bootstrap returns. n = 0 gives (NaN, NaN).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    k, total = int(successes), int(n)
    if k != successes or total != n or total < 0 or not 0 <= k <= total:
        raise ValueError(f"need integers 0 <= successes <= n, got successes={successes!r}, n={n!r}")
    if total == 0:
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2.0
    if k == 0:
        return 0.0, 1.0 - tail ** (1.0 / total)
    if k == total:
        return tail ** (1.0 / total), 1.0
    # P(X >= k) = tail  <=>  P(X <= k - 1) = 1 - tail; both CDFs fall as p grows
    low = _solve_decreasing(lambda p: _binomial_cdf(k - 1, total, p), 1.0 - tail)
    high = _solve_decreasing(lambda p: _binomial_cdf(k, total, p), tail)
    return low, high


def seed_interval(values: Sequence[float], confidence: float = 0.95) -> dict[str, float]:
    """The mean of one estimate over independent training seeds, its standard deviation and its
    Student-t interval (n - 1 degrees of freedom): the uncertainty of retraining, which an interval
    over items of one trained model does not hold. Three seeds give t = 4.30 at 95%, so the
    interval is wide unless the seeds agree closely. Fewer than two finite values give NaN bounds.
    """
    from scipy.stats import t as student_t

    numbers = np.asarray(values, dtype=float)
    numbers = numbers[np.isfinite(numbers)]
    n = len(numbers)
    mean = float(numbers.mean()) if n else math.nan
    if n < 2:
        return {"mean": mean, "sd": math.nan, "low": math.nan, "high": math.nan, "seeds": n}
    sd = float(numbers.std(ddof=1))
    half = float(student_t.ppf(0.5 + confidence / 2.0, n - 1)) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "low": mean - half, "high": mean + half, "seeds": n}
