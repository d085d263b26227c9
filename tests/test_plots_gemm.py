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


# ------------------------------------------------------------------ section 8: waves, block order, tuning, split-K
def test_wave_efficiency_figure_marks_both_grids_at_4096():
    fig = P.plot_wave_efficiency()
    ax = fig.axes[0]
    assert "132 SMs" in fig._suptitle.get_text()
    assert "elements" in ax.get_xlabel() and "%" in ax.get_ylabel()
    notes = sorted(t.get_text() for t in ax.texts)
    assert notes == ["1024 blocks = 3.88 waves", "512 blocks = 3.88 waves"]          # v7 at 2/SM, cuBLAS at 1/SM
    assert [line.get_label() for line in ax.lines] == list(P.WAVE_CONFIGS)


def test_first_wave_figure_shows_each_order_and_its_footprint():
    fig = P.plot_first_wave(4096, 4096, 4096, (256, 128), 132, groups=(0, 8))
    titles = [ax.get_title() for ax in fig.axes[:2]]
    assert titles[0].startswith("row-major: 5 A + 32 B strips") and "88 MB distinct" in titles[0]
    assert titles[1].startswith("GROUP 8: 8 A + 17 B strips") and "69 MB distinct" in titles[1]
    image = fig.axes[1].images[0].get_array()
    assert int(image.count()) == 132 and image.shape == (16, 32)                      # 132 tiles coloured
    assert all("tiles" in x and "tiles" in y for x, y in _labels(fig)[:2])


def test_tuning_table_holds_every_recorded_configuration():
    import json
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    tune = json.loads((repo / "benchmarks/results/gpu_gemm_h100.json").read_text())
    sweep = json.loads((repo / "benchmarks/results/gemm_v8_sweep_h100.json").read_text())
    t = P.tuning_table()
    v8_rows = [r for r in sweep["rows"] if r["name"].startswith("gemm_v8_")]
    assert len(t.rows) == len(tune["tuning_v7"]) + len(tune["tuning_numba"]) + len(v8_rows)
    best_v7 = max(tune["tuning_v7"], key=lambda r: r["tflops"])
    row = next(r for r in t.rows if r[1] == best_v7["config"])
    cublas = next(r for r in tune["rows"] if r["reference"])["tflops"]
    assert row[3] == f"{best_v7['tflops']:.1f}" and row[4] == f"{100 * best_v7['tflops'] / cublas:.1f} %"
    assert t.rows.index(row) in t.bold
    champion = next(r for r in t.rows if r[1] == sweep["best"]["config"])
    assert champion[4] == f"{100 * sweep['best']['of_cublas']:.1f} %" and t.rows.index(champion) in t.bold
    assert "H100" in t.title and "TFLOP/s" in t.columns


def test_swizzle_table_pairs_the_model_with_the_recorded_runs():
    import json
    from pathlib import Path

    sweep = json.loads((Path(__file__).resolve().parent.parent / "benchmarks/results/gemm_v8_sweep_h100.json").read_text())
    t = P.swizzle_table()
    v8 = {r[1]: r for r in t.rows if r[0].startswith("v8")}
    for group, key in (("row-major", "g0"), ("8", "g8"), ("16", "g16")):
        measured = next(r for r in sweep["rows"] if r["name"] == f"gemm_v8_256x128x8_w64x64_t16x8_s3_{key}_b1")
        assert v8[group][4] == f"{measured['tflops']:.1f}"
    assert (v8["row-major"][3], v8["8"][3]) == ("88", "69")
    assert len([r for r in t.rows if r[0].startswith("v7")]) == 3


def _split_k_result():
    """The shape of benchmarks/gpu_gemm.py --split-k's JSON, with made-up figures."""
    rows = []
    for m in (512, 1024):
        rows += [dict(m=m, n=m, k=16384, name="cuBLAS SGEMM", impl="library", splits=None, tflops=30.0, of_cublas=1.0,
                      blocks=None, waves=None),
                 dict(m=m, n=m, k=16384, name="v7 warp tiling (no split)", impl="cuda-c", splits=None, tflops=6.0,
                      of_cublas=0.2, blocks=m * m // 16384, waves=m * m / 16384 / 264)]
        rows += [dict(m=m, n=m, k=16384, name=f"split-K x{s}", impl="cuda-c", splits=s, tflops=6.0 + s, of_cublas=(6.0 + s) / 30,
                      blocks=m * m // 16384 * s, waves=m * m / 16384 * s / 264) for s in (1, 2, 4, 8, 16)]
    return {"rows": rows, "shapes": [[512, 512, 16384], [1024, 1024, 16384]], "device": "a test card",
            "date": "today", "registers": 128, "local_bytes": 40}


def test_split_k_figure_and_its_sentences_come_from_the_result():
    result = _split_k_result()
    fig = P.plot_split_k(result)
    assert len(fig.axes) == 2 and "a test card" in fig._suptitle.get_text()
    assert all("slices of K" in x and "TFLOP/s" in y for x, y in _labels(fig))
    ys = list(fig.axes[0].lines[0].get_ydata())
    assert ys == [7.0, 8.0, 10.0, 14.0, 22.0]
    text = P.split_k_summary(result)
    assert "512x512x16384: v7 without a split 6.0 TFLOP/s" in text and "x16 (256 blocks" in text
    assert "22.0 TFLOP/s, 3.67x v7 and 73 % of cuBLAS" in text


def test_split_k_pending_without_a_recorded_run(monkeypatch):
    from simtlab import backend

    def missing(key, *a, **k):
        raise KeyError(key)
    monkeypatch.setattr(backend, "recorded", missing)
    note = P.split_k_measured()
    assert isinstance(note, P.PendingMeasurement) and "tools/device_gemm_splitk.sh" in str(note)


def test_v9_sweep_table_pairs_both_runs_and_the_champion_is_the_recorded_best():
    import json
    from pathlib import Path

    from simtlab.kernels import gemm as G

    repo = Path(__file__).resolve().parent.parent
    final = json.loads((repo / "benchmarks/results/gemm_v9_sweep_h100.json").read_text())
    before = json.loads((repo / "benchmarks/results/gemm_v9_sweep_conditional_fetch_h100.json").read_text())
    t = P.v9_sweep_table()
    v9 = [r for r in final["rows"] if r["name"].startswith("gemm_v9_")]
    assert [r[0] for r in t.rows if r[0].startswith("gemm_v9_")] == [r["name"] for r in v9]
    assert final["best_v9"]["kernel"] == G.V9_CHAMPION          # the chapter's row is the sweep's winner
    assert final["best_v9"]["of_cublas"] >= 0.90                # chapter 6's goal, measured in the same run as cuBLAS
    (bold,) = t.bold
    assert t.rows[bold][0] == G.V9_CHAMPION
    earlier = {r["name"]: r for r in before["rows"]}
    same = "gemm_v9_128x128x8_w2x2_t16x8_g8_b2"                 # in both runs: the fetch's placement is the only change
    row = next(r for r in t.rows if r[0] == same)
    assert row[3].startswith(f"{earlier[same]['tflops']:.1f} ") and row[4].startswith(
        f"{next(r for r in v9 if r['name'] == same)['tflops']:.1f} ")
    assert all(r["local_bytes"] == 0 for r in v9)                # no v9 configuration spills
