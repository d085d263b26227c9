"""What the convolution kernels of chapter 7 do to memory, read from the emulator's trace.

- :func:`trace_unroll` runs the unroll kernel (im2col) on a small input whose every element holds
  its own index + 1, so the unrolled matrix says where each of its entries came from, and the
  trace's reads of ``x`` say how often each input element was copied.
- :func:`global_traffic` runs a version of the whole layer and counts, per global array, the
  bytes it allocates and the bytes its reads and writes request.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["UnrollTrace", "trace_unroll", "global_traffic", "addresses_per_request"]


@dataclass
class UnrollTrace:
    x_shape: tuple          # (B, C, H, W)
    k: int
    stride: int
    pad: int
    ho: int
    wo: int
    source: np.ndarray      # (C*K*K, B*Ho*Wo): flat index into x of each entry, -1 for padding
    copies: np.ndarray      # x's shape: how many times the unroll kernel read each input element
    run: object             # the emulator run of the unroll kernel

    @property
    def duplication(self) -> float:
        """Entries of the unrolled matrix per input element (padding entries included)."""
        return self.source.size / int(np.prod(self.x_shape))


def trace_unroll(x_shape=(1, 1, 6, 6), k: int = 3, stride: int = 1, padding="valid") -> UnrollTrace:
    """Unroll an input of ``x_shape`` with the course's im2col kernel on the emulator."""
    from .. import emulate
    from ..kernels import conv as K

    b, c, h, w = x_shape
    ho, wo, pad = K.conv_geometry(h, w, k, stride, padding)
    n = b * c * h * w
    if n >= 2**24:
        raise ValueError(f"an input of {n:,} elements is too large to label exactly in float32: keep it small")
    x = np.arange(1, n + 1, dtype=np.float32).reshape(x_shape)       # element i holds i + 1
    cols = np.zeros((c * k * k, b * ho * wo), np.float32)
    run = emulate(K.im2col, K.cdiv(cols.size, K.BLOCK), K.BLOCK, x, cols, k, wo, stride, pad)
    reads = run.accesses("x", "read")
    copies = np.bincount(reads.index.astype(np.int64), minlength=n).reshape(x_shape)
    return UnrollTrace(tuple(x_shape), k, stride, pad, ho, wo, cols.astype(np.int64) - 1, copies, run)


def global_traffic(version: str, x_shape=(2, 2, 8, 8), m: int = 4, k: int = 3, stride: int = 1,
                   padding="valid", seed: int = 0) -> dict:
    """One version of the layer on the emulator: per global array, bytes allocated and bytes read
    and written by its requests (``{"arrays": {name: {...}}, "allocated", "read", "written"}``)."""
    from .. import emulate
    from ..kernels import conv as K

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((m, x_shape[1], k, k)).astype(np.float32)
    runs = []

    def launch(kernel, grid, block, *args):
        runs.append(emulate(kernel, grid, block, *args))

    K.conv_with(version, x, w, launch, stride, padding)
    arrays: dict = {}
    for run in runs:
        mem = run.memory[run.memory.space == 0]
        for info in run.arrays:
            if info.space != "global":
                continue
            rows = mem[mem.array == info.id]
            entry = arrays.setdefault(info.name, {"allocated": int(np.prod(info.shape)) * info.itemsize,
                                                  "read": 0, "written": 0})
            entry["read"] += int(rows.width[rows.kind == 0].sum())
            entry["written"] += int(rows.width[rows.kind == 1].sum())
    return {"version": version, "arrays": arrays,
            "allocated": sum(a["allocated"] for a in arrays.values()),
            "read": sum(a["read"] for a in arrays.values()),
            "written": sum(a["written"] for a in arrays.values())}


def addresses_per_request(run, space: int = 3) -> np.ndarray:
    """Distinct addresses in each warp request to one memory space (3: constant), from the trace:
    1 everywhere means every request was a broadcast of one word to all its lanes."""
    mem = run.memory[run.memory.space == space]
    if len(mem) == 0:
        return np.zeros(0, np.int64)
    keys = np.stack([mem.gwarp.astype(np.int64), mem.site.astype(np.int64), mem.seq.astype(np.int64)], axis=1)
    _, req = np.unique(keys, axis=0, return_inverse=True)
    pairs = np.unique(np.stack([req.ravel(), mem.address.astype(np.int64)], axis=1), axis=0)
    return np.bincount(pairs[:, 0])
