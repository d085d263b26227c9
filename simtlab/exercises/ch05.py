"""Checks for chapter 5 (reduction).

- ``check_sequential_tree(reduce_sequential)``: one partial sum per block of 256 threads, and
  no divergence in the first three tree levels (every warp instruction of those barrier
  epochs runs with all 32 lanes), no race.
- ``check_warp_shuffle(reduce_shuffle)``: one partial sum per block, and once fewer than 32
  partial sums are left the block writes no shared memory and passes no barrier: warp 0
  finishes with ``shfl_down_sync``.
- ``check_vecmat(vecmat)``: the Waterloo lab report's vector-matrix product fixed: ``block_out[row, b]`` holds
  block b's partial of row ``row``, every element of ``w`` is read exactly once.

Every check draws new random inputs on each call (``hidden_check_sequential_tree``: fixed odd
sizes and seed). Races are reported before wrong values: a missing barrier shows as the race
(threads and lines), not as wrong sums; a read of a slot the guard skipped, or past the end
of x, is reported as the bounds-check bug it is, not as a missing barrier.
"""

from __future__ import annotations

import numpy as np

from ..simt import WARP_SIZE, percent
from ._common import cdiv, describe_launch, format_lanes, global_thread, race_message, rng
from .report import CheckFailed, compare_arrays, failing_in, passed, poison, run_student_kernel
from .card import student_check

__all__ = ["check_sequential_tree", "hidden_check_sequential_tree", "check_warp_shuffle", "check_vecmat", "BLOCK"]

BLOCK = 256
#: tree levels whose every warp instruction must use all 32 lanes (steps 128, 64, 32)
FULL_LEVELS = 3


def _block_sums(x: np.ndarray, per_block: int) -> np.ndarray:
    pad = np.zeros(cdiv(x.size, per_block) * per_block, np.float64)
    pad[: x.size] = x
    return pad.reshape(-1, per_block).sum(axis=1).astype(np.float32)


def _shared_name(run) -> str:
    shared = [a for a in run.arrays if a.space == "shared"]
    if not shared:
        raise CheckFailed("The kernel uses no shared memory: the tree must live in a "
                          f"cuda.shared.array({BLOCK}, float32), one slot per thread.")
    return max(shared, key=lambda a: int(np.prod(a.shape))).name


def _unwritten_slot(failure, n: int) -> str | None:
    """A read of a tree slot no thread wrote, explained by whose slot it is (else None).

    Slot ``s[k]`` of block b holds element ``b * BLOCK + k``, loaded by thread k. When that
    element is past the end of x the guard skipped the slot instead of writing 0: a bounds-check
    bug, which no barrier fixes. Otherwise thread k had not loaded it yet: a missing barrier.
    """
    from ..emulator.errors import UninitializedReadError

    err = getattr(failure, "original", None)
    if not (isinstance(err, UninitializedReadError) and isinstance(err.index, int) and err.block is not None):
        return None
    b, t, k = int(err.block[0]), int(err.thread[0]), err.index
    element = b * BLOCK + k
    where = f"line {err.line} `{(err.source or '').strip()}`"
    if element >= n:
        return (f"A bounds-check bug (not a missing barrier): thread {t} of block {b} read {err.array}[{k}] at "
                f"{where}, a slot no thread wrote. It belongs to element x[{element}], past the end of x "
                f"(n = {n}), and your guard skipped its load. Threads past the end must still fill their slot, "
                f"with 0 (`{err.array}[t] = x[i] if i < x.size else 0.0`), so that the tree adds 0 for them.")
    return (f"A race: thread {t} of block {b} read {err.array}[{k}] at {where} before thread {k} of the block "
            f"wrote it in the load (its element x[{element}] is inside x): there is no cuda.syncthreads() "
            "between the load and the first level that reads it.")


