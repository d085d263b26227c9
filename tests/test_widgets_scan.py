"""The scan widget: the dropdowns change the picture and the numbers, from the emulator's trace."""

import time

import pytest

from simtlab.widgets import scan_widget
from simtlab.widgets.scan import SCAN_VERSIONS, scan_block_run


def test_dropdown_changes_figure_and_summary():
    w = scan_widget()
    assert list(w.controls["version"].options) == list(SCAN_VERSIONS)
    seen = {}
    for v in SCAN_VERSIONS:
        t0 = time.perf_counter()
        w.controls["version"].value = v
        assert time.perf_counter() - t0 < 0.2, f"{v}: a cached version must switch in < 200 ms"
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
