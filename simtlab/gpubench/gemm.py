"""Chapter 6 on the GPU: every GEMM version against cuBLAS SGEMM (``cupy.matmul`` in FP32).

Each version of ``kernels/gemm.py`` (numba-cuda) and ``kernels/gemm.cu`` (CUDA C through CuPy)
multiplies two random n x n float32 matrices; the launch plan comes from the version table
``kernels/gemm.py: VERSIONS``. cuBLAS runs with TF32 off (CuPy uses TF32 only when
``CUPY_TF32=1``; :func:`fp32_reference` checks), so all compute is plain FP32 FMAs.
Napkin math: ``2 n^3`` FLOPs; bytes moved at least ``3 * 4 n^2`` (each matrix once).

``gemm_runner`` builds one version's launch; tests/test_gemm_gpu.py uses it too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..kernels import gemm as G
from .harness import Case, nonzero_random
from .launch import bind

TOPIC = "gemm"
REFERENCE = "cuBLAS SGEMM (cupy.matmul, FP32)"
#: the benchmark's size (n x n times n x n) and an odd one every version is checked at first
SIZE = 4096
CHECK_SHAPE = (1001, 999, 997)            # M, N, K
#: the size sweep: powers of two and odd sizes between them
SWEEP_SIZES = (512, 1000, 1024, 2000, 2048, 3001, 4096)
#: what benchmarks/gpu_gemm.py recorded on an H100: the chapter plots it without a GPU
RESULTS_PATH = Path(__file__).resolve().parent.parent / "data" / "gpu_gemm.json"

__all__ = ["TOPIC", "REFERENCE", "SIZE", "CHECK_SHAPE", "SWEEP_SIZES", "RESULTS_PATH", "cases", "gemm_runner",
           "cublas_runner", "check_version", "fp32_reference", "IMPLS_OF", "recorded"]


def recorded(path: Path | str = RESULTS_PATH) -> dict:
    """What benchmarks/gpu_gemm.py recorded (``source``: 'recorded', or 'none' with a message)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {"source": "none", "topic": TOPIC,
                "message": "No GPU timings recorded for gemm yet: run benchmarks/gpu_gemm.py on a GPU."}
    return {**data, "source": "recorded", "topic": TOPIC}


def IMPLS_OF(version: str) -> tuple[str, ...]:
    """The implementations a version has: ("numba", "cuda-c") or ("cuda-c",)."""
    return ("numba", "cuda-c") if G.VERSIONS[version]["kernel"] else ("cuda-c",)


def fp32_reference() -> None:
    """Refuse to time cuBLAS with TF32 on: the course compares FP32 kernels with FP32 cuBLAS."""
    if os.environ.get("CUPY_TF32", "0") != "0":
        raise RuntimeError("CUPY_TF32 is set: cupy.matmul would use TF32 tensor cores, not FP32. "
                           "Unset it (or CUPY_TF32=0) before importing CuPy.")


def gemm_runner(version: str, impl: str, a, b, c):
    """``run()`` enqueues C = A @ B with ``version`` (``impl`` "numba" or "cuda-c") on CuPy
    float32 arrays ``a`` (M x K), ``b`` (K x N), ``c`` (M x N), without synchronising."""
    import cupy

    if version not in G.VERSIONS:
        raise ValueError(f"unknown version {version!r}; the versions are {', '.join(G.VERSIONS)}")
    if impl not in IMPLS_OF(version):
        raise ValueError(f"{version} exists only in CUDA C (numba has no float4 loads): use impl='cuda-c'")
    for name, x in (("a", a), ("b", b), ("c", c)):
        if x.dtype != cupy.float32 or x.ndim != 2 or not x.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous 2-D float32 CuPy array, got {x.dtype} {x.shape}")
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k or c.shape != (m, n):
        raise ValueError(f"shapes do not multiply: A {a.shape}, B {b.shape}, C {c.shape}")
    grid, block = G.launch_plan(version, m, n)
    spec = G.VERSIONS[version]
    name = spec["kernel"] if impl == "numba" else G.cuda_c_name(version, n, k)
    return bind(impl, TOPIC, name, grid, block, a, b, c, np.int32(m), np.int32(n), np.int32(k))


def cublas_runner(a, b, c):
    import cupy

    fp32_reference()

    def run():
        cupy.matmul(a, b, out=c)
    run.keep = (a, b, c)
    return run


def check_version(version: str, impl: str, shape=CHECK_SHAPE) -> float:
    """Run ``version`` at an odd ``(M, N, K)`` and compare with a float64 product on the GPU;
    returns the largest error relative to the row's magnitude (AssertionError when too big)."""
    import cupy

    m, n, k = shape
    a = nonzero_random((m, k), seed=1) - cupy.float32(1.0)
    b = nonzero_random((k, n), seed=2) - cupy.float32(1.0)
    c = cupy.full((m, n), cupy.nan, cupy.float32)        # an output never written stays NaN
    if impl == "library":
        cublas_runner(a, b, c)()
    else:
        gemm_runner(version, impl, a, b, c)()
    want = a.astype(cupy.float64) @ b.astype(cupy.float64)
    scale = cupy.abs(a).astype(cupy.float64) @ cupy.abs(b).astype(cupy.float64)
    err = float(cupy.max(cupy.abs(c - want) / scale))
    assert err < 1e-5, f"{version} ({impl}) at {shape}: relative error {err:.2e}"
    return err


def _square(n):
    a = nonzero_random((n, n), seed=1)
    b = nonzero_random((n, n), seed=2)
    return a, b, _empty(n)


def _empty(n):
    import cupy

    return cupy.empty((n, n), cupy.float32)


def cases() -> list[Case]:
    """One case per version and implementation, and cuBLAS (the reference). The case's size
    ``n`` is the side of the square matrices."""
    def bytes_moved(n):
        return G.gemm_bytes(n, n, n)

    def flops(n):
        return G.gemm_flops(n, n, n)

    out = [Case(REFERENCE, "library", lambda n: cublas_runner(*_square(n)), bytes_moved,
                check=lambda _n: check_version("", "library"), reference=True, flops=flops)]
    for version in G.VERSIONS:
        for impl in IMPLS_OF(version):
            out.append(Case(f"{version} ({impl})", impl,
                            lambda n, v=version, i=impl: gemm_runner(v, i, *_square(n)), bytes_moved,
                            check=lambda _n, v=version, i=impl: check_version(v, i), flops=flops))
    return out
