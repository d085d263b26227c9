"""Row views: ``row = m[i]`` of a 2-D array is a 1-D view in numba (``m[i]`` of a 3-D array a
2-D one, ``m[i, j]`` a 1-D one), in every memory space. Both engines run them; accesses
through a view are traced as accesses of the parent array and checked against the row.

Oracles: numba-cuda's own type inference (the view's type, and that each kernel compiles),
NumPy on the same inputs (the values), and the parent array's flat indices and addresses
computed here from its shape (the trace rows).
"""

import types

import numpy as np
import pytest
from numba import cuda, float32, int32, types as nbtypes

import simtlab
from simtlab.emulator import OutOfBoundsError, EmulationError

ENGINES = ["greenlet", "vector"]


@cuda.jit
def row_sums(m, out):
    i = cuda.grid(1)
    if i < m.shape[0]:
        row = m[i]
        s = float32(0)
        for j in range(len(row)):
            s += row[j]
        row[0] = s                      # a write through the view
        out[i] = s + row.shape[0] + row.size


@cuda.jit
def views_of_3d(m, out):
    i = cuda.grid(1)
    if i < m.shape[0]:
        plane = m[i]                    # 2-D
        line = m[i, 1]                  # 1-D
        m[i][0][0] = 7                  # chained views, written
        plane[2][3] += 1                # an augmented store through two views
        out[i] = plane[1, 2] + line[3] + plane[1][0] + len(plane) + plane.shape[1]


