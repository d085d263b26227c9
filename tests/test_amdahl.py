"""Amdahl's law: numbers computed by hand, input checks, and the figure."""

import numpy as np
import pytest

from simtlab.plots.amdahl import amdahl_limit, amdahl_speedup, plot_amdahl


def test_thirty_percent_parallel_at_100x():
    # 0.7 of the time stays, 0.3 shrinks to 0.003: 1 / 0.703
    assert amdahl_speedup(0.3, 100) == pytest.approx(1 / 0.703)
    assert round(amdahl_speedup(0.3, 100), 2) == 1.42


def test_ninety_nine_percent_parallel_at_100x():
    # 0.01 + 0.0099 = 0.0199
    assert amdahl_speedup(0.99, 100) == pytest.approx(1 / 0.0199)
    assert amdahl_speedup(0.99, 100) == pytest.approx(50.25, abs=0.01)


def test_edge_cases():
    assert amdahl_speedup(0, 1000) == 1.0       # nothing parallel: nothing gained
    assert amdahl_speedup(1, 8) == 8.0          # all parallel: the full speed-up
    assert amdahl_speedup(0.5, 1) == 1.0        # no faster: no gain
    assert amdahl_speedup(1, 0.5) == 0.5        # a slower 'parallel' part slows everything


def test_vectorised_and_scalar_types():
    p = np.array([0.0, 0.5, 0.9])
    got = amdahl_speedup(p, 10)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, [1.0, 1 / 0.55, 1 / 0.19])
    grid = amdahl_speedup(np.array([[0.5], [0.9]]), np.array([2.0, 4.0]))
    assert grid.shape == (2, 2)
    assert isinstance(amdahl_speedup(0.3, 100), float)


def test_limit_and_approach_to_it():
    assert amdahl_limit(0.3) == pytest.approx(1 / 0.7)
    assert amdahl_limit(1.0) == np.inf
    assert amdahl_speedup(0.3, 1e9) == pytest.approx(amdahl_limit(0.3), rel=1e-6)
    assert amdahl_speedup(0.3, 1e9) < amdahl_limit(0.3)


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan"), [0.2, 1.2]])
def test_bad_fraction(p):
    with pytest.raises(ValueError, match="between 0 and 1"):
        amdahl_speedup(p, 10)


@pytest.mark.parametrize("s", [0, -3, float("nan")])
def test_bad_speedup(s):
    with pytest.raises(ValueError, match="greater than 0"):
        amdahl_speedup(0.5, s)


def test_figure_has_title_labels_and_the_chosen_point():
    fig = plot_amdahl(0.3, 100)
    title = fig._suptitle.get_text()
    assert "30%" in title and "100x" in title and "1.42x" in title
    assert len(fig.axes) == 2
    for ax in fig.axes:
        assert ax.get_title()
        assert "(" in ax.get_xlabel() and "speed-up" in ax.get_ylabel()
    left, right = fig.axes
    assert any("1.42x overall" in t.get_text() for t in left.texts)
    # The ceiling 1/(1-p) = 1.43x is drawn and named in the right panel's legend.
    assert any("1.43x" in t.get_text() for t in right.get_legend().get_texts())


def test_figure_for_fully_parallel_code_has_no_ceiling():
    fig = plot_amdahl(1.0, 50)
    right = fig.axes[1]
    assert not any("limit" in t.get_text() for t in right.get_legend().get_texts())


def test_a_figure_drawn_again_looks_like_a_fresh_one():
    """The widget keeps one figure and draws each change into it (plot_amdahl(figure=...)):
    pixel for pixel what a fresh figure of the same values looks like, including changes that
    add or drop a curve (s among the speed-ups shown) or the ceiling (p = 1)."""
    import io

    from PIL import Image

    from simtlab.widgets.png import figure_png

    def pixels(fig):
        return np.asarray(Image.open(io.BytesIO(figure_png(fig, 80))))

    kept = plot_amdahl(0.3, 100)
    for p, s in [(0.95, 10), (0.6, 1000), (1.0, 50), (0.0, 2), (0.5, 3.3)]:
        again = plot_amdahl(p, s, figure=kept)
        assert again is kept
        assert (pixels(again) == pixels(plot_amdahl(p, s))).all(), (p, s)
