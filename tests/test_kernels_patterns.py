"""Chapter 3 kernels on the emulator: every version against its CPU reference, for sizes that
are not powers of two and the edge cases (1 element, one less and one more than a block), and
the memory behaviour each version is written to show (sectors, wavefronts, reads per element).
"""

import numpy as np
import pytest

import simtlab
from simtlab.analysis import bank_conflicts, coalescing
from simtlab.kernels import patterns as P

rng = np.random.default_rng(3)

SIZES_1D = [1, 2, P.BLOCK - 1, P.BLOCK + 1, 1000]
SIZES_STENCIL = [1, 2, P.STENCIL_BLOCK - 1, P.STENCIL_BLOCK + 1, 515]
SHAPES_2D = [(1, 1), (1, 70), (70, 1), (P.TILE - 1, P.TILE + 1), (P.TILE + 1, P.TILE - 1),
             (P.BIG_TILE + 1, 37), (45, 67)]


def rand(shape):
    return (rng.random(shape, dtype=np.float32) + 0.5).astype(np.float32)


def nan_like(shape):
    return np.full(shape, np.nan, np.float32)


@pytest.mark.parametrize("n", SIZES_1D)
def test_map(n):
    x, out = rand(n), nan_like(n)
    simtlab.emulate(P.map_v1, P.cdiv(n, P.BLOCK), P.BLOCK, x, out)
    np.testing.assert_allclose(out, P.map_cpu(x), rtol=1e-6)


@pytest.mark.parametrize("n", SIZES_1D)
def test_gather_and_scatter(n):
    x = rand(n)
    idx = rng.permutation(n).astype(np.int32)
    gathered, scattered = nan_like(n), nan_like(n)
    simtlab.emulate(P.gather_v1, P.cdiv(n, P.BLOCK), P.BLOCK, x, idx, gathered)
    simtlab.emulate(P.scatter_v1, P.cdiv(n, P.BLOCK), P.BLOCK, x, idx, scattered)
    np.testing.assert_array_equal(gathered, x[idx])
    np.testing.assert_array_equal(gathered, P.gather_cpu(x, idx))
    np.testing.assert_array_equal(scattered, P.scatter_cpu(x, idx))
    # gather then scatter with the same permutation gives x back
    np.testing.assert_array_equal(P.scatter_cpu(gathered, idx), x)


def test_gather_with_repeated_indices():
    x = rand(300)
    idx = rng.integers(0, 300, 300).astype(np.int32)
    out = nan_like(300)
    simtlab.emulate(P.gather_v1, 2, P.BLOCK, x, idx, out)
    np.testing.assert_array_equal(out, x[idx])


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("n", SIZES_1D + [P.COPY_STRIDE * 7 + 3])
def test_copy(version, n):
    kernel = P.copy_v1_strided if version == 1 else P.copy_v2_coalesced
    x, out = rand(n), nan_like(n)
    simtlab.emulate(kernel, P.cdiv(P.copy_threads(n, version), P.BLOCK), P.BLOCK, x, out)
    np.testing.assert_array_equal(out, P.copy_cpu(x))


def test_copy_strided_is_uncoalesced_and_coalesced_is_not():
    n = 32 * 64
    x = rand(n)
    runs = {v: simtlab.emulate(k, P.cdiv(n, P.BLOCK), P.BLOCK, x, nan_like(n))
            for v, k in [(1, P.copy_v1_strided), (2, P.copy_v2_coalesced)]}
    assert runs[2].metrics["global_sectors_per_request"] == 4.0
    assert runs[1].metrics["global_sectors_per_request"] == 32.0
    # in v1, lanes 0 and 1 of warp 0 copy elements COPY_STRIDE apart
    mem = runs[1].memory
    first = mem[(mem.gwarp == 0) & (mem.kind == 0)]
    assert first.index[first.lane == 1][0] - first.index[first.lane == 0][0] == P.COPY_STRIDE


def test_copy_strided_needs_whole_columns():
    assert P.copy_threads(33, 1) == 64 and P.copy_threads(33, 2) == 33


@pytest.mark.parametrize("kernel", [P.stencil1d_v1_global, P.stencil1d_v2_shared])
@pytest.mark.parametrize("n", SIZES_STENCIL)
def test_stencil1d(kernel, n):
    x, out = rand(n), nan_like(n)
    w = rand(2 * P.RADIUS + 1)
    simtlab.emulate(kernel, P.cdiv(n, P.STENCIL_BLOCK), P.STENCIL_BLOCK, x, w, out)
    np.testing.assert_allclose(out, P.stencil1d_cpu(x, w), rtol=1e-5, atol=1e-6)


def test_stencil1d_cpu_is_numpy_convolve_same():
    x, w = rand(50), rand(7)
    # correlation = convolution with the weights reversed; mode 'same' pads with zeros
    np.testing.assert_allclose(P.stencil1d_cpu(x, w), np.convolve(x, w[::-1], mode="same"), rtol=1e-5)


