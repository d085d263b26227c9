"""Chapter 4 on the GPU: the scan versions against ``cupy.cumsum`` (CUB's inclusive scan).

The versions, their launch plans (three kernels, or one pass with decoupled look-back) and
napkin math are the table ``kernels.scan.VERSIONS``. Bytes moved, for every version: x read once
and out written once, ``2 * 4 * n`` (``kernels.scan.scan_bytes``); the three-kernel scans
really move about twice that, which is why their ratio stays below the single pass's.

Inputs are random values from {-2, -1, 1, 2}: never zero, and every partial sum is a small
integer, exact in float32, so a check can compare exactly with NumPy's int64 cumsum.
"""

from __future__ import annotations

import numpy as np

from .harness import Case, version_cases

TOPIC = "scan"
REFERENCE = "cupy.cumsum (copies x into out, then CUB DeviceScan in place)"

__all__ = ["TOPIC", "REFERENCE", "cases", "inputs", "check", "plan_options", "random_input", "first_mismatch"]


def plan_options(version) -> dict:
    """The plans' defaults are the GPU's (256 threads per block)."""
    return {}


def inputs(version, n: int, seed: int = 0) -> tuple:
    return (random_input(n, seed),)


def check(version, out, x) -> str | None:
    return first_mismatch(out, x)


def random_input(n: int, seed: int = 0):
    """n float32 values from {-2, -1, 1, 2} on the GPU: never zero, every prefix exact in float32."""
    import cupy

    choices = cupy.asarray(np.array([-2, -1, 1, 2], np.float32))
    idx = cupy.random.default_rng(seed).integers(0, 4, n)
    return choices[idx]


def first_mismatch(got: np.ndarray, x: np.ndarray) -> str | None:
    """None if got is x's exact inclusive scan, else a message naming the first wrong elements."""
    want = np.cumsum(x.astype(np.int64))
    wrong = np.flatnonzero(got.astype(np.float64) != want)
    if wrong.size == 0:
        return None
    i = int(wrong[0])
    return (f"{wrong.size:,} of {got.size:,} elements wrong; the first is element {i:,}: "
            f"expected {want[i]}, got {float(got[i]):g}" + (f" (and element {int(wrong[-1]):,}, the last wrong one)"
                                                     if wrong.size > 1 else ""))


def _cumsum_case() -> Case:
    from ..kernels.scan import scan_bytes, scan_flops

    def prepare(n):
        import cupy

        x = random_input(n)
        out = cupy.empty_like(x)
        return lambda: cupy.cumsum(x, out=out)

    def check(n):
        import cupy

        x = random_input(n, seed=3)
        problem = first_mismatch(cupy.asnumpy(cupy.cumsum(x)), cupy.asnumpy(x))
        if problem:
            raise AssertionError(f"cupy.cumsum at n = {n:,}: {problem}")

    return Case(name="cupy.cumsum (copy, then CUB scan; reference)", impl="library", prepare=prepare,
                bytes_moved=scan_bytes, check=check, reference=True, flops=scan_flops)


def _cub_in_place_case() -> Case:
    """CUB's DeviceScan called directly: ``cupy.cumsum`` first copies x into out, then scans out
    in place, so it moves twice the bytes of a scan. This is the scan without that copy."""
    from ..kernels.scan import scan_bytes, scan_flops

    def _scan(a):
        from cupy.cuda import cub

        if cub.cub_scan(a, cub.CUPY_CUB_CUMSUM) is None:
            raise RuntimeError("this CuPy build cannot run CUB's scan on a float32 array")

    def prepare(n):
        x = random_input(n)
        _scan(x)                       # scanning the same array again and again: same work each time
        return lambda: _scan(x)

    def check(n):
        import cupy

        x = random_input(n, seed=3)
        expected = cupy.asnumpy(x)
        _scan(x)
        problem = first_mismatch(cupy.asnumpy(x), expected)
        if problem:
            raise AssertionError(f"cupy.cuda.cub.cub_scan at n = {n:,}: {problem}")

    return Case(name="CUB DeviceScan in place (no copy)", impl="library", prepare=prepare,
                bytes_moved=scan_bytes, check=check, flops=scan_flops)


def cases() -> list[Case]:
    import sys

    from ..kernels.scan import VERSIONS

    return [_cumsum_case(), _cub_in_place_case(), *version_cases(sys.modules[__name__], VERSIONS)]
