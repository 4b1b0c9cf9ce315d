"""One figure style for the whole book. Every notebook calls `use_book_style()` first.

Bands keep the same colour in every figure (K5 is always blue, Beyond K-5 always vermilion),
taken from seaborn's colour-blind-safe palette.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from littlekit.grades import BANDS

# seaborn "colorblind" palette entries, written out so a figure never depends on palette order.
BAND_COLORS: dict[str, str] = {
    "K5": "#0173b2",
    "K8": "#de8f05",
    "K12": "#029e73",
    "OOS": "#cc78bc",
    "K-5": "#0173b2",
    "Beyond K-5": "#d55e00",
}
# The models the evaluations compare keep one colour each: LittleLearner takes K-5's blue.
MODEL_COLORS: dict[str, str] = {
    "LittleLearner": "#0173b2",
    "UNFILTERED": "#555555",
    "Gemma 2B": "#029e73",
}
BAND_ORDER: tuple[str, ...] = BANDS
SPLIT_ORDER: tuple[str, ...] = ("K-5", "Beyond K-5")
FIGSIZE: tuple[float, float] = (7.0, 4.0)
DPI = 110


def use_book_style() -> None:
    """Apply the book's seaborn theme: white grid, notebook context, colour-blind palette.

    Inside a Jupyter kernel it also selects the inline backend, so figures reach the executed
    notebook even when `MPLBACKEND=Agg` is set for the build (the Makefile sets it, and
    ipykernel then leaves the backend alone).
    """
    _inline_in_kernels()
    sns.set_theme(
        context="notebook",
        style="whitegrid",
        palette="colorblind",
        rc={
            "figure.figsize": FIGSIZE,
            "figure.dpi": DPI,
            "savefig.dpi": 150,
            "savefig.bbox": "tight",
            "axes.titlesize": "medium",
            "axes.titleweight": "bold",
        },
    )


def _inline_in_kernels() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and getattr(shell, "kernel", None) is not None:
        shell.run_line_magic("matplotlib", "inline")


def band_palette(labels: list[str] | tuple[str, ...] | None = None) -> dict[str, str]:
    """The colours of `labels` (default: the four bands), for seaborn's `palette=` argument."""
    chosen = BAND_ORDER if labels is None else labels
    unknown = [label for label in chosen if label not in BAND_COLORS]
    if unknown:
        raise ValueError(f"no book colour for {unknown}; known: {', '.join(BAND_COLORS)}")
    return {label: BAND_COLORS[label] for label in chosen}


def save_figure(fig: Figure, path: str | os.PathLike) -> Path:
    """Save `fig` (format from the suffix, PNG when none), creating folders; returns the path."""
    target = Path(path)
    if not target.suffix:
        target = target.with_suffix(".png")
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target)
    return target


def close(fig: Figure) -> None:
    """Release a figure that has been shown or saved (keeps long notebooks light)."""
    plt.close(fig)


def share_bars(
    table: pd.DataFrame,
    group: str,
    ax: Axes,
    order: list | None = None,
    band: str = "band",
    value: str = "share",
) -> Axes:
    """One horizontal bar per (group, band) present: a share in the band's colour, with whiskers.

    `table` is indexed by (band, group) or (group, band) and has columns `value`, `ci_low`,
    `ci_high` and `n`, as `littlekit.stats.share_table` returns them. Rows run top to bottom by
    group (in `order`, default sorted), then band, with a gap between groups; each is labelled
    "group · band (n=...)". A share of 0 shows as its whisker alone.
    """
    frame = table.reset_index()
    groups = list(order) if order is not None else sorted(set(frame[group]))
    rank = {b: i for i, b in enumerate(BAND_ORDER)}
    frame = frame[frame[group].isin(groups)].assign(
        _g=lambda f: f[group].map(groups.index), _b=lambda f: f[band].map(rank)
    )
    frame = frame.sort_values(["_g", "_b"]).reset_index(drop=True)
    y = frame.index.to_numpy() + 0.5 * frame["_g"].to_numpy()  # half a row between groups
    share = frame[value].to_numpy(dtype=float)
    colours = [BAND_COLORS[b] for b in frame[band]]
    ax.barh(y, share, height=0.8, color=colours)
    ci_whiskers(ax, y, share, frame["ci_low"], frame["ci_high"], horizontal=True, capsize=2, linewidth=0.8)
    rows = zip(frame[group], frame[band], frame["n"], strict=True)
    ax.set_yticks(y, [f"{g} · {b} (n={int(n):,})" for g, b, n in rows])
    for name in [b for b in BAND_ORDER if b in set(frame[band])]:  # legend entries, in band order
        ax.barh([np.nan], [np.nan], color=BAND_COLORS[name], label=name)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    return ax