def test_stencil1d_shared_reads_each_element_once_per_block():
    n = 3 * P.STENCIL_BLOCK + 5
    x, w = rand(n), rand(2 * P.RADIUS + 1)
    runs = {k: simtlab.emulate(k, P.cdiv(n, P.STENCIL_BLOCK), P.STENCIL_BLOCK, x, w, nan_like(n))
            for k in (P.stencil1d_v1_global, P.stencil1d_v2_shared)}
    for kernel, most in ((P.stencil1d_v2_shared, 1), (P.stencil1d_v1_global, 2 * P.RADIUS + 1)):
        run = runs[kernel]
        mem = run.memory
        reads = mem[(mem.array == run.array("x").id) & (mem.kind == 0)]
        _, counts = np.unique(reads.block.astype(np.int64) * n + reads.index, return_counts=True)
        assert counts.max() == most
    # v2: the interior elements are read by one block, the halos by two
    run = runs[P.stencil1d_v2_shared]
    reads = run.memory[(run.memory.array == run.array("x").id) & (run.memory.kind == 0)]
    assert len(reads) == n + 2 * P.RADIUS * (P.cdiv(n, P.STENCIL_BLOCK) - 1)


@pytest.mark.parametrize("kernel", [P.stencil2d_v1_global, P.stencil2d_v2_shared])
@pytest.mark.parametrize("shape", SHAPES_2D + [(P.TILE_2D_Y + 1, P.TILE_2D_X - 1)])
def test_stencil2d(kernel, shape):
    x, out = rand(shape), nan_like(shape)
    w = rand((2 * P.RADIUS_2D + 1,) * 2)
    grid, block = P.stencil2d_launch(shape)
    simtlab.emulate(kernel, grid, block, x, w, out)
    np.testing.assert_allclose(out, P.stencil2d_cpu(x, w), rtol=1e-5, atol=1e-6)


def test_stencil2d_cpu_matches_a_direct_sum():
    x, w = rand((5, 6)), rand((3, 3))
    want = np.zeros((5, 6))
    for r in range(5):
        for c in range(6):
            for i in range(3):
                for j in range(3):
                    if 0 <= r + i - 1 < 5 and 0 <= c + j - 1 < 6:
                        want[r, c] += w[i, j] * x[r + i - 1, c + j - 1]
    np.testing.assert_allclose(P.stencil2d_cpu(x, w), want, rtol=1e-5)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", SHAPES_2D)
def test_transpose(version, shape):
    a, out = rand(shape), nan_like(shape[::-1])
    grid, block = P.transpose_launch(shape, version)
    simtlab.emulate(P.TRANSPOSES[version], grid, block, a, out)
    np.testing.assert_array_equal(out, a.T)
    np.testing.assert_array_equal(out, P.transpose_cpu(a))


def transpose_run(version, shape=(64, 96)):
    a, out = rand(shape), nan_like(shape[::-1])
    grid, block = P.transpose_launch(shape, version)
    return simtlab.emulate(P.TRANSPOSES[version], grid, block, a, out)


def test_transpose_memory_behaviour():
    naive, tile, padded, big = (transpose_run(v) for v in (1, 2, 3, 4))
    # v1: reads of a are 4 sectors each, writes to out one sector per lane
    r = coalescing.requests(naive.memory)
    assert set(r.sectors[r.kind == 0]) == {4} and set(r.sectors[r.kind == 1]) == {32}
    for run in (tile, padded, big):
        assert coalescing.requests(run.memory).sectors.max() == 4
    # v2: writing the tile is conflict-free, reading a tile column hits one bank 32 times
    s = bank_conflicts.requests(tile.memory)
    assert set(s.wavefronts[s.kind == 1]) == {1} and set(s.wavefronts[s.kind == 0]) == {32}
    for run in (padded, big):
        assert bank_conflicts.requests(run.memory).wavefronts.max() == 1


def test_transpose_launch_covers_the_matrix():
    assert P.transpose_launch((100, 70), 3) == ((3, 4), (P.TILE, P.BLOCK_ROWS))
    assert P.transpose_launch((100, 70), 4) == ((2, 2), (P.TILE, P.BLOCK_ROWS))


def test_seed_in_place_average_races():
    x = rand(100)
    run = simtlab.emulate(P.average3_in_place, 1, 128, x)
    assert run.races, "the in-place 3-point average must race: thread i writes x[i] that i+1 reads"
    race = run.races[0]
    assert race.array == "x" and set(race.kinds) == {"read", "write"}
    # the fixed version (a separate output, a 1-D stencil) does not race
    out = nan_like(100)
    fixed = simtlab.emulate(P.stencil1d_v2_shared, 1, P.STENCIL_BLOCK, x, rand(7), out)
    assert not fixed.races


def test_napkin_math():
    assert P.copy_bytes(1000) == 8000
    assert P.transpose_bytes(16384 * 16384) == 2 * 2**30
    assert P.gather_bytes(10) == 120
    assert P.stencil1d_flops(10) == 140
    assert P.stencil2d_flops(10) == 180
