"""Chapter 5 kernels on the emulator: every version sums right, and each has the property its
comment claims (divergence, bank conflicts, barriers, determinism), measured from the trace."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import simtlab
from simtlab.kernels import reduction as R
from simtlab.analysis.levels import levels, tree_levels
from simtlab.plots.reduction import plot_levels

CU = Path(R.__file__).with_suffix(".cu")


def emulate_fast(kernel, grid, block, *args):
    simtlab.emulate(kernel, grid, block, *args, trace=False)


EDGE_SIZES = [1, 2, R.BLOCK - 1, R.BLOCK, R.BLOCK + 1, 2 * R.BLOCK - 1, 2 * R.BLOCK + 1, 1000, 3001]


@pytest.mark.parametrize("version", list(R.SUM_LABELS))
@pytest.mark.parametrize("n", EDGE_SIZES)
def test_every_version_sums_integers_exactly(version, n):
    # small integers: every partial sum is exact in float32, so any order gives the same bits
    x = np.random.default_rng(n).integers(0, 16, n).astype(np.float32)
    got = R.sum_with(version, x, emulate_fast)
    assert got == np.float32(x.astype(np.int64).sum()), (version, n)


@pytest.mark.parametrize("version", list(R.SUM_LABELS))
def test_every_version_sums_floats_to_float32_accuracy(version):
    x = np.random.default_rng(7).normal(1.0, 2.0, 2 * R.BLOCK + 77).astype(np.float32)
    want = R.sum_cpu(x)
    got = R.sum_with(version, x, emulate_fast)
    # float32 adds, about log2(n) rounding steps on the way: a few ulps of the sum's magnitude
    assert abs(got - want) <= 1e-5 * np.abs(x).sum(), (version, got, want)


def test_sum_cpu_rounds_once():
    x = np.full(2**25, 1.0, np.float32)
    x[0] = 0.5
    assert R.sum_cpu(x) == np.float32(2**25 - 0.5)   # a float32 running sum would stall at 2^24


def test_reduce_passes_grid_sizes():
    grids = []
    for kernel, want in [(R.reduce_v3_sequential, [4096, 16, 1]), (R.reduce_v4_first_add, [2048, 4, 1])]:
        _, grids = R.reduce_passes(kernel, np.zeros(2**20, np.float32), lambda *a, **k: None)
        assert grids == want
    with pytest.raises(ValueError, match="non-empty"):
        R.reduce_passes(R.reduce_v3_sequential, np.zeros(0, np.float32), emulate_fast)
    with pytest.raises(ValueError, match="unknown version"):
        R.sum_with("v0", np.ones(4, np.float32), emulate_fast)


def _traced(kernel, n=512):
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    per = 2 * R.BLOCK if kernel in (R.reduce_v4_first_add, R.reduce_v5_warp_shuffle) else R.BLOCK
    return simtlab.emulate(kernel, R.cdiv(n, per), R.BLOCK, x, np.zeros(R.cdiv(n, per), np.float32))


def test_interleaved_diverges_sequential_does_not():
    v1 = tree_levels(_traced(R.reduce_v1_interleaved))
    v3 = tree_levels(_traced(R.reduce_v3_sequential))
    assert len(v1) == len(v3) == 8                        # log2(256) levels
    # v1: level k has 32 / 2^k active lanes in each of the 8 warps (until fewer than 8 threads work)
    assert [r["add_efficiency"] for r in v1[:5]] == [0.5, 0.25, 0.125, 0.0625, 0.03125]
    assert [r["write_instructions"] for r in v1] == [8, 8, 8, 8, 8, 4, 2, 1]
    # v3: full warps while step >= 32, and half the warps each level
    assert [r["simt_efficiency"] for r in v3[:3]] == [1.0, 1.0, 1.0]
    assert [r["write_instructions"] for r in v3] == [4, 2, 1, 1, 1, 1, 1, 1]
    assert all(r["bank_conflicts"] == 0 for r in v1 + v3)


def test_strided_index_has_bank_conflicts():
    v2 = tree_levels(_traced(R.reduce_v2_strided_index))
    assert [r["simt_efficiency"] for r in v2[:3]] == [1.0, 1.0, 1.0]
    # level 1: lanes write words 0, 2, 4, ...: two lanes per bank, one extra wavefront per request
    assert v2[0]["wavefronts"] == 2 * v2[0]["shared_requests"]
    assert v2[0]["bank_conflicts"] > 0 and v2[2]["bank_conflicts"] > v2[0]["bank_conflicts"]
    run = _traced(R.reduce_v2_strided_index)
    assert run.metrics["shared_bank_conflicts"] > 0
    assert _traced(R.reduce_v3_sequential).metrics["shared_bank_conflicts"] == 0


def test_warp_shuffle_needs_fewer_barriers():
    v4, v5 = _traced(R.reduce_v4_first_add), _traced(R.reduce_v5_warp_shuffle)
    assert int(v4.lines.epoch.max()) == 9                 # load barrier + 8 tree levels
    assert int(v5.lines.epoch.max()) == 3                 # load barrier + 2 levels in shared memory
    # v4 reads two elements per thread from global memory, v3 one
    for run, want in [(v4, 2), (_traced(R.reduce_v3_sequential), 1)]:
        g = run.memory[(run.memory.space == 0) & (run.memory.kind == 0)]
        assert np.bincount(g.block * R.BLOCK + g.thread).max() == want


def test_levels_cover_every_epoch():
    run = _traced(R.reduce_v3_sequential)
    rows = levels(run)
    assert [r["epoch"] for r in rows] == list(range(10))   # load, 8 levels, the final write
    assert rows[0]["writes"] == R.BLOCK and rows[1]["writes"] == R.BLOCK // 2
    fig = plot_levels({"v1": _traced(R.reduce_v1_interleaved), "v3": run})
    assert fig._suptitle.get_text() and all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes)


def test_missing_barrier_is_a_race():
    x = np.random.default_rng(1).random(R.BLOCK, dtype=np.float32)
    run = simtlab.emulate(R.reduce_v3_missing_barrier, 1, R.BLOCK, x, np.zeros(1, np.float32))
    assert run.metrics["races"] > 0
    race = run.races[0]
    assert race.array == "s" and set(race.kinds) == {"read", "write"}
    assert _traced(R.reduce_v3_sequential).metrics["races"] == 0


def _random_order_sums(version, x, seeds):
    out = []
    for seed in seeds:
        def emu(k, g, b, *a, seed=seed):
            simtlab.emulate(k, g, b, *a, trace=False, order="random", seed=seed)
        out.append(R.sum_with(version, x, emu, max_blocks=12))
    return out


def test_atomics_depend_on_block_order_second_pass_does_not():
    x = np.random.default_rng(0).random(3000).astype(np.float32)
    atomic = _random_order_sums("v7 grid-stride, atomicAdd", x, range(6))
    two_pass = _random_order_sums("v6 grid-stride, second pass", x, range(6))
    assert len({v.tobytes() for v in two_pass}) == 1
    assert len({v.tobytes() for v in atomic}) > 1             # the blocks' order changed the rounding
    assert all(abs(v - R.sum_cpu(x)) <= 1e-5 * R.sum_cpu(x) for v in atomic)


def test_vecmat_fixed_and_seed_bug():
    rng = np.random.default_rng(3)
    v, w = rng.random(300, dtype=np.float32), rng.random((3, 300), dtype=np.float32)
    np.testing.assert_allclose(R.vecmat_with(R.vecmat_v2_grid_stride, v, w, emulate_fast),
                               R.vecmat_cpu(v, w), rtol=1e-5)
    # the seed's kernel: 2 blocks of 64 threads cover columns 0..127, then step by 64 * 64 = 4096
    seed = R.vecmat_with(R.vecmat_v1_seed, v, w, emulate_fast, block=64)
    np.testing.assert_allclose(seed, R.vecmat_cpu(v[:128], w[:, :128]), rtol=1e-5)
    assert not np.allclose(seed, R.vecmat_cpu(v, w), rtol=1e-3)
    # with gridDim.x * blockDim.x >= n, one segment per block, the seed's kernel is right
    np.testing.assert_allclose(R.vecmat_with(R.vecmat_v1_seed, v[:100], w[:, :100], emulate_fast, block=64),
                               R.vecmat_cpu(v[:100], w[:, :100]), rtol=1e-5)


def test_napkin_math():
    assert R.reduction_bytes(2**28) == 2**30 and R.reduction_flops(10) == 10
    assert R.vecmat_bytes(10, 4000) == 4 * (40000 + 4000 + 10) and R.vecmat_flops(10, 4000) == 80000


def test_cuda_c_has_every_version():
    src = CU.read_text()
    names = {v.cuda_c for v in R.VERSIONS} | {"vecmat_rows"}
    for name in names:
        assert re.search(rf'extern "C" __global__ void {name}\(', src), name
    for v in R.VERSIONS:
        assert v.numba is None or hasattr(R, v.numba)
    # one "// ---- vN:" line before each numbered CUDA C version, one "# vN:" line in Python
    assert len(re.findall(r"^// ---- (vecmat )?v\d+: ", src, re.M)) == 11
    py = Path(R.__file__).read_text()
    assert len(re.findall(r"^# v\d+: ", py, re.M)) == 9


def test_work_and_steps_of_the_trees():
    from simtlab.plots.reduction import complexity_rows

    rows = complexity_rows({"v1": R.reduce_v1_interleaved, "v3": R.reduce_v3_sequential}, sizes=(16, 64, 256))
    for r in rows:
        assert r["work"] == r["n"] - 1                       # as many adds as the serial loop
        assert r["steps"] == int(np.log2(r["n"]))            # but only log2(n) levels


def test_unrolled_last_warp_races_and_syncwarp_fixes_it():
    # the pre-Volta last warp: lane t reads s[t + 16] in the statement where lane t + 16 writes it;
    # the race detector sees it whatever order the lanes ran in, and the sum may still be right
    x = np.random.default_rng(4).random(2 * R.BLOCK, dtype=np.float32)
    unsafe = simtlab.emulate(R.reduce_last_warp_unsafe, 1, R.BLOCK, x, np.zeros(1, np.float32))
    assert unsafe.metrics["races"] > 0
    racy_lines = {unsafe.source(line).strip() for race in unsafe.races for line in race.lines}
    assert racy_lines <= {f"s[t] += s[t + {k}]" for k in (32, 16, 8, 4, 2, 1)}, racy_lines
    assert all(race.array == "s" and race.space == "shared" for race in unsafe.races)
    # with the lanes in a random order the unsafe version gives a wrong sum, syncwarp never does
    wrong = 0
    for seed in range(4):
        got = np.zeros(1, np.float32)
        simtlab.emulate(R.reduce_last_warp_unsafe, 1, R.BLOCK, x, got, trace=False, order="random", seed=seed)
        wrong += not np.isclose(got[0], R.sum_cpu(x), rtol=1e-5)
        fixed = np.zeros(1, np.float32)
        simtlab.emulate(R.reduce_last_warp_syncwarp, 1, R.BLOCK, x, fixed, trace=False, order="random", seed=seed)
        assert np.isclose(fixed[0], R.sum_cpu(x), rtol=1e-5)
    assert wrong > 0
    safe = simtlab.emulate(R.reduce_last_warp_syncwarp, 1, R.BLOCK, x, np.zeros(1, np.float32))
    assert safe.metrics["races"] == 0


@pytest.mark.parametrize("rows, cols", [(3, 1), (4, 257), (2, 1000), (5, 3 * R.BLOCK + 1)])
def test_row_means(rows, cols):
    x = np.random.default_rng(cols).normal(2.0, 1.0, (rows, cols)).astype(np.float32)
    got = R.row_mean_with(x, emulate_fast, blocks_per_row=2)
    np.testing.assert_allclose(got, R.row_mean_cpu(x), rtol=1e-5)
    assert R.row_mean_bytes(rows, cols) == 4 * (rows * cols + rows)


def test_row_sums_are_coalesced():
    x = np.random.default_rng(0).random((2, 512), dtype=np.float32)
    run = simtlab.emulate(R.row_sum_partials, (2, 2), R.BLOCK, x, np.zeros((2, 2), np.float32))
    reads = run.accesses("x", "read")
    assert len(reads) == x.size and np.unique(reads.index).size == x.size   # every element once
    assert run.metrics["global_sectors_per_request"] <= 4.0


def test_cuda_c_has_the_last_warp_and_row_kernels():
    src = CU.read_text()
    for name in ("reduce_last_warp_unsafe", "reduce_last_warp_syncwarp", "row_sum_partials", "row_mean_finish"):
        assert re.search(rf'extern "C" __global__ void {name}\(', src), name
        assert hasattr(R, name)
    assert "__syncwarp(FULL_MASK)" in src and "volatile float" not in src   # the fix is syncwarp, not volatile
