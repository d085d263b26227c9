"""A playground figure as PNG bytes, drawn with its text kept from earlier drawings.

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

import io
import math
import threading

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg

#: strings kept (bitmaps and sizes); past this, the cache starts again (a long session's
#: titles with changing numbers would otherwise pile up)
MAX_STRINGS = 4096

_lock = threading.Lock()
_bitmaps: dict = {}
_sizes: dict = {}


def _remember(cache: dict, key, value):
    with _lock:
        if len(cache) >= MAX_STRINGS:
            cache.clear()
        cache[key] = value
    return value


class TextCachingRenderer(RendererAgg):
    """``RendererAgg`` whose plain text comes from the string cache above."""

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
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        key = (s, prop.copy(), float(angle), self.dpi, bool(gc.get_antialiased()))
        found = _bitmaps.get(key)
        if found is None:
            found = _remember(_bitmaps, key, self._render_alone(s, prop, angle, gc.get_antialiased()))
        coverage, dx, dy = found
        if coverage.size:
            # draw_text_image takes the bitmap's left column and its bottom row (y downwards):
            # what RendererAgg does with each glyph, here with the whole string at once
            self._renderer.draw_text_image(coverage, round(x) + dx, round(y) + dy, 0, gc)

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


def figure_png(fig, dpi: int) -> bytes:
    """``fig`` as PNG bytes at ``dpi``, its text from the string cache, compressed lightly (zlib
    level 1: the image travels to the browser once, and level 6, the default, costs more time
    than it saves bytes)."""
    TextCachingCanvas(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buf.getvalue()


__all__ = ["figure_png", "TextCachingCanvas", "TextCachingRenderer", "MAX_STRINGS"]
