import matplotlib
import matplotlib.pyplot as plt
import pytest

from littlekit import plots
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
    fig, ax = plt.subplots()
    plots.share_bars(share_table(frame, ["band", "kind"], "kept"), "kind", ax)
    assert len(ax.patches) == 4  # K5 a, K5 b, K8 a, K12 b; no bar for the absent K8 b, K12 a
    widths = {(matplotlib.colors.to_hex(p.get_facecolor()), round(p.get_width(), 3)) for p in ax.patches}
    assert widths == {
        (plots.BAND_COLORS["K5"], 1.0), (plots.BAND_COLORS["K5"], 0.0),
        (plots.BAND_COLORS["K8"], 0.5), (plots.BAND_COLORS["K12"], 0.0),
    }
    rows = {round(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()}
    assert rows == {0: "a (n=3)", 1: "b (n=2)"} and ax.yaxis_inverted()  # first group on top
    assert ax.get_legend_handles_labels()[1] == ["K5", "K8", "K12"]
    fig2, ax2 = plt.subplots()
    plots.share_bars(share_table(frame, ["band", "kind"], "kept"), "kind", ax2, order=["b", "a"])
    rows = {round(t.get_position()[1]): t.get_text() for t in ax2.get_yticklabels()}
    assert rows == {0: "b (n=2)", 1: "a (n=3)"}
    plots.close(fig2)
    plots.close(fig)
