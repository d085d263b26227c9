"""Work and step complexity of a tree algorithm (scan, reduction), counted from the trace.

A barrier-synchronised tree algorithm works in *steps*: threads read elements of a shared (or
global) array, wait at a barrier or not, and write combined values back. The emulator records
every access with the block's barrier epoch, so both measures are counted, not guessed:

- **work**: writes to the array that combine values, i.e. writes by a thread that read the
  array since the epoch of its previous write (the load of the input and the write of an
  identity element are not work of the algorithm);
- **steps**: the number of barrier epochs in which such writes happen.

Hillis-Steele scans n elements with about n log2 n writes in log2 n steps; Blelloch with
about 3n writes (2n additions) in 2 log2 n steps. :func:`dataflow` gives the writes with the
elements each one was computed from; ``simtlab.plots.epochs`` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["WorkSteps", "Write", "dataflow", "work_and_steps", "combining_writes", "memory_work"]


@dataclass(frozen=True)
class WorkSteps:
    work: int
    steps: int
    epochs: tuple[int, ...]        # the barrier epochs that do work, in order

    def __iter__(self):            # work, steps = work_and_steps(...)
        return iter((self.work, self.steps))


def _array_id(run, array) -> int:
    return array if isinstance(array, (int, np.integer)) else run.array(array).id


@dataclass(frozen=True)
class Write:
    epoch: int
    thread: int
    index: int                      # the element written (flat index)
    sources: tuple[int, ...]        # the elements this thread read since its previous writing epoch


def dataflow(run, array, *, block: int = 0) -> list[Write]:
    """Every write to ``array`` in ``block``, in time order, with the elements it came from.

    A thread's reads of the array accumulate until it writes; all its writes in one epoch
    share the reads made since its previous writing epoch (so a down-sweep that reads a[ai]
    and a[bi], then writes both, links both reads to both writes). Reads before a barrier
    and writes after it (Hillis-Steele's double step) are linked too.
    """
    if run.memory is None:
        raise ValueError("this run has no trace: emulate with trace=True to follow the data flow")
    mem = run.memory
    aid = _array_id(run, array)
    rows = mem[(mem["array"] == aid) & (mem["block"] == block)]
    if len(rows) == 0:
        raise ValueError(f"block {block} never touched {array!r}: is it the right array and block?")
    pending: dict[int, set] = {}
    sources: dict[int, set] = {}
    write_epoch: dict[int, int] = {}
    out = []
    for thread, epoch, index, kind in zip(rows["thread"].tolist(), rows["epoch"].tolist(),
                                          rows["index"].tolist(), rows["kind"].tolist()):
        if kind == 0:
            pending.setdefault(thread, set()).add(index)
            continue
        if write_epoch.get(thread) != epoch:
            sources[thread] = set()
            write_epoch[thread] = epoch
        sources[thread] |= pending.pop(thread, set())
        out.append(Write(epoch, thread, index, tuple(sorted(sources[thread]))))
    return out


def combining_writes(run, array, *, block: int = 0) -> list[Write]:
    """The writes to ``array`` that combine values read from it (see the module's docstring)."""
    return [w for w in dataflow(run, array, block=block) if w.sources]


def work_and_steps(run, array, *, block: int = 0) -> WorkSteps:
    """Work (combining writes) and steps (epochs with such writes) of ``array`` in ``block``."""
    w = combining_writes(run, array, block=block)
    epochs = tuple(sorted({x.epoch for x in w}))
    return WorkSteps(work=len(w), steps=len(epochs), epochs=epochs)


def memory_work(run) -> WorkSteps:
    """Work and steps of a kernel that combines nothing in place (map, stencil, transpose):
    work = every memory access of the launch (global and shared, all blocks), steps = the
    barrier epochs any block needed (1 for a kernel without barriers)."""
    mem = run.memory
    if len(mem) == 0:
        return WorkSteps(work=0, steps=0, epochs=())
    epochs = tuple(int(e) for e in np.unique(mem["epoch"]))
    return WorkSteps(work=int(len(mem)), steps=len(epochs), epochs=epochs)
