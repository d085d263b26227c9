"""Checks for chapter 3 (communication patterns: coalescing, halos, transposes).

- ``check_scale_rows(scale_rows)``: out[r, c] = a[r, c] * s[r] with one thread per element in
  blocks of 32 x 8, and every global warp request at most 4 sectors (coalesced).
- ``check_stencil_shared(stencil_shared)``: the 7-point 1-D stencil with 'same' zero padding,
  and each block reads each element of x at most once, and only the elements it needs
  (its tile plus a halo of RADIUS on each side).
- ``check_transpose(transpose_padded)``: out = a.T, with every global request at most 4
  sectors and every shared request 1 wavefront (no bank conflicts).

Every check draws new random inputs on each call; results are checked on sizes that are not
multiples of the block, and the memory behaviour on sizes where rows are whole sectors.
"""

from __future__ import annotations

import numpy as np

from ._common import cdiv, plural, rng
from .report import CheckFailed, by_error_type, compare_arrays, failing_in, passed, poison, run_student_kernel
from .card import student_check

__all__ = ["check_scale_rows", "hidden_check_scale_rows", "check_stencil_shared", "check_transpose", "worst_global_request",
           "worst_shared_request"]

MAX_SECTORS = 4          # 32 lanes x 4 bytes = 128 bytes = 4 sectors of 32 bytes


def _random(shape, r):
    """float32 in [0.5, 1.5): never 0, so a missing term shows in the result."""
    return (r.random(shape) + 0.5).astype(np.float32)


def _launch(kernel, grid, block, *args, context: str, hints: dict | None = None):
    """Run the student's kernel on the emulator; failures get the launch and a hint by error type."""
    with failing_in(context, by_error_type(hints or {})):
        return run_student_kernel(kernel, grid, block, *args)


def _element(info, index: int) -> str:
    """'a[3, 5]' for flat ``index`` into the array described by ``info``."""
    idx = np.unravel_index(int(index), info.shape)
    return f"{info.name}[{', '.join(str(int(i)) for i in idx)}]"


def _where(run, block: int, warp: int) -> str:
    b = run.block_index(block)
    block_txt = f"({b[0]}, {b[1]})" if run.griddim[1] > 1 else str(b[0])
    return f"warp {warp} of block {block_txt}"


def _request_rows(run, req, space: int):
    mem = run.memory
    return mem[(mem.gwarp == req.gwarp) & (mem.site == req.site) & (mem.seq == req.seq)
               & (mem.space == space)]


def worst_global_request(run):
    """The global warp request with the most 32-byte sectors, described in words (None if none)."""
    from simtlab.analysis.coalescing import requests

    r = requests(run.memory)
    if len(r) == 0:
        return None
    req = r[int(np.argmax(r.sectors))]
    rows = _request_rows(run, req, 0)
    rows = rows[np.argsort(rows.lane, kind="stable")]
    info = next(a for a in run.arrays if a.id == int(req.array))
    verb = "read" if int(req.kind) == 0 else "write"
    lanes = ", ".join(f"lane {int(m.lane)} {verb}s {_element(info, m.index)}" for m in rows[:3])
    gap = ""
    if len(rows) > 1:
        gap = f" ({int(rows.address[1]) - int(rows.address[0])} bytes apart from lane to lane)"
    return {
        "sectors": int(req.sectors), "line": int(req.line), "array": info.name, "kind": verb,
        "text": (f"line {int(req.line)} `{run.source(int(req.line)).strip()}`: {_where(run, int(req.block), int(req.warp))} "
                 f"makes a {verb} request to {info.name} that touches {int(req.sectors)} sectors: "
                 f"{lanes}, ...{gap}"),
    }