def grade_errorbars(
    ax: Axes, by_grade: pd.DataFrame, labels: list[str] | tuple[str, ...], colors: dict[str, str]
) -> list[str]:
    """One line of percentages with 95% CI whiskers per model across grades K..8 (the paper's
    Figure 6 layout), a dashed line after grade 5; `by_grade` has model, grade, pass_at_k, low and
    high (`evals.mathcamps.accuracy_by`). Returns the grades drawn."""
    from littlekit.curriculum.registry import GRADE_ORDER

    present = set(by_grade["grade"].astype(str))
    grades = [g for g in GRADE_ORDER if g in present]
    offsets = np.linspace(-0.15, 0.15, len(labels)) if len(labels) > 1 else [0.0]
    for offset, label in zip(offsets, labels, strict=True):
        rows = by_grade[by_grade["model"] == label]
        rows = rows.set_index(rows["grade"].astype(str)).reindex(grades)
        y = 100 * rows["pass_at_k"]
        ax.errorbar(np.arange(len(grades)) + offset, y, yerr=[y - 100 * rows["low"], 100 * rows["high"] - y],
                    fmt="o-", capsize=3, color=colors.get(label), label=label)  # fmt: skip
    if "5" in grades and grades[-1] != "5":
        ax.axvline(grades.index("5") + 0.5, color="0.6", ls="--", lw=1)
    ax.set_xticks(range(len(grades)), grades)
    ax.set_xlabel("Grade")
    ax.legend()
    return grades


def confusion_heatmap(
    confusion: pd.DataFrame,
    ax: Axes,
    cmap: str = "Blues",
    cbar: bool = True,
    cbar_label: str = "share of row",
) -> Axes:
    """A confusion matrix of counts (rows: reference, columns: predicted) as an annotated heatmap,
    each row's cells shaded by their share of the row so small bands read as clearly as large ones;
    the axis titles are the frame's index and column names. Panels side by side share one colour
    scale (0 to 1), so only the last needs its colour bar (`cbar`)."""
    counts = confusion.astype(int)
    shares = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0)
    sns.heatmap(shares, annot=counts, fmt="d", cmap=cmap, vmin=0, vmax=1, cbar=cbar,
                cbar_kws={"label": cbar_label} if cbar else None, linewidths=0.5, linecolor="white",
                ax=ax)  # fmt: skip
    ax.set_ylabel(confusion.index.name or "reference")
    ax.set_xlabel(confusion.columns.name or "predicted")
    ax.tick_params(axis="y", rotation=0)
    return ax


def ci_whiskers(
    ax: Axes, positions, value, low, high, horizontal: bool = False, capsize: float = 3, linewidth: float = 1
):
    """Black whiskers from `low` to `high` around each `value` (a share and its 95% interval) at
    `positions` (the bars' centres: numbers or category names); vertical unless `horizontal`.
    A bound on the wrong side of its value (rounding) draws no whisker on that side."""
    value = np.asarray(value, dtype=float)
    err = np.clip([value - np.asarray(low, dtype=float), np.asarray(high, dtype=float) - value], 0.0, None)
    style = {"fmt": "none", "ecolor": "black", "capsize": capsize, "linewidth": linewidth}
    if horizontal:
        return ax.errorbar(value, positions, xerr=err, **style)
    return ax.errorbar(positions, value, yerr=err, **style)


def retention_bars(
    table: pd.DataFrame, x: str, ax: Axes, order: list | None = None, group: str = "group"
) -> dict[str, np.ndarray]:
    """The share of K-5 and of Beyond-K-5 passages kept at each value of column `x` (a stage, a
    stage turned off), their bars side by side in the book's two colours with 95% whiskers.

    `table` has one row per (`x`, `group`) with share, ci_low, ci_high and n, such as
    `validate.retention_after_stages(...).reset_index()` (x="after"); `order` gives the bars'
    order (default: as they come). Each group's legend label gives its n (that of its first bar),
    for the caller's `ax.legend()`; the y axis runs from 0 to 1.05. Returns each group's bar
    positions, for marks drawn on top.
    """
    order = list(order) if order is not None else list(dict.fromkeys(table[x]))
    positions = {}
    for offset, (name, colour) in zip((-0.2, 0.2), band_palette(list(SPLIT_ORDER)).items(), strict=True):
        rows = table[table[group] == name].set_index(x).reindex(order)
        at = np.arange(len(order)) + offset
        ax.bar(at, rows["share"], width=0.4, color=colour, label=f"{name} (n={int(rows['n'].iloc[0]):,})")
        ci_whiskers(ax, at, rows["share"], rows["ci_low"], rows["ci_high"], capsize=2, linewidth=0.8)
        positions[name] = at
    ax.set_xticks(np.arange(len(order)), order)
    ax.set_ylim(0, 1.05)
    return positions


def retention_barh(
    table: pd.DataFrame,
    ax: Axes,
    value: str = "share",
    n: str = "n",
    color: str | list[str] = BAND_COLORS["K-5"],
    stack: dict[str, str] | None = None,
) -> Axes:
    """One horizontal bar per row of `table` (a data set, a source), top to bottom: the share
    kept (or dropped) in column `value`, with black whiskers from ci_low to ci_high, labelled
    "<row> (n=...)" from column `n`.

    The bar is `color` (one colour, or one per row); with `stack` ({column: colour}) it is
    stacked instead from each column's count as a share of n (a column that is 0 in every row
    is left out), each segment labelled by its column for the caller's `ax.legend()`.
    """
    y = np.arange(len(table))
    if stack is None:
        ax.barh(y, table[value], color=color)
    else:
        left = np.zeros(len(table))
        for column, colour in stack.items():
            width = (table[column] / table[n]).to_numpy(dtype=float)
            if width.any():
                ax.barh(y, width, left=left, color=colour, label=column)
            left += width
    ci_whiskers(ax, y, table[value], table["ci_low"], table["ci_high"], horizontal=True)
    labels = [f"{name} (n={int(count):,})" for name, count in zip(table.index, table[n], strict=True)]
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    return ax
