"""Chapters 6-8's recorded H100 figures (benchmarks/probe_ch6_8.py and Nsight Compute, copied into
simtlab/data/h100_timings.json by tools/store_ch6_8_probe.py) and the tables that show them:
every figure checked against the measurement files in benchmarks/results/, headless."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from simtlab.gpubench import cnn as GC
from simtlab.gpubench import conv as GV
from simtlab.gpubench import gemm as GG
from simtlab.plots import cnn as PC
from simtlab.plots import conv as PV
from simtlab.plots import gemm as PG

REPO = Path(__file__).resolve().parent.parent
PROBE = json.loads((REPO / "benchmarks/results/probe_ch6_8_h100.json").read_text())
NCU_TEXT = (REPO / "benchmarks/results/ncu_ch6_8_h100.txt").read_text()


def _tool():
    spec = importlib.util.spec_from_file_location("store_ch6_8_probe", REPO / "tools/store_ch6_8_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_store_holds_the_probe_as_measured():
    tool = _tool()
    stored = GV.probe()
    assert stored == json.loads(json.dumps(tool.entry(PROBE, NCU_TEXT)))   # the tool's copy, nothing else
    assert stored["cudnn"] == PROBE["cudnn"] and stored["gemm"] == PROBE["gemm"]
    assert stored["device"] == "NVIDIA H100 80GB HBM3"


def test_ncu_report_is_read_kernel_by_kernel():
    kernels = _tool().parse_ncu(NCU_TEXT)
    cublas = next(k for k in kernels if k["kernel"].startswith("sm80_xmma_gemm"))
    # the report's own lines: "Achieved Occupancy % 12.50", "Compute (SM) Throughput % 88.10", "Waves Per SM 3.88"
    assert (cublas["achieved_occupancy_pct"], cublas["sm_pct"], cublas["waves"], cublas["grid"]) == (12.5, 88.1, 3.88, 512)
    v3 = next(k for k in kernels if k["kernel"] == "gemm_v3_tiled")
    assert v3["duration"] == pytest.approx(20700.0) and v3["stalls"]["mio_throttle"] == 7.67
    v5_c3 = next(k for k in kernels if k["kernel"] == "conv_v5_c4m16k7_16x8x4")
    assert max(v5_c3["stalls"], key=v5_c3["stalls"].get) == "imc_miss"


def _probe_row(layer, layout, precision):
    return next(r for r in PROBE["cudnn"]["rows"] if (r["layer"], r["layout"], r["precision"]) == (layer, layout, precision))


def test_cudnn_table_has_every_layout_and_precision_and_the_course_from_the_same_run():
    for layer in ("C1", "C3"):
        t = GV.cudnn_table(layer)
        assert {(r["layout"], r["precision"]) for r in t["rows"]} == {
            (lay, p) for lay in ("NCHW", "NHWC") for p in ("fp32", "tf32", "fp16", "bf16")}
        v6 = next(r["ms"] for r in PROBE["cudnn"]["rows"] if r["layer"] == layer and r.get("name", "").startswith("v6"))
        for r in t["rows"]:
            assert r["v6_speedup"] == _probe_row(layer, r["layout"], r["precision"])["ms"] / v6
    c3 = {(r["layout"], r["precision"]): r for r in GV.cudnn_table("C3")["rows"]}
    assert c3[("NHWC", "tf32")]["v6_speedup"] < 1 < c3[("NCHW", "tf32")]["v6_speedup"]


@pytest.mark.parametrize("layer, layout, precision, algorithm", [
    ("C1", "NCHW", "fp32", "FFT"),
    ("C3", "NCHW", "fp32", "FFT"),
    ("C3", "NHWC", "tf32", "implicit GEMM, tensor cores (xmma) + layout conversion"),
    ("C3", "NHWC", "fp16", "implicit GEMM, tensor cores (xmma)"),
    ("C1", "NCHW", "bf16", "GEMM with precomputed indices"),
])
def test_cudnn_algorithm_is_read_from_the_kernel_names(layer, layout, precision, algorithm):
    assert GV.cudnn_algorithm(_probe_row(layer, layout, precision)["kernels"]) == algorithm


def test_cudnn_table_renders_headless():
    table = PV.cudnn_layouts_table("C3")
    page = table._repr_html_()
    assert "<table" in page and "FP32-exact" in page and "H100" in page and "time (ms)" in page
    assert "cuDNN 1.41x faster" in str(table)              # 0.245 / 0.173 (NHWC TF32)
    assert len(table.rows) == 10


def test_register_cap_ablation_blocks_per_sm():
    """Blocks per SM of 256-thread blocks from the registers alone: 65,536 registers per SM, a
    warp's registers rounded up to 256 (Hopper's allocation unit)."""
    t = GG.register_cap_ablation()
    for r in t["rows"]:
        per_warp = math.ceil(r["regs"] * 32 / 256) * 256
        assert r["blocks_per_sm"] == 65536 // (per_warp * 8)
    assert [r["blocks_per_sm"] for r in t["rows"]] == [2, 2, 1, 2]
    assert t["cublas"]["tflops"] == pytest.approx(2 * 4096**3 / PROBE["gemm"]["cublas_ms"] / 1e9)
    text = str(PG.register_cap_table())
    assert "3.88 waves" in text and "12.5 %" in text and "42.7" in text


def test_batch1_kernels_sum_the_ncu_durations():
    t = GC.batch1_kernels()
    assert [r["layer"] for r in t["rows"]] == list(GC.BATCH1_KERNELS)
    assert t["gpu_sum_us"] == pytest.approx(4.77 + 12.19 + 13.22 + 5.06 + 4.00)    # the report's lines
    assert t["graph_us"] == pytest.approx(1000 * PROBE["batch1"]["forward_graph_ms"])
    assert "<table" in PC.batch1_kernels_table()._repr_html_()


def test_pytorch_modes_include_torch_compile():
    rows = GC.pytorch_modes()
    big = next(r for r in rows if r["batch"] == 10_000)
    assert big["compile_ms"] == PROBE["compile"]["rows"][1]["compile_ms"]
    assert "torch.compile" in str(PC.pytorch_modes_table())