def worst_shared_request(run):
    """The shared-memory warp request with the most wavefronts, in words (None if none)."""
    from simtlab.analysis.bank_conflicts import BANK_BYTES, BANKS, requests

    r = requests(run.memory)
    if len(r) == 0:
        return None
    req = r[int(np.argmax(r.wavefronts))]
    rows = _request_rows(run, req, 1)
    info = next(a for a in run.arrays if a.id == int(req.array))
    words = (rows.address // BANK_BYTES).astype(np.int64)
    banks = words % BANKS
    # the bank asked for the most distinct words, and the lanes asking it
    distinct = {b: np.unique(words[banks == b]) for b in np.unique(banks)}
    bank = max(distinct, key=lambda b: len(distinct[b]))
    hit = rows[banks == bank]
    hit = hit[np.argsort(hit.lane, kind="stable")]
    verb = "read" if int(req.kind) == 0 else "write"
    lanes = ", ".join(f"lane {int(m.lane)} {verb}s {_element(info, m.index)}" for m in hit[:4])
    return {
        "wavefronts": int(req.wavefronts), "line": int(req.line), "array": info.name, "kind": verb,
        "text": (f"line {int(req.line)} `{run.source(int(req.line)).strip()}`: {_where(run, int(req.block), int(req.warp))} "
                 f"makes a shared {verb} of {info.name} that needs {int(req.wavefronts)} wavefronts: "
                 f"{plural(len(distinct[bank]), 'different word')} in bank {int(bank)} "
                 f"({lanes}, ...)"),
    }


# ------------------------------------------------------------------------------------------
# Exercise 1: scale the rows of a matrix, coalesced
# ------------------------------------------------------------------------------------------
SCALE_BLOCK = (32, 8)


def _scale_grid(shape):
    rows, cols = shape
    return (cdiv(cols, SCALE_BLOCK[0]), cdiv(rows, SCALE_BLOCK[1]))


@student_check("ch03.scale_rows")
def check_scale_rows(scale_rows, shapes=None, seed: int | None = None) -> None:
    """``scale_rows(a, s, out)``: out[r, c] = a[r, c] * s[r]; blocks of 32 x 8, grid over (cols, rows).

    ``shapes``: (rows, cols) of ``a`` to test instead of the usual five.
    """
    r = rng(seed)
    shapes = shapes or [(int(r.integers(20, 60)), int(r.integers(33, 90))), (1, 1), (9, 31), (7, 33),
                        (int(r.integers(10, 30)), 64)]
    for shape in shapes:
        a, s = _random(shape, r), _random(shape[0], r)
        out = poison(shape, np.float32)
        grid = _scale_grid(shape)
        context = (f"Launch: a of shape {shape} (rows, cols), blocks of 32 x 8 threads, grid {grid} "
                   "(x over the columns, y over the rows).")
        run = _launch(scale_rows, grid, SCALE_BLOCK, a, s, out, context=context, hints={
            "OutOfBoundsError": "Guard the access: the grid may stick out past the last row and column."})
        with failing_in(context, "out[row, col] = a[row, col] * s[row], every element once."):
            compare_arrays(out, a * s[:, None], "out", index_names=("row", "col"))
        if shape[1] % 32 == 0:
            worst = worst_global_request(run)
            if worst and worst["sectors"] > MAX_SECTORS:
                raise CheckFailed(
                    f"{context}\nThe values are right, but the accesses are not coalesced: "
                    f"{worst['text']}.\nA warp is 32 threads with consecutive threadIdx.x; for its request "
                    f"to be 128 contiguous bytes (4 sectors), threadIdx.x must step along a row, i.e. pick "
                    "the column: `col, row = cuda.grid(2)`.")
    passed("scale_rows is right on every shape, and each warp reads and writes 128 contiguous bytes "
           f"(at most {MAX_SECTORS} sectors per request)")


#: the hidden check's shapes: one long row, one long column, odd squares, whole warps of columns
HIDDEN_SCALE_SHAPES = [(1, 257), (257, 1), (33, 33), (8, 96), (17, 65)]


@student_check("ch03.scale_rows")
def hidden_check_scale_rows(scale_rows) -> None:
    """The graded twin of :func:`check_scale_rows`: other odd shapes, a fixed seed."""
    check_scale_rows(scale_rows, shapes=HIDDEN_SCALE_SHAPES, seed=14_03)


# ------------------------------------------------------------------------------------------
# Exercise 2: 1-D stencil with the halo in shared memory
# ------------------------------------------------------------------------------------------
@student_check("ch03.stencil_shared")
def check_stencil_shared(stencil_shared) -> None:
    """``stencil_shared(x, w, out)``: 7-point stencil, zero padding, each block reads x once."""
    from simtlab.kernels.patterns import RADIUS, STENCIL_BLOCK, stencil1d_cpu

    r = rng()
    sizes = [int(r.integers(3, 7)) * STENCIL_BLOCK + int(r.integers(1, STENCIL_BLOCK)), 1,
             STENCIL_BLOCK - 1, STENCIL_BLOCK + 1, 2 * STENCIL_BLOCK]
    for n in sizes:
        x, w = _random(n, r), _random(2 * RADIUS + 1, r)
        out = poison(n, np.float32)
        grid = cdiv(n, STENCIL_BLOCK)
        context = (f"Launch: n = {n}, {plural(grid, 'block')} of {STENCIL_BLOCK} threads, RADIUS = {RADIUS} "
                   f"({2 * RADIUS + 1} weights).")
        run = _launch(stencil_shared, grid, STENCIL_BLOCK, x, w, out, context=context, hints={
            "OutOfBoundsError": ("Only load x[g] for 0 <= g < n; outside the array the tile holds 0 "
                                 "('same' zero padding)."),
            "UninitializedReadError": ("A thread read a shared slot before anyone wrote it: fill every slot "
                                       f"of the tile (STENCIL_BLOCK + 2 * RADIUS = {STENCIL_BLOCK + 2 * RADIUS}, "
                                       "zeros outside the array) and call cuda.syncthreads() before reading it."),
        })
        with failing_in(context, (
                f"out[i] = sum over k = 0..{2 * RADIUS} of w[k] * x[i + k - {RADIUS}], with x taken as 0 outside "
                "0..n-1. With the tile s holding x[block start - RADIUS ...], thread t uses s[t + k].")):
            compare_arrays(out, stencil1d_cpu(x, w), "out", index_names=("i",))
        reads = run.accesses("x", "read")
        key = reads.block.astype(np.int64) * n + reads.index
        uniq, counts = np.unique(key, return_counts=True)
        if len(counts) and counts.max() > 1:
            k = int(np.argmax(counts))
            block, index = divmod(int(uniq[k]), n)
            who = reads[key == uniq[k]]
            threads = ", ".join(str(int(t)) for t in who.thread[:6])
            raise CheckFailed(
                f"{context}\nThe values are right, but block {block} read x[{index}] {counts[k]} times "
                f"(threads {threads}{', ...' if len(who) > 6 else ''} on line {int(who.line[0])} "
                f"`{run.source(int(who.line[0])).strip()}`).\nEach block must read each element of x once: "
                "load the block's tile and its halo into shared memory, cuda.syncthreads(), then compute "
                "from shared memory.")
        lo_ok = reads.block.astype(np.int64) * STENCIL_BLOCK - RADIUS
        outside = (reads.index < lo_ok) | (reads.index >= lo_ok + STENCIL_BLOCK + 2 * RADIUS)
        if outside.any():
            m = reads[outside][0]
            lo = int(m.block) * STENCIL_BLOCK - RADIUS
            raise CheckFailed(
                f"{context}\nThe values are right, but block {int(m.block)} read x[{int(m.index)}] (thread "
                f"{int(m.thread)}, line {int(m.line)}), which it does not need: block {int(m.block)} needs only "
                f"x[{max(lo, 0)}..{min(lo + STENCIL_BLOCK + 2 * RADIUS, n) - 1}] (its {STENCIL_BLOCK} elements "
                f"and {RADIUS} on each side).")
    passed(f"stencil_shared is right (zero padding included), and each block reads its "
           f"{STENCIL_BLOCK} + 2 x {RADIUS} elements of x once")


# ------------------------------------------------------------------------------------------
# Exercise 3: transpose, coalesced and free of bank conflicts
# ------------------------------------------------------------------------------------------
@student_check("ch03.transpose")
def check_transpose(transpose_padded) -> None:
    """``transpose_padded(a, out)``: out = a.T; TILE x BLOCK_ROWS threads per TILE x TILE tile."""
    from simtlab.kernels.patterns import BLOCK_ROWS, TILE, transpose_launch

    r = rng()
    shapes = [(int(r.integers(2, 4)) * TILE, int(r.integers(2, 4)) * TILE),     # whole tiles: memory checked
              (int(r.integers(33, 100)), int(r.integers(33, 100))), (1, 1), (TILE - 1, TILE + 1),
              (TILE + 1, 5)]
    metrics = None
    for shape in shapes:
        a = _random(shape, r)
        out = poison(shape[::-1], np.float32)
        grid, block = transpose_launch(shape, 3)
        context = (f"Launch: a of shape {shape} (rows, cols), out of shape {shape[::-1]}, blocks of {TILE} x "
                   f"{BLOCK_ROWS} threads, grid {grid}: block (bx, by) moves the tile of a at rows "
                   f"by*{TILE}.., columns bx*{TILE}..")
        run = _launch(transpose_padded, grid, block, a, out, context=context, hints={
            "OutOfBoundsError": ("Guard both loops: a tile at the edge sticks out past the last row or column "
                                 "of a (reading) and of out (writing)."),
            "UninitializedReadError": ("A thread read a tile slot no thread wrote: call cuda.syncthreads() "
                                       "between filling the tile and reading it, and read only slots whose "
                                       "element exists."),
        })
        with failing_in(context, "out[c, r] must be a[r, c] for every element."):
            compare_arrays(out, a.T, "out", index_names=("row", "col"))
        if metrics is None:           # the first shape is whole tiles: rows are whole sectors
            worst = worst_global_request(run)
            if worst and worst["sectors"] > MAX_SECTORS:
                raise CheckFailed(
                    f"{context}\nThe values are right, but a global access is not coalesced: {worst['text']}.\n"
                    "Read a tile of a row by row into shared memory, and write out row by row from the tile: "
                    "in both, threadIdx.x must pick the column of the global array.")
            bank = worst_shared_request(run)
            if bank and bank["wavefronts"] > 1:
                raise CheckFailed(
                    f"{context}\nThe values are right and global accesses are coalesced, but shared memory has "
                    f"bank conflicts: {bank['text']}.\nWord w of shared memory lives in bank w % 32; a {TILE}x{TILE} "
                    f"tile puts a whole column in one bank. Give each tile row {TILE + 1} floats: "
                    "cuda.shared.array((TILE, TILE_PAD), float32) with a global TILE_PAD = TILE + 1 "
                    "(numba-cuda needs the shape as constants, not an expression).")
            metrics = (run.metrics["global_sectors_per_request"], run.metrics["shared_wavefronts_per_request"])
    passed(f"transpose_padded is right on every shape; on whole tiles each global request touches at most "
           f"{MAX_SECTORS} sectors (mean {metrics[0]:.1f}) and each shared request needs 1 wavefront")
