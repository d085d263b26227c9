"""Chapter 8's tensor-core convolution, without a GPU: the napkin math of its GEMM (padding), the
error bound its checks use (tight enough to catch a dropped term or a skipped rounding), and the
table and sentences the chapter renders from the recorded run (a synthetic result here). The
kernels themselves run on the PTX engine in tests/test_ptx_course_kernels.py
(tests/cuda_c_cases.py: _cnn_tensor_core_cases) and on the GPU in
tests/test_cnn_tensor_cores_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest

from simtlab.kernels import cnn
from simtlab.plots import cnn as P


def test_the_networks_layers_waste_most_of_the_tensor_cores_width_in_conv1():
    # conv1: 6 channels in a 16-wide tile, depth 25 in 32 (4 k-steps of 8, or 2 of 16)
    c1 = cnn.tc_conv_padding(1, 6, 5, "tf32")
    assert (c1["n_padded"], c1["depth"], c1["depth_padded"]) == (16, 25, 32)
    assert c1["useful_fraction"] == pytest.approx(6 * 25 / (16 * 32))
    # conv2: 16 channels fill the tile; depth 150 -> 152 (k = 8) or 160 (k = 16)
    assert cnn.tc_conv_padding(6, 16, 5, "tf32")["depth_padded"] == 152
    assert cnn.tc_conv_padding(6, 16, 5, "bf16")["depth_padded"] == 160
    assert cnn.tc_conv_padding(6, 17, 5, "bf16")["n_padded"] == 32


def _inputs(seed=0, shape=(2, 6, 9, 9, 16)):
    b, c, h, w, m = shape
    r = np.random.default_rng(seed)
    x = r.random((b, c, h, w), dtype=np.float32) + np.float32(0.5)
    wt = r.random((m, c, 5, 5), dtype=np.float32) * np.float32(2) - np.float32(1)
    return x, wt, r.random(m, dtype=np.float32) - np.float32(0.5)


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
@pytest.mark.parametrize("channels", [2, 6])
def test_the_rounded_inputs_bound_is_below_one_dropped_term(precision, channels):
    """A kernel that loses one depth column (one x * w product: a wrong gather, a skipped k step)
    misses the rounded inputs' reference by that product: that bound (the accumulation's alone)
    must be smaller than the smallest one, at depth 50 and 150 (conv2's). Weights of magnitude
    0.5 to 1 here, both signs. (The float32 inputs' bound is not: BF16's input rounding alone
    allows 2^-7 S, more than one of 150 terms.)"""
    x, w, bias = _inputs(shape=(2, channels, 9, 9, 16))
    w = np.sign(w) * (np.abs(w) * np.float32(0.5) + np.float32(0.5))
    x_r, w_r = np.abs(x), np.abs(w)
    bound = cnn.tc_conv_bound(x, w, bias, precision, inputs_rounded=True)
    assert bound.max() < 0.99 * float(x_r.min() * w_r.min())      # the rounded factors are within 1 %


def test_the_bound_catches_a_bf16_kernel_that_skipped_the_rounding():
    """An exact FP32 convolution (what a kernel that never rounded to BF16 would give) misses the
    reference of the rounded inputs by more than the accumulation's bound on some outputs, and is
    within the float32 inputs' bound: the check of the rounded reference is what tells them apart."""
    x, w, bias = _inputs(1)
    exact = cnn.tc_conv_reference(x, w, bias)
    assert (np.abs(exact - cnn.tc_conv_reference(x, w, bias, "bf16"))
            > cnn.tc_conv_bound(x, w, bias, "bf16", inputs_rounded=True)).any()
    assert (np.abs(exact - cnn.tc_conv_reference(x, w, bias)) <= cnn.tc_conv_bound(x, w, bias, "bf16")).all()


def _row(name, impl, precision, ms, layout="NCHW", **extra):
    return {"name": name, "impl": impl, "precision": precision, "layout": layout, "ms": ms, **extra}


def _fake_result():
    """Made-up times (not measurements): conv1's tensor-core kernels slower than the course's FP32
    direct kernel, conv2's faster; cuDNN's NHWC faster than its NCHW in TF32."""
    def layer(c, m, times):
        tf32, bf16, implicit, direct, cd = times
        rows = [_row("course TF32 tensor cores (WMMA)", "course", "tf32", tf32, kernel="conv_wmma_tf32_bias_relu"),
                _row("course BF16 tensor cores (WMMA)", "course", "bf16", bf16, kernel="conv_wmma_bf16_bias_relu"),
                _row("course FP32 implicit GEMM", "course", "fp32", implicit, kernel="conv_bias_relu"),
                _row("course FP32 direct", "course", "fp32", direct, kernel="conv_bias_relu_direct")]
        for (p, lay), ms in cd.items():
            rows.append(_row(f"cuDNN {p.upper()} {lay}", "cudnn", p, ms, lay, kernels=[[f"sm90_{p}_{lay}_kernel", 10.0]]))
        return {"rows": rows, "gemm": {p: cnn.tc_conv_padding(c, m, 5, p) for p in ("tf32", "bf16")},
                "flops": 2 * 10_000 * m * 24 * 24 * c * 25, "fewest_bytes_fp32": 200_000_000}
    cd1 = {("fp32", "NCHW"): 0.50, ("tf32", "NCHW"): 0.40, ("tf32", "NHWC"): 0.20, ("bf16", "NCHW"): 0.25,
           ("bf16", "NHWC"): 0.30}
    cd2 = {("fp32", "NCHW"): 0.30, ("tf32", "NCHW"): 0.10, ("tf32", "NHWC"): 0.12, ("bf16", "NCHW"): 0.08,
           ("bf16", "NHWC"): 0.09}
    return {"batch": 10_000, "device": "Test GPU", "date": "2026-11-27", "torch": "2.x", "cudnn": 91000,
            "layers": {"conv1": layer(1, 6, (0.25, 0.20, 1.0, 0.125, cd1)),
                       "conv2": layer(6, 16, (0.05, 0.04, 0.5, 0.20, cd2))}}


def test_the_summary_compares_each_precision_with_cudnns_fastest_layout_and_the_course_fp32():
    s = P.tensor_core_conv_summary(_fake_result())
    c1, c2 = s["layers"]["conv1"], s["layers"]["conv2"]
    assert c1["cudnn"]["tf32"]["layout"] == "NHWC" and c1["cudnn"]["tf32"]["ms"] == 0.20
    assert c1["vs_cudnn"]["tf32"] == pytest.approx(0.25 / 0.20) and c1["vs_cudnn"]["bf16"] == pytest.approx(0.20 / 0.25)
    assert c1["fp32"] == {"name": "course FP32 direct", "ms": 0.125}
    assert c1["vs_fp32"]["tf32"] == pytest.approx(0.125 / 0.25)
    assert c2["vs_fp32"]["bf16"] == pytest.approx(0.20 / 0.04)
    assert c1["gb_per_s"]["bf16"] == pytest.approx(200e6 / 0.20e-3 / 1e9)
    assert c1["useful"]["tf32"] == pytest.approx(6 * 25 / (16 * 32))


def test_the_table_sorts_each_layer_and_bolds_the_tensor_core_rows():
    table = P.tensor_core_conv_table(_fake_result())
    conv1 = [r for r in table.rows if r[0] == "conv1"]
    assert [r[1] for r in conv1[:3]] == ["course FP32 direct", "course BF16 tensor cores (WMMA)",
                                         "cuDNN TF32 NHWC"]
    assert conv1[1][3] == "1.60" and conv1[1][5] == "conv_wmma_bf16_bias_relu"      # 0.20 / 0.125
    assert conv1[2][5] == "sm90_tf32_NHWC_kernel"
    bolded = {table.rows[i][1] for i in table.bold}
    assert bolded == {"course TF32 tensor cores (WMMA)", "course BF16 tensor cores (WMMA)"}
    assert "Test GPU" in table.title and "depth 25 -> 32 (TF32) / 32 (BF16)" in table.note


def test_the_findings_state_the_measured_ratios_and_what_they_do_not_show():
    text = P.tensor_core_conv_findings(_fake_result())
    assert "TF32 0.250 ms, 1.25 × the time of cuDNN's fastest TF32 (0.200 ms, NHWC" in text
    assert "runs it 0.50 × as fast" in text                # conv1: FP32 direct 0.125 ms against TF32 0.25
    assert "5.00 ×" in text                                # conv2: 0.20 / 0.04, the best of all
    assert "29 % / 29 %" in text and "no profile" in text
    assert "do not pay" not in text                        # 5x is a gain: no such verdict


def test_the_findings_say_when_the_tensor_cores_do_not_pay():
    data = _fake_result()
    for entry in data["layers"].values():
        for r in entry["rows"]:
            if r["impl"] == "course" and r["precision"] != "fp32":
                r["ms"] = 1.0                                      # slower than every FP32 kernel
    assert "do not pay" in P.tensor_core_conv_findings(data)


def test_without_a_recorded_run_the_chapter_says_what_to_run(monkeypatch):
    from simtlab.gpubench import cnn as G

    def missing(data=None):
        raise LookupError("nothing recorded")
    monkeypatch.setattr(G, "tensor_cores_recorded", missing)
    assert P.tensor_core_conv_table().title == "Not recorded yet"
    assert "gpu_cnn_tensor_cores.py --store" in P.tensor_core_conv_findings()


def test_PENDING_tensor_core_convolution_is_measured_on_the_h100_and_stored():
    """Fails until the H100 run is stored: python benchmarks/gpu_cnn_tensor_cores.py
    --out benchmarks/results/cnn_tensor_cores_h100.json --store (chapter 8's tensor-core
    section shows 'Not recorded yet' until then)."""
    from simtlab.gpubench import cnn as G

    entry = G.tensor_cores_recorded()
    assert "H100" in entry["device"] and entry["batch"] == 10_000 and not entry.get("errors")
    for layer in G.TC_LAYERS:
        rows = entry["layers"][layer]["rows"]
        assert {r["name"] for r in rows if r["impl"] == "course"} == set(G.TC_COURSE_ROWS)
        assert all(r["check"]["within_bound"] for r in rows if r["impl"] == "course")
        assert {(r["precision"], r["layout"]) for r in rows if r["impl"] == "cudnn"} == \
            {(p, lay) for p in G.TC_CUDNN_PRECISIONS for lay in G.TC_CUDNN_LAYOUTS}
    assert P.tensor_core_conv_table().title != "Not recorded yet"
