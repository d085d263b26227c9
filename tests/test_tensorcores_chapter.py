"""Chapter 9's package side (simtlab/tensorcores.py, simtlab/plots/tensor_cores.py): fragment
layouts, the recorded H100 figures, the ldmatrix phases and the cp.async ring on the PTX engine,
the numerics, and every figure headless."""

from __future__ import annotations

import json

import numpy as np
import pytest
from matplotlib.figure import Figure

from simtlab import cuda_c_kernels as CC
from simtlab import gpubench
from simtlab import tensorcores as TC
from simtlab.plots import tensor_cores as P

needs_headers = pytest.mark.skipif(not CC.header_options(), reason="the CUDA headers' wheels are not installed")


# ------------------------------------------------------------------ fragment layouts
# The indices of kernels/tensor_cores.py's numba kernel (GPU-tested against float64 on the H100):
# lane (g = lane // 4, q = lane % 4) packs a0,a1 = sa[g, 2q], sa[g, 2q+1]; a2,a3 = sa[g+8, 2q..];
# a4,a5 = sa[g, 2q+8..]; a6,a7 = sa[g+8, 2q+8..]; b0,b1 = sb[2q, g], sb[2q+1, g]; b2,b3 = sb[2q+8, g],
# sb[2q+9, g]; and stores c0..c3 to C[g, 2q], C[g, 2q+1], C[g+8, 2q], C[g+8, 2q+1].
def _numba_kernel_entries(lane):
    g, q = lane // 4, lane % 4
    a = [(g, 2 * q), (g, 2 * q + 1), (g + 8, 2 * q), (g + 8, 2 * q + 1),
         (g, 2 * q + 8), (g, 2 * q + 9), (g + 8, 2 * q + 8), (g + 8, 2 * q + 9)]
    b = [(2 * q, g), (2 * q + 1, g), (2 * q + 8, g), (2 * q + 9, g)]
    c = [(g, 2 * q), (g, 2 * q + 1), (g + 8, 2 * q), (g + 8, 2 * q + 1)]
    return {"a": a, "b": b, "c": c}


@pytest.mark.parametrize("operand", ["a", "b", "c"])
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_m16n8k16_layout_is_the_one_the_gpu_tested_numba_kernel_uses(operand, precision):
    layout = TC.fragment_layout("m16n8k16", precision, operand)
    for lane in range(32):
        want = _numba_kernel_entries(lane)[operand]
        assert [(r, c) for _, r, c in layout.elements_of(lane)] == want


def test_m16n8k8_tf32_layout_matches_the_ptx_isa_figure():
    """Spot values read off the PTX ISA's figures for mma.m16n8k8 .tf32."""
    a = TC.fragment_layout("m16n8k8", "tf32", "a")
    assert a.elements_of(0) == [(0, 0, 0), (1, 8, 0), (2, 0, 4), (3, 8, 4)]
    assert a.elements_of(5) == [(0, 1, 1), (1, 9, 1), (2, 1, 5), (3, 9, 5)]
    b = TC.fragment_layout("m16n8k8", "tf32", "b")
    assert b.elements_of(6) == [(0, 2, 1), (1, 6, 1)]
    c = TC.fragment_layout("m16n8k8", "tf32", "c")
    assert c.elements_of(31) == [(0, 7, 6), (1, 7, 7), (2, 15, 6), (3, 15, 7)]


@pytest.mark.parametrize("shape, precision, per_lane", [("m16n8k8", "tf32", {"a": 4, "b": 2, "c": 4}),
                                                        ("m16n8k16", "fp16", {"a": 8, "b": 4, "c": 4})])
def test_every_lane_holds_the_same_number_of_elements(shape, precision, per_lane):
    for operand, n in per_lane.items():
        layout = TC.fragment_layout(shape, precision, operand)
        assert np.array_equal(np.bincount(layout.lane.ravel(), minlength=32), np.full(32, n))


def test_a_layout_table_from_entries_refuses_holes_and_doubles():
    entries = list(TC._formula_entries("m16n8k8", "b"))
    assert TC.layout_from_entries("m16n8k8", "tf32", "b", entries).same_as(TC.fragment_layout("m16n8k8", "tf32", "b"))
    with pytest.raises(ValueError, match="no lane holds"):
        TC.layout_from_entries("m16n8k8", "tf32", "b", entries[1:])
    with pytest.raises(ValueError, match="held twice"):
        TC.layout_from_entries("m16n8k8", "tf32", "b", entries + entries[:1])
    with pytest.raises(ValueError, match="takes tf32"):
        TC.fragment_layout("m16n8k8", "fp16", "a")


# ------------------------------------------------------------------ recorded figures
def test_the_store_holds_the_benchmark_json_as_recorded():
    bench, top = json.loads(TC.BENCH_JSON.read_text()), json.loads(TC.TOP_JSON.read_text())
    assert gpubench.stored(TC.STORE_TOPIC) == json.loads(json.dumps(TC.merged_entry(bench, top)))


def test_the_top_run_adds_only_the_rows_the_full_run_lacks():
    bench, top = json.loads(TC.BENCH_JSON.read_text()), json.loads(TC.TOP_JSON.read_text())
    merged = TC.merged_entry(bench, top)
    names = [r["name"] for r in merged["rows"]]
    assert len(names) == len(set(names))
    full = {r["name"]: r for r in bench["rows"]}
    for r in merged["rows"]:
        source = full if r.get("run") != "top" else {t["name"]: t for t in top["rows"]}
        assert r["tflops"] == source[r["name"]]["tflops"], r["name"]
    assert {"v8 wgmma + TMA FP16", "v7 wgmma TF32"} <= set(names)