def _oob_hint(failure, n: int) -> str | None:
    from ..emulator.errors import OutOfBoundsError

    err = getattr(failure, "original", None)
    if not isinstance(err, OutOfBoundsError) or err.array != "x":
        return None
    gid = global_thread(err, BLOCK)
    return (f"A bounds-check bug: thread {gid if gid is not None else '?'} went out of bounds (n = {n}). "
            "A thread whose element i = blockIdx.x * blockDim.x + threadIdx.x is not < x.size adds 0: it "
            "must not read x.")


def _check_partials(kernel, x, grid, context, hint, **opts):
    """Run the student's tree; report races first, then wrong partial sums (with ``hint``)."""
    partial = poison(grid, np.float32)
    with failing_in(context, hint=lambda f: _oob_hint(f, x.size), instead=lambda f: _unwritten_slot(f, x.size)):
        run = run_student_kernel(kernel, grid, BLOCK, x, partial, **opts)
    _race_report(run, context)
    with failing_in(context, hint):
        compare_arrays(partial, _block_sums(x, BLOCK), "partial", rtol=1e-5, atol=1e-4, index_names=("block",))
    return run, partial


#: how to fix a race in a tree in shared memory
TREE_RACE_FIX = ("Each level reads what the level before wrote: end every level with cuda.syncthreads(), outside "
                 "the `if`, so that all threads of the block reach it (and put one between the load and the first "
                 "level).")


def _race_report(run, context, fix=TREE_RACE_FIX):
    """Races come before values: a missing barrier shows as the race it causes, whatever the sums."""
    if run.races:
        raise CheckFailed(f"{context}\n{race_message(run, run.races[0])}\n{fix}")


# ------------------------------------------------------------------------------------------
# Exercise 1: a tree without divergence in its first levels
# ------------------------------------------------------------------------------------------
def _first_partial_warp(lines, epoch_rows):
    from ..analysis.divergence import instructions

    ins = instructions(lines[epoch_rows])
    bad = ins[ins.lanes < WARP_SIZE]
    return bad[0] if len(bad) else None


@student_check("ch05.sequential")
def check_sequential_tree(reduce_sequential, sizes=None, seed: int | None = None) -> None:
    """``reduce_sequential(x, partial)``: 256 threads per block, partial[b] = sum of block b's 256
    elements, and the first three tree levels free of divergence. ``sizes``: the lengths of x tested."""
    from ..analysis.levels import levels

    r = rng(seed)
    sizes = sizes or [BLOCK * int(r.integers(2, 5)), BLOCK * 2 + int(r.integers(1, BLOCK)),
                      int(r.integers(1, BLOCK))]
    for n in sizes:
        x = (r.random(n) * 2 - 0.5).astype(np.float32)
        grid = cdiv(n, BLOCK)
        context = f"Launch: n = {n} elements, {describe_launch(grid, BLOCK)}: one element per thread."
        hint = ("partial[b] must be the sum of x[b*256] .. x[b*256 + 255] (0 for elements past the end). "
                "Each level: if t < step: s[t] += s[t + step]; then cuda.syncthreads(); halve step, starting "
                "from step = 128.")
        run, _ = _check_partials(reduce_sequential, x, grid, context, hint)
        _race_report(run, context)
        name = _shared_name(run)
        rows = [row for row in levels(run, name) if row["writes"]]
        tree = rows[1:]                          # the first epoch that writes s is the load
        if len(tree) < FULL_LEVELS:
            raise CheckFailed(
                f"{context}\nThe sums are right, but the block wrote its shared array {name} in only "
                f"{len(rows)} barrier epochs: a tree over 256 values has 8 levels, each ended by "
                "cuda.syncthreads(). Do not let one thread add everything.")
        ep = run.lines.epoch
        for k, row in enumerate(tree[:FULL_LEVELS], 1):
            if row["simt_efficiency"] < 1.0:
                mine = (ep == row["epoch"]) & (run.lines.block == 0)
                worst = _first_partial_warp(run.lines, mine)
                lanes = [ln for ln in range(WARP_SIZE) if int(worst.mask) >> ln & 1]
                raise CheckFailed(
                    f"{context}\nThe sums are right, but tree level {k} (barrier epoch {row['epoch']}) diverges: "
                    f"SIMT efficiency {percent(row['simt_efficiency'], 1)}, it must be 100% in the first {FULL_LEVELS} "
                    f"levels. Warp {int(worst.warp)} of block 0 ran line {int(worst.line)} "
                    f"`{run.source(int(worst.line)).strip()}` with {len(lanes)} of 32 lanes "
                    f"(lanes {format_lanes(lanes)}).\n"
                    "Let the working threads be the contiguous t < step, and have thread t add s[t + step] "
                    "to s[t]: then whole warps work or whole warps skip, until step < 32.")
    passed("reduce_sequential sums every block right, and its first 3 tree levels (steps 128, 64, 32) run "
           "with all 32 lanes of every warp that works: no divergence")


