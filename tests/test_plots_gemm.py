"""Chapter 6 figures and widget, headless: each returns a Figure with a title, axis labels and units
drawn from the emulator's trace or the recorded H100 figures."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from simtlab import gpubench
from simtlab.analysis.gemm import profile, trace_version
from simtlab.plots import gemm as P


@pytest.fixture(scope="module")
def v3_run():
    return trace_version("v3 shared tiles", 40, 36, 24)


def _labels(fig):
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]


def test_fp32_peak_of_the_h100():
    assert P.fp32_peak_tflops() == pytest.approx(66.9, abs=0.1)


def test_tile_phases_colours_each_phase(v3_run):
    fig = P.plot_tile_phases(v3_run, block=3)
    assert isinstance(fig, Figure) and "block 3" in fig._suptitle.get_text()
    assert all("element" in x and "element" in y for x, y in _labels(fig))
    # block 3 = blockIdx (x=0, y=1) of a 3 x 3 grid: rows 16-31 of A, 2 phases along K = 24
    titles = [ax.get_title() for ax in fig.axes]
    assert "A (M x K): 384 elements, 384 loads" in titles[0]


def test_tile_phases_numbers_reloaded_elements_only_where_a_number_fits():
    # without shared memory, each of a 16 x 16 block's threads loads its own row of A and column
    # of B: A[r, k] is loaded by the 16 threads of row r, once each, so 16 loads per element
    # whatever K is. In a 40 x 24 map a number per cell would overlap its neighbours.
    big = P.plot_tile_phases(trace_version("v2 coalesced", 40, 36, 24), block=0)
    assert all(not ax.texts for ax in big.axes[:2])
    assert all(ax.get_title().endswith("\n16 loads per element") for ax in big.axes[:2])
    small = P.plot_tile_phases(trace_version("v2 coalesced", 16, 16, 8), block=0)
    numbers = {t.get_text() for t in small.axes[0].texts}
    assert numbers == {"16"} and len(small.axes[0].texts) == 16 * 8
    assert small.axes[0].get_title().endswith("\n16 loads per element")


def test_tile_phases_marks_one_threads_loads(v3_run):
    from simtlab.analysis.gemm import loads_per_element

    # thread 17 = (tx 1, ty 1) of block 3 loads A[16 + 1, 1] and A[17, 17] (two phases), B[1, 1] and B[17, 1]
    a17 = loads_per_element(v3_run, "a", 3, 17)
    assert sorted(map(tuple, np.argwhere(a17))) == [(17, 1), (17, 17)]
    fig = P.plot_tile_phases(v3_run, block=3, thread=17)
    dots = fig.axes[0].collections[-1].get_offsets()
    assert sorted(map(tuple, np.asarray(dots).astype(int))) == [(1, 17), (17, 17)]     # (column, row)


def test_profiles_bars(v3_run):
    profiles = {"v3 shared tiles": profile(v3_run)}
    fig = P.plot_profiles(profiles)
    assert "sectors" in fig.axes[1].get_ylabel() and "wavefronts" in fig.axes[2].get_ylabel()
    assert [p.get_height() for p in fig.axes[0].patches] == [pytest.approx(profiles["v3 shared tiles"]["reuse"])]


def test_recorded_gemm_results_and_their_figures():
    res = gpubench.recorded("gemm")
    assert res["source"] == "recorded" and "H100" in res["device"]
    ref = next(r for r in res["rows"] if r["reference"])
    best_c = max((r for r in res["rows"] if r["impl"] == "cuda-c"), key=lambda r: r["tflops"])
    assert best_c["ratio"] >= 0.8 and ref["tflops"] > 45
    fig = P.plot_versions(res)
    assert "TFLOP/s" in fig.axes[0].get_xlabel() and "cuBLAS" in fig._suptitle.get_text()
    fig = P.plot_sweep(res)
    assert fig.axes[0].get_xlabel().startswith("n") and len(fig.axes[0].lines) == len(res["sweep"]["tflops"])


def test_roofline_places_points_under_the_roof():
    fig = P.plot_roofline({"v3": (4.0, 8.1, "recorded"), "v7": (32.0, 42.5, "recorded")})
    ax = fig.axes[0]
    assert "FLOPs per byte" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()
    roof = ax.lines[0].get_ydata()
    assert roof.max() == pytest.approx(P.fp32_peak_tflops())
    assert len(ax.collections) == 2


def test_registers_occupancy_marks_each_kernel():
    fig = P.plot_registers_occupancy({"v5 numba": (156, 256, 8192), "v7 CUDA C": (128, 256, 33280)})
    ax = fig.axes[0]
    assert ax.get_xlabel() == "registers per thread" and "occupancy" in ax.get_ylabel()
    offsets = np.concatenate([c.get_offsets() for c in ax.collections])
    # 156 registers x 256 threads: 1 block of 8 warps per SM (12.5 %); 128: 2 blocks (25 %)
    assert sorted(offsets[:, 1].round(1).tolist()) == [12.5, 25.0]


def test_gemm_widget_switches_versions_and_blocks():
    from simtlab.widgets import gemm_widget

    w = gemm_widget(shape=(20, 18, 24), versions=["v2 coalesced", "v3 shared tiles"])
    assert "v2 coalesced" in w.summary.value and "reuse <b>1.0</b>" in w.summary.value
    first = w.figure.value
    w.controls["version"].value = "v3 shared tiles"
    assert "reuse <b>" in w.summary.value and "reuse <b>1.0</b>" not in w.summary.value
    assert len(w.controls["block"].options) == 4
    w.controls["block"].value = 3
    assert w.figure.value[:8] == b"\x89PNG\r\n\x1a\n" and w.figure.value != first
    before = w.figure.value
    w.controls["thread"].value = 17
    assert w.figure.value != before and w.controls["thread"].max == 255


def test_roofline_and_occupancy_points_from_the_recorded_results():
    res = gpubench.recorded("gemm")
    points = P.roofline_points(res)
    # v3 loads 1/16 of a float per FLOP: 4 FLOPs per byte; v1/v2 one float per FLOP: 1/4
    assert points["v3 shared tiles (CUDA C)"][0] == pytest.approx(4.0, rel=0.01)
    assert points["v1 naive (numba)"][0] == pytest.approx(0.25) or points["v1 naive (CUDA C)"][0] == pytest.approx(0.25)
    assert all(tf < P.fp32_peak_tflops() for _, tf, _ in points.values())
    occ = P.occupancy_points(res)
    assert occ["v5 numba"][0] == 156 and occ["v5 numba"][1] == 256


def test_sweep_from_gpu_bandwidth_results_in_gb_per_s():
    # gpu_bandwidth.py's sweep has GB/s of 12 n^2 bytes; 2 n^3 FLOPs in the same time
    res = {"source": "recorded", "device": "H100 test", "date": "2026-11-24",
           "sweep": {"sizes": [600, 1200], "gbps": {"v7": [100.0, 50.0]}}}
    fig = P.plot_sweep(res)
    assert list(fig.axes[0].lines[0].get_ydata()) == pytest.approx([10.0, 10.0])
