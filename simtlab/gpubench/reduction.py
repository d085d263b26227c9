"""Chapter 5 on the GPU: every sum-reduction version against ``cupy.sum`` (CUB DeviceReduce).

The versions, their launch plans and napkin math are the table ``kernels.reduction.VERSIONS``;
this module adds what only the benchmark needs: random inputs, the grid of the grid-stride
kernels on this GPU, and the library references (``cupy.sum``, cuBLAS gemv through ``w @ v``).
The vector-matrix product of the Waterloo lab report is timed on a ``ROWS x (n // ROWS)`` matrix.
"""

from __future__ import annotations

import numpy as np

from .harness import Case, nonzero_random, version_cases

TOPIC = "reduction"
REFERENCE = "cupy.sum (CUB DeviceReduce)"
#: resident blocks per SM for the grid-stride kernels: 8 x 256 threads fill an H100 SM (2048)
BLOCKS_PER_SM = 8

__all__ = ["TOPIC", "REFERENCE", "cases", "inputs", "check", "plan_options", "grid_blocks", "BLOCKS_PER_SM"]


def grid_blocks() -> int:
    """Blocks of the grid-stride kernels: BLOCKS_PER_SM per SM of this GPU."""
    import cupy

    return BLOCKS_PER_SM * cupy.cuda.Device().attributes["MultiProcessorCount"]


def plan_options(version) -> dict:
    """The plan's sizes on this GPU: one full wave of grid-stride blocks (BLOCKS_PER_SM per SM:
    8 x 256 threads fit, 18 registers per thread measured for vecmat v2). For the vector-matrix
    product the rows share that wave: ``grid_blocks() // ROWS`` blocks per row, rounded *down*.
    Rounded up (106 x 10 = 1060 blocks for 1056 slots on an H100) the last 4 blocks ran as a
    second wave, each with a full block's share of the work: 0.90 ms instead of 0.50 ms
    (benchmarks/results/hardware_probes_h100.log)."""
    from ..kernels import reduction as R

    if version.group == "vecmat":
        return {"blocks_per_row": max(1, grid_blocks() // R.ROWS)}
    return {} if hasattr(version.plan, "elements_per_thread") else {"max_blocks": grid_blocks()}


def inputs(version, n: int, seed: int = 0) -> tuple:
    """Random CuPy inputs for ``n`` elements: x, or (v, w) for the vector-matrix product."""
    from ..kernels.reduction import vecmat_shape

    if version.group == "vecmat":
        rows, cols = vecmat_shape(n)
        return nonzero_random(cols, seed), nonzero_random((rows, cols), seed + 1)
    return (nonzero_random(n, seed),)


def check(version, out, *host_inputs) -> str | None:
    """None when ``out`` (host) is right, else what is wrong."""
    from ..kernels.reduction import sum_cpu, vecmat_cpu

    want = vecmat_cpu(*host_inputs) if version.group == "vecmat" else np.atleast_1d(sum_cpu(*host_inputs))
    got = np.asarray(out)[: want.size]
    bad = np.flatnonzero(~np.isclose(got, want, rtol=1e-5, atol=0))
    if not len(bad):
        return None
    i = int(bad[0])
    return f"{len(bad)} wrong outputs; output {i}: {got[i]!r}, expected {want[i]!r} (allowed relative error 1e-5)"


def _cupy_sum_case() -> Case:
    from ..kernels.reduction import reduction_bytes, reduction_flops, sum_cpu

    def prepare(n):
        import cupy

        x = nonzero_random(n)
        out = cupy.zeros((), cupy.float32)
        return lambda: cupy.sum(x, out=out)

    def check_sum(n):
        import cupy

        x = nonzero_random(n, seed=3)
        got, want = float(cupy.sum(x)), float(sum_cpu(cupy.asnumpy(x)))
        if not np.isclose(got, want, rtol=1e-5, atol=0):
            raise AssertionError(f"cupy.sum at n = {n:,}: {got!r}, expected {want!r}")

    return Case(name="cupy.sum (CUB, reference)", impl="library", prepare=prepare,
                bytes_moved=reduction_bytes, check=check_sum, reference=True, flops=reduction_flops)


def _gemv_case() -> Case:
    from ..kernels import reduction as R

    vecmat = R.find(R.VERSIONS, "vecmat v2 grid-stride")

    def prepare(n):
        v, w = inputs(vecmat, n)
        return lambda: w @ v

    return Case(name="vecmat: cupy w @ v (cuBLAS gemv)", impl="library", prepare=prepare,
                bytes_moved=vecmat.bytes, flops=vecmat.flops)


def cases() -> list[Case]:
    """cupy.sum, every sum version in CUDA C and numba, then the vector-matrix product."""
    import sys

    from ..kernels.reduction import VERSIONS

    me = sys.modules[__name__]
    sums = [v for v in VERSIONS if v.group == "sum"]
    vecmat = [v for v in VERSIONS if v.label == "vecmat v2 grid-stride"]
    return [_cupy_sum_case(), *version_cases(me, sums), _gemv_case(), *version_cases(me, vecmat)]
