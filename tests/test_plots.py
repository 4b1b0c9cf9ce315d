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
