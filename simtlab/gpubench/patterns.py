"""Chapter 3 on the GPU: copies, transposes, stencils, gather and scatter against a device copy.

The versions, their launch plans and napkin math are the table ``kernels.patterns.VERSIONS``;
the reference is CUDA's own device-to-device copy (cudaMemcpyAsync through CuPy), the fastest
any kernel that reads n floats and writes n floats can hope to be. The 2-D kernels work on a
matrix of ``matrix_shape(n)`` = (n // c, c) with c = isqrt(n): 16384 x 16384 at the
benchmark's 2^28 elements. Bytes moved: read every element once, write it once.
"""

from __future__ import annotations

import numpy as np

from .harness import Case, nonzero_random, version_cases

TOPIC = "patterns"
REFERENCE = "cudaMemcpyAsync device to device (CuPy)"

__all__ = ["TOPIC", "REFERENCE", "cases", "inputs", "check", "plan_options", "matrix_shape"]


def matrix_shape(n: int) -> tuple[int, int]:
    from ..kernels.patterns import matrix_shape as shape

    return shape(n)


def _weights(shape, seed=1):
    import cupy

    return nonzero_random(shape, seed) / cupy.float32(np.prod(shape))


def _permutation(n, seed=2):
    import cupy

    # CuPy's Generator has no permutation(): the order that sorts n random keys is one
    return cupy.argsort(cupy.random.default_rng(seed).random(n)).astype(cupy.int32)


def plan_options(version) -> dict:
    return {}


def inputs(version, n: int, seed: int = 0) -> tuple:
    """CuPy inputs of a version's group for ``n`` elements."""
    from ..kernels import patterns as P

    g = version.group
    if g == "copy":
        return (nonzero_random(n, seed),)
    if g == "transpose":
        return (nonzero_random(matrix_shape(n), seed),)
    if g == "stencil1d":
        return nonzero_random(n, seed), _weights(2 * P.RADIUS + 1)
    if g == "stencil2d":
        side = 2 * P.RADIUS_2D + 1
        return nonzero_random(matrix_shape(n), seed), _weights((side, side))
    return nonzero_random(n, seed), _permutation(n, seed + 2)


def check(version, out, *host_inputs) -> str | None:
    from ..kernels import patterns as P

    reference = {"copy": P.copy_cpu, "transpose": P.transpose_cpu, "stencil1d": P.stencil1d_cpu,
                 "stencil2d": P.stencil2d_cpu, "gather": P.gather_cpu, "scatter": P.scatter_cpu}[version.group]
    want = reference(*host_inputs)
    if out.shape != want.shape:
        return f"output shape {out.shape}, expected {want.shape}"
    if version.group.startswith("stencil"):
        bad = np.argwhere(~np.isclose(out, want, rtol=1e-5, atol=1e-5))
    else:
        bad = np.argwhere(out != want)
    if not len(bad):
        return None
    idx = tuple(int(i) for i in bad[0])
    return f"{len(bad)} wrong elements; first at index {idx}: expected {want[idx]}, got {out[idx]}"


def _device_copy_case() -> Case:
    def prepare(n):
        import cupy

        src = nonzero_random(n)
        dst = cupy.empty_like(src)
        nbytes = src.nbytes
        return lambda: dst.data.copy_from_device_async(src.data, nbytes)

    def check_copy(n):
        import cupy

        src = nonzero_random(n)
        dst = cupy.full_like(src, cupy.nan)
        dst.data.copy_from_device_async(src.data, src.nbytes)
        cupy.cuda.runtime.deviceSynchronize()
        if not bool((dst == src).all()):
            raise AssertionError(f"device-to-device copy at n = {n:,} did not copy every element")

    from ..kernels.patterns import copy_bytes

    return Case(name="cudaMemcpy device to device (reference)", impl="library", prepare=prepare,
                bytes_moved=copy_bytes, check=check_copy, reference=True)


def cases() -> list[Case]:
    """The reference copy, then every kernel in CUDA C and in numba."""
    import sys

    from ..kernels.patterns import VERSIONS

    return [_device_copy_case(), *version_cases(sys.modules[__name__], VERSIONS)]
