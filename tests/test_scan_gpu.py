"""Chapter 4 on a GPU: the emulator, numba-cuda and CUDA C (CuPy RawModule) give the reference's scan.

Inputs are values from {-2, -1, 1, 2}: every partial sum is an exact float32 integer, so every
implementation must match NumPy's int64 cumsum exactly, at sizes around one block (1, one less,
one more) and at sizes that are not powers of two. One test uses random floats with a float32
tolerance; one runs the single-pass scan at 2^24 elements several times, where thousands of
tiles look back at each other concurrently.
"""

import numpy as np
import pytest

from gpu_support import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]

from simtlab.kernels import scan as S

VERSIONS = [v.label for v in S.VERSIONS]


def gpu_scan(version, impl, x_host):
    import cupy

    from simtlab.gpubench import runner

    run, out = runner("scan", version, impl, cupy.asarray(x_host))
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(out)


def sizes(p):
    return [1, p - 1, p, p + 1, 3 * p + 5, 1000]


@pytest.mark.parametrize("version", VERSIONS)
def test_emulator_numba_cuda_c_agree_with_reference(version):
    from simtlab.gpubench import scan as G

    rng = np.random.default_rng(7)
    for impl in ("numba", "cuda-c"):
        p = S.per_block(S.find(S.VERSIONS, version), impl, S.BLOCK)
        for n in sizes(p):
            x = rng.choice(np.array([-2, -1, 1, 2], np.float32), n)
            got = gpu_scan(version, impl, x)
            problem = G.first_mismatch(got, x)
            assert problem is None, f"{version} [{impl}], n = {n}: {problem}"
            if impl == "numba":
                emulated, _ = S.scan_emulated(x, version, S.BLOCK, trace=False)
                np.testing.assert_array_equal(emulated, got, err_msg=f"emulator vs numba, {version}, n = {n}")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("impl", ["numba", "cuda-c"])
def test_large_sizes_not_powers_of_two(version, impl):
    from simtlab.gpubench import scan as G

    rng = np.random.default_rng(8)
    for n in (1_000_003, 3 * 2**20 + 17):
        x = rng.choice(np.array([-2, -1, 1, 2], np.float32), n)
        problem = G.first_mismatch(gpu_scan(version, impl, x), x)
        assert problem is None, f"{version} [{impl}], n = {n}: {problem}"


@pytest.mark.parametrize("impl", ["numba", "cuda-c"])
def test_random_floats_within_float32_tolerance(impl):
    from simtlab.kernels.scan import scan_reference

    rng = np.random.default_rng(9)
    x = rng.random(1_000_003, dtype=np.float32) - np.float32(0.25)
    scale = np.cumsum(np.abs(x.astype(np.float64)))
    want = scan_reference(x)
    for version in VERSIONS:
        got = gpu_scan(version, impl, x).astype(np.float64)
        err = np.abs(got - want) / (scale + 1.0)
        assert err.max() < 1e-5, f"{version} [{impl}]: relative error {err.max():.2e} at element {int(err.argmax())}"


@pytest.mark.parametrize("impl", ["numba", "cuda-c"])
def test_lookback_under_load(impl):
    import cupy

    from simtlab.gpubench import runner
    from simtlab.gpubench import scan as G

    version = "v6 lookback"
    x = G.random_input(2**24 + 3, seed=11)
    xh = cupy.asnumpy(x)
    run, out = runner("scan", version, impl, x)
    for attempt in range(5):               # the same buffers: the state must be reset every run
        out.fill(np.nan)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        problem = G.first_mismatch(cupy.asnumpy(out), xh)
        assert problem is None, f"{version} [{impl}], run {attempt + 1}: {problem}"


def test_cupy_cumsum_reference_case_checks():
    from simtlab.gpubench import scan as G

    reference = [c for c in G.cases() if c.reference]
    assert len(reference) == 1
    reference[0].check(100_003)
    for case in G.cases():
        case.check(4099)
