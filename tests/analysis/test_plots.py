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


def test_confusion_heatmap_can_leave_the_colour_bar_to_another_panel():
    import pandas as pd

    confusion = pd.DataFrame([[3, 1], [0, 4]], index=["K5", "K8"], columns=["K5", "K8"])
    fig, (left, right) = plt.subplots(1, 2)
    plots.confusion_heatmap(confusion, left, cbar=False)
    plots.confusion_heatmap(confusion, right, cbar_label="share of the true band")
    assert len(fig.axes) == 3 and fig.axes[-1].get_ylabel() == "share of the true band"  # one colour bar
    plots.close(fig)


def test_ci_whiskers_span_each_interval_and_clip_a_bound_on_the_wrong_side():
    fig, ax = plt.subplots()
    bars = plots.ci_whiskers(ax, [0, 1], [0.5, 0.2], [0.4, 0.2000001], [0.7, 0.3], horizontal=True)
    (segments,) = bars.lines[2]
    spans = [tuple(map(float, s[:, 0])) for s in segments.get_segments()]
    assert spans[0] == pytest.approx((0.4, 0.7)) and spans[1] == pytest.approx((0.2, 0.3))
    plots.close(fig)


def test_retention_bars_put_the_two_groups_side_by_side_per_stage():
    import pandas as pd

    table = pd.DataFrame({
        "after": ["input", "input", "aoa", "aoa"],
        "group": ["K-5", "Beyond K-5", "K-5", "Beyond K-5"],
        "share": [1.0, 1.0, 0.8, 0.3],
        "ci_low": [0.9, 0.95, 0.7, 0.2],
        "ci_high": [1.0, 1.0, 0.9, 0.4],
        "n": [40, 1200, 40, 1200],
    })
    fig, ax = plt.subplots()
    positions = plots.retention_bars(table, "after", ax)
    assert positions["K-5"].tolist() == [-0.2, 0.8] and positions["Beyond K-5"].tolist() == [0.2, 1.2]
    heights = {(round(p.get_x() + p.get_width() / 2, 1), round(p.get_height(), 2)) for p in ax.patches}
    assert heights == {(-0.2, 1.0), (0.2, 1.0), (0.8, 0.8), (1.2, 0.3)}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["input", "aoa"]
    assert ax.get_legend_handles_labels()[1] == ["K-5 (n=40)", "Beyond K-5 (n=1,200)"]
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches}
    assert colours == {plots.BAND_COLORS["K-5"], plots.BAND_COLORS["Beyond K-5"]}
    plots.close(fig)


def test_retention_barh_labels_each_row_with_its_n_and_stacks_present_columns():
    import pandas as pd

    table = pd.DataFrame(
        {"share": [0.5, 0.1], "ci_low": [0.3, 0.0], "ci_high": [0.7, 0.3], "n": [10, 2000],
         "equation": [3, 200], "chemistry": [2, 0], "calculus": [0, 0]},
        index=pd.Index(["books", "web"], name="source"),
    )
    fig, ax = plt.subplots()
    plots.retention_barh(table, ax)
    assert [round(p.get_width(), 2) for p in ax.patches] == [0.5, 0.1]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["books (n=10)", "web (n=2,000)"]
    assert ax.yaxis_inverted()
    fig2, ax2 = plt.subplots()
    stack = {"equation": "#111111", "chemistry": "#222222", "calculus": "#333333"}
    plots.retention_barh(table, ax2, stack=stack)
    assert [(round(p.get_x(), 2), round(p.get_width(), 2)) for p in ax2.patches] == [
        (0.0, 0.3), (0.0, 0.1), (0.3, 0.2), (0.1, 0.0)
    ]
    assert ax2.get_legend_handles_labels()[1] == ["equation", "chemistry"]  # calculus never drops a row
    plots.close(fig)
    plots.close(fig2)
