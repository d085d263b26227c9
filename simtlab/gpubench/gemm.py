"""Chapter 6 on the GPU: every GEMM version against cuBLAS SGEMM (``cupy.matmul`` in FP32).

Each version of the table ``kernels/gemm.py: VERSIONS`` (numba-cuda, and CUDA C through CuPy)
multiplies two random n x n float32 matrices with its launch plan. cuBLAS runs with TF32 off
(CuPy uses TF32 only when ``CUPY_TF32=1``; :func:`fp32_reference` checks), so all compute is
plain FP32 FMAs. Napkin math: ``2 n^3`` FLOPs; at least ``3 * 4 n^2`` bytes (each matrix once).
Here ``n`` is the side of the matrices (``DEFAULT_N``, ``CHECK_N``, ``SWEEP_SIZES``), not a
count of elements as in chapters 3-5.

``gemm_runner`` builds one version's launch on given arrays; tests/test_gemm_gpu.py uses it too.
"""

from __future__ import annotations

import os

import numpy as np

from ..kernels import gemm as G
from .harness import Case, nonzero_random, version_cases

TOPIC = "gemm"
REFERENCE = "cuBLAS SGEMM (cupy.matmul, FP32)"
#: the benchmark's size (n x n times n x n), the odd side every version is checked at first,
#: and the size sweep: powers of two and odd sizes between them
DEFAULT_N = 4096
CHECK_N = 1001
SWEEP_SIZES = (512, 1000, 1024, 2000, 2048, 3001, 4096)
#: an odd, non-square shape (M, N, K) the benchmark and the GPU tests check every version at
CHECK_SHAPE = (1001, 999, 997)

__all__ = ["TOPIC", "REFERENCE", "DEFAULT_N", "CHECK_N", "SWEEP_SIZES", "CHECK_SHAPE", "cases",
           "inputs", "check", "plan_options", "gemm_runner", "cublas_runner", "check_version",
           "fp32_reference", "register_cap_ablation"]


def fp32_reference() -> None:
    """Refuse to time cuBLAS with TF32 on: the course compares FP32 kernels with FP32 cuBLAS."""
    if os.environ.get("CUPY_TF32", "0") != "0":
        raise RuntimeError("CUPY_TF32 is set: cupy.matmul would use TF32 tensor cores, not FP32. "
                           "Unset it (or CUPY_TF32=0) before importing CuPy.")


def plan_options(version) -> dict:
    return {}


def inputs(version, n: int, seed: int = 0) -> tuple:
    """Two n x n matrices of random floats in [-0.5, 0.5) (CuPy)."""
    import cupy

    return (nonzero_random((n, n), seed=seed) - cupy.float32(1.0),
            nonzero_random((n, n), seed=seed + 1) - cupy.float32(1.0))


def _relative_error(c, a, b, xp):
    want = a.astype(xp.float64) @ b.astype(xp.float64)
    scale = xp.abs(a).astype(xp.float64) @ xp.abs(b).astype(xp.float64)
    return float(xp.max(xp.abs(c - want) / scale))


def check(version, out, a, b) -> str | None:
    """None when ``out`` is A @ B to float32 accuracy (error relative to sum |a||b| per element)."""
    if not np.isfinite(out).all():
        return "some outputs are not finite"
    err = _relative_error(out, a, b, np)
    return None if err < 1e-5 else f"relative error {err:.2e}"


def gemm_runner(label: str, impl: str, a, b, c):
    """``run()`` enqueues C = A @ B with version ``label`` (``impl`` "numba" or "cuda-c") on CuPy
    float32 arrays ``a`` (M x K), ``b`` (K x N), ``c`` (M x N), without synchronising."""
    import cupy

    from .. import versions

    for name, x in (("a", a), ("b", b), ("c", c)):
        if x.dtype != cupy.float32 or x.ndim != 2 or not x.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous 2-D float32 CuPy array, got {x.dtype} {x.shape}")
    if b.shape[0] != a.shape[1] or c.shape != (a.shape[0], b.shape[1]):
        raise ValueError(f"shapes do not multiply: A {a.shape}, B {b.shape}, C {c.shape}")
    run, _ = versions.gpu_runner(TOPIC, G.version(label), impl, a, b, out=c)
    return run


