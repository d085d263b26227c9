"""The scan widget: the dropdowns change the picture and the numbers, from the emulator's trace."""

import pytest

from simtlab.widgets import scan_widget
from simtlab.widgets.scan import SCAN_VERSIONS, scan_block_run


def test_dropdown_changes_figure_and_summary(monkeypatch):
    import simtlab.widgets.scan as module
    w = scan_widget()
    assert list(w.controls["version"].options) == list(SCAN_VERSIONS)

    def again(*args, **kwargs):
        raise AssertionError("a version of the default size was emulated or drawn again")
    # every version of the default size was made when the widget was built: picking one only
    # swaps cached images (how fast: benchmarks/widget_latency.py)
    monkeypatch.setattr(module, "scan_block_run", again)
    monkeypatch.setattr(module, "figure_to_png", again)
    seen = {}
    for v in SCAN_VERSIONS:
        w.controls["version"].value = v
        assert w.figure.value[:8] == b"\x89PNG\r\n\x1a\n"
        seen[v] = (w.figure.value, w.summary.value)
    assert len({png for png, _ in seen.values()}) == len(SCAN_VERSIONS)
    assert "4</b> barrier steps" in seen["Hillis-Steele"][1]       # log2 16
    assert "8</b> barrier steps" in seen["Blelloch"][1]            # 2 log2 16
    assert "racy elements" in seen["in place (racy)"][1] and "wrong" in seen["in place (racy)"][1]
    assert "no races" in seen["Hillis-Steele"][1] and "right" in seen["Hillis-Steele"][1]


def test_size_changes_the_numbers_and_shows_bank_conflicts():
    w = scan_widget(version="Blelloch")
    before = w.summary.value
    w.controls["n"].value = 64
    assert w.summary.value != before and "n = 64" in w.summary.value
    plain = w.summary.value
    w.controls["version"].value = "Blelloch padded"
    padded = w.summary.value

    def extra(text):
        return int(text.split("(")[-1].split(" extra")[0])

    assert extra(plain) > 0 and extra(padded) < extra(plain)


def test_bad_arguments():
    with pytest.raises(ValueError, match="pick one of"):
        scan_widget(n=100)
    with pytest.raises(ValueError, match="unknown version 'bogus'"):
        scan_block_run("bogus", 16)
