"""Chapter 9 checks: pass on the master's answers (also when the grader interprets them instead
of running them), fail on the student stubs and on typical mistakes."""

from __future__ import annotations

import pytest

from simtlab.exercises import ch09
from simtlab.exercises.report import CheckFailed, NotWrittenYet
from simtlab.grading.interpret import bind_answer

# the master's answers, as written in solutions/09_tensor_cores.ipynb
ANSWERS = '''
def lane_of(row, col):
    return 4 * (row % 8) + (col % 8) // 2


def stored_chunk(row, chunk):
    return chunk ^ ((row // 2) % 4)


def ring_slot(t, stages):
    return t % stages


def groups_to_wait(stages):
    return stages - 2
'''


@pytest.fixture(scope="module")
def answers():
    ns: dict = {}
    exec(ANSWERS, ns)
    return ns


@pytest.fixture(scope="module")
def interpreted():
    """The same answers as the grader binds them: host functions it interprets."""
    return bind_answer(ANSWERS, "<ch09 answers>", {})


def _stub(name):
    def stub(*args):
        raise NotWrittenYet(name)
    return stub


# ------------------------------------------------------------------ 9.1 lane_of
def test_lane_of_passes_on_the_answer(answers, interpreted, capsys):
    ch09.check_lane_of(answers["lane_of"])
    ch09.check_lane_of(interpreted["lane_of"])
    assert "256 elements" in capsys.readouterr().out


def test_lane_of_stub_fails():
    with pytest.raises(CheckFailed, match="not written yet"):
        ch09.check_lane_of(_stub("ch09.lane_of"))


@pytest.mark.parametrize("wrong", [
    lambda row, col: 4 * row + col // 2,                  # forgets that rows 8-15 reuse the lanes of 0-7
    lambda row, col: 4 * (row % 8) + col % 4,             # a lane holds two neighbouring columns, not one
    lambda row, col: (row % 8) + 8 * ((col % 8) // 2),    # groups and lanes swapped
])
def test_lane_of_fails_on_a_wrong_layout(wrong):
    with pytest.raises(CheckFailed, match="holds A"):
        ch09.check_lane_of(wrong)


# ------------------------------------------------------------------ 9.2 the swizzle
def test_swizzle_passes_on_the_answer(answers, interpreted, capsys):
    ch09.check_swizzle(answers["stored_chunk"])
    ch09.check_swizzle(interpreted["stored_chunk"])
    assert "1 wavefront" in capsys.readouterr().out


def test_swizzle_stub_fails():
    with pytest.raises(CheckFailed, match="not written yet"):
        ch09.check_swizzle(_stub("ch09.swizzle"))


@pytest.mark.parametrize("wrong, match", [
    (lambda row, chunk: chunk, "needs 4 wavefronts"),                   # no swizzle (v4)
    (lambda row, chunk: chunk ^ (row % 4), "needs 2 wavefronts"),        # the chapter's broken swizzle
    (lambda row, chunk: chunk ^ (row % 8), "each place used once"),     # the 8-chunk swizzle leaves the row
    (lambda row, chunk: (row // 2) % 4, "each place used once"),        # not a permutation
])
def test_swizzle_fails_with_its_conflicts(wrong, match):
    with pytest.raises(CheckFailed, match=match):
        ch09.check_swizzle(wrong)


# ------------------------------------------------------------------ 9.3 the ring
def test_ring_passes_on_the_answer(answers, interpreted, capsys):
    ch09.check_ring(answers["ring_slot"], answers["groups_to_wait"])
    ch09.check_ring(interpreted["ring_slot"], interpreted["groups_to_wait"])
    assert "wait_group S - 2" in capsys.readouterr().out


def test_ring_stub_fails():
    with pytest.raises(CheckFailed, match="not written yet"):
        ch09.check_ring(_stub("ch09.ring"), _stub("ch09.ring"))


@pytest.mark.parametrize("slot, wait, match", [
    (lambda t, s: t % s, lambda s: s - 1, "has not landed"),            # waits for one group too few
    (lambda t, s: (2 * t) % s, lambda s: s - 2, "holds tile"),          # two tiles share a slot: overwritten
    (lambda t, s: t % (s - 1) if s > 2 else t % s, lambda s: s - 2, "holds tile"),
    (lambda t, s: t % s, lambda s: 0, "waits too long"),                # right, but no overlap
    (lambda t, s: t, lambda s: s - 2, "has slots"),
])
def test_ring_fails_on_wrong_indexing(slot, wait, match):
    with pytest.raises(CheckFailed, match=match):
        ch09.check_ring(slot, wait)
