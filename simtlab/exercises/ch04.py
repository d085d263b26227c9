"""Checks for chapter 4 (scan).

- ``check_race_free_scan(hillis_steele_scan)``: one block's inclusive sum scan, Hillis-Steele,
  with no data race in the emulator (in order and in a random order of warps and lanes).
- ``check_warp_exclusive_max(warp_exclusive_max)``: each warp's exclusive max-scan with
  shuffles: lane 0 gets the identity of max (-inf), and no shared memory is used.
- ``check_add_block_prefix(add_block_prefix)``: the third kernel of a scan of any length: every
  element of block b > 0 gets the scanned sum of blocks 0..b-1 added, exactly once.

Every check draws new random inputs on each call.
"""

from __future__ import annotations

import numpy as np

from ._common import WARP_SIZE as WARP
from ._common import describe_launch, race_message, rng, run_1d
from .report import CheckFailed, compare_arrays, failing_in, passed, poison
from .card import student_check

__all__ = ["check_race_free_scan", "check_warp_exclusive_max", "check_add_block_prefix", "hidden_check_add_block_prefix"]


def _small_ints(r, n):
    """Integer-valued float32 in -9..9 without 0: sums are exact, a skipped element shows."""
    v = r.integers(1, 10, n) * r.choice([-1, 1], n)
    return v.astype(np.float32)


# ------------------------------------------------------------------------------------------
# Exercise 1: Hillis-Steele without races
# ------------------------------------------------------------------------------------------
@student_check("ch04.race_free")
def check_race_free_scan(hillis_steele_scan) -> None:
    """``hillis_steele_scan(x, out)``: one block of n threads, out = inclusive sum scan of x, no races.

    Launched with 2 * n floats of dynamic shared memory (``cuda.shared.array(0, float32)``).
    """
    r = rng()
    for n in (32, 64, 128, 32 * int(r.integers(3, 8))):
        for order in ("in_order", "random"):
            x = _small_ints(r, n)
            out = poison(n, np.float32)
            context = (f"Launch: 1 block of {n} threads, x and out of {n} elements, {2 * n * 4} bytes of dynamic "
                       f"shared memory (2 x {n} floats), order={order!r}.")
            oob = "Thread {thread} went out of bounds: a step must only read temp[t - d] when t >= d."
            run = run_1d(hillis_steele_scan, 1, n, x, out, context=context, oob_hint=oob,
                         shared_bytes=2 * n * 4, order=order, seed=int(r.integers(1 << 30)))
            if run.races:
                raise CheckFailed(
                    f"{context}\n{race_message(run, run.races[0])}\n"
                    "In one step, thread t reads temp[t - d] while thread t - d writes temp[t - d]: which "
                    "happens first depends on the schedule. Read the neighbour into a local variable, call "
                    "cuda.syncthreads(), then write temp[t] (and sync again before the next step reads), or "
                    "read from one half of temp and write to the other, swapping halves every step.")
            with failing_in(context, "out[i] must be x[0] + x[1] + ... + x[i] (inclusive). Step d = 1, 2, 4, ... "
                            "adds temp[t - d] to temp[t] for t >= d; after the last step (d < n), "
                            "thread t writes its element to out[t]."):
                compare_arrays(out, np.cumsum(x.astype(np.float64)).astype(np.float32), "out",
                               index_names=("i",))
    passed("hillis_steele_scan scans blocks of 32 to 224 threads correctly, and the emulator finds no data "
           "race, in order or with warps and lanes shuffled")


# ------------------------------------------------------------------------------------------
# Exercise 2: exclusive max-scan of a warp, with shuffles
# ------------------------------------------------------------------------------------------
def _warp_exclusive_max_reference(x):
    out = np.empty_like(x)
    for w in range(0, x.size, WARP):
        seg = x[w:w + WARP]
        out[w] = -np.inf
        out[w + 1:w + WARP] = np.maximum.accumulate(seg)[:-1]
    return out


def _warp_max_hint(x, out, expected) -> str:
    wrong = np.flatnonzero(~np.isclose(out, expected))
    i = int(wrong[0])
    hint = (f"The first wrong element is i = {i}: warp {i // WARP}, lane {i % WARP}. out[i] is the maximum of "
            "x over the lanes before i's lane in the same warp.")
    inclusive = np.concatenate([np.maximum.accumulate(x[w:w + WARP]) for w in range(0, x.size, WARP)])
    if np.allclose(out, inclusive):
        hint += " out is the inclusive scan: shift it by one lane (cuda.shfl_up_sync(mask, v, 1))."
    elif np.all(wrong % WARP == 0):
        hint += (f" Only lane 0 of each warp is wrong: it has no lane before it, so it gets the identity of "
                 f"max, -inf (-math.inf), not {float(out[i]):g}: max(identity, a) must equal a for "
                 "every a, even negative ones.")
    return hint


