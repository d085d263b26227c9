"""Figures to PNG (simtlab/widgets/png.py): text rendered once per string, pasted afterwards; kept layouts; the encoder."""

import io

import numpy as np
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from PIL import Image

from simtlab.widgets import png


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


# A figure of a kind laid out before takes that layout when it fits it (the playground's 200 ms bar:
# constrained layout was half of a figure's time), and is laid out afresh when it does not.

def _bars(yticks, height=3.0, width=5.0, ylabel="count"):
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    ax.bar(range(len(yticks)), yticks)
    ax.set_yticks(yticks, [f"{v:,}" for v in yticks])
    ax.set_xlabel("source line")
    ax.set_ylabel(ylabel)
    fig.suptitle("cost of each line's requests")
    return fig


def _laid_out_afresh(fig) -> bytes:
    return png.figure_png(fig, 80)                 # no layout_key: constrained layout runs


def test_a_figure_that_fits_the_kept_layout_skips_constrained_layout_and_looks_the_same(monkeypatch):
    monkeypatch.setattr(png, "_layouts", {})
    png.figure_png(_bars([1, 2, 3]), 80, layout_key="bars")         # lays out, keeps the layout
    calls = []
    monkeypatch.setattr("matplotlib.layout_engine.do_constrained_layout",
                        lambda *a, **k: calls.append(1) or {})
    fig = _bars([3, 1, 2])                                            # same labels, other bars
    reused = _pixels(png.figure_png(fig, 80, layout_key="bars"))
    assert calls == [] and fig.get_layout_engine() is not None
    assert type(fig.get_layout_engine()).__name__ == "PlaceHolderLayoutEngine"
    _laid_out_afresh(_bars([3, 1, 2]))
    assert calls == [1]                                    # the spy sees a layout when one runs
    monkeypatch.undo()
    fresh = _pixels(_laid_out_afresh(_bars([3, 1, 2])))
    assert (reused == fresh).all()


def test_a_taller_figure_keeps_the_margins_in_inches(monkeypatch):
    monkeypatch.setattr(png, "_layouts", {})
    png.figure_png(_bars([1, 2, 3]), 80, layout_key="bars")
    fig = _bars([1, 2, 3], height=4.5)
    reused = _pixels(png.figure_png(fig, 80, layout_key="bars"))
    assert type(fig.get_layout_engine()).__name__ == "PlaceHolderLayoutEngine"
    fresh = _pixels(_laid_out_afresh(_bars([1, 2, 3], height=4.5)))
    assert reused.shape == fresh.shape == (360, 400, 3)
    assert (reused == fresh).all()


def test_wider_labels_or_another_width_are_laid_out_afresh(monkeypatch):
    monkeypatch.setattr(png, "_layouts", {})
    png.figure_png(_bars([1, 2, 3]), 80, layout_key="bars")
    wide = _bars([1_000_000, 2_000_000, 3_000_000], ylabel="sectors or wavefronts per request")
    # kept positions would push these tick labels and the y label past the left edge
    out = _pixels(png.figure_png(wide, 80, layout_key="bars"))
    assert type(wide.get_layout_engine()).__name__ == "ConstrainedLayoutEngine"
    assert (out == _pixels(_laid_out_afresh(_bars([1_000_000, 2_000_000, 3_000_000],
                                                  ylabel="sectors or wavefronts per request")))).all()
    other_width = _bars([1, 2, 3], width=6.0)
    png.figure_png(other_width, 80, layout_key="bars")
    assert type(other_width.get_layout_engine()).__name__ == "ConstrainedLayoutEngine"


def _drawn(fig):
    canvas = png.TextCachingCanvas(fig)
    canvas.draw()
    return canvas.get_renderer()


def test_drawn_fits_refuses_text_off_the_canvas_or_over_another_axes():
    fig = Figure(figsize=(5, 3), layout="none")
    left, right = fig.subplots(1, 2)
    left.set_ylabel("a label")
    left.set_position([0.15, 0.2, 0.3, 0.7])
    right.set_position([0.6, 0.2, 0.3, 0.7])
    assert png._drawn_fits(fig, _drawn(fig))
    left.set_position([0.0, 0.2, 0.3, 0.7])              # its tick labels and y label leave the canvas
    assert not png._drawn_fits(fig, _drawn(fig))
    left.set_position([0.15, 0.2, 0.3, 0.7])
    right.set_position([0.2, 0.2, 0.3, 0.7])             # its tick labels run into the left axes
    assert not png._drawn_fits(fig, _drawn(fig))


