"""One warp's request: sectors, lines and bytes, the figures, and requests read off a trace."""

import numpy as np
import pytest
from numba import cuda

import simtlab
from simtlab.plots.memory_access import (describe, plot_stride_sweep, plot_warp_access,
                                         request_addresses_from_run, strided_addresses,
                                         warp_request_summary)


def _summary(stride, size=4, offset=0):
    return warp_request_summary(strided_addresses(stride, size, offset), size)


def test_consecutive_float32_is_one_line_four_sectors():
    s = _summary(1)
    assert (s["sectors"], s["lines"], s["bytes_used"], s["bytes_moved"]) == (4, 1, 128, 128)
    assert s["efficiency"] == 1.0 and s["lanes"] == 32
    assert s["sector_ids"].tolist() == [0, 1, 2, 3]
    assert s["lane_sector"].tolist() == [lane // 8 for lane in range(32)]


@pytest.mark.parametrize("stride, size, offset, sectors", [
    (2, 4, 0, 8), (8, 4, 0, 32), (1, 4, 1, 5), (1, 8, 0, 8), (0, 4, 0, 1), (4, 4, 0, 16),
    (1, 2, 0, 2), (1, 16, 0, 16), (32, 4, 0, 32),
])
def test_sector_counts(stride, size, offset, sectors):
    s = _summary(stride, size, offset)
    assert s["sectors"] == sectors and s["bytes_moved"] == 32 * sectors


def test_broadcast_and_efficiency():
    s = _summary(0)                     # every lane reads the same word
    assert (s["sectors"], s["bytes_requested"], s["bytes_used"], s["min_sectors"]) == (1, 128, 4, 1)
    assert s["efficiency"] == pytest.approx(4 / 32)
    assert _summary(2)["efficiency"] == pytest.approx(0.5)
    assert _summary(1, 4, 1)["efficiency"] == pytest.approx(128 / 160)


def test_inactive_lanes_masked_none_or_negative():
    half = np.ma.masked_all(32, np.int64)
    half[:16] = np.arange(16) * 4
    for addrs in (half, [4 * i for i in range(16)] + [None] * 16, [4 * i for i in range(16)] + [-1] * 16,
                  [4 * i for i in range(16)]):
        s = warp_request_summary(addrs)
        assert (s["lanes"], s["sectors"], s["bytes_used"]) == (16, 2, 64)
        assert s["lane_sector"][16:].tolist() == [-1] * 16
    with pytest.raises(ValueError):
        warp_request_summary(range(33))


def test_misaligned_access_straddles_two_sectors():
    s = warp_request_summary([30], size=4)        # bytes 30..33
    assert s["sector_ids"].tolist() == [0, 1] and s["lines"] == 1


def test_describe_text():
    assert describe(_summary(1)) == "4 sectors, 128 bytes moved for 128 bytes used (100 % efficiency)"
    assert describe(_summary(0)).startswith("1 sector, 32 bytes moved for 4 bytes used (12.5 %")


def test_warp_access_figure():
    fig = plot_warp_access(strided_addresses(2))
    ax = fig.axes[0]
    assert fig._suptitle.get_text() and ax.get_xlabel() and ax.get_ylabel()
    assert ax.get_title().startswith("8 sectors, 256 bytes moved for 128 bytes used (50 %")
    assert ax.get_legend() is not None
    by_stride = plot_warp_access(stride=1, offset=1, size=4)
    assert "5 sectors" in by_stride.axes[0].get_title()
    assert "a[1 + lane*1]" in by_stride._suptitle.get_text()
    wide = plot_warp_access(stride=33, size=16)     # 16 KiB of addresses still draws
    assert "32 sectors" in wide.axes[0].get_title()
    assert "no lane" in plot_warp_access(np.ma.masked_all(32, np.int64)).axes[0].texts[0].get_text()


def test_stride_sweep():
    fig = plot_stride_sweep()
    ax = fig.axes[0]
    x, y = ax.lines[0].get_data()
    sectors = dict(zip(x.tolist(), y.tolist()))
    assert sectors[1] == 4 and sectors[2] == 8 and all(sectors[k] == 32 for k in range(8, 33))
    assert fig._suptitle.get_text() and ax.get_xlabel() and ax.get_ylabel()
    assert ax.get_legend() is not None


@cuda.jit
def _strided_copy(x, out):
    i = cuda.grid(1)
    out[i] = x[3 * i]


@cuda.jit
def _loop_reads(x, out):
    i = cuda.grid(1)
    acc = 0.0
    for k in range(2):
        acc += x[i + 32 * k]
    out[i] = acc


def test_request_addresses_from_a_run():
    x = np.zeros(96 + 3 * 32, np.float32)
    run = simtlab.emulate(_strided_copy, 2, 32, x, np.zeros(64, np.float32))
    read = request_addresses_from_run(run, "x")
    assert read.tolist() == [12 * lane for lane in range(32)]  # offsets from the array's start
    assert warp_request_summary(read, 4)["sectors"] == 12
    second_warp = request_addresses_from_run(run, "x", gwarp=1)
    assert second_warp.tolist() == [12 * (32 + lane) for lane in range(32)]
    # out is written on the same line, after the read of x: still its request number 0
    write = request_addresses_from_run(run, "out")
    assert write.tolist() == [4 * lane for lane in range(32)]
    assert warp_request_summary(write, 4)["sectors"] == 4


def test_request_number_on_a_loop_line_and_partial_warps():
    x = np.arange(64, dtype=np.float32)
    run = simtlab.emulate(_loop_reads, 1, 32, x, np.zeros(32, np.float32))
    line = int(run.memory["line"][run.memory["array"] == run.array("x").id][0])
    assert request_addresses_from_run(run, "x", line=line, seq=1).tolist() == \
        [4 * (32 + lane) for lane in range(32)]
    with pytest.raises(ValueError):
        request_addresses_from_run(run, "x", line=line, seq=2)

    y = np.zeros(20, np.float32)
    run = simtlab.emulate(_guarded_write, 1, 32, y)
    addrs = request_addresses_from_run(run, "y")
    assert addrs.count() == 20 and addrs.mask[20:].all()
    assert warp_request_summary(addrs, 4)["sectors"] == 3   # 80 bytes from 0: 3 sectors


@cuda.jit
def _guarded_write(y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = 1.0


def test_sectors_and_lanes_are_a_few_collections_not_an_artist_each():
    # an axvspan per sector and a patch per lane were most of the drawing time of a scattered
    # request: the shades are one collection per kind, the lanes one collection
    from matplotlib.collections import PatchCollection, PolyCollection
    ax = plot_warp_access(stride=32).axes[0]
    assert len(ax.patches) == 0 and len(ax.collections) <= 4
    (lanes,) = [c for c in ax.collections if isinstance(c, PatchCollection)]
    assert len(lanes.get_paths()) == 32
    shades = [c for c in ax.collections if isinstance(c, PolyCollection)]
    touched = sum(len(c.get_paths()) for c in shades if c.get_facecolor()[0][0] > 0.8)  # orange ones
    assert touched == 32                          # one touched 32-byte sector per lane
