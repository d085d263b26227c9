"""Checks for chapter 9 (tensor cores). The answers are plain functions of integers (the grader
interprets them, never runs them), checked against the course's models on the CPU:

- ``check_lane_of(lane_of)``: ``lane_of(row, col)``, the lane of the warp that holds element
  (row, col) of the A operand of ``mma.sync.m16n8k16`` (FP16/BF16), for all 256 elements, against
  :func:`simtlab.tensorcores.fragment_layout` (the PTX ISA's formulas).
- ``check_swizzle(stored_chunk)``: ``stored_chunk(row, chunk)``, where chunk ``chunk`` (16 bytes)
  of row ``row`` of an FP16 A tile with rows of 64 bytes (4 chunks) is stored: a permutation of
  each row's chunks, and every ldmatrix phase (8 rows, one chunk column) served in 1 wavefront by
  the course's bank model.
- ``check_ring(ring_slot, groups_to_wait)``: ``ring_slot(t, stages)``, the slot tile t uses in a
  ring of ``stages`` buffers, and ``groups_to_wait(stages)``, the N of ``cp.async.wait_group N``
  in the loop, against the pipeline model (:func:`simtlab.tensorcores.pipeline_schedule`): the
  tile computed has landed, and no copy overwrites a tile before it was computed.
"""

from __future__ import annotations

from .card import student_check
from .report import CheckFailed, call_student, passed

__all__ = ["check_lane_of", "check_swizzle", "check_ring", "ROW_CHUNKS"]

#: exercise 9.2: FP16 A tile of BK = 32 halves, 64 bytes a row
ROW_CHUNKS = 4


def _int(value, what: str) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what} must return an integer, got {value!r}") from None
    if out != value:
        raise CheckFailed(f"{what} must return an integer, got {value!r}")
    return out


# ------------------------------------------------------------------------------------------
# Exercise 9.1: which lane holds A[row, col] of mma.m16n8k16
# ------------------------------------------------------------------------------------------
@student_check("ch09.lane_of")
def check_lane_of(lane_of) -> None:
    """``lane_of(row, col)`` for 0 <= row < 16, 0 <= col < 16."""
    from ..tensorcores import fragment_layout

    layout = fragment_layout("m16n8k16", "fp16", "a")
    for row in range(16):
        for col in range(16):
            got = _int(call_student(lane_of, "lane_of", row, col), f"lane_of({row}, {col})")
            want = int(layout.lane[row, col])
            if got != want:
                holders = ", ".join(f"A[{r}, {c}]" for _, r, c in layout.elements_of(want)[:4])
                raise CheckFailed(
                    f"lane_of({row}, {col}) returned {got}, but lane {want} holds A[{row}, {col}] "
                    f"(lane {want} holds {holders}, ...). The PTX ISA numbers the lanes in groups of 4: "
                    f"groupID = lane // 4 picks the row (mod 8), the lane in its group two neighbouring "
                    f"columns (mod 8).")
    passed("lane_of gives the lane of all 256 elements of A for mma.m16n8k16: each lane holds 8 of them, "
           "two per 32-bit register")


