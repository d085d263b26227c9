"""A widget's figure as PNG bytes, drawn with its text kept from earlier drawings.

Drawing a figure is mostly drawing its text: tick labels, axis labels, legends, titles. On a
slow CPU each string costs milliseconds in FreeType (measuring it for the layout, laying out
its glyphs, rendering each glyph), and a control change redraws figures whose strings are
nearly all the same as before ("0", "8", "lane", "source line"...). This canvas keeps, for
each string, font, angle and resolution, its size and its rendered coverage bitmap, and
pastes the bitmap where the text goes, so a string is rendered once per session, not once per
drawing. The cost: a string lands on a whole pixel (matplotlib 3.11 places glyphs to 1/64
of a pixel; older versions also snapped whole strings to pixels). Mathtext and TeX are drawn
as usual.
"""

from __future__ import annotations

import math
import struct
import threading
import zlib

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.font_manager import fontManager, get_font
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.mathtext import MathTextParser
from matplotlib.transforms import Bbox

#: strings kept (bitmaps and sizes); past this, the cache starts again (a long session's
#: titles with changing numbers would otherwise pile up)
MAX_STRINGS = 4096

_lock = threading.Lock()
_bitmaps: dict = {}
_sizes: dict = {}
_font_metrics: dict = {}
_MATHTEXT_PARSER = MathTextParser("path")        # what RendererAgg makes for itself


def _remember(cache: dict, key, value):
    with _lock:
        if len(cache) >= MAX_STRINGS:
            cache.clear()
        cache[key] = value
    return value