def cublas_runner(a, b, c):
    import cupy

    fp32_reference()

    def run():
        cupy.matmul(a, b, out=c)
    run.keep = (a, b, c)
    return run


def check_version(label: str, impl: str, shape=CHECK_SHAPE) -> float:
    """Run version ``label`` (or cuBLAS: ``impl="library"``) at an odd ``(M, N, K)`` and compare
    with a float64 product on the GPU; returns the largest relative error (AssertionError when
    above 1e-5)."""
    import cupy

    m, n, k = shape
    a = nonzero_random((m, k), seed=1) - cupy.float32(1.0)
    b = nonzero_random((k, n), seed=2) - cupy.float32(1.0)
    c = cupy.full((m, n), cupy.nan, cupy.float32)        # an output never written stays NaN
    (cublas_runner(a, b, c) if impl == "library" else gemm_runner(label, impl, a, b, c))()
    err = _relative_error(c, a, b, cupy)
    assert err < 1e-5, f"{label} ({impl}) at {shape}: relative error {err:.2e}"
    return err


def _cublas_case() -> Case:
    def prepare(n):
        import cupy

        a, b = inputs(None, n)
        return cublas_runner(a, b, cupy.empty((n, n), cupy.float32))

    return Case(REFERENCE, "library", prepare, lambda n: G.gemm_bytes(n, n, n),
                check=lambda _n: check_version("", "library"), reference=True,
                flops=lambda n: G.gemm_flops(n, n, n))


def cases() -> list[Case]:
    """cuBLAS (the reference), then one case per row of the table and implementation."""
    import sys

    return [_cublas_case()] + version_cases(sys.modules[__name__], G.VERSIONS)


# ------------------------------------------------------------------------------------------
# The register-cap ablation and cuBLAS in Nsight Compute (benchmarks/probe_ch6_8.py, H100)
# ------------------------------------------------------------------------------------------
#: shared memory per block of the two CUDA C kernels the ablation builds (bytes, the resource
#: report of benchmarks/gpu_gemm.py): what, with the registers, sets their blocks per SM
ABLATION_SHARED = {"gemm_v6_float4": 8320, "gemm_v7_warptile": 33280}
CUBLAS_KERNEL = "sm80_xmma_gemm"


def register_cap_ablation(data: dict | None = None) -> dict:
    """v6 and v7 (CUDA C) built with ``__launch_bounds__(256, 1)`` and ``(256, 2)``, cuBLAS in the
    same run at 4096^3: ``rows`` (kernel, min_blocks, regs, local_bytes, blocks_per_sm from the
    occupancy rules, tflops, of_cublas), ``cublas`` (TFLOP/s and what Nsight Compute measured
    of its kernel: registers, grid, waves, occupancy, SM throughput, issued warps per
    scheduler per cycle), ``device``, ``date``."""
    from ..hardware import occupancy
    from .conv import probe

    p = probe(data)
    g = p["gemm"]
    n = g["n"]
    rows = []
    for r in g["rows"]:
        occ = occupancy(256, r["regs"], ABLATION_SHARED[r["kernel"]])
        rows.append({**r, "blocks_per_sm": occ.blocks_per_sm})
    ncu = next(k for k in p["ncu"] if k["kernel"].startswith(CUBLAS_KERNEL))
    cublas = {"tflops": 2 * n**3 / g["cublas_ms"] / 1e9, "kernel": ncu["kernel"].split("_execute")[0],
              **{k: ncu[k] for k in ("registers", "grid", "block", "waves", "achieved_occupancy_pct",
                                     "sm_pct", "issued_per_scheduler")}}
    return {"n": n, "rows": rows, "cublas": cublas, "device": p["device"], "date": p["date"]}
