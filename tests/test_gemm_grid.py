"""Chapter 6's models of the grid: waves (the tail effect, split-K's blocks) and the block order
(which tiles the first wave computes, the strips of A and B it reads), against arithmetic done
here by hand, Nsight Compute's count for cuBLAS on the H100, and gemm.cu's own grouped_tile run
on the PTX engine; and the split-K plan's slices of K."""

from __future__ import annotations

import numpy as np
import pytest

from simtlab.analysis.block_order import block_tiles, first_wave_footprint, tile_of
from simtlab.analysis.waves import gemm_waves, waves
from simtlab.kernels import gemm as G


# ------------------------------------------------------------------ waves
def test_cublas_grid_is_the_waves_nsight_compute_counted():
    from simtlab.gpubench.conv import probe

    cublas = next(k for k in probe()["ncu"] if k["kernel"].startswith("sm80_xmma_gemm"))   # H100, ncu
    w = gemm_waves(4096, 4096, (256, 128), blocks_per_sm=1)
    assert w.blocks == cublas["grid"] == 512
    assert round(w.waves, 2) == cublas["waves"] == 3.88


def test_tail_of_a_grid():
    w = waves(512, 1, 132)                    # 3 x 132 = 396, 116 left for the fourth wave
    assert (w.full_waves, w.rounds, w.last_wave_blocks) == (3, 4, 116)
    assert w.last_wave_idle == pytest.approx(16 / 132)
    assert w.efficiency == pytest.approx(512 / 528)
    full = waves(264, 2, 132)                 # exactly one wave of 2 blocks per SM
    assert (full.rounds, full.last_wave_blocks, full.last_wave_idle, full.efficiency) == (1, 264, 0.0, 1.0)


def test_split_k_multiplies_the_blocks():
    # 512 x 512 with 128 x 128 tiles: 16 tiles; 16 slices of K: 256 blocks of 264 slots
    assert [gemm_waves(512, 512, (128, 128), 2, splits=s).blocks for s in (1, 4, 16)] == [16, 64, 256]
    assert gemm_waves(512, 512, (128, 128), 2, splits=16).efficiency == pytest.approx(256 / 264)


@pytest.mark.parametrize("blocks, per_sm, sms", [(0, 1, 132), (10, 0, 132), (10, 1, 1.5)])
def test_waves_refuse_what_is_not_a_grid(blocks, per_sm, sms):
    with pytest.raises(ValueError):
        waves(blocks, per_sm, sms)


# ------------------------------------------------------------------ block order
def test_row_major_order_and_group_order_by_hand():
    # 4 columns x 5 rows of tiles, GROUP 2: blocks walk down 2 rows, then right; the last group has 1 row
    assert block_tiles(4, 5, 0)[:5].tolist() == [[0, 0], [0, 1], [0, 2], [0, 3], [1, 0]]
    assert block_tiles(4, 5, 2).tolist() == [[0, 0], [1, 0], [0, 1], [1, 1], [0, 2], [1, 2], [0, 3], [1, 3],
                                             [2, 0], [3, 0], [2, 1], [3, 1], [2, 2], [3, 2], [2, 3], [3, 3],
                                             [4, 0], [4, 1], [4, 2], [4, 3]]


@pytest.mark.parametrize("group", [0, 1, 3, 8])
def test_every_order_computes_every_tile_once(group):
    tiles = block_tiles(7, 11, group)
    assert len({tuple(t) for t in tiles}) == 77 and tiles[:, 0].max() == 10 and tiles[:, 1].max() == 6


