"""Waves: how a grid of blocks fills the SMs, and what the last, partial wave costs.

An SM runs a few blocks at a time (``blocks_per_sm``: what registers, shared memory and threads
allow, chapter 2). A grid of ``blocks`` on ``sms`` SMs therefore runs in *waves* of
``sms * blocks_per_sm`` blocks. When all blocks take the same time, the kernel takes
``ceil(waves)`` block-times, and the last wave's empty slots are time the GPU idles: the
*tail effect* (wave quantisation). cuBLAS's SGEMM at 4096^3 runs 512 blocks of 256 x 128 at one
block per SM: 512 / 132 = 3.88 waves, the last one 116 of 132 slots busy.

Split-K multiplies a GEMM's blocks by the number of slices of K (``splits``): where M x N
alone makes too few tiles to fill one wave, the slices fill it.

This is a model: it assumes every block takes the same time and that the slots of a wave are
filled at once. What the GPU measured is in ``benchmarks/results/gemm_splitk_h100.json``
(``benchmarks/gpu_gemm.py --split-k``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..simt import cdiv

__all__ = ["Waves", "waves", "gemm_blocks", "gemm_waves", "wave_efficiency", "H100_SMS"]

#: SMs of the H100 SXM (the course's card)
H100_SMS = 132


@dataclass(frozen=True)
class Waves:
    """A grid of ``blocks`` on ``sms`` SMs holding ``blocks_per_sm`` blocks each."""

    blocks: int
    blocks_per_sm: int
    sms: int

    @property
    def slots(self) -> int:
        """Blocks one wave holds."""
        return self.sms * self.blocks_per_sm

    @property
    def waves(self) -> float:
        """Blocks per wave-slot: 3.88 for cuBLAS at 4096^3."""
        return self.blocks / self.slots

    @property
    def full_waves(self) -> int:
        return self.blocks // self.slots

    @property
    def rounds(self) -> int:
        """Waves the grid takes, the partial one included: ceil(waves)."""
        return cdiv(self.blocks, self.slots)

    @property
    def last_wave_blocks(self) -> int:
        """Blocks in the last wave (a whole wave when the grid divides evenly)."""
        return self.blocks - (self.rounds - 1) * self.slots

    @property
    def last_wave_idle(self) -> float:
        """The fraction of the last wave's slots that hold no block."""
        return 1 - self.last_wave_blocks / self.slots

    @property
    def efficiency(self) -> float:
        """Busy slots over slots paid for: blocks / (rounds x slots). 1 when the grid fills every
        wave; the fraction of the peak a kernel can reach with equal blocks, whatever its speed."""
        return self.blocks / (self.rounds * self.slots)

    def __str__(self) -> str:
        return (f"{self.blocks} blocks on {self.sms} SMs x {self.blocks_per_sm} = {self.waves:.2f} waves: "
                f"{self.full_waves} full, the last with {self.last_wave_blocks} of {self.slots} slots busy "
                f"({self.last_wave_idle:.0%} idle); {self.efficiency:.1%} of the slots paid for are used")


def waves(blocks: int, blocks_per_sm: int = 1, sms: int = H100_SMS) -> Waves:
    """The waves of a grid of ``blocks`` (ValueError unless all three are positive integers)."""
    for name, value in (("blocks", blocks), ("blocks_per_sm", blocks_per_sm), ("sms", sms)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return Waves(int(blocks), int(blocks_per_sm), int(sms))


def gemm_blocks(m: int, n: int, tile: tuple, splits: int = 1) -> int:
    """Blocks of a GEMM grid: one per ``tile`` (rows, columns) of the M x N output, times the
    slices of K (split-K)."""
    return cdiv(m, tile[0]) * cdiv(n, tile[1]) * int(splits)


def gemm_waves(m: int, n: int, tile: tuple, blocks_per_sm: int = 1, splits: int = 1,
               sms: int = H100_SMS) -> Waves:
    """The waves of an M x N GEMM with ``tile``-sized blocks (and ``splits`` slices of K)."""
    return waves(gemm_blocks(m, n, tile, splits), blocks_per_sm, sms)


def wave_efficiency(sizes, tile: tuple, blocks_per_sm: int = 1, splits: int = 1, sms: int = H100_SMS) -> list:
    """:attr:`Waves.efficiency` of n x n GEMMs for each n of ``sizes``."""
    return [gemm_waves(n, n, tile, blocks_per_sm, splits, sms).efficiency for n in sizes]

