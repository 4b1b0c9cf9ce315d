import matplotlib
import matplotlib.pyplot as plt
import pytest

from littlekit.analysis import plots
from littlekit.grades import BANDS


def test_every_band_and_split_has_a_distinct_colour():
    assert set(BANDS) | set(plots.SPLIT_ORDER) <= set(plots.BAND_COLORS)
    assert len({plots.BAND_COLORS[b] for b in BANDS}) == len(BANDS)
    assert plots.BAND_COLORS["K-5"] == plots.BAND_COLORS["K5"]
    assert plots.BAND_COLORS["Beyond K-5"] not in {plots.BAND_COLORS[b] for b in BANDS}


def test_band_palette_rejects_unknown_labels():
    assert list(plots.band_palette()) == list(BANDS)
    with pytest.raises(ValueError, match="no book colour"):
        plots.band_palette(["K5", "grade 3"])


def test_style_and_save_figure(tmp_path):
    plots.use_book_style()
    assert tuple(plt.rcParams["figure.figsize"]) == plots.FIGSIZE
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    saved = plots.save_figure(fig, tmp_path / "sub" / "line")
    plots.close(fig)
    assert saved.suffix == ".png" and saved.stat().st_size > 0


def test_share_bars_draws_one_bar_per_present_cell():
    import pandas as pd

    from littlekit.stats import share_table

    frame = pd.DataFrame({
        "band": ["K5", "K5", "K8", "K8", "K12"],
        "kind": ["a", "b", "a", "a", "b"],
        "kept": [True, False, True, False, False],
    })
    table = share_table(frame, ["band", "kind"], "kept")
    fig, ax = plt.subplots()
    plots.share_bars(table, "kind", ax)
    bars = [(matplotlib.colors.to_hex(p.get_facecolor()), p.get_width()) for p in ax.patches]
    bars = [bar for bar in bars if bar[1] == bar[1]]  # the NaN bars only make legend entries
    k5, k8, k12 = (plots.BAND_COLORS[b] for b in ("K5", "K8", "K12"))
    assert bars == [(k5, 1.0), (k8, 0.5), (k5, 0.0), (k12, 0.0)]  # a: K5, K8; b: K5, K12
    rows = sorted((t.get_position()[1], t.get_text()) for t in ax.get_yticklabels())
    assert [text for _, text in rows] == ["a · K5 (n=1)", "a · K8 (n=2)", "b · K5 (n=1)", "b · K12 (n=1)"]
    assert rows[2][0] - rows[1][0] == 1.5 and ax.yaxis_inverted()  # a gap between groups, a on top
    assert ax.get_legend_handles_labels()[1] == ["K5", "K8", "K12"]
    fig2, ax2 = plt.subplots()
    plots.share_bars(table, "kind", ax2, order=["b"])
    assert [t.get_text() for t in ax2.get_yticklabels()] == ["b · K5 (n=1)", "b · K12 (n=1)"]
    plots.close(fig)
    plots.close(fig2)


def test_confusion_heatmap_annotates_counts_and_shades_each_row():
    import pandas as pd

    confusion = pd.DataFrame([[3, 1], [0, 4]], index=["K5", "K8"], columns=["K5", "K8"])
    confusion.index.name, confusion.columns.name = "reference band", "judge's band"
    fig, ax = plt.subplots()
    plots.confusion_heatmap(confusion, ax)
    assert [t.get_text() for t in ax.texts] == ["3", "1", "0", "4"]
    assert ax.collections[0].get_array().ravel().tolist() == [0.75, 0.25, 0.0, 1.0]  # shares of each row
    assert (ax.get_ylabel(), ax.get_xlabel()) == ("reference band", "judge's band")
    plots.close(fig)