def test_tile_of_is_gemm_cu_grouped_tile():
    """gemm.cu's own grouped_tile<GROUP> (the function v7 and v8 call), run on the PTX engine for
    every block of a 5 x 7 grid: the Python mirror gives the same tile to every block."""
    from simtlab import cuda_c_kernels as CC

    try:
        CC.nvrtc_version()
    except CC.CompilerMissing as why:
        pytest.skip(f"NVRTC is not installed ({why})")
    import simtlab

    text = G.CU_PATH.read_text()
    start = text.index("template <int GROUP>\n__device__ __forceinline__ void grouped_tile")
    end = text.index("\n}\n", start) + 3
    source = text[start:end] + """
template <int GROUP> __device__ void where(int* out) {
    int bx = blockIdx.x, by = blockIdx.y;
    const int bid = blockIdx.y * gridDim.x + blockIdx.x;
    grouped_tile<GROUP>(bx, by);
    out[2 * bid] = by; out[2 * bid + 1] = bx;
}
extern "C" __global__ void where0(int* out) { where<0>(out); }
extern "C" __global__ void where3(int* out) { where<3>(out); }
"""
    for group in (0, 3):
        out = np.full(2 * 35, -1, np.int32)
        simtlab.emulate(CC.cuda_c(source, f"where{group}"), (5, 7), 1, out)
        assert out.reshape(-1, 2).tolist() == block_tiles(5, 7, group).tolist()


def test_first_wave_footprint_by_hand():
    # 300 x 260 x 10, tiles 128 x 128: a 3 x 3 grid (tile rows of 128, 128, 44; columns 128, 128, 4);
    # row-major, 4 resident: tiles (0,0) (0,1) (0,2) (1,0): A strips 0, 1; B strips 0, 1, 2
    f = first_wave_footprint(300, 260, 10, (128, 128), resident=4, group=0)
    assert (f.a_strips, f.b_strips) == ((0, 1), (0, 1, 2))
    assert f.distinct_bytes == (128 + 128) * 10 * 4 + (128 + 128 + 4) * 10 * 4
    assert f.requested_bytes == (3 * 128 + 128) * 10 * 4 + (128 + 128 + 4 + 128) * 10 * 4
    # GROUP 2: (0,0) (1,0) (0,1) (1,1): 2 strips of each
    g = first_wave_footprint(300, 260, 10, (128, 128), resident=4, group=2)
    assert (g.a_strips, g.b_strips) == ((0, 1), (0, 1)) and g.distinct_bytes == 4 * 128 * 10 * 4


def test_group_8_reads_less_than_row_major_at_4096_for_v8s_tile():
    row_major, grouped = (first_wave_footprint(4096, 4096, 4096, (256, 128), 132, g) for g in (0, 8))
    # row-major: 4 rows of 32 tiles and 4 of the 5th row: 5 A strips, all 32 B strips;
    # GROUP 8: 16 columns of 8 and 4 of the 17th: 8 A strips, 17 B strips
    assert (len(row_major.a_strips), len(row_major.b_strips)) == (5, 32)
    assert (len(grouped.a_strips), len(grouped.b_strips)) == (8, 17)
    assert grouped.distinct_bytes == (8 * 256 + 17 * 128) * 4096 * 4


# ------------------------------------------------------------------ the split-K plan
def test_split_k_slices_are_whole_tiles_and_cover_k():
    assert G.splitk_ranges(100, 3) == [(0, 48), (48, 96), (96, 100)]        # 7 tiles of 16: 3, 3, 1
    assert G.splitk_ranges(100, 9)[6:] == [(96, 100), (100, 100), (100, 100)]   # more splits than tiles
    for k, s in ((16384, 8), (101, 4), (5, 2)):
        ranges = G.splitk_ranges(k, s)
        assert ranges[0][0] == 0 and ranges[-1][1] == k
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert all(lo % G.SPLITK_BK == 0 or lo == k for lo, _ in ranges)


def test_split_k_plan_zeroes_c_and_launches_one_grid_per_slice():
    a, b = np.ones((300, 36), np.float32), np.ones((36, 260), np.float32)
    launches, c = G.splitk_version(4).launches("cuda-c", np, a, b)
    (step,) = launches
    assert step.kernel == "gemm_splitk" and step.grid == (3, 3, 4) and step.zero == (c,)
    launches, _ = G.splitk_version(2).launches("cuda-c", np, a[:, :35], b[:35])
    assert launches[0].kernel == "gemm_splitk_scalar"                      # K = 35: rows not float4-aligned
    with pytest.raises(ValueError, match="CUDA C"):
        G.splitk_version(2).launches("numba", np, a, b)
    with pytest.raises(ValueError):
        G.SplitKPlan(0)
