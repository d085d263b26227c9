"""Chapter 9's main widget: the fragment layouts with one lane outlined, driven headless."""

from __future__ import annotations

import pytest

from simtlab.widgets import fragment_widget


def _formula_a_m16n8k16(lane):
    """The PTX ISA's m16n8k16 A fragment of one lane, written out independently:
    a0,a1: row g, cols 2t, 2t+1; a2,a3: row g+8; a4..a7: the same 8 columns further on."""
    g, t = lane >> 2, lane % 4
    return [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1),
            (g, 2 * t + 8), (g, 2 * t + 9), (g + 8, 2 * t + 8), (g + 8, 2 * t + 9)]


def test_the_summary_lists_the_lanes_elements_and_follows_the_controls():
    w = fragment_widget()
    first = (w.figure.value, w.summary.value)
    assert first[0][:8] == b"\x89PNG\r\n\x1a\n"
    for i, (r, c) in enumerate(_formula_a_m16n8k16(0)):
        assert f"a{i} = A[{r}, {c}]" in w.summary.value
    w.controls["lane"].value = 5
    for i, (r, c) in enumerate(_formula_a_m16n8k16(5)):
        assert f"a{i} = A[{r}, {c}]" in w.summary.value
    assert w.figure.value != first[0]
    w.controls["shape"].value = "m16n8k8, TF32"
    # TF32 m16n8k8: lane 5 (g 1, t 1) holds b0 = B[1, 1] and b1 = B[5, 1]
    assert "b0 = B[1, 1]" in w.summary.value and "b1 = B[5, 1]" in w.summary.value
    assert "a4" not in w.summary.value


def test_an_unknown_shape_names_the_choices():
    with pytest.raises(ValueError, match="m16n8k8, TF32"):
        fragment_widget(shape="m8n8k4")
