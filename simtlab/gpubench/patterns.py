"""Chapter 3 on the GPU: copies, transposes, stencils, gather and scatter against a device copy.

Every version of ``kernels/patterns.py`` (numba-cuda) and ``kernels/patterns.cu`` (CUDA C via
CuPy) is a case; the reference is CUDA's own device-to-device copy (cudaMemcpyAsync through
CuPy), the fastest any kernel that reads n floats and writes n floats can hope to be. The 2-D
kernels work on a matrix of :func:`matrix_shape` (n) = (n // c, c) with c = isqrt(n): 16384 x
16384 at the benchmark's 2^28 elements. Bytes moved: read every element once, write it once.
"""

from __future__ import annotations

import math

import numpy as np

from .harness import Case, nonzero_random
from .launch import bind

TOPIC = "patterns"
REFERENCE = "cudaMemcpyAsync device to device (CuPy)"

__all__ = ["TOPIC", "REFERENCE", "cases", "matrix_shape"]


def matrix_shape(n: int) -> tuple[int, int]:
    """(rows, cols) of the matrix the 2-D kernels use for ``n`` elements: as square as possible."""
    cols = max(1, math.isqrt(n))
    return n // cols, cols


def _matrix_elements(n: int) -> int:
    rows, cols = matrix_shape(n)
    return rows * cols


def _weights(shape, seed=1):
    import cupy

    return nonzero_random(shape, seed) / cupy.float32(np.prod(shape))


def _permutation(n, seed=2):
    import cupy

    # CuPy's Generator has no permutation(): the order that sorts n random keys is one
    return cupy.argsort(cupy.random.default_rng(seed).random(n)).astype(cupy.int32)


# ------------------------------------------------------------------------------------------
# One description per kernel: its inputs, its launch (numba or CUDA C), its CPU reference
# ------------------------------------------------------------------------------------------
class _Kernel:
    """``make(n)`` -> (inputs, output); ``launch(impl, inputs, out, n)`` -> a launch function."""

    def __init__(self, name, make, launch, reference, bytes_moved, exact=False):
        self.name = name
        self.make = make
        self.launch = launch
        self.reference = reference
        self.bytes_moved = bytes_moved
        self.exact = exact

    def prepare(self, impl):
        def prepare(n):
            inputs, out = self.make(n)
            return self.launch(impl, inputs, out, n)
        return prepare

    def check(self, impl):
        def check(n):
            import cupy

            inputs, out = self.make(n)
            out.fill(cupy.nan)
            self.launch(impl, inputs, out, n)()
            cupy.cuda.runtime.deviceSynchronize()
            got = cupy.asnumpy(out)
            want = self.reference(*[cupy.asnumpy(a) for a in inputs])
            what = f"{self.name} ({impl}) at n = {n:,}"
            if got.shape != want.shape:
                raise AssertionError(f"{what}: output shape {got.shape}, expected {want.shape}")
            if self.exact:
                bad = np.argwhere(got != want)
            else:
                bad = np.argwhere(~np.isclose(got, want, rtol=1e-5, atol=1e-5))
            if len(bad):
                idx = tuple(int(i) for i in bad[0])
                raise AssertionError(f"{what}: {len(bad)} wrong elements; first at index {idx}: "
                                     f"expected {want[idx]}, got {got[idx]}")
        return check