def test_version_table_and_goals_read_the_recorded_run():
    bench = json.loads(TC.BENCH_JSON.read_text())
    res = TC.recorded()
    table = {r["version"]: r for r in TC.version_table(res)}
    raw = {r["name"]: r for r in bench["rows"]}
    assert table["v7 wgmma"]["bf16"] == (raw["v7 wgmma BF16"]["tflops"], raw["v7 wgmma BF16"]["vs_cublas"])
    assert table["v1 WMMA naive"]["fp16"] is None and table["v7 wgmma"]["tf32"] is not None
    for p in ("tf32", "fp16", "bf16"):
        assert table["v6 best of the sweep"][p][0] == max(r["tflops"] for r in bench["rows"]
                                                          if r["precision"] == p and r.get("kernel", "").startswith("tc_v6"))
    reached = {goal.split()[0] + (" wgmma" if "wgmma" in goal else ""): ok for goal, _, ok in TC.goals(res)}
    assert reached == {"TF32": True, "FP16": True, "BF16": True, "FP16 wgmma": True, "BF16 wgmma": True}
    assert sorted(TC.stage_figures(res)) == [2, 3, 4]


def test_tile_flops_per_byte():
    # 2*128*256*32 FLOPs over (128 + 256) * 32 halves of 2 bytes
    assert TC.tile_flops_per_byte(128, 256, 32, "fp16") == pytest.approx(2097152 / 24576)
    assert TC.tile_flops_per_byte(128, 256, 32, "tf32") == pytest.approx(2097152 / 49152)


# ------------------------------------------------------------------ ldmatrix phases
# One phase: 8 lanes, 16 bytes each. Unswizzled, lane l reads chunk 0 of row l: rows of 128 bytes
# (TF32 A) or 512 bytes (FP16 B) all start in bank 0, so banks 0-3 serve 8 different words each (8
# wavefronts); rows of 64 bytes (FP16 A) alternate between banks 0 and 16 (4 each). Swizzled, the 8
# chunks fall on 8 different groups of 4 banks: 1 wavefront.
HAND_COUNTED = {("TF32 A", False): 8, ("TF32 A", True): 1, ("FP16 A", False): 4, ("FP16 A", True): 1,
                ("FP16 B", False): 8, ("FP16 B", True): 1}


@pytest.mark.parametrize("case, swizzled", sorted(HAND_COUNTED))
def test_the_bank_model_counts_the_phase_by_hand(case, swizzled):
    assert TC.model_wavefronts(case, swizzled) == HAND_COUNTED[case, swizzled]


@needs_headers
@pytest.mark.parametrize("case, swizzled", sorted(HAND_COUNTED))
def test_the_traced_phase_on_the_ptx_engine_has_the_same_wavefronts(case, swizzled):
    run, _ = TC.trace_ldmatrix_phase(case, swizzled)
    req = TC.phase_request(run)
    assert req["lanes"] == 8 and req["wavefronts"] == HAND_COUNTED[case, swizzled]


# ------------------------------------------------------------------ the cp.async ring
@needs_headers
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_the_traced_ring_follows_the_schedule_formula(stages):
    run, out, data = TC.trace_pipeline(stages, 6)
    assert np.array_equal(out, TC.pipeline_reference(data, 6))
    events = TC.pipeline_events(run)
    assert events == TC.pipeline_schedule(stages, 6)
    # while tile t is computed, tiles t+1 .. t+S-2 are in flight (issued, not landed)
    if stages >= 3:
        at = events.index(("compute", 0, 0))
        in_flight = {t for w, t, _ in events[:at] if w == "issue"} - {t for w, t, _ in events[:at] if w == "land"}
        assert in_flight == set(range(1, stages))


# ------------------------------------------------------------------ numerics
def test_errors_order_as_the_mantissa_bits_say():
    """FP32 keeps 23 bits, FP16 10 (rounded), TF32 10 (truncated by mma.sync: twice the error),
    BF16 7: the median errors come in that order at every K."""
    data = TC.numerics_errors(ks=(64, 512), m=16, n=16)
    e = {p: [med for med, _ in v] for p, v in data["errors"].items()}
    for i in range(2):
        assert e["fp32"][i] < e["fp16"][i] < e["tf32"][i] < e["bf16"][i]


# ------------------------------------------------------------------ figures
def _labelled(fig):
    assert isinstance(fig, Figure) and fig._suptitle is not None and fig._suptitle.get_text()
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel()


def test_every_figure_has_a_title_and_labelled_axes():
    res = TC.recorded()
    _labelled(P.plot_roofline(res))
    _labelled(P.plot_versions(res))
    _labelled(P.plot_stages(res))
    _labelled(P.plot_numerics(TC.numerics_errors(ks=(64, 128), m=8, n=8)))
    _labelled(P.plot_fragment_layouts([TC.fragment_layout("m16n8k8", "tf32", o) for o in "abc"]))
    _labelled(P.plot_pipeline(TC.pipeline_schedule(3, 5), 3))


def test_chapter_6_roofline_draws_the_tensor_core_roofs():
    from simtlab.plots import gemm as G

    plain = G.plot_roofline({"v": (10.0, 5.0, "recorded")})
    with_roofs = G.plot_roofline({"v": (10.0, 5.0, "recorded")},
                                 tensor_roofs={"TF32": TC.PEAK_TFLOPS["tf32"], "FP16/BF16": TC.PEAK_TFLOPS["fp16"]})
    ax0, ax1 = plain.axes[0], with_roofs.axes[0]
    assert len(ax1.lines) == len(ax0.lines) + 2
    assert max(ax1.lines[-1].get_ydata()) == pytest.approx(TC.PEAK_TFLOPS["fp16"])
    assert ax1.get_ylim()[1] >= 2 * TC.PEAK_TFLOPS["fp16"] > ax0.get_ylim()[1]