#: the hidden check's lengths: one element, one short of a block, one past a block, 7 blocks and 3
HIDDEN_TREE_SIZES = [1, BLOCK - 1, BLOCK + 1, 7 * BLOCK + 3]


@student_check("ch05.sequential")
def hidden_check_sequential_tree(reduce_sequential) -> None:
    """The graded twin of :func:`check_sequential_tree`: other odd lengths, a fixed seed."""
    check_sequential_tree(reduce_sequential, sizes=HIDDEN_TREE_SIZES, seed=14_05)


# ------------------------------------------------------------------------------------------
# Exercise 2: finish with warp shuffles
# ------------------------------------------------------------------------------------------
@student_check("ch05.shuffle")
def check_warp_shuffle(reduce_shuffle) -> None:
    """``reduce_shuffle(x, partial)``: 256 threads per block, partial[b] = sum of block b's 256
    elements; below 32 partial sums, no shared-memory writes and no barriers."""
    from ..analysis.levels import levels

    r = rng()
    sizes = [BLOCK * int(r.integers(2, 5)), BLOCK + int(r.integers(1, BLOCK))]
    for n in sizes:
        x = (r.random(n) * 2 - 0.5).astype(np.float32)
        grid = cdiv(n, BLOCK)
        context = f"Launch: n = {n} elements, {describe_launch(grid, BLOCK)}: one element per thread."
        hint = ("partial[b] must be the sum of block b's 256 elements. Tree in shared memory while step > 32; "
                "then warp 0 (t < 32): v = s[t] + s[t + 32], and v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset) "
                "for offset = 16, 8, 4, 2, 1; thread 0 writes v.")
        run, _ = _check_partials(reduce_shuffle, x, grid, context, hint)
        _race_report(run, context)
        name = _shared_name(run)
        rows = levels(run, name)
        # below 32 partial sums the tree must not go on level by level in shared memory; one small
        # write (8 warp sums, as block_sum stores them for warp 0) is fine
        small = [row for row in rows if 0 < row["writes"] < WARP_SIZE]
        if len(small) > 1:
            counts = ", ".join(str(row["writes"]) for row in small)
            epochs = ", ".join(str(row["epoch"]) for row in small)
            raise CheckFailed(
                f"{context}\nThe sums are right, but block 0 still writes {counts} elements of its shared "
                f"array {name} in barrier epochs {epochs}: below 32 partial sums, warp 0 should add in "
                "registers with cuda.shfl_down_sync, not in shared memory behind barriers.")
        barriers = int(run.lines.epoch[run.lines.block == 0].max())
        if barriers > 4:
            raise CheckFailed(
                f"{context}\nThe sums are right, but each block passes {barriers} barriers; with the last 32 "
                "partial sums added by shuffles a block needs at most 4 (the load and the levels 128, 64, 32).")
        ep = run.lines.epoch
        last = (ep == ep.max()) & (run.lines.block == 0) & (run.lines.thread == 0)
        shuffles = sum(1 for site in run.lines.site[last] if "shfl" in run.source(0, site=int(site)))
        if shuffles < 5:
            raise CheckFailed(
                f"{context}\nThe sums are right and no barrier follows, but thread 0 ran a warp shuffle only "
                f"{shuffles} times after the last barrier: 32 values take 5 shuffle steps (offsets 16, 8, 4, 2, 1) "
                "with cuda.shfl_down_sync(0xFFFFFFFF, v, offset), all 32 lanes of warp 0 taking part.")
    passed(f"reduce_shuffle sums every block right; below 32 partial sums it writes no shared memory and "
           f"passes no barrier ({barriers} barriers per block, 5 shuffle steps)")