@student_check("ch04.warp_max")
def check_warp_exclusive_max(warp_exclusive_max) -> None:
    """``warp_exclusive_max(x, out)``: out[i] = max of the elements before i in i's warp (-inf for lane 0)."""
    r = rng()
    for grid, block in ((1, 32), (2, 64), (int(r.integers(2, 5)), 128)):
        n = grid * block
        x = (r.random(n, dtype=np.float32) * 200 - 100).astype(np.float32)
        if grid > 1:
            x[:WARP] = -np.abs(x[:WARP]) - 1      # a warp of negative values: 0 is not the identity
        out = poison(n, np.float32)
        context = f"Launch: n = {n} elements, {describe_launch(grid, block)}; one element per thread."
        run = run_1d(warp_exclusive_max, grid, block, x, out, context=context,
                     oob_hint="Thread {thread} went out of bounds: thread i reads x[i] and writes out[i].")
        expected = _warp_exclusive_max_reference(x)
        with failing_in(context, lambda _: _warp_max_hint(x, out, expected)):
            compare_arrays(out, expected, "out", index_names=("i",))
        shared = int((run.memory["space"] == 1).sum())
        if shared:
            raise CheckFailed(f"{context}\nThe values are right, but the kernel made {shared} shared-memory accesses. "
                              "The lanes of a warp can exchange registers directly: use cuda.shfl_up_sync(0xFFFFFFFF, "
                              "v, d) and no shared array.")
    passed("warp_exclusive_max gives every warp's exclusive max-scan, with -inf for lane 0, using only shuffles")


# ------------------------------------------------------------------------------------------
# Exercise 3: the add-back step of a scan of any length
# ------------------------------------------------------------------------------------------
@student_check("ch04.add_back")
def check_add_block_prefix(add_block_prefix, blocks=(32, 64, 128), seed: int | None = None) -> None:
    """``add_block_prefix(out, scanned_sums)``: one thread per element; block b > 0 adds scanned_sums[b - 1].

    Before: out holds each block's own inclusive scan, scanned_sums the inclusive scan of the
    block totals. After: out is the scan of the whole array. ``blocks``: the block sizes tested.
    """
    r = rng(seed)
    for block in blocks:
        nblocks = int(r.integers(3, 7))
        n = (nblocks - 1) * block + int(r.integers(1, block))      # the last block is partial
        x = _small_ints(r, n)
        local = np.empty(n, np.float32)
        sums = np.empty(nblocks, np.float32)
        for b in range(nblocks):
            seg = x[b * block:(b + 1) * block]
            local[b * block:b * block + seg.size] = np.cumsum(seg)
            sums[b] = seg.sum()
        scanned = np.cumsum(sums).astype(np.float32)
        out = local.copy()
        context = (f"Launch: n = {n} elements, {describe_launch(nblocks, block)}; out holds each block's own scan, "
                   f"scanned_sums = {np.array2string(scanned, separator=', ')}.")
        oob = ("Thread {thread} went out of bounds: the last block is partial, so guard with i < out.size; and "
               "block 0 has no scanned_sums[b - 1].")
        run = run_1d(add_block_prefix, nblocks, block, out, scanned, context=context, oob_hint=oob)
        expected = np.cumsum(x.astype(np.float64)).astype(np.float32)
        def hint(_, out=out, expected=expected, local=local, scanned=scanned, block=block):
            i = int(np.flatnonzero(out != expected)[0])
            b = i // block
            return (f"Element i = {i} is thread {i % block} of block {b}; it needs "
                    + ("nothing added (block 0 has no blocks before it)" if b == 0 else
                       f"scanned_sums[{b - 1}] = {scanned[b - 1]:g} added (the sum of blocks 0..{b - 1})")
                    + f", and got {float(out[i] - local[i]):g} added.")

        with failing_in(context, hint):
            compare_arrays(out, expected, "out", index_names=("i",))
        info = [a for a in run.arrays if a.space == "global"][0]       # the first argument, out
        mem = run.memory
        writes = mem[(mem["array"] == info.id) & (mem["kind"] != 0)]
        counts = np.bincount(writes["index"], minlength=n)
        if counts.max() > 1:
            i = int(np.argmax(counts))
            raise CheckFailed(f"{context}\nThe result is right, but out[{i}] was written {counts[i]} times. "
                              "One thread per element, one write each: every extra write is 4 more bytes of "
                              "memory traffic.")
    passed("add_block_prefix turns per-block scans into the scan of the whole array, one write per element")


@student_check("ch04.add_back")
def hidden_check_add_block_prefix(add_block_prefix) -> None:
    """The graded twin of :func:`check_add_block_prefix`: blocks of 96 (no power of two), 256 and
    33 threads (no multiple of a warp), a fixed seed."""
    check_add_block_prefix(add_block_prefix, blocks=(96, 256, 33), seed=14_04)
