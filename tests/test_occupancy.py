"""The occupancy calculator, against counts done by hand for an H100 SM.

An H100 SM holds at most 2048 threads = 64 warps, 32 blocks, 65536 registers and 228 KiB of
shared memory; each block also costs 1 KiB of shared memory kept by the driver.
"""

import dataclasses

import pytest

from simtlab.hardware import H100_SXM, LIMITS, occupancy
from simtlab.plots.occupancy import occupancy_curve, plot_occupancy


def test_full_block_of_1024_threads_fills_the_sm():
    occ = occupancy(1024, 32)
    # 2048 // 1024 = 2 blocks; 32 regs x 32 lanes = 1024 regs per warp, 64 warps fit.
    assert occ.warps_per_block == 32
    assert occ.blocks_per_sm == 2
    assert occ.warps_per_sm == 64
    assert occ.threads_per_sm == 2048
    assert occ.occupancy == 1.0


def test_registers_limit_256_thread_blocks_at_64_registers():
    occ = occupancy(256, 64)
    # 64 x 32 = 2048 registers per warp; 65536 / 2048 = 32 warps = 4 blocks of 8 warps.
    assert occ.blocks_per_sm == 4
    assert occ.warps_per_sm == 32
    assert occ.occupancy == 0.5
    assert occ.limiting == "registers"
    assert occ.limits["threads"] == 8


def test_one_warp_blocks_hit_the_block_limit():
    occ = occupancy(32)
    assert occ.blocks_per_sm == 32
    assert occ.warps_per_sm == 32
    assert occ.occupancy == 0.5
    assert occ.limiting == "blocks"


def test_partial_warps_count_as_whole_warps():
    # 112 threads = 3.5 warps, rounded up to 4: 64 // 4 = 16 blocks, though 2048 // 112 = 18.
    occ = occupancy(112)
    assert occ.warps_per_block == 4
    assert occ.limits["threads"] == 18
    assert occ.blocks_per_sm == 16
    assert occ.limiting == "warps"


def test_registers_round_up_to_256_per_warp_and_4_warps():
    # 33 x 32 = 1056 -> 1280 registers per warp; 65536 // 1280 = 51 warps -> 48 (groups of 4);
    # 48 // 4 warps per block = 12 blocks.
    occ = occupancy(128, 33)
    assert occ.registers_per_warp == 1280
    assert occ.limits["registers"] == 12
    assert occ.blocks_per_sm == 12
    assert occ.occupancy == 48 / 64


def test_shared_memory_limit_includes_the_reserved_kib():
    # 48 KiB + 1 KiB reserved = 49 KiB per block; 228 // 49 = 4 blocks.
    occ = occupancy(256, 32, 48 * 1024)
    assert occ.shared_per_block_allocated == 49 * 1024
    assert occ.blocks_per_sm == 4
    assert occ.limiting == "shared memory"
    # 100 bytes are allocated in 128-byte steps: 1024 + 128.
    assert occupancy(256, 32, 100).shared_per_block_allocated == 1152


def test_impossible_kernels_get_no_blocks():
    # 1024 threads x 128 registers = 131072 registers, twice what one block may have.
    occ = occupancy(1024, 128)
    assert occ.blocks_per_sm == 0 and occ.occupancy == 0 and occ.limiting == "registers"
    occ = occupancy(64, 32, 228 * 1024)  # more than the 227 KiB a block may opt in to
    assert occ.blocks_per_sm == 0 and occ.limiting == "shared memory"


def test_ties_report_the_first_limit_and_list_all():
    occ = occupancy(1024, 32)
    assert occ.limiting == "threads"
    assert set(occ.binding) == {"threads", "warps", "registers"}


@pytest.mark.parametrize("bad", [0, -32, 1025, 4096])
def test_block_size_out_of_range(bad):
    with pytest.raises(ValueError, match="1 to 1024 threads"):
        occupancy(bad)


def test_bad_registers_and_shared_memory():
    with pytest.raises(ValueError, match="registers"):
        occupancy(256, 256)
    with pytest.raises(ValueError, match="negative"):
        occupancy(256, 32, -1)
    with pytest.raises(TypeError):
        occupancy(256.5)


def test_result_reads_like_a_dict_and_describes_itself():
    occ = occupancy(256, 64)
    assert occ["occupancy"] == 0.5 and occ.as_dict()["blocks_per_sm"] == 4
    assert occ.describe() == "256 threads/block: 4 blocks/SM, 32 warps, occupancy 50% (limited by registers)"


def test_other_devices_use_their_own_limits():
    small = dataclasses.replace(H100_SXM, name="small", max_threads_per_sm=1024, max_warps_per_sm=32,
                                max_blocks_per_sm=16)
    assert occupancy(1024, 32, props=small).blocks_per_sm == 1
    assert occupancy(32, props=small).blocks_per_sm == 16


def test_curve_covers_32_to_1024():
    curve = occupancy_curve(32)
    assert [o.block_size for o in curve] == list(range(32, 1025, 32))
    assert all(0 <= o.occupancy <= 1 and o.limiting in LIMITS for o in curve)


def test_occupancy_plot_is_labelled_and_marks_the_chosen_block():
    fig = plot_occupancy(64, highlight_block_size=256)
    assert "64 registers/thread" in fig._suptitle.get_text()
    (ax,) = fig.axes
    assert ax.get_xlabel() == "threads per block"
    assert "occupancy" in ax.get_ylabel() and "%" in ax.get_ylabel()
    texts = [t.get_text() for t in ax.texts]
    assert any("4 blocks/SM" in t and "50%" in t and "registers" in t for t in texts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "limited by registers" in legend and "limited by blocks" in legend