def test_drawn_fits_refuses_a_title_over_an_axes_and_notes_where_each_string_went():
    fig = Figure(figsize=(5, 3), layout="none")
    ax = fig.subplots()
    ax.set_position([0.15, 0.15, 0.7, 0.7])
    title = fig.suptitle("a figure title")
    renderer = _drawn(fig)
    assert png._drawn_fits(fig, renderer)
    # the noted box of each string is its ink: inside the box matplotlib lays the text out in
    box = next(b for b, text in renderer.drawn if text is title)
    layout = title.get_window_extent(renderer)
    assert box.width > 0.8 * layout.width and layout.padded(1).contains(box.x0, box.y0) \
        and layout.padded(1).contains(box.x1, box.y1)
    title.set_y(0.5)                                      # the title now runs across the axes
    assert not png._drawn_fits(fig, _drawn(fig))


def test_encode_png_decodes_to_the_same_pixels_and_resolution():
    rng = np.random.default_rng(1)
    # noise (every byte differs from the one above it, so the "Up" filter wraps below zero) on
    # top of flat bands, with a partly transparent column
    image = np.repeat(rng.integers(0, 256, (7, 1, 4), dtype=np.uint8), 5, axis=1)
    image[2:5] = rng.integers(0, 256, (3, 5, 4), dtype=np.uint8)
    image[:, 0, 3] = 40
    decoded = Image.open(io.BytesIO(png.encode_png(image, 80)))
    assert decoded.mode == "RGBA" and decoded.size == (5, 7)
    assert (np.asarray(decoded) == image).all()
    assert [round(v) for v in decoded.info["dpi"]] == [80, 80]


def test_a_drawn_figure_encodes_to_what_agg_drew():
    fig = _figure()
    canvas = png.TextCachingCanvas(fig)
    canvas.draw()
    drawn = np.asarray(canvas.buffer_rgba()).copy()
    assert (np.asarray(Image.open(io.BytesIO(png.figure_png(fig, fig.dpi)))) == drawn).all()


def test_kept_font_metrics_lay_text_out_as_plain_agg_does():
    fig = Figure(figsize=(5, 3), dpi=80)
    ax = fig.subplots()
    texts = [ax.text(0.1, 0.5, "two\nlines, 10 pt", fontsize=10),
             ax.set_xlabel("monospace label", family="monospace", fontsize=7),
             ax.set_ylabel("rotated, bold", fontweight="bold", fontsize=13),
             fig.suptitle("a title")]
    cached = png.TextCachingCanvas(fig).get_renderer()
    plain = RendererAgg(*fig.bbox.size, fig.dpi)
    for text in texts:
        for _ in range(2):                               # measured, then from the kept metrics
            assert np.allclose(text.get_window_extent(cached).extents, text.get_window_extent(plain).extents)
    prop = texts[0].get_fontproperties()
    ascent, descent, gap = cached._get_font_height_metrics(prop)
    assert ascent > descent > 0 and gap >= 0
    assert cached._get_font_height_metrics(prop) is cached._get_font_height_metrics(prop.copy())


def test_a_multi_line_note_inside_its_axes_fits():
    # matplotlib draws each line of a multi-line Text without naming the Text (mtext=None), so
    # the check cannot tell which axes it belongs to: it must not call it a title over an axes
    fig = Figure(figsize=(5, 3), layout="none")
    ax = fig.subplots()
    ax.set_position([0.15, 0.15, 0.7, 0.7])
    ax.text(0.5, 0.5, "speed-up 4.2x\nat 16 processors", transform=ax.transAxes)
    renderer = _drawn(fig)
    assert sum(text is None for _, text in renderer.drawn) == 2
    assert png._drawn_fits(fig, renderer)


def test_text_of_an_axes_may_lie_over_its_twin():
    fig = Figure(figsize=(5, 3), layout="none")
    ax = fig.subplots()
    ax.set_position([0.15, 0.15, 0.7, 0.7])
    twin = ax.twinx()
    ax.bar([0, 1], [3, 4])
    ax.text(0, 3, "3.0", ha="center", va="bottom")        # a bar label: inside ax, so inside its twin
    twin.set_ylabel("the twin's label")
    assert png._drawn_fits(fig, _drawn(fig))


def test_mathtext_is_parsed_once_per_session():
    # a log axis labels its ticks with mathtext ("10^2"): every renderer shares one parser,
    # whose cache holds the parses, so drawing the figure again parses nothing
    def log_figure():
        fig = Figure(figsize=(4, 3))
        ax = fig.subplots()
        ax.set_yscale("log")
        ax.set_ylim(1, 1e4)
        return fig

    png.figure_png(log_figure(), 80)
    misses = png._MATHTEXT_PARSER._parse_cached.cache_info().misses
    png.figure_png(log_figure(), 80)
    assert png._MATHTEXT_PARSER._parse_cached.cache_info().misses == misses
    assert png.TextCachingCanvas(log_figure()).get_renderer().mathtext_parser is png._MATHTEXT_PARSER
