"""Checks for chapter 2 (warps, SIMT, occupancy, divergence).

- ``check_no_divergence(parity_no_divergence)``: even elements doubled, odd ones negated,
  and no warp runs both paths (SIMT efficiency exactly 100 % in the emulator).
- ``check_balanced_loops(triangle_sum_sorted)``: triangle sums with the threads of a warp
  given similar trip counts: SIMT efficiency within 5 points of what sorting the work gets
  (about 97 % on uniform trip counts, where the given kernel gets about 54 %).
- ``check_occupancy(warps_per_sm)``: resident warps per SM on an H100, by hand, against
  ``simtlab.hardware.occupancy``.

Every check draws new random inputs on each call.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..simt import percent
from ._common import describe_launch, divergence_report, plural, rng, run_1d
from .report import CheckFailed, call_student, compare_arrays, failing_in, passed, poison
from .card import student_check

__all__ = ["check_no_divergence", "check_balanced_loops", "check_occupancy", "hidden_check_occupancy", "balanced_threshold"]

#: how far (in efficiency) a balanced triangle_sum may stay below the sorted assignment
BALANCED_SLACK = 0.05


def _parity_reference(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[0::2] = 2 * x[0::2]
    out[1::2] = -x[1::2]
    return out


# ------------------------------------------------------------------------------------------
# Exercise 1: the parity kernel without divergence
# ------------------------------------------------------------------------------------------
@student_check("ch02.no_divergence")
def check_no_divergence(parity_no_divergence) -> None:
    """``parity_no_divergence(x, out)``: out = parity_cpu(x), n threads for n elements, no warp divergence."""
    r = rng()
    for n, grid, block in [(1024, 4, 256), (2048, 16, 128), (64 * int(r.integers(3, 12)), None, 64)]:
        grid = grid or n // block
        x = r.integers(-1000, 1000, n).astype(np.int32)
        out = poison(n, np.int32)
        context = f"Launch: n = {n} elements, {describe_launch(grid, block)}: one thread for each element."
        oob = "Thread {thread} went out of bounds: the element a thread works on must lie in 0..n-1."
        run = run_1d(parity_no_divergence, grid, block, x, out, context=context, oob_hint=oob)
        expected = _parity_reference(x)
        hint = ("Even elements are doubled (out[i] = 2 * x[i] for even i) and odd ones negated "
                "(out[i] = -x[i] for odd i). If thread t works on element i, write out[i] and read x[i], "
                "with i computed from t so that every element gets exactly one thread.")
        with failing_in(context, hint):
            compare_arrays(out, expected, "out", index_names=("i",))
        eff = run.metrics["simt_efficiency"]
        if eff < 1.0:
            raise CheckFailed(
                f"{context}\nThe results are right, but warps diverge: SIMT efficiency is {percent(eff, 1)}, it must be "
                f"100%.\n{divergence_report(run)}\n"
                "The branch must not depend on the lane: let the first n/2 threads (whole warps, since n/2 is a "
                "multiple of 32) take the even elements, i = 2 * t, and the other n/2 take the odd ones, "
                "i = 2 * (t - n/2) + 1. Then all 32 lanes of a warp agree on the condition."
            )
    passed("parity_no_divergence gives the same result as branch_by_parity, and every warp runs one path "
           "only: SIMT efficiency 100%")


# ------------------------------------------------------------------------------------------
# Exercise 2: balanced loops
# ------------------------------------------------------------------------------------------
def _triangle_reference(n_terms: np.ndarray) -> np.ndarray:
    return (n_terms.astype(np.int64) * (n_terms.astype(np.int64) - 1) // 2).astype(np.int32)


def _emulated_efficiency(kernel, grid: int, block: int, *args) -> float:
    import simtlab

    run = simtlab.emulate(kernel, grid, block, *args)
    return float(run.metrics["simt_efficiency"])


def balanced_threshold(n_terms: np.ndarray, grid: int, block: int) -> dict:
    """SIMT efficiencies on this input: the given kernel, sorted work, and what a balanced answer needs.

    ``given``: the chapter's ``triangle_sum`` (thread i loops n_terms[i] times);
    ``sorted``: the same loop with thread t on element ``argsort(n_terms)[t]``;
    ``needed``: ``sorted`` minus ``BALANCED_SLACK``.
    """
    from simtlab.kernels.divergence import triangle_sum, triangle_sum_by_order

    order = np.argsort(n_terms, kind="stable").astype(np.int32)
    out = np.zeros(n_terms.size, np.int32)
    given = _emulated_efficiency(triangle_sum, grid, block, n_terms, out)
    best = _emulated_efficiency(triangle_sum_by_order, grid, block, n_terms, order, out)
    return {"given": given, "sorted": best, "needed": best - BALANCED_SLACK}



@student_check("ch02.balanced_loops")
def check_balanced_loops(triangle_sum_sorted) -> None:
    """``triangle_sum_sorted(n_terms, order, out)``: thread t handles element order[t], warps balanced."""
    r = rng()
    cases = [
        (1024, 4, 256, r.integers(0, 64, 1024)),
        # a skewed load: most elements short, a few long ones, the shape of real irregular work
        (768, 6, 128, np.minimum(r.geometric(1 / 12, 768), 120)),
    ]
    effs = []
    for n, grid, block, terms in cases:
        n_terms = terms.astype(np.int32)
        order = np.argsort(n_terms, kind="stable").astype(np.int32)
        out = poison(n, np.int32)
        context = (f"Launch: n = {n} elements, {describe_launch(grid, block)}; trip counts "
                   f"{int(n_terms.min())}..{int(n_terms.max())}; order = np.argsort(n_terms).")
        oob = ("Thread {thread} went out of bounds: thread t works on element i = order[t], "
               "and both t and i lie in 0..n-1.")
        run = run_1d(triangle_sum_sorted, grid, block, n_terms, order, out, context=context, oob_hint=oob)
        expected = _triangle_reference(n_terms)
        def hint(_, out=out, expected=expected, order=order):
            if np.array_equal(out, expected[order]):
                return ("out holds the right sums in sorted order: thread t computes the sum of element "
                        "i = order[t], so it must write out[i], not out[t].")
            return "out[i] = 0 + 1 + ... + (n_terms[i] - 1), for every element i."

        with failing_in(context, hint):
            compare_arrays(out, expected, "out", index_names=("i",))
        eff = float(run.metrics["simt_efficiency"])
        ref = balanced_threshold(n_terms, grid, block)
        if eff < ref["needed"]:
            raise CheckFailed(
                f"{context}\nThe sums are right, but the warps are unbalanced: SIMT efficiency is {percent(eff, 1)}. On this "
                f"input the given triangle_sum gets {ref['given']:.1%} and sorted work gets {ref['sorted']:.1%}; "
                f"at least {ref['needed']:.1%} is needed.\n"
                f"{divergence_report(run)}\n"
                "A warp runs its loop as long as its longest lane. Let thread t = cuda.grid(1) work on element "
                "i = order[t]: order lists the elements by trip count, so the 32 lanes of a warp get nearly the "
                "same count."
            )
        effs.append((eff, ref["given"]))
    summary = "; ".join(f"{percent(e)} where the given kernel gets {percent(g)}" for e, g in effs)
    passed(f"triangle_sum_sorted is right and its warps are balanced: SIMT efficiency {summary}")


# ------------------------------------------------------------------------------------------
# Exercise 3: warps per SM, by hand
# ------------------------------------------------------------------------------------------
def _explain(block_size: int, regs: int) -> str:
    from simtlab.hardware import H100_SXM as H, occupancy

    occ = occupancy(block_size, regs)
    wpb = occ.warps_per_block
    lim = occ.limits
    per_warp = regs * 32
    lines = [
        f"A block of {block_size} threads is {plural(wpb, 'warp')}. On an H100 SM:",
        f"- threads: {H.max_threads_per_sm} // {block_size} = {lim['threads']} blocks",
        f"- warps: {H.max_warps_per_sm} // {wpb} = {lim['warps']} blocks",
        f"- blocks: at most {H.max_blocks_per_sm} blocks",
    ]
    if occ.registers_per_warp * wpb > H.max_registers_per_block:
        lines.append(f"- registers: a block needs {wpb} x {occ.registers_per_warp} = "
                     f"{wpb * occ.registers_per_warp} registers, more than the {H.max_registers_per_block} a block "
                     "may have: it cannot launch, 0 blocks")
    else:
        rounded = "" if per_warp == occ.registers_per_warp else f", rounded up to {occ.registers_per_warp}"
        fit = H.registers_per_sm // occ.registers_per_warp
        down = fit - fit % H.warp_allocation_granularity
        lines.append(
            f"- registers: {regs} x 32 lanes = {per_warp} per warp{rounded}; {H.registers_per_sm} // "
            f"{occ.registers_per_warp} = {fit} warps, rounded down to a multiple of "
            f"{H.warp_allocation_granularity}: {down} warps = {lim['registers']} whole blocks")
    lines.append(f"The smallest is {occ.blocks_per_sm} blocks ({occ.limiting}), so "
                 f"{occ.blocks_per_sm} x {wpb} = {occ.warps_per_sm} warps per SM.")
    return "\n".join(lines)


@student_check("ch02.occupancy")
def check_occupancy(warps_per_sm, cases=None, seed: int | None = None) -> None:
    """``warps_per_sm(block_size, registers_per_thread)``: resident warps per H100 SM (no shared memory).

    ``cases``: (block size, registers per thread) pairs to test instead of the usual ones.
    """
    from simtlab.hardware import occupancy

    r = rng(seed)
    if cases is not None:
        _compare_occupancy(warps_per_sm, cases, occupancy)
        return
    # One limit at a time first, so the message says which rule is missing.
    cases = [
        (256, 32),    # nothing binds below the 64-warp maximum: 8 blocks, 64 warps
        (1024, 16),   # threads per SM
        (32, 16),     # blocks per SM: 32 one-warp blocks are only half the warps
        (96, 16),     # whole blocks only: 21 blocks of 3 warps
        (256, 64),    # registers
        (256, 40),    # registers, rounded to groups of 4 warps
        (128, 33),    # registers per warp rounded up to 256
        (1024, 128),  # a block needing more registers than 65536: cannot launch
    ]
    for _ in range(60):
        cases.append((int(r.integers(1, 33)) * 32, int(r.integers(16, 129))))
    _compare_occupancy(warps_per_sm, cases, occupancy)


def _compare_occupancy(warps_per_sm, cases, occupancy) -> None:
    for block_size, regs in cases:
        got = call_student(warps_per_sm, "warps_per_sm", block_size, regs)
        want = occupancy(block_size, regs).warps_per_sm
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            raise CheckFailed(f"warps_per_sm({block_size}, {regs}) returned {got!r}; it must return a whole number "
                              "of warps (an int): use // for the divisions")
        if int(got) != want:
            raise CheckFailed(f"warps_per_sm({block_size}, {regs}) returned {got}, expected {want}.\n"
                              + _explain(block_size, regs))
    passed(f"warps_per_sm agrees with the occupancy calculator on {len(cases)} cases: threads, warps, blocks and "
           "registers per SM each cap the number of whole blocks, and the smallest cap wins")


@student_check("ch02.occupancy")
def hidden_check_occupancy(warps_per_sm) -> None:
    """The graded twin of :func:`check_occupancy`: block sizes that are no multiple of 32 (a partial
    warp still takes a whole warp), a fixed seed."""
    r = rng(14_02)
    cases = [(33, 32), (1, 255), (100, 40), (1000, 24), (65, 64), (992, 33), (640, 72)]
    cases += [(int(r.integers(1, 1025)), int(r.integers(16, 256))) for _ in range(40)]
    check_occupancy(warps_per_sm, cases=cases)
