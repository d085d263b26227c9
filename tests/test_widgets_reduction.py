"""Chapter 5's main widget, driven headless through its controls."""

from simtlab.widgets import reduction_widget
from simtlab.widgets.reduction import VIEWS


def _png(w):
    assert w.figure.value[:8] == b"\x89PNG\r\n\x1a\n"
    return w.figure.value


def test_reduction_widget_versions_and_views():
    w = reduction_widget()
    version, view = w.controls["version"], w.controls["view"]
    assert list(version.options)[:3] == ["v1 interleaved", "v2 strided index", "v3 sequential"]
    assert "SIMT efficiency <b>89.1%</b>" in w.summary.value and "<b>0</b> bank conflicts" in w.summary.value
    assert "<b>9</b> barriers" in w.summary.value
    seen = {_png(w)}
    version.value = "v2 strided index"                 # no divergence, but 2- to 16-way bank conflicts
    assert "<b>0</b> bank conflicts" not in w.summary.value and "v2 strided index" in w.summary.value
    version.value = "v5 warp shuffle"
    assert "<b>3</b> barriers" in w.summary.value and "2 global reads per thread" in w.summary.value
    seen.add(_png(w))
    for v in VIEWS[1:]:
        text = w.summary.value
        view.value = v
        seen.add(_png(w))
        assert w.summary.value == text                  # the numbers belong to the version, not the view
    assert len(seen) == 4
