"""Bits per byte on CLEAR by Bradley-Terry easiness bin (the paper's Figure 3).

Binning. The paper plots BPB against CLEAR's `bt_easiness` with ten axis values, 0.5, 0.0, -0.3,
-0.5, -0.8, -1.0, -1.3, -1.6, -1.9, -2.4 (easy to hard), and does not state its binning. We read
them as bin edges (`PAPER_EDGES`): nine bins between them, each (low, high], plus the two
extremes outside the range, easiness above 0.5 and at most -2.4, which are reported as bins of
their own (`fold_extremes=False`, the default) or folded into the first and last bin. The unequal
spacing is not arbitrary: on all 4,724 CLEAR excerpts these edges are within about 0.1 of the
edges of eleven equal-count bins (`quantile_edges(easiness, 11)`), so the eleven bins hold
roughly equal numbers of excerpts (291-559). Every excerpt falls in exactly one bin.

Per-bin BPB is corpus-level within the bin: Σ nats / (ln 2 · Σ UTF-8 bytes) over the bin's
excerpts (`evals.bpb.corpus_bpb`), never a mean of per-excerpt values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from littlekit.argtypes import positive_int
from littlekit.evals.benchmark import Benchmark, count_or_all, option
from littlekit.evals.bpb import bpb_from_token_losses, corpus_bpb, paired_bootstrap_table
from littlekit.evals.seen import SeenItems, seen_items

PAPER_EDGES: tuple[float, ...] = (0.5, 0.0, -0.3, -0.5, -0.8, -1.0, -1.3, -1.6, -1.9, -2.4)


def _check_edges(edges: Sequence[float]) -> list[float]:
    edges = [float(e) for e in edges]
    if len(edges) < 2 or any(a <= b for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"edges must be at least two values, strictly decreasing (easy to hard): {edges}")
    return edges


def bin_table(edges: Sequence[float] = PAPER_EDGES, fold_extremes: bool = False) -> pd.DataFrame:
    """One row per bin, easiest first: bin (0, 1, ...), label, low, high (a bin holds low < e <= high).

    Without folding the first bin is (edges[0], inf) and the last (-inf, edges[-1]]; with folding
    the first and last of the in-range bins extend to +-inf instead.
    """
    edges = _check_edges(edges)
    rows = [(lo, hi) for hi, lo in zip(edges, edges[1:], strict=False)]
    if fold_extremes:
        rows[0] = (rows[0][0], np.inf)
        rows[-1] = (-np.inf, rows[-1][1])
    else:
        rows = [(edges[0], np.inf), *rows, (-np.inf, edges[-1])]
    labels = []
    for lo, hi in rows:
        if hi == np.inf:
            labels.append(f"> {lo:g}")
        elif lo == -np.inf:
            labels.append(f"<= {hi:g}")
        else:
            labels.append(f"{hi:g} to {lo:g}")
    return pd.DataFrame(
        {"bin": range(len(rows)), "label": labels, "low": [r[0] for r in rows], "high": [r[1] for r in rows]}
    )


def assign_bins(
    easiness: Sequence[float] | pd.Series, edges: Sequence[float] = PAPER_EDGES, fold_extremes: bool = False
) -> np.ndarray:
    """The bin (row of `bin_table`) of each easiness value; NaN is an error."""
    values = np.asarray(easiness, dtype=float)
    if np.isnan(values).any():
        raise ValueError(f"easiness has {int(np.isnan(values).sum())} missing values")
    table = bin_table(edges, fold_extremes)
    out = np.full(len(values), -1, dtype=int)
    for row in table.itertuples():
        out[(values > row.low) & (values <= row.high)] = row.bin
    return out


def bin_counts(
    easiness: Sequence[float] | pd.Series, edges: Sequence[float] = PAPER_EDGES, fold_extremes: bool = False
) -> pd.DataFrame:
    """`bin_table` with the number of values in each bin (the counts add up to len(easiness))."""
    table = bin_table(edges, fold_extremes)
    counts = np.bincount(assign_bins(easiness, edges, fold_extremes), minlength=len(table))
    return table.assign(count=counts)


def quantile_edges(easiness: Sequence[float] | pd.Series, n_bins: int) -> list[float]:
    """The n_bins - 1 inner edges (decreasing) of n_bins equal-count bins, for comparison with PAPER_EDGES."""
    if n_bins < 2:
        raise ValueError("n_bins must be at least 2")
    inner = np.quantile(np.asarray(easiness, dtype=float), np.linspace(0, 1, n_bins + 1)[1:-1])
    return [float(v) for v in inner[::-1]]


def sample_per_bin(
    frame: pd.DataFrame, per_bin: int | None, seed: int = 0, column: str = "bin"
) -> pd.DataFrame:
    """At most per_bin rows of each bin (seeded, without replacement; None: all), in the frame's order."""
    if per_bin is None:
        return frame
    if per_bin < 1:
        raise ValueError("per_bin must be positive or None")
    shuffled = frame.sample(frac=1.0, random_state=seed)
    return shuffled.groupby(column, sort=False).head(per_bin).sort_index()


