"""Chapter 4 on the GPU: the scan versions against ``cupy.cumsum`` (CUB's inclusive scan).

Every version computes the whole inclusive scan of ``n`` float32 elements:

- the block-level scans (v1 Hillis-Steele, v2 Blelloch, v3 Blelloch padded, v4 warp shuffle,
  v5 16 or 8 elements per thread) as the first kernel of a three-kernel scan: scan each block,
  scan the block sums (the same way, recursively), add each block's prefix back;
- v6, the single pass with decoupled look-back.

Bytes moved, for every version: x read once and out written once, ``2 * 4 * n``
(``kernels.scan.scan_bytes``); the three-kernel scans really move about twice that, which is
why their ratio stays below the single pass's.

Inputs are random values from {-2, -1, 1, 2}: never zero, and every partial sum is a small
integer, exact in float32, so a check can compare exactly with NumPy's int64 cumsum.
``scan_runner`` builds one version's launches; tests/test_scan_gpu.py uses it too.
"""

from __future__ import annotations

import numpy as np

from .harness import Case
from .launch import IMPLS, bind

TOPIC = "scan"
REFERENCE = "cupy.cumsum (copies x into out, then CUB DeviceScan in place)"
#: threads per block of every version on the GPU
BLOCK = 256

__all__ = ["TOPIC", "REFERENCE", "BLOCK", "VERSIONS", "cases", "scan_runner", "random_input",
           "first_mismatch"]

#: name -> (kernel name, the same in kernels/scan.py and kernels/scan.cu; elements per block of
#: numba, of CUDA C; None: set by ITEMS / TILE_VECS, see _per_block)
VERSIONS = {
    "v1 Hillis-Steele (3 kernels)": ("scan_v1_hillis_steele", BLOCK, BLOCK),
    "v2 Blelloch (3 kernels)": ("scan_v2_blelloch", 2 * BLOCK, 2 * BLOCK),
    "v3 Blelloch padded (3 kernels)": ("scan_v3_blelloch_padded", 2 * BLOCK, 2 * BLOCK),
    "v4 warp shuffle (3 kernels)": ("scan_v4_warp_shuffle", BLOCK, BLOCK),
    "v5 many items per thread (3 kernels)": ("scan_v5_tile", None, None),
    "v6 decoupled look-back (1 pass)": ("scan_v6_lookback", None, None),
}


def _per_block(kernel_name: str, impl: str) -> int:
    from ..kernels import scan as S

    if kernel_name in ("scan_v5_tile", "scan_v6_lookback"):
        # numba: ITEMS scalar rounds per thread; CUDA C: TILE_VECS float4 rounds (4096 per block)
        return S.ITEMS * BLOCK if impl == "numba" else 16 * BLOCK
    return dict((k, p) for k, p, _ in VERSIONS.values())[kernel_name]


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


def scan_runner(version: str, impl: str, x):
    """``(run, out)``: ``run()`` enqueues one whole inclusive scan of the CuPy float32 array ``x``
    into ``out`` with ``version`` (a key of VERSIONS), ``impl`` "numba" or "cuda-c"."""
    import cupy

    from ..kernels import scan as S

    if version not in VERSIONS:
        raise ValueError(f"unknown version {version!r}; the versions are {', '.join(VERSIONS)}")
    if x.dtype != cupy.float32 or x.ndim != 1 or x.size == 0:
        raise ValueError(f"x must be a non-empty 1-D float32 CuPy array, got {x.dtype} of shape {x.shape}")
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {', '.join(IMPLS)}, not {impl!r}")
    name = VERSIONS[version][0]
    out = cupy.empty_like(x)
    if impl == "cuda-c" and (x.data.ptr % 16 or out.data.ptr % 16):
        raise ValueError("the CUDA C tile kernels load float4: x must be 16-byte aligned (a fresh CuPy array is)")
    n = int(x.size)
    per_block = _per_block(name, impl)

    if name == "scan_v6_lookback":
        tiles = S.cdiv(n, per_block)
        if impl == "numba":
            state = cupy.zeros(3 * tiles + 1, cupy.int32)
            flags, agg = state[:tiles], state[tiles:2 * tiles].view(cupy.float32)
            pre, ticket = state[2 * tiles:3 * tiles].view(cupy.float32), state[3 * tiles:]
            launch = bind(impl, TOPIC, name, tiles, BLOCK, x, out, flags, agg, pre, ticket)
        else:
            state = cupy.zeros(tiles + 1, cupy.uint64)
            status, ticket = state[:tiles], state[tiles:].view(cupy.uint32)
            launch = bind(impl, TOPIC, name, tiles, BLOCK, x, out, status, ticket, np.int32(n))

        def run():
            state.data.memset_async(0, state.nbytes)    # every tile NOT_READY, ticket 0
            launch()
        return run, out

    steps = []
    shared = S.shared_bytes(getattr(S, name), BLOCK)

    def level(src, dst):
        size = int(src.size)
        blocks = S.cdiv(size, per_block)
        sums = cupy.empty(blocks, cupy.float32)
        steps.append(bind(impl, TOPIC, name, blocks, BLOCK, src, dst, sums, np.int32(size), shared=shared))
        if blocks > 1:
            scanned = cupy.empty(blocks, cupy.float32)
            level(sums, scanned)
            # the tile size: a Python int reaches both twins (NumPy integers reach CUDA C only)
            steps.append(bind(impl, TOPIC, "add_block_prefix", blocks - 1, BLOCK, dst, scanned,
                              per_block if impl == "numba" else np.int32(per_block), np.int32(size)))

    level(x, out)

    def run():
        for s in steps:
            s()
    return run, out


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------
def _check(version, impl):
    def check(n):
        import cupy

        x = random_input(n, seed=3)
        run, out = scan_runner(version, impl, x)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        problem = first_mismatch(cupy.asnumpy(out), cupy.asnumpy(x))
        if problem:
            raise AssertionError(f"{version} ({impl}) at n = {n:,}: {problem}")
    return check


def _prepare(version, impl):
    def prepare(n):
        run, _ = scan_runner(version, impl, random_input(n))
        return run
    return prepare


def _cumsum_case() -> Case:
    from ..kernels.scan import scan_bytes

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
                bytes_moved=scan_bytes, check=check, reference=True, flops=lambda n: n)


def _cub_in_place_case() -> Case:
    """CUB's DeviceScan called directly: ``cupy.cumsum`` first copies x into out, then scans out
    in place, so it moves twice the bytes of a scan. This is the scan without that copy."""
    from ..kernels.scan import scan_bytes

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
                bytes_moved=scan_bytes, check=check, flops=lambda n: n)


def cases() -> list[Case]:
    from ..kernels.scan import scan_bytes

    out = [_cumsum_case(), _cub_in_place_case()]
    for version in VERSIONS:
        for impl in ("numba", "cuda-c"):
            out.append(Case(name=f"{version} [{impl}]", impl=impl, prepare=_prepare(version, impl),
                            bytes_moved=scan_bytes, check=_check(version, impl), flops=lambda n: n))
    return out