@cuda.jit
def shared_and_local_rows(x, out):
    t = cuda.threadIdx.x
    tile = cuda.shared.array((4, 8), int32)
    mine = cuda.local.array((2, 8), int32)
    row = tile[t // 8]
    row[t % 8] = x[t]
    lrow = mine[1]
    lrow[t % 8] = t
    cuda.syncthreads()
    other = tile[3 - t // 8]
    out[t] = other[t % 8] + lrow[t % 8] + mine[1, t % 8]


@cuda.jit
def atomic_on_a_row(m, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        cuda.atomic.add(m[i % 2], 1, 1)


@cuda.jit
def read_past_the_row(m, out):
    i = cuda.grid(1)
    if i < m.shape[0]:
        row = m[i]
        out[i] = row[m.shape[1]]        # inside m's storage (next row), outside the row


@cuda.jit
def row_out_of_the_array(m, out):
    i = cuda.grid(1)
    row = m[i]                          # 4 threads, 3 rows
    out[i] = row[0]


@cuda.jit
def view_per_lane_in_a_branch(m, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        row = m[0]
        if i % 2 == 1:
            row = m[i % m.shape[0]]
        out[i] = row[1]


@cuda.jit
def assign_whole_row(m, out):
    i = cuda.grid(1)
    if i < m.shape[0]:
        m[i] = 5                        # numba fills the row: the emulator refuses it clearly


# --- numba-cuda's typing: the views the emulator models --------------------------------------
@pytest.fixture
def numba_types(monkeypatch):
    """Variable -> numba type, from numba-cuda's type inference (compute capability 9.0)."""
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda.compiler import compile_cuda
    monkeypatch.setattr(dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=(9, 0)))

    def typemap(kernel, *argtypes):
        result = compile_cuda(kernel.py_func, nbtypes.void, argtypes, cc=(9, 0))
        return {k: str(v) for k, v in result.type_annotation.typemap.items()}
    return typemap


def test_numba_types_rows_as_views_and_compiles_writes_through_them(numba_types):
    f32_2d, f32_3d = nbtypes.float32[:, ::1], nbtypes.float32[:, :, ::1]
    out = nbtypes.float32[::1]
    assert numba_types(row_sums, f32_2d, out)["row"] == "array(float32, 1d, C)"
    found = numba_types(views_of_3d, f32_3d, out)
    assert (found["plane"], found["line"]) == ("array(float32, 2d, C)", "array(float32, 1d, C)")
    found = numba_types(shared_and_local_rows, nbtypes.int32[::1], nbtypes.int32[::1])
    assert (found["row"], found["lrow"]) == ("array(int32, 1d, C)", "array(int32, 1d, C)")
    numba_types(atomic_on_a_row, nbtypes.int32[:, ::1], nbtypes.int32[::1])
    numba_types(assign_whole_row, f32_2d, out)   # compiles in numba: a row fill


# --- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("trace", [True, False])
@pytest.mark.parametrize("engine", ENGINES)
def test_rows_of_a_2d_array_read_and_write_as_numpy(engine, trace):
    m = np.arange(20, dtype=np.float32).reshape(5, 4)
    out = np.zeros(5, np.float32)
    expected_m = m.copy()
    sums = m.sum(axis=1)
    expected_m[:, 0] = sums
    run = simtlab.emulate(row_sums, 1, 8, m, out, engine=engine, trace=trace)
    assert run.engine == engine, run.engine_reason
    np.testing.assert_array_equal(out, sums + 4 + 4)
    np.testing.assert_array_equal(m, expected_m)


@pytest.mark.parametrize("engine", ENGINES)
def test_views_of_a_3d_array(engine):
    m = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    out = np.zeros(2, np.float32)
    expected_out = m[:, 1, 2] + m[:, 1, 3] + m[:, 1, 0] + 3 + 4
    expected_m = m.copy()
    expected_m[:, 0, 0] = 7
    expected_m[:, 2, 3] += 1
    run = simtlab.emulate(views_of_3d, 1, 2, m, out, engine=engine)
    assert run.engine == engine, run.engine_reason
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_array_equal(m, expected_m)


@pytest.mark.parametrize("engine", ENGINES)
def test_rows_of_shared_and_local_arrays(engine):
    x = np.arange(32, dtype=np.int32) * 10
    out = np.zeros(32, np.int32)
    t = np.arange(32)
    tile = x.reshape(4, 8)
    expected = tile[3 - t // 8, t % 8] + 2 * t
    run = simtlab.emulate(shared_and_local_rows, 1, 32, x, out, engine=engine)
    assert run.engine == engine, run.engine_reason
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_atomic_on_a_row(engine):
    m = np.zeros((2, 3), np.int32)
    run = simtlab.emulate(atomic_on_a_row, 1, 7, m, np.zeros(7, np.int32), engine=engine)
    assert run.engine == engine, run.engine_reason
    np.testing.assert_array_equal(m, [[0, 4, 0], [0, 3, 0]])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_variable_holding_different_rows_on_different_lanes(engine):
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros(8, np.float32)
    i = np.arange(8)
    expected = np.where(i % 2 == 1, m[i % 3, 1], m[0, 1])
    run = simtlab.emulate(view_per_lane_in_a_branch, 1, 8, m, out, engine=engine)
    assert run.engine == engine, run.engine_reason
    np.testing.assert_array_equal(out, expected)


# --- the trace: accesses of the parent -------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_accesses_through_a_view_are_traced_as_the_parents(engine):
    m = np.arange(20, dtype=np.float32).reshape(5, 4)
    run = simtlab.emulate(row_sums, 1, 5, m, np.zeros(5, np.float32), engine=engine)
    info = run.array("m")
    assert [a.name for a in run.arrays].count("m") == 1      # no array of its own
    rows = run.accesses("m")
    reads, writes = rows[rows.kind == 0], rows[rows.kind == 1]
    # thread i reads m[i, 0..3], then writes m[i, 0]: flat indices of the parent
    np.testing.assert_array_equal(reads.index, np.arange(20))
    np.testing.assert_array_equal(reads.thread, np.repeat(np.arange(5), 4))
    np.testing.assert_array_equal(writes.index, np.arange(5) * 4)
    np.testing.assert_array_equal(rows.address, info.base + rows.index * 4)
    assert set(rows.array) == {info.id}


def test_both_engines_trace_views_alike(monkeypatch, tmp_path):
    """Outputs, trace rows and metrics of both engines compared (tests/engines_support.py)."""
    from engines_support import agreeing_run_engines
    from simtlab.emulator import launch as launch_module
    log = tmp_path / "engines.log"
    monkeypatch.setattr(launch_module, "_run_engines", agreeing_run_engines(log))
    m = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    simtlab.emulate(views_of_3d, 1, 2, m, np.zeros(2, np.float32))
    x = np.arange(32, dtype=np.int32)
    simtlab.emulate(shared_and_local_rows, 1, 32, x, np.zeros(32, np.int32))
    simtlab.emulate(row_sums, 1, 8, np.ones((5, 4), np.float32), np.zeros(5, np.float32))
    engines = [line.split("\t")[1] for line in log.read_text().splitlines()]
    assert engines == ["vector"] * 3


# --- bounds: the row, not the parent's storage -------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_an_index_past_the_row_is_out_of_bounds(engine):
    m = np.zeros((3, 4), np.float32)
    with pytest.raises(OutOfBoundsError, match=r"m\[4\].*shape \(4,\)"):
        simtlab.emulate(read_past_the_row, 1, 3, m, np.zeros(3, np.float32), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_row_outside_the_array_is_out_of_bounds(engine):
    m = np.zeros((3, 4), np.float32)
    with pytest.raises(OutOfBoundsError, match=r"takes the view m\[3\].*shape \(3, 4\)") as e:
        simtlab.emulate(row_out_of_the_array, 1, 4, m, np.zeros(4, np.float32), engine=engine)
    assert e.value.thread == (3, 0, 0)


@pytest.mark.parametrize("engine", ENGINES)
def test_assigning_a_whole_row_is_refused_with_a_fix(engine):
    m = np.zeros((3, 4), np.float32)
    with pytest.raises(EmulationError, match="assigns to m\\[0\\], a whole 1-D part") as e:
        simtlab.emulate(assign_whole_row, 1, 3, m, np.zeros(3, np.float32), engine=engine)
    assert not isinstance(e.value, OutOfBoundsError)
    assert "element by element" in str(e.value)
