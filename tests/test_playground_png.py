"""The playground's PNG canvas: text rendered once per string, pasted afterwards."""

import io

import numpy as np
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from PIL import Image

from simtlab.playground import png


def _figure(colour="black", title="mapping of out"):
    fig = Figure(figsize=(4, 3), layout="constrained")
    ax = fig.subplots()
    ax.imshow(np.arange(64).reshape(8, 8), cmap="Greys", vmin=0, vmax=400)   # light: the text is the dark part
    ax.set_xlabel("column x (element)")
    ax.set_ylabel("row y (element)")
    fig.suptitle(title, color=colour)
    return fig


def _pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def _plain(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()


def test_same_picture_as_agg_up_to_sub_pixel_text_placement():
    cached, plain = _pixels(png.figure_png(_figure(), 80)), _pixels(_plain(_figure()))
    assert cached.shape == plain.shape
    differ = (cached != plain).any(axis=-1)
    assert differ.mean() < 0.03                       # only the edges of glyphs move
    # every inked (text) pixel of one image has ink within one pixel in the other
    ink = lambda img: img.sum(axis=-1) < 600                 # noqa: E731  (the image is light)
    near = lambda m: np.logical_or.reduce([np.roll(m, (dy, dx), axis=(0, 1))  # noqa: E731
                                           for dy in (-1, 0, 1) for dx in (-1, 0, 1)])
    a, b = ink(cached), ink(plain)
    assert a.sum() > 500 and not (a & ~near(b)).any() and not (b & ~near(a)).any()


def test_a_string_is_rendered_once_then_pasted(monkeypatch):
    png.figure_png(_figure(), 80)                      # every string of this figure now kept
    calls = []
    real = RendererAgg.draw_text
    monkeypatch.setattr(RendererAgg, "draw_text",
                        lambda self, *a, **k: calls.append(a[3]) or real(self, *a, **k))
    png.figure_png(_figure(), 80)
    assert calls == []                                 # nothing went to FreeType again
    png.figure_png(_figure(title="mapping of a"), 80)
    assert calls == ["mapping of a"]                   # a new string is rendered, once


def test_kept_text_takes_each_drawing_s_colour():
    png.figure_png(_figure("black"), 80)
    blue = _pixels(png.figure_png(_figure("#0000FF"), 80))
    title_rows = blue[:30]
    assert ((title_rows[..., 2] > 200) & (title_rows[..., 0] < 60)).sum() > 20   # blue glyphs


def test_the_cache_starts_again_when_full(monkeypatch):
    monkeypatch.setattr(png, "MAX_STRINGS", 3)
    for i in range(5):
        png.figure_png(_figure(title=f"run {i} of a long session"), 80)
        assert 0 < len(png._bitmaps) <= 3 and 0 < len(png._sizes) <= 3
    assert any(key[0] == "run 4 of a long session" for key in png._bitmaps)