# ------------------------------------------------------------------------------------------
# Exercise 9.2: a swizzle that serves every ldmatrix phase in one wavefront
# ------------------------------------------------------------------------------------------
@student_check("ch09.swizzle")
def check_swizzle(stored_chunk) -> None:
    """``stored_chunk(row, chunk)`` for rows of 4 chunks (FP16 A, BK = 32)."""
    from ..tensorcores import phase_offsets, phase_wavefronts

    rows = 128
    for row in range(rows):
        stored = [_int(call_student(stored_chunk, "stored_chunk", row, c), f"stored_chunk({row}, {c})")
                  for c in range(ROW_CHUNKS)]
        if sorted(stored) != list(range(ROW_CHUNKS)):
            raise CheckFailed(f"Row {row}'s chunks 0..3 go to chunks {stored}: a swizzle must move each chunk to "
                              f"another place in the same row, each place used once (an XOR of the chunk with "
                              f"a number 0..3 does that).")
    for first in range(0, rows, 8):
        for chunk in range(ROW_CHUNKS):
            def shifted(row, c, first=first):
                return call_student(stored_chunk, "stored_chunk", row + first, c)

            offsets = phase_offsets(ROW_CHUNKS, shifted, chunk)
            wavefronts = phase_wavefronts(offsets)
            if wavefronts > 1:
                banks = [int(o) // 4 % 32 for o in offsets]
                raise CheckFailed(
                    f"The ldmatrix phase that reads chunk {chunk} of rows {first}..{first + 7} needs {wavefronts} "
                    f"wavefronts: its 8 lanes start at banks {banks}. Rows are 64 bytes, so rows r and r + 2 "
                    f"start in the same bank: the XOR must differ between rows that are 2 apart, for all 8 rows "
                    f"of a phase (hint: use row // 2).")
    passed("every ldmatrix phase of the 128 x 32 FP16 A tile is served in 1 wavefront (it was 4 without the "
           "swizzle), and each row keeps all its chunks")


# ------------------------------------------------------------------------------------------
# Exercise 9.3: the ring's slot and the wait_group count
# ------------------------------------------------------------------------------------------
def _check_schedule(ring_slot, groups_to_wait, stages: int, tiles: int) -> None:
    """Replay the v6 loop with the student's slot and wait count: what is in each slot, which
    groups have landed, and what the compute reads."""
    wait = _int(call_student(groups_to_wait, "groups_to_wait", stages), f"groups_to_wait({stages})")
    if wait < 0:
        raise CheckFailed(f"groups_to_wait({stages}) returned {wait}: wait_group takes a count >= 0.")

    def slot(t):
        s = _int(call_student(ring_slot, "ring_slot", t, stages), f"ring_slot({t}, {stages})")
        if not 0 <= s < stages:
            raise CheckFailed(f"ring_slot({t}, {stages}) returned {s}: a ring of {stages} stages has slots "
                              f"0..{stages - 1}.")
        return s

    holder = {}                                 # slot -> tile whose copy went there last
    committed, landed = [], set()               # tiles by commit group (one group per prologue step / k-tile)
    for s in range(stages - 1):                 # prologue
        if s < tiles:
            holder[slot(s)] = s
        committed.append(s if s < tiles else None)
    for t in range(tiles):
        landed.update(g for g in committed[:max(len(committed) - wait, 0)] if g is not None)
        if t not in landed:
            raise CheckFailed(f"With {stages} stages and wait_group {wait}, tile {t} has not landed when it is "
                              f"computed: {len(committed)} groups are committed and wait_group {wait} waits for "
                              f"all but the newest {wait}, so tiles up to {len(committed) - wait - 1} have landed.")
        if holder.get(slot(t)) != t:
            raise CheckFailed(f"With {stages} stages, tile {t} is computed from slot {slot(t)}, but that slot holds "
                              f"tile {holder.get(slot(t))}: the copy of a later tile went into the same slot "
                              f"before tile {t} was used.")
        nxt = t + stages - 1
        if nxt < tiles:
            target = slot(nxt)
            if target in holder and holder[target] > t - 1 and holder[target] != nxt:
                raise CheckFailed(f"With {stages} stages, the copy of tile {nxt} (issued while tile {t} is "
                                  f"computed) goes into slot {target}, which holds tile {holder[target]}, not yet "
                                  f"computed: it would be overwritten.")
            holder[target] = nxt
        committed.append(nxt if nxt < tiles else None)
    if wait < stages - 2:
        raise CheckFailed(f"groups_to_wait({stages}) = {wait} is correct but waits too long: with {stages} stages "
                          f"{stages - 1} copies are in flight when the loop waits, and it needs only the oldest one; "
                          f"waiting for more than that leaves fewer tiles loading during the compute.")


@student_check("ch09.ring")
def check_ring(ring_slot, groups_to_wait) -> None:
    """``ring_slot(t, stages)`` and ``groups_to_wait(stages)`` for 2 to 6 stages, 1 to 12 tiles."""
    for stages in range(2, 7):
        for tiles in (1, 2, stages, 12):
            _check_schedule(ring_slot, groups_to_wait, stages, tiles)
    passed("tile t goes to slot t % S and the loop waits with wait_group S - 2: with 4 stages, 3 tiles are in "
           "flight while one is computed, and each lands before it is read")
