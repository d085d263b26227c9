"""What a GEMM version asks of memory, read from the emulator's trace of a real launch.

    run = trace_version("v3 shared tiles", 32, 32, 32)
    profile(run)          # loads, reuse per loaded element, sectors per request, wavefronts
    tile_map(run, "a", block=0)   # which phase loaded each element of A, and how often

Everything here counts trace rows: a load is one read of ``a`` or ``b`` in global memory by one
thread, so padded tiles (zeros filled in without a load) do not count.
"""

from __future__ import annotations

import numpy as np

from ..keys import element_rows
from . import bank_conflicts, coalescing

__all__ = ["trace_version", "profile", "tile_map", "loads_per_element", "shared_loads_per_fma"]


def trace_version(version: str, m: int, n: int, k: int, *, seed: int = 0, kernel=None):
    """Emulate ``version`` of kernels/gemm.py on random M x K and K x N matrices, traced.

    ``kernel`` replaces the version's kernel (a student's, with the same launch plan).
    Returns the :class:`~simtlab.emulator.Run`; ``run.gemm`` holds ``(a, b, c, (m, n, k))``.
    """
    from .. import emulate
    from ..kernels import gemm as G

    rng = np.random.default_rng(seed)
    a = rng.random((m, k), dtype=np.float32) + np.float32(0.5)
    b = rng.random((k, n), dtype=np.float32) + np.float32(0.5)
    c = np.zeros((m, n), np.float32)
    grid, block = G.launch_plan(version, m, n)
    run = emulate(kernel if kernel is not None else G.kernel_of(version), grid, block, a, b, c)
    run.gemm = (a, b, c, (m, n, k))
    return run


def _per_array(reqs, run, name):
    rows = reqs[reqs.array == run.array(name).id]
    return rows


def profile(run) -> dict:
    """Per-launch figures of a traced GEMM run (``trace_version``):

    ``loads``: global reads of A and B; ``reuse``: FMA operands per loaded element (1 when
    every product reads its own operands, TILE for v3); ``loads_per_flop``; sectors per warp
    request for A and B reads and C writes; shared wavefronts per request (1 = no conflict).
    """
    m, n, k = run.gemm[3]
    mem = run.memory
    reads = mem[(mem.space == 0) & (mem.kind == 0)]
    ids = {run.array("a").id, run.array("b").id}
    loads = int(np.isin(reads.array, list(ids)).sum())
    greq = coalescing.requests(mem, 0)
    sreq = bank_conflicts.requests(mem)
    flops = 2 * m * n * k

    def sectors(name):
        r = _per_array(greq, run, name)
        return float(r.sectors.mean()) if len(r) else None

    return {"loads": loads, "flops": flops,
            "reuse": flops / loads if loads else None,
            "loads_per_flop": loads / flops,
            "sectors_a": sectors("a"), "sectors_b": sectors("b"), "sectors_c": sectors("c"),
            "shared_requests": int(len(sreq)),
            "wavefronts_per_request": float(sreq.wavefronts.mean()) if len(sreq) else None,
            "bank_conflicts": int((sreq.wavefronts - sreq.ideal).sum()) if len(sreq) else 0}


def shared_loads_per_fma(run) -> float:
    """Shared-memory load instructions per multiply-add of a traced GEMM run (``trace_version``):
    every thread's shared reads (each is one instruction for its warp, whatever the lanes share)
    over the M*N*K multiply-adds. Exact when the tile divides M, N and K: padded tiles also
    multiply zeros (more multiply-adds than M*N*K for the same loads)."""
    m, n, k = run.gemm[3]
    mem = run.memory_columns
    reads = int(((mem.space == 1) & (mem.kind == 0)).sum())
    return reads / (m * n * k)


def loads_per_element(run, name: str, block: int | None = None, thread: int | None = None) -> np.ndarray:
    """How many times each element of ``name`` ("a" or "b") was read from global memory (by
    ``block``, or by the whole grid; by one ``thread`` of it, or by all): an int array of the
    matrix's shape."""
    info = run.array(name)
    rows = run.accesses(name, "read", block=block)
    if thread is not None:
        rows = rows[rows.thread == thread]
    _, index = element_rows(rows.index, rows.width, info.itemsize)     # a float4: 4 elements
    return np.bincount(index, minlength=int(np.prod(info.shape))).reshape(info.shape)


def tile_map(run, name: str, block: int = 0, depth: int | None = None) -> np.ndarray:
    """For one block: the phase in which each element of ``name`` was loaded (-1: never).

    A phase is one step of the main loop along K, ``depth`` elements deep (the version's tile
    depth; by default found from the trace: the K-span of the block's first barrier epoch).
    An element loaded in two phases keeps the later one: ``loads_per_element`` counts them.
    """
    info = run.array(name)
    rows = run.accesses(name, "read", block=block)
    out = np.full(info.shape, -1, np.int64)
    if len(rows) == 0:
        return out
    which, index = element_rows(rows.index, rows.width, info.itemsize)
    rows = rows[which]
    r, c = np.unravel_index(index, info.shape)
    kpos = c if name == "a" else r                     # A's columns and B's rows run along K
    if depth is None:
        first = rows.epoch == rows.epoch.min()
        depth = int(kpos[first].max() - kpos[first].min() + 1)
    out[r, c] = kpos // depth
    return out
