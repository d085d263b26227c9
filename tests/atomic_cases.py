"""Kernels with atomics that several test files run (the race rule, the engines' agreement)."""

from numba import cuda


@cuda.jit
def cas_loop_add(x, acc):
    """Each thread adds x[i] to acc[i % 4] with a compare-and-swap retry loop."""
    i = cuda.grid(1)
    if i < x.size:
        slot = i % acc.size
        old = acc[slot]                          # the first guess, validated by the CAS
        while True:
            assumed = old
            old = cuda.atomic.cas(acc, slot, assumed, assumed + x[i])
            if old == assumed:
                break
