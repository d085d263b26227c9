"""Chapter 9's mma.sync ceiling (benchmarks/mma_peak.py, store entry results.mma_peak): the rows
the chapter prints, from a synthetic entry and from the recorded one."""

from __future__ import annotations

import pytest

from simtlab import backend
from simtlab import tensorcores as TC

SYNTHETIC = {"device": "a GPU", "date": "2026-01-01", "rows": [
    {"precision": "tf32", "ceiling": {"tflops": 200.0, "blocks_per_sm": 2, "threads": 256},
     "cublas_4096": {"tflops": 400.0}, "ceiling_of_cublas": 0.5},
    {"precision": "fp16", "ceiling": {"tflops": 600.0, "blocks_per_sm": 1, "threads": 128},
     "cublas_4096": {"tflops": 500.0}, "ceiling_of_cublas": 1.2}]}
RESULTS = {"best": {"tf32": {"tflops": 150.0}, "fp16": {"tflops": 300.0}}}


def test_each_precision_sets_the_best_v6_against_the_ceiling():
    tf32, fp16 = TC.mma_ceiling(SYNTHETIC, RESULTS)
    assert tf32["precision"] == "tf32" and tf32["best_v6_of_ceiling"] == 0.75 and tf32["launch"] == (2, 256)
    assert fp16["best_v6_of_ceiling"] == 0.5 and fp16["ceiling_of_cublas"] == 1.2


def test_the_summary_says_whether_the_goal_is_within_the_ceiling():
    text = TC.mma_ceiling_summary(SYNTHETIC, RESULTS)
    assert "TF32: mma.sync alone 200 TFLOP/s, cuBLAS 400: 50 % of cuBLAS, so at its own clock no mma.sync GEMM can reach 70 %" in text
    assert "FP16: mma.sync alone 600 TFLOP/s, cuBLAS 500: 120 % of cuBLAS, so at its own clock an mma.sync GEMM could reach 70 %" in text
    assert text.startswith("a GPU, 2026-01-01:")


def test_PENDING_the_ceiling_is_recorded_on_the_h100():
    try:
        entry = backend.recorded("mma_peak")
    except KeyError:
        pytest.fail("run `python benchmarks/mma_peak.py --store` on the H100 (chapter 9 prints its ceiling)")
    assert "H100" in entry["device"] and {r["precision"] for r in entry["rows"]} == {"tf32", "fp16", "bf16"}
    for r in TC.mma_ceiling(entry):
        assert r["best_v6"] is None or r["best_v6"] <= r["ceiling"] * 1.02   # no GEMM beats mma.sync alone