# ------------------------------------------------------------------------------------------
# Exercise 3: the Waterloo lab report's vector-matrix product, fixed
# ------------------------------------------------------------------------------------------
@student_check("ch05.vecmat")
def check_vecmat(vecmat) -> None:
    """``vecmat(v, w, block_out)``: grid (blocks per row, rows) of 256 threads; block_out[row, b]
    is block b's part of sum_k w[row, k] * v[k]; together the blocks read every w[row, k] once."""
    r = rng()
    cases = [(3, int(r.integers(700, 1500)), 2), (2, int(r.integers(50, 400)), 3), (4, 2 * BLOCK * 2 + 1, 2)]
    for rows, n, per_row in cases:
        v = (r.random(n) - 0.3).astype(np.float32)
        w = r.random((rows, n)).astype(np.float32)
        block_out = poison((rows, per_row), np.float32)
        context = (f"Launch: v of {n} elements, w of shape ({rows}, {n}); grid ({per_row}, {rows}) of "
                   f"{BLOCK} threads: {per_row} blocks per row, {per_row * BLOCK} threads per row.")
        with failing_in(context):
            run = run_student_kernel(vecmat, (per_row, rows), BLOCK, v, w, block_out)
        _race_report(run, context, "block_sum leaves the block's total in thread 0: only thread 0 writes it to "
                     "block_out; each thread's running sum lives in a register, not in a shared or global array.")
        reads = run.accesses("w", "read")
        count = np.bincount(reads.index, minlength=rows * n).reshape(rows, n)
        if (count == 0).any():
            row, col = (int(i) for i in np.argwhere(count == 0)[0])
            missing = int((count == 0).sum())
            raise CheckFailed(
                f"{context}\n{missing} elements of w were never read, the first w[{row}, {col}]. With "
                f"{per_row * BLOCK} threads per row and {n} columns, each thread must loop: "
                "k = blockIdx.x * blockDim.x + threadIdx.x, then k += gridDim.x * blockDim.x (the Waterloo lab report steps by "
                "blockDim.x * blockDim.x and skips columns).")
        if (count > 1).any():
            row, col = (int(i) for i in np.argwhere(count > 1)[0])
            raise CheckFailed(
                f"{context}\nw[{row}, {col}] was read {int(count[row, col])} times: each element of w belongs to "
                "exactly one thread of its row's blocks.")
        want = (w.astype(np.float64) @ v.astype(np.float64))
        sums = block_out.astype(np.float64).sum(axis=1)
        if np.isnan(sums).any():
            row = int(np.argwhere(np.isnan(block_out))[0][0])
            col = int(np.argwhere(np.isnan(block_out[row]))[0][0])
            raise CheckFailed(f"{context}\nblock_out[{row}, {col}] was never written: thread 0 of block "
                              f"({col}, {row}) must write its block's total there.")
        with failing_in(context, "Thread t of block (b, row) adds w[row, k] * v[k] over its k; the "
                        "block's total goes to block_out[row, b]."):
            compare_arrays(sums.astype(np.float32), want.astype(np.float32), "block_out summed over each row",
                           rtol=1e-4, atol=1e-3, index_names=("row",))
    passed("vecmat reads every element of w exactly once and its block partials add up to w @ v, for "
           "any number of columns")