class TextCachingRenderer(RendererAgg):
    """``RendererAgg`` whose plain text comes from the string cache above. It notes where each
    string went (``drawn``: its box and its Text), so that a drawing can be checked for text
    that left the canvas or ran into another axes without laying the text out again."""

    def __init__(self, width, height, dpi):
        super().__init__(width, height, dpi)
        self.drawn: list = []
        # one mathtext parser for every drawing: its parse cache lives on the parser, and Agg
        # makes one per renderer, so each figure parsed its log axes' "10^2" labels again
        # (a third of a log-scale figure's redraw, cProfile of the Amdahl widget)
        self.mathtext_parser = _MATHTEXT_PARSER

    def clear(self):
        super().clear()
        self.drawn = []

    def _get_font_height_metrics(self, prop):
        """``(ascent, descent, line gap)`` of the font ``prop`` names, in pixels: what
        ``Text._get_layout`` reads from the font's tables for every string it lays out (half
        of its time) unless the renderer offers it, as here, kept per font and resolution.
        Where the font has neither table, ``(None, None, None)`` sends matplotlib to its own
        fallback. ``tests/test_png.py`` compares the text boxes with plain Agg's."""
        key = (prop, self.dpi)
        found = _font_metrics.get(key)
        if found is None:
            found = _remember(_font_metrics, (prop.copy(), self.dpi), self._font_height_metrics(prop))
        return found

    def _font_height_metrics(self, prop) -> tuple:
        font = get_font(fontManager._find_fonts_by_props(prop))
        for table_name, gap, ascent, descent in (("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                                                 ("hhea", "lineGap", "ascent", "descent")):
            table = font.get_sfnt_table(table_name)
            if table is not None:
                scale = prop.get_size_in_points() * self.dpi / 72 / font.get_sfnt_table("head")["unitsPerEm"]
                return table[ascent] * scale, -table[descent] * scale, table[gap] * scale
        return None, None, None

    def get_text_width_height_descent(self, s, prop, ismath):
        if ismath:
            return super().get_text_width_height_descent(s, prop, ismath)
        key = (s, prop.copy(), self.dpi)
        found = _sizes.get(key)
        return found if found is not None else _remember(
            _sizes, key, super().get_text_width_height_descent(s, prop, ismath))

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        shaped = mtext is not None and (getattr(mtext, "get_fontfeatures", lambda: None)() or
                                        getattr(mtext, "get_language", lambda: None)())
        if ismath or shaped:
            if mtext is not None:
                self.drawn.append((mtext.get_window_extent(self), mtext))
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        key = (s, prop.copy(), float(angle), self.dpi, bool(gc.get_antialiased()))
        found = _bitmaps.get(key)
        if found is None:
            found = _remember(_bitmaps, key, self._render_alone(s, prop, angle, gc.get_antialiased()))
        coverage, dx, dy = found
        if coverage.size:
            # draw_text_image takes the bitmap's left column and its bottom row (y downwards):
            # what RendererAgg does with each glyph, here with the whole string at once
            left, bottom = round(x) + dx, round(y) + dy
            self._renderer.draw_text_image(coverage, left, bottom, 0, gc)
            # where its ink went, in display coordinates (y upwards), for ``_drawn_fits``
            rows, cols = coverage.shape
            self.drawn.append((Bbox.from_extents(left, self.height - bottom, left + cols,
                                                 self.height - bottom + rows), mtext))

    def _render_alone(self, s, prop, angle, antialiased) -> tuple:
        """``(coverage, dx, dy)``: the string drawn by RendererAgg in black on a transparent
        scratch canvas around a whole-pixel origin; its alpha is the glyphs' coverage."""
        w, h, d = self.get_text_width_height_descent(s, prop, False)
        reach = int(math.ceil(math.hypot(w, h + d))) + 4          # any angle fits
        scratch = RendererAgg(2 * reach, 2 * reach, self.dpi)
        gc = scratch.new_gc()
        gc.set_foreground((0.0, 0.0, 0.0))
        gc.set_antialiased(antialiased)
        RendererAgg.draw_text(scratch, gc, reach, reach, s, prop, angle)
        gc.restore()
        alpha = np.asarray(scratch.buffer_rgba())[:, :, 3]
        rows, cols = np.nonzero(alpha.any(axis=1))[0], np.nonzero(alpha.any(axis=0))[0]
        if not len(rows):
            return np.zeros((0, 0), np.uint8), 0, 0
        top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        return np.ascontiguousarray(alpha[top:bottom, left:right]), int(left - reach), int(bottom - reach)


class TextCachingCanvas(FigureCanvasAgg):
    """An Agg canvas that draws with ``TextCachingRenderer`` (same size logic as Agg's)."""

    def get_renderer(self):
        w, h = self.figure.bbox.size
        key = w, h, self.figure.dpi
        if getattr(self, "_lastKey", None) != key or not isinstance(getattr(self, "renderer", None),
                                                                    TextCachingRenderer):
            self.renderer = TextCachingRenderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer


class _Layout:
    """Where constrained layout put a figure's axes and its title, kept as distances in inches
    from the figure's edges, to be given to the next figure of the same kind (same width and
    grid of axes; the height may differ: a plot of more rows is taller, its margins are not)."""

    def __init__(self, fig):
        self.shape = _shape(fig)
        w, h = fig.get_size_inches()
        self.insets = [(p.x0 * w, p.y0 * h, (1 - p.x1) * w, (1 - p.y1) * h)
                       for p in (ax.get_position(original=False) for ax in fig.axes)]
        self.suptitle = None
        if fig._suptitle is not None:
            x, y = fig._suptitle.get_position()
            self.suptitle = (x, (1 - y) * h)

    def apply(self, fig) -> None:
        fig.set_layout_engine("none")
        w, h = fig.get_size_inches()
        for ax, (left, bottom, right, top) in zip(fig.axes, self.insets):
            # the private setter: the public one would also take the axes out of any later
            # layout, and a figure that does not fit is laid out again
            ax._set_position(Bbox.from_extents(left / w, bottom / h, 1 - right / w, 1 - top / h))
        if self.suptitle is not None and fig._suptitle is not None:
            fig._suptitle.set_position((self.suptitle[0], 1 - self.suptitle[1] / h))


def _shape(fig) -> tuple:
    """What makes two figures take one layout: width, resolution, their axes' grid cells."""
    cells = []
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        cells.append(None if spec is None else (spec.rowspan, spec.colspan, spec.get_gridspec().get_geometry()))
    return fig.get_size_inches()[0], fig.dpi, tuple(map(str, cells)), fig._suptitle is not None


def drawn_misfits(fig, renderer, first: bool = False) -> list[str]:
    """What in the drawing just made does not fit, one line per string (only the first one
    found when ``first``): a string that left the figure, a tick label, axis label or axes
    legend text over another axes' plotting area (a twin shares its axes' area), a title or
    figure legend over an axes or its text.

    Read from where the renderer put each string (``TextCachingRenderer.drawn``), so the check
    costs no layout: measuring every text again before drawing took a quarter of a figure's
    time. Spines, tick marks and legend handles sit between an axes and its text, so the text
    reaching past the canvas is what a misfit looks like. The figure tests
    (tests/test_widget_figures_fit.py, tests/test_chapter_figures_fit.py) apply the same rule."""
    canvas = fig.bbox.padded(0.5)
    areas = [(ax, ax.get_window_extent(renderer)) for ax in fig.axes]
    found, owned, free = [], [], []
    for box, text in renderer.drawn:
        # a line of a multi-line Text comes without its Text (matplotlib passes none for
        # those): its axes is unknown, so it is only kept on the canvas
        name = "a line of a multi-line text" if text is None else repr(text.get_text())
        if not _inside(box, canvas):
            found.append(f"{name} leaves the figure")
        elif text is None:
            continue
        elif text.axes is None:
            free.append((box, name))
        else:
            owned.append(box)
            home = next((area for ax, area in areas if ax is text.axes), None)
            if any(ax is not text.axes and _overlap(box, area) and not _same_area(area, home)
                   for ax, area in areas):
                found.append(f"{name} runs into another axes")
        if first and found:
            return found
    others = owned + [area for _, area in areas]
    found += [f"figure text {name} runs over an axes or its text"
              for box, name in free if any(_overlap(box, other) for other in others)]
    return found[:1] if first else found


def _drawn_fits(fig, renderer) -> bool:
    """True when nothing of the drawing just made misfits (``drawn_misfits``)."""
    return not drawn_misfits(fig, renderer, first=True)


def _same_area(a, b) -> bool:
    return b is not None and abs(a.x0 - b.x0) < 1 and abs(a.x1 - b.x1) < 1 and abs(a.y0 - b.y0) < 1 \
        and abs(a.y1 - b.y1) < 1


def _inside(box, canvas) -> bool:
    return (box.x0 >= canvas.x0 and box.y0 >= canvas.y0 and box.x1 <= canvas.x1 and box.y1 <= canvas.y1)


def _overlap(a, b) -> bool:
    # a touch of a pixel is not an overlap: constrained layout leaves pads of a few pixels
    return a.x0 < b.x1 - 1 and b.x0 < a.x1 - 1 and a.y0 < b.y1 - 1 and b.y0 < a.y1 - 1


#: the last layout accepted for each kind of figure (``layout_key``)
_layouts: dict = {}


def figure_png(fig, dpi: int, layout_key=None) -> bytes:
    """``fig`` as PNG bytes at ``dpi``, its text from the string cache, compressed lightly
    (``encode_png``: the image travels to the browser once, and more compression costs more
    time than it saves bytes).

    The figure is drawn once, at ``dpi`` (``savefig`` at another resolution than the figure's
    draws it again). With a ``layout_key``, a figure of that kind laid out before lends its
    axes' positions, and constrained layout (half of a figure's drawing time on a slow CPU)
    runs only when the figure does not fit them: a different size or grid, or decorations
    that leave the canvas or run into other axes, found after drawing (``_drawn_fits``)."""
    fig.set_dpi(dpi)
    canvas = TextCachingCanvas(fig)
    saved = _layouts.get(layout_key) if layout_key is not None else None
    # a figure drawn again (a persistent one) keeps its own constrained engine here: the one
    # in use may be the placeholder a kept layout left
    engine = getattr(fig, "_simtlab_constrained", None) or fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        fig._simtlab_constrained = engine
        fig.set_layout_engine(engine)
        if saved is not None and saved.shape == _shape(fig):
            saved.apply(fig)
            canvas.draw()
            # a figure whose text does not fit the kept layout is laid out and drawn again
            if not _drawn_fits(fig, canvas.get_renderer()):
                fig.set_layout_engine(engine)
                canvas.draw()
        else:
            canvas.draw()
    else:
        canvas.draw()
    if layout_key is not None and isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        _layouts[layout_key] = _Layout(fig)
    return encode_png(np.asarray(canvas.buffer_rgba()), dpi)


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def encode_png(rgba: np.ndarray, dpi: int) -> bytes:
    """An (h, w, 4) uint8 image as PNG, every row with the "Up" filter (each byte minus the
    byte above it: a plot's flat areas become zeros) and zlib level 1.

    Written here, not with PIL: Pillow picks a filter for every row by trying them (adaptive
    filter selection, its ZipEncode.c). On a 760 x 800 figure (the divergence plot of a
    block_sum warp, ~55 ms in all) PIL took 18 ms at zlib level 1 and still 14 ms at level 0,
    so the time is in the filtering; this takes ~8 ms and the file is smaller (66 KB against
    94 KB). Ad-hoc measurement on the 2-core CPU box, 2026-11-25, ten encodes each.
    ``tests/test_png.py`` decodes the result with PIL, pixel for pixel."""
    h, w, _ = rgba.shape
    rows = np.ascontiguousarray(rgba).reshape(h, w * 4)
    raw = np.empty((h, w * 4 + 1), np.uint8)
    raw[:, 0] = 2                                      # filter type 2, "Up"
    raw[0, 1:] = rows[0]                               # the row above the first counts as zeros
    np.subtract(rows[1:], rows[:-1], out=raw[1:, 1:])  # uint8: wraps modulo 256, as PNG says
    per_metre = round(dpi / 0.0254)
    return (b"\x89PNG\r\n\x1a\n"
            + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))   # 8-bit RGBA
            + _chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1))
            + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 1))
            + _chunk(b"IEND", b""))


__all__ = ["figure_png", "encode_png", "drawn_misfits", "TextCachingCanvas", "TextCachingRenderer", "MAX_STRINGS"]
