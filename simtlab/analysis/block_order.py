"""Block order (swizzling): which tiles of C the blocks resident at one time compute, and how
much of A and B they read between them.

A GEMM block with tile (BM, BN) at tile row ``r`` and tile column ``c`` reads the BM x K strip of
A at row tile ``r`` and the K x BN strip of B at column tile ``c``. Blocks that run at the same
time and share a strip can share it in L2: the fewer distinct strips a wave of resident blocks
touches, the less it needs from DRAM. With the plain row-major order (block ``bid`` computes
tile ``(bid // grid_x, bid % grid_x)``) a wave of 132 blocks covers a few whole rows of C: few A
strips, every B strip. ``GROUP`` swizzling (``grouped_tile`` in kernels/gemm.cu, v7's and v8's
``GROUP``) walks ``GROUP`` tile rows down first, then right: the wave is a squarer patch.

This module mirrors gemm.cu's mapping exactly (:func:`tile_of`) and assumes the GPU starts
blocks in increasing linear id, the first ``resident`` of them together (a common
assumption about NVIDIA's block scheduler, not a documented guarantee, not measured here).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..simt import cdiv

__all__ = ["tile_of", "block_tiles", "WaveFootprint", "first_wave_footprint"]


def tile_of(bid, grid_x: int, grid_y: int, group: int = 0):
    """(tile row, tile column) that block ``bid`` (linear id ``by * grid_x + bx``, int or array)
    computes: row-major for ``group`` 0, else gemm.cu's ``grouped_tile<GROUP>``: consecutive
    blocks go down ``group`` tile rows, then right."""
    bid = np.asarray(bid, dtype=np.int64)
    if group <= 0:
        return bid // grid_x, bid % grid_x
    first = bid // (group * grid_x) * group
    rows = np.minimum(grid_y - first, group)
    in_group = bid % (group * grid_x)
    return first + in_group % rows, in_group // rows


def block_tiles(grid_x: int, grid_y: int, group: int = 0) -> np.ndarray:
    """(blocks, 2) array: the (tile row, tile column) of each block in launch order."""
    rows, cols = tile_of(np.arange(grid_x * grid_y), grid_x, grid_y, group)
    return np.stack([rows, cols], axis=1)


@dataclass(frozen=True)
class WaveFootprint:
    """What the first ``blocks`` resident blocks of a GEMM read between them."""

    m: int
    n: int
    k: int
    tile: tuple
    group: int
    blocks: int
    tiles: np.ndarray            # (blocks, 2): their (tile row, tile column)
    a_strips: tuple              # distinct tile rows: strips of A they read
    b_strips: tuple              # distinct tile columns: strips of B
    distinct_bytes: int          # the A and B strips they read, each counted once
    requested_bytes: int         # what they read, each block its own two strips

    @property
    def sharing(self) -> float:
        """requested / distinct: how many blocks read each byte on average."""
        return self.requested_bytes / self.distinct_bytes

    def __str__(self) -> str:
        mb = 1e6
        return (f"group {self.group}: {self.blocks} blocks cover {len(self.a_strips)} strips of A and "
                f"{len(self.b_strips)} of B: {self.distinct_bytes / mb:.1f} MB distinct of "
                f"{self.requested_bytes / mb:.1f} MB read ({self.sharing:.1f} reads per byte)")


def _strip_bytes(starts, size, extent, k, itemsize):
    """Bytes of the strips starting at tile ``starts`` (each ``size`` rows or columns, clipped at ``extent``)."""
    widths = np.minimum(extent, (np.asarray(starts) + 1) * size) - np.asarray(starts) * size
    return int(widths.sum()) * k * itemsize


def first_wave_footprint(m: int, n: int, k: int, tile: tuple, resident: int, group: int = 0,
                         itemsize: int = 4) -> WaveFootprint:
    """The first ``resident`` blocks (SMs x blocks per SM) of an M x N x K GEMM with ``tile`` =
    (BM, BN) blocks in ``group`` order: which strips of A and B they read, and the bytes of those
    strips counted once (what a wave needs from DRAM when L2 serves every repeat: its L2
    working set over the whole K) and counted per block."""
    bm, bn = tile
    grid_x, grid_y = cdiv(n, bn), cdiv(m, bm)
    count = min(int(resident), grid_x * grid_y)
    tiles = block_tiles(grid_x, grid_y, group)[:count]
    a_strips = tuple(int(r) for r in np.unique(tiles[:, 0]))
    b_strips = tuple(int(c) for c in np.unique(tiles[:, 1]))
    distinct = _strip_bytes(a_strips, bm, m, k, itemsize) + _strip_bytes(b_strips, bn, n, k, itemsize)
    requested = _strip_bytes(tiles[:, 0], bm, m, k, itemsize) + _strip_bytes(tiles[:, 1], bn, n, k, itemsize)
    return WaveFootprint(m, n, k, tuple(tile), group, count, tiles, a_strips, b_strips, distinct, requested)