def binned_bpb(
    per_doc: Sequence[Mapping[str, Any]], bins: Sequence[int], table: pd.DataFrame
) -> pd.DataFrame:
    """`table` with docs, tokens, nats, bytes and bpb per bin from corpus_bpb's per_doc records."""
    frame = pd.DataFrame(list(per_doc)).assign(bin=np.asarray(bins))
    sums = frame.groupby("bin").agg(
        docs=("bytes", "size"), tokens=("tokens", "sum"), nats=("nats", "sum"), bytes=("bytes", "sum")
    )
    out = table.merge(sums, left_on="bin", right_index=True, how="left")
    out[["docs", "tokens", "bytes"]] = out[["docs", "tokens", "bytes"]].fillna(0).astype(int)
    out["nats"] = out["nats"].fillna(0.0)
    out["bpb"] = [
        bpb_from_token_losses(n, b) if b > 0 else np.nan
        for n, b in zip(out["nats"], out["bytes"], strict=True)
    ]
    return out


def clear_bpb(
    models: Mapping[str, tuple[Any, Any]],
    clear: pd.DataFrame,
    per_bin: int | None = None,
    edges: Sequence[float] = PAPER_EDGES,
    fold_extremes: bool = False,
    seed: int = 0,
    **bpb_kwargs: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(BPB per model and bin, per model and excerpt) on CLEAR (`corpora.load_clear`'s frame).

    Each model scores the same excerpts: those no model's training text holds (`unseen_excerpts`),
    at most per_bin per bin (seeded; None: all). The first
    table has one row per (model, bin): bin, label, low, high, mean_easiness (of the bin's scored
    excerpts), docs, tokens, nats, bytes, bpb. The second has one row per (model, excerpt): model,
    id, bin, bt_easiness, nats, bytes, tokens (for `bootstrap_slopes`). bpb_kwargs go to
    corpus_bpb (batch_size, max_length, stride, device).
    """
    if not models:
        raise ValueError("no models to score: pass {label: (model, tokenizer)}")
    missing = {"id", "text", "bt_easiness"} - set(clear.columns)
    if missing:
        raise ValueError(f"the CLEAR frame lacks column(s) {sorted(missing)}")
    table = bin_table(edges, fold_extremes)
    frame = clear.assign(bin=assign_bins(clear["bt_easiness"], edges, fold_extremes))
    frame = unseen_excerpts(models, frame)[0]  # held out means unseen: before the per-bin sample
    scored = sample_per_bin(frame, per_bin, seed).reset_index(drop=True)
    mean_easiness = scored.groupby("bin")["bt_easiness"].mean()
    rows, docs = [], []
    for label, (model, tokenizer) in models.items():
        result = corpus_bpb(model, tokenizer, scored["text"].tolist(), per_doc=True, **bpb_kwargs)
        per_bin_rows = binned_bpb(result["per_doc"], scored["bin"], table)
        rows.append(per_bin_rows.assign(model=label, mean_easiness=per_bin_rows["bin"].map(mean_easiness)))
        per_doc = pd.DataFrame(result["per_doc"])
        docs.append(pd.concat([scored[["id", "bin", "bt_easiness"]], per_doc], axis=1).assign(model=label))
    columns = ["model", "bin", "label", "low", "high", "mean_easiness", "docs", "tokens", "nats", "bytes"]
    doc_columns = ["model", "id", "bin", "bt_easiness", "nats", "bytes", "tokens"]
    return (
        pd.concat(rows, ignore_index=True)[[*columns, "bpb"]],
        pd.concat(docs, ignore_index=True)[doc_columns],
    )


def unseen_excerpts(models: Mapping[str, Any], clear: pd.DataFrame) -> tuple[pd.DataFrame, SeenItems]:
    """(the excerpts no model's training text holds, which were seen and by whom): `clear_bpb`
    scores only the first, so every model is scored on the same unseen excerpts."""
    seen = seen_items(models, clear["text"].tolist())
    return clear[~seen.mask], seen


def _slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of y against x along the last axis (x: (..., bins), y: (..., bins))."""
    dx = x - x.mean(axis=-1, keepdims=True)
    dy = y - y.mean(axis=-1, keepdims=True)
    return (dx * dy).sum(axis=-1) / (dx * dx).sum(axis=-1)


def bootstrap_slopes(
    docs: pd.DataFrame, n_boot: int = 1000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Percentile bootstrap of each model's `rise_per_unit` (BPB added per unit of lost easiness)
    and of each model's rise minus every other's, from `clear_bpb`'s per-excerpt table.

    Excerpts are resampled with replacement within each bin, the same excerpts for every model
    (a paired bootstrap); each resample recomputes the bins' corpus-level BPB and mean easiness.
    Rows: `what` (a model, or "A - B"), rise_per_unit (on the excerpts as scored), ci_low, ci_high.
    """
    wide = docs.pivot_table(index=["id", "bin", "bt_easiness", "bytes"], columns="model", values="nats")
    models = list(dict.fromkeys(docs["model"]))
    wide = wide[models].reset_index()
    nats = wide[models].to_numpy()  # (docs, models)
    n_bytes, easiness = wide["bytes"].to_numpy(float), wide["bt_easiness"].to_numpy()
    members = [np.flatnonzero(wide["bin"].to_numpy() == b) for b in sorted(wide["bin"].unique())]
    if len(members) < 2:
        raise ValueError("a slope needs excerpts in at least two bins")

    def rises(picks: list[np.ndarray]) -> np.ndarray:
        x = np.array([easiness[p].mean() for p in picks])
        y = np.array([nats[p].sum(axis=0) / (np.log(2) * n_bytes[p].sum()) for p in picks])  # (bins, models)
        return -_slopes(np.broadcast_to(x, y.T.shape), y.T)

    rng = np.random.default_rng(seed)
    point = rises(members)
    boots = np.array([rises([rng.choice(m, size=len(m)) for m in members]) for _ in range(n_boot)])
    return paired_bootstrap_table(models, point, boots, confidence, value="rise_per_unit")


def bin_bootstrap_ci(
    docs: pd.DataFrame, n_boot: int = 1000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Percentile bootstrap interval of each (model, bin)'s corpus-level BPB from `clear_bpb`'s
    per-excerpt table: the bin's excerpts resampled with replacement. Rows: model, bin, ci_low, ci_high."""
    rng = np.random.default_rng(seed)
    alpha = (1 - confidence) / 2
    rows = []
    for (model, b), group in docs.groupby(["model", "bin"], sort=False):
        nats, n_bytes = group["nats"].to_numpy(), group["bytes"].to_numpy(float)
        picks = rng.integers(0, len(group), size=(n_boot, len(group)))
        values = nats[picks].sum(axis=1) / (np.log(2) * n_bytes[picks].sum(axis=1))
        rows.append(
            {
                "model": model,
                "bin": b,
                "ci_low": float(np.quantile(values, alpha)),
                "ci_high": float(np.quantile(values, 1 - alpha)),
            }
        )
    return pd.DataFrame(rows)


def easiness_slopes(results: pd.DataFrame) -> pd.DataFrame:
    """Per model: least-squares slope of bin BPB against the bin's mean easiness (bins with data).

    A negative slope means BPB rises as texts get harder (easiness falls); `rise_per_unit` is the
    BPB added per unit of lost easiness (minus the slope). Also the BPB of the easiest and the
    hardest bin with data and their difference.
    """
    rows = []
    for model, group in results.dropna(subset=["bpb", "mean_easiness"]).groupby("model", sort=False):
        group = group.sort_values("bin")
        slope = float(np.polyfit(group["mean_easiness"], group["bpb"], 1)[0]) if len(group) > 1 else np.nan
        rows.append(
            {
                "model": model,
                "slope": slope,
                "rise_per_unit": -slope,
                "easiest_bpb": float(group["bpb"].iloc[0]),
                "hardest_bpb": float(group["bpb"].iloc[-1]),
                "hardest_minus_easiest": float(group["bpb"].iloc[-1] - group["bpb"].iloc[0]),
            }
        )
    return pd.DataFrame(rows).set_index("model")


# --- `littlekit eval clear` (the interface: littlekit.evals.benchmark) ---------------------------


def _load_benchmark(args: Any) -> pd.DataFrame:
    from littlekit.databuild.corpora import load_clear

    return load_clear(args.data_root)


def _score_benchmark(model: Any, tokenizer: Any, clear: pd.DataFrame, args: Any) -> pd.DataFrame:
    """`clear_bpb`'s per-excerpt rows (only excerpts the model's training text does not hold)."""
    return clear_bpb({"model": (model, tokenizer)}, clear, per_bin=args.per_bin,
                     fold_extremes=args.fold_extremes, seed=args.seed, batch_size=args.batch_size,
                     max_length=args.max_length)[1]  # fmt: skip


def bin_bpb_table(docs: pd.DataFrame, args: Any) -> pd.DataFrame:
    """Per easiness bin (easy to hard): mean easiness, excerpts, tokens, bytes, corpus BPB and its
    percentile bootstrap interval over the bin's excerpts (`bin_bootstrap_ci`)."""
    table = binned_bpb(docs[["nats", "bytes", "tokens"]].to_dict("records"), docs["bin"],
                       bin_table(PAPER_EDGES, args.fold_extremes))  # fmt: skip
    table["mean_easiness"] = table["bin"].map(docs.groupby("bin")["bt_easiness"].mean())
    intervals = bin_bootstrap_ci(docs, n_boot=args.n_boot, seed=args.seed).drop(columns="model")
    table = table.merge(intervals, on="bin", how="left")
    return table[["bin", "label", "mean_easiness", "docs", "tokens", "bytes", "bpb", "ci_low", "ci_high"]]


BENCHMARK = Benchmark(
    name="clear",
    measures="bits per byte on CLEAR excerpts by Bradley-Terry easiness bin",
    paper="the paper's Figure 3",
    load=_load_benchmark,
    score=_score_benchmark,
    table=bin_bpb_table,
    options=(
        option(
            "--per-bin",
            type=count_or_all,
            default=100,
            help="excerpts scored per easiness bin, a seeded sample, or 'all' (default 100)",
        ),
        option(
            "--fold-extremes",
            action="store_true",
            help="fold the excerpts beyond 0.5 and -2.4 into the end bins",
        ),
        option(
            "--max-length",
            type=positive_int,
            help="scoring window in tokens (default: the model's context, at most 2,048)",
        ),
        option("--n-boot", type=positive_int, default=1000, help="bootstrap resamples (default 1000)"),
    ),
)
