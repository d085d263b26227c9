"""Helpers shared by the chapter checks: launch wording, fresh random inputs, divergence."""

from __future__ import annotations

import numpy as np

from ..simt import WARP_SIZE, cdiv, percent  # noqa: F401  (cdiv: used by the chapters' checks)
from .report import failing_in, run_student_kernel, with_context  # noqa: F401  (with_context: re-exported)


def rng(seed: int | None = None) -> np.random.Generator:
    """A generator seeded from the OS (every check call gets new inputs), or from ``seed``
    (the hidden checks: the same inputs for every submission)."""
    return np.random.default_rng(seed)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def describe_launch(griddim: int, blockdim: int) -> str:
    """'3 blocks of 64 threads (192 threads)'."""
    return f"{plural(griddim, 'block')} of {blockdim} threads ({griddim * blockdim} threads in the grid)"


def global_thread(error, blockdim: int) -> int | None:
    """The 1-D global thread id of the thread an emulator error names, if it names one."""
    block, thread = getattr(error, "block", None), getattr(error, "thread", None)
    if block is None or thread is None:
        return None
    return int(block[0]) * blockdim + int(thread[0])


def run_1d(kernel, griddim: int, blockdim: int, *args, context: str, oob_hint: str | None = None,
           **opts):
    """``run_student_kernel`` for a 1-D launch, adding the launch to any failure message.

    An out-of-bounds access gets ``oob_hint`` (formatted with ``thread``, the global id of
    the faulting thread) after the emulator's own message.
    """
    from simtlab.emulator.errors import OutOfBoundsError

    def hint(failure):
        original = getattr(failure, "original", None)
        if oob_hint and isinstance(original, OutOfBoundsError):
            gid = global_thread(original, blockdim)
            return oob_hint.format(thread=gid if gid is not None else "?")
        return None

    with failing_in(context, hint):
        return run_student_kernel(kernel, griddim, blockdim, *args, **opts)


def race_message(run, race) -> str:
    """One data race as a student reads it: the element, the two threads, their lines, and how many."""
    (b1, t1), (b2, t2) = race.threads
    idx = ", ".join(str(i) for i in race.index)
    block = f" of block {b1[0]}" if b1 == b2 else ""
    return (f"Data race on {race.space} array {race.array}[{idx}]: thread {t1[0]}{block} {race.kinds[0]}s it at "
            f"line {race.lines[0]} `{run.source(race.lines[0]).strip()}` and thread {t2[0]} {race.kinds[1]}s it at "
            f"line {race.lines[1]} `{run.source(race.lines[1]).strip()}`, with no barrier between them "
            f"({len(run.races)} racy element{'s' if len(run.races) != 1 else ''} in all).")


def worst_warp(run):
    """The warp with the lowest SIMT efficiency, and its emptiest instruction; None if none diverges.

    Returns a dict with ``block``, ``warp`` (in its block), ``efficiency`` (of that warp),
    ``line``, ``source`` and ``lanes`` (the active lanes of its instruction with the fewest),
    ``count`` (how many lanes that is).
    """
    from simtlab.analysis.divergence import instructions

    ins = instructions(run.lines)
    if len(ins) == 0 or (ins.lanes >= WARP_SIZE).all():
        return None
    gwarps, inverse = np.unique(ins.gwarp, return_inverse=True)
    used = np.bincount(inverse, weights=ins.lanes)
    issued = np.bincount(inverse) * WARP_SIZE
    eff = used / issued
    w = int(np.argmin(eff))                  # first of the worst, in (block, warp) order
    mine = ins[inverse == w]
    emptiest = mine[int(np.argmin(mine.lanes))]
    mask = int(emptiest.mask)
    lanes = [lane for lane in range(WARP_SIZE) if mask >> lane & 1]
    return {
        "block": int(emptiest.block),
        "warp": int(emptiest.warp),
        "efficiency": float(eff[w]),
        "line": int(emptiest.line),
        "source": run.source(int(emptiest.line)).strip(),
        "lanes": lanes,
        "count": len(lanes),
    }


def format_lanes(lanes: list[int]) -> str:
    """'0, 2, 4, ..., 30' for long lists, all of them for short ones."""
    if len(lanes) <= 8:
        return ", ".join(str(x) for x in lanes)
    step = lanes[1] - lanes[0]
    if all(b - a == step for a, b in zip(lanes, lanes[1:])):
        return f"{lanes[0]}, {lanes[1]}, {lanes[2]}, ..., {lanes[-1]}"
    return ", ".join(str(x) for x in lanes[:6]) + ", ..."


def divergence_report(run) -> str:
    """A few lines naming the worst lines and the first divergent warp instruction."""
    from simtlab.analysis.divergence import divergent_lines

    lines = divergent_lines(run.lines)
    parts = []
    worst = worst_warp(run)
    if worst is not None:
        w = worst["warp"]
        parts.append(
            f"The least efficient warp is warp {w} of block {worst['block']} (threads {w * WARP_SIZE}.."
            f"{w * WARP_SIZE + WARP_SIZE - 1} of the block), at {percent(worst['efficiency'])}: it ran line "
            f"{worst['line']} `{worst['source']}` with only {worst['count']} of 32 lanes active "
            f"(lanes {format_lanes(worst['lanes'])})."
        )
    if lines:
        emptiest = sorted(lines.items(), key=lambda kv: kv[1])[:3]
        parts.append("Lines that ran with lanes idle (mean active lanes per warp instruction): " + "; ".join(
            f"line {ln} `{run.source(ln).strip()}`: {mean:.1f} of 32" for ln, mean in emptiest) + ".")
    return "\n".join(parts)