def _kernels():
    from ..kernels import patterns as P

    i32 = np.int32

    def one_d(n):
        x = nonzero_random(n)
        return (x,), nonzero_random(n, seed=9)

    def two_d(n):
        a = nonzero_random(matrix_shape(n))
        return (a,), nonzero_random(matrix_shape(n)[::-1], seed=9)

    def copy_kernel(version):
        name = "copy_v1_strided" if version == 1 else "copy_v2_coalesced"

        def launch(impl, inputs, out, n):
            grid = P.cdiv(P.copy_threads(n, version), P.BLOCK)
            return bind(impl, TOPIC, name, grid, P.BLOCK, inputs[0], out, i32(n))

        label = "strided (32 apart)" if version == 1 else "coalesced"
        return _Kernel(f"copy v{version} {label}", one_d, launch, P.copy_cpu, P.copy_bytes, exact=True)

    def transpose_kernel(version):
        name = P.TRANSPOSES[version].py_func.__name__

        def launch(impl, inputs, out, n):
            (a,) = inputs
            rows, cols = a.shape
            grid, block = P.transpose_launch(a.shape, version)
            return bind(impl, TOPIC, name, grid, block, a, out, i32(rows), i32(cols))

        label = {1: "naive", 2: "shared tile", 3: "padded tile", 4: "64x64 padded tile"}[version]
        return _Kernel(f"transpose v{version} {label}", two_d, launch, P.transpose_cpu,
                       lambda n: P.transpose_bytes(_matrix_elements(n)), exact=True)

    def stencil1d_kernel(version):
        name = "stencil1d_v1_global" if version == 1 else "stencil1d_v2_shared"

        def make(n):
            return (nonzero_random(n), _weights(2 * P.RADIUS + 1)), nonzero_random(n, seed=9)

        def launch(impl, inputs, out, n):
            x, w = inputs
            return bind(impl, TOPIC, name, P.cdiv(n, P.STENCIL_BLOCK), P.STENCIL_BLOCK, x, w, out, i32(n))

        label = "global reads" if version == 1 else "shared halo"
        return _Kernel(f"stencil 1-D (7 points) v{version} {label}", make, launch,
                       P.stencil1d_cpu, P.stencil1d_bytes)

    def stencil2d_kernel(version):
        name = "stencil2d_v1_global" if version == 1 else "stencil2d_v2_shared"
        side = 2 * P.RADIUS_2D + 1

        def make(n):
            return (nonzero_random(matrix_shape(n)), _weights((side, side))), nonzero_random(matrix_shape(n), seed=9)

        def launch(impl, inputs, out, n):
            x, w = inputs
            rows, cols = x.shape
            grid, block = P.stencil2d_launch(x.shape)
            return bind(impl, TOPIC, name, grid, block, x, w, out, i32(rows), i32(cols))

        label = "global reads" if version == 1 else "shared halo"
        return _Kernel(f"stencil 2-D (3x3) v{version} {label}", make, launch, P.stencil2d_cpu,
                       lambda n: P.stencil2d_bytes(_matrix_elements(n)))

    def index_kernel(kind):
        name = f"{kind}_v1"

        def make(n):
            return (nonzero_random(n), _permutation(n)), nonzero_random(n, seed=9)

        def launch(impl, inputs, out, n):
            x, idx = inputs
            return bind(impl, TOPIC, name, P.cdiv(n, P.BLOCK), P.BLOCK, x, idx, out, i32(n))

        ref = P.gather_cpu if kind == "gather" else P.scatter_cpu
        return _Kernel(f"{kind} v1 (random permutation)", make, launch, ref, P.gather_bytes, exact=True)

    return ([copy_kernel(1), copy_kernel(2)]
            + [transpose_kernel(v) for v in (1, 2, 3, 4)]
            + [stencil1d_kernel(1), stencil1d_kernel(2), stencil2d_kernel(1), stencil2d_kernel(2)]
            + [index_kernel("gather"), index_kernel("scatter")])


def _device_copy_case() -> Case:
    def prepare(n):
        import cupy

        src = nonzero_random(n)
        dst = cupy.empty_like(src)
        nbytes = src.nbytes
        return lambda: dst.data.copy_from_device_async(src.data, nbytes)

    def check(n):
        import cupy

        src = nonzero_random(n)
        dst = cupy.full_like(src, cupy.nan)
        dst.data.copy_from_device_async(src.data, src.nbytes)
        cupy.cuda.runtime.deviceSynchronize()
        if not bool((dst == src).all()):
            raise AssertionError(f"device-to-device copy at n = {n:,} did not copy every element")

    from ..kernels.patterns import copy_bytes

    return Case(name="cudaMemcpy device to device (reference)", impl="library", prepare=prepare,
                bytes_moved=copy_bytes, check=check, reference=True)


def cases() -> list[Case]:
    """The reference copy, then every kernel in numba-cuda and in CUDA C."""
    out = [_device_copy_case()]
    for k in _kernels():
        for impl, label in (("cuda-c", "CUDA C"), ("numba", "numba")):
            out.append(Case(name=f"{k.name} ({label})", impl=impl, prepare=k.prepare(impl),
                            bytes_moved=k.bytes_moved, check=k.check(impl)))
    return out
