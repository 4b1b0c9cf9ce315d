"""Unbiased pass@k from n samples with c correct, its mean over problems, curves over k, 95% CIs.

pass@k = 1 - C(n-c, k) / C(n, k) is the chance that k of the n samples, drawn without replacement,
hold at least one correct one (Chen et al., 2021, "Evaluating Large Language Models Trained on
Code"). The binomials overflow for n = 1,024, so it is computed as the product
1 - prod_{i=n-c+1}^{n} (1 - k / i), which is the same ratio written term by term.

Confidence intervals are over problems: the benchmark score is a mean of per-problem estimates, and
the problems are the sample that varies (each estimate already carries its own sampling noise).
`method="bootstrap"` resamples problems with replacement (percentile interval, the default);
`method="normal"` uses mean +- z * sd / sqrt(problems). Both are clipped to [0, 1]; when every
problem scores the same (all 0 at the floor) both collapse to that value.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import pandas as pd

CI_METHODS = ("bootstrap", "normal")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with `c` correct among `n` samples (needs 1 <= k <= n)."""
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n):
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not (1 <= k <= n):
        raise ValueError(f"need 1 <= k <= n, got k={k} with n={n} samples")


def per_problem(ns: Sequence[int], cs: Sequence[int], k: int) -> np.ndarray:
    """pass@k of every problem (arrays of samples `ns` and correct counts `cs`)."""
    if len(ns) != len(cs):
        raise ValueError(f"ns and cs differ in length: {len(ns)} vs {len(cs)}")
    return np.array([pass_at_k(int(n), int(c), k) for n, c in zip(ns, cs, strict=True)], dtype=float)


def mean_interval(
    values: Sequence[float],
    confidence: float = 0.95,
    method: str = "bootstrap",
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(mean, low, high) of per-problem scores with a `confidence` interval over problems."""
    if method not in CI_METHODS:
        raise ValueError(f"method must be one of {CI_METHODS}, got {method!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (np.nan, np.nan, np.nan)
    mean = float(x.mean())
    if method == "normal":
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        half = z * (x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else 0.0)
        low, high = mean - half, mean + half
    else:
        rng = np.random.default_rng(seed)
        chunk = max(1, 2_000_000 // x.size)  # resamples drawn at once: bounded memory for many problems
        means = np.concatenate(
            [
                x[rng.integers(0, x.size, size=(min(chunk, n_boot - start), x.size))].mean(axis=1)
                for start in range(0, n_boot, chunk)
            ]
        )
        low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return mean, float(max(0.0, low)), float(min(1.0, high))


def mean_pass_at_k(
    ns: Sequence[int],
    cs: Sequence[int],
    k: int,
    confidence: float = 0.95,
    method: str = "bootstrap",
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """{k, pass_at_k, low, high, problems}: the mean of per-problem pass@k and its CI."""
    mean, low, high = mean_interval(per_problem(ns, cs, k), confidence, method, n_boot, seed)
    return {"k": k, "pass_at_k": mean, "low": low, "high": high, "problems": len(ns)}


def default_ks(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself: the k-axis of a pass@k curve on a log scale."""
    ks = [2**i for i in range(int(np.log2(n)) + 1)]
    return ks if ks[-1] == n else [*ks, n]


def pass_at_k_curve(
    ns: Sequence[int],
    cs: Sequence[int],
    ks: Sequence[int] | None = None,
    confidence: float = 0.95,
    method: str = "bootstrap",
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per k (default `default_ks(min(ns))`): k, pass_at_k, low, high, problems."""
    if len(ns) == 0:
        raise ValueError("pass_at_k_curve needs at least one problem")
    ks = default_ks(int(min(ns))) if ks is None else list(ks)
    rows = [mean_pass_at_k(ns, cs, k, confidence, method, n_boot, seed) for k in ks]
    return pd.DataFrame(rows, columns=["k", "pass_at_k", "low", "high", "problems"])
