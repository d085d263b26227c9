"""Every kernel error is an EmulationError that names block, thread, line and the fix."""

import numpy as np
import pytest
from numba import cuda, float32

import simtlab
from simtlab.emulator import errors


@cuda.jit
def no_guard(x, out):
    i = cuda.grid(1)
    out[i] = x[i] * 2


def test_out_of_bounds_names_thread_index_and_fix():
    x = np.zeros(100, np.float32)
    with pytest.raises(simtlab.OutOfBoundsError) as e:
        simtlab.emulate(no_guard, 4, 32, x, np.zeros(100, np.float32))
    err = e.value
    assert isinstance(err, simtlab.EmulationError)
    assert err.block == (3, 0, 0) and err.thread == (4, 0, 0)     # first thread past the end
    assert "x[100]" in str(err) and "shape (100,)" in str(err)
    assert err.source.strip() == "out[i] = x[i] * 2"
    assert "if i <" in err.fix


@cuda.jit
def scatter_by_data(xs, ys):
    sh = cuda.shared.array(64, float32)
    i = cuda.grid(1)
    if i < xs.shape[0]:
        sh[ys[i]*8 + xs[i]] = 1.0


@pytest.mark.parametrize("engine", ["greenlet", "vector"])
def test_a_data_driven_index_names_its_value_and_the_data_not_the_grid(engine):
    """``sh[ys[i]*8 + xs[i]]`` past the end is not a grid with too many threads: the message
    says what the index was, which bound it broke and that the values read decide it."""
    xs, ys = np.array([0, 3, 9, 1], np.int32), np.array([0, 1, 7, 2], np.int32)
    bad = int(np.argmax(ys * 8 + xs >= 64))                        # the first thread past the end
    with pytest.raises(simtlab.OutOfBoundsError) as e:
        simtlab.emulate(scatter_by_data, 1, 4, xs, ys, engine=engine)
    err = e.value
    assert err.thread == (bad, 0, 0)
    assert f"index `ys[i] * 8 + xs[i]` = {ys[bad] * 8 + xs[bad]} is past the end of sh" in err.problem
    assert "shape (64,): indices 0..63" in err.problem
    assert "more threads" not in err.fix
    assert "values read from ys, xs" in err.fix and "within 0..63" in err.fix


@pytest.mark.parametrize("engine", ["greenlet", "vector"])
def test_a_2d_index_names_the_axis_it_broke(engine):
    @cuda.jit
    def fill(a):
        r, c = cuda.grid(2)
        a[r, c] = 1

    with pytest.raises(simtlab.OutOfBoundsError) as e:
        simtlab.emulate(fill, 1, (4, 4), np.zeros((4, 3), np.float32), engine=engine)
    err = e.value
    assert "index `c` = 3 is past the end of a's axis 1" in err.problem, err.problem
    assert "`if c < a.shape[1]:`" in err.fix and "along axis 1" in err.fix, err.fix


def test_negative_index_is_an_error_not_a_wrap():
    @cuda.jit
    def left_neighbour(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = x[i - 1]

    with pytest.raises(simtlab.OutOfBoundsError, match="negative index") as e:
        simtlab.emulate(left_neighbour, 1, 8, np.ones(8, np.float32), np.zeros(8, np.float32))
    assert e.value.thread == (0, 0, 0) and "x[-1]" in str(e.value)


def test_barrier_after_early_return_is_a_divergent_barrier():
    @cuda.jit
    def early_return(x):
        s = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        if t >= x.size:
            return
        s[t] = x[t]
        cuda.syncthreads()
        x[t] = s[x.size - 1 - t]

    with pytest.raises(simtlab.BarrierError) as e:
        simtlab.emulate(early_return, 1, 64, np.ones(40, np.float32))
    msg = str(e.value)
    assert "threads 0-39" in msg and "40-63" in msg and "syncthreads" in msg
    assert "guard the work" in e.value.fix


def test_barriers_in_both_branches_are_different_barriers():
    @cuda.jit
    def split(x):
        t = cuda.threadIdx.x
        if t < 16:
            cuda.syncthreads()
        else:
            cuda.syncthreads()
        x[t] = t

    with pytest.raises(simtlab.BarrierError, match="different barriers"):
        simtlab.emulate(split, 1, 32, np.zeros(32, np.int64))


def test_shuffle_whose_lanes_never_arrive():
    @cuda.jit
    def half(x):
        lane = cuda.laneid
        if lane < 16:
            x[lane] = cuda.shfl_down_sync(0xFFFFFFFF, x[lane], 1)

    with pytest.raises(simtlab.WarpCollectiveError) as e:
        simtlab.emulate(half, 1, 32, np.zeros(32, np.int64))
    assert "lane 16 has finished" in str(e.value)


def test_collective_lanes_that_disagree():
    @cuda.jit
    def mixed(x):
        lane = cuda.laneid
        if lane % 2 == 0:
            x[lane] = cuda.ballot_sync(0xFFFFFFFF, 1)
        else:
            x[lane] = cuda.shfl_sync(0xFFFFFFFF, lane, 0)

    with pytest.raises(simtlab.WarpCollectiveError, match="different warp collectives"):
        simtlab.emulate(mixed, 1, 32, np.zeros(32, np.int64))


def test_mask_naming_lanes_that_do_not_exist():
    @cuda.jit
    def partial(x):
        t = cuda.threadIdx.x
        x[t] = cuda.shfl_down_sync(0xFFFFFFFF, t, 1)

    with pytest.raises(simtlab.WarpCollectiveError, match="has only 16 threads"):
        simtlab.emulate(partial, 1, 48, np.zeros(48, np.int64))


def test_reading_shared_memory_nothing_wrote():
    @cuda.jit
    def missing_barrier(x, out):
        s = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        s[t] = x[t]
        out[t] = s[(t + 1) % 32]          # thread 0 reads s[1] before thread 1 wrote it

    with pytest.raises(simtlab.UninitializedReadError) as e:
        simtlab.emulate(missing_barrier, 1, 32, np.ones(32, np.float32), np.zeros(32, np.float32))
    assert e.value.thread == (0, 0, 0) and "s[1]" in str(e.value)
    assert "syncthreads" in e.value.fix


@pytest.mark.parametrize("grid, block, shared, match", [
    (1, 1025, 0, "at most 1024 threads per block"),
    (1, (32, 32, 2), 0, "at most 1024 threads per block"),
    (1, (1, 1, 65), 0, "blockDim.z = 65"),
    ((1, 65536), 32, 0, "gridDim.y = 65536"),
    (1, 32, 64 * 1024, "dynamic shared memory"),
    (0, 32, 0, "below 1"),
])
def test_launch_beyond_hardware_limits(grid, block, shared, match):
    with pytest.raises(simtlab.LaunchError, match=match):
        simtlab.emulate(no_guard, grid, block, np.zeros(1, np.float32), np.zeros(1, np.float32),
                        shared_bytes=shared)


def test_static_shared_memory_over_48_kib():
    @cuda.jit
    def big(x):
        a = cuda.shared.array(8192, float32)      # 32 KiB
        b = cuda.shared.array(8192, float32)      # 64 KiB in all
        a[0] = 1
        b[0] = 1

    with pytest.raises(simtlab.LaunchError, match="48 KiB") as e:
        simtlab.emulate(big, 1, 1, np.zeros(1, np.float32))
    assert "'b'" in str(e.value)


def test_runaway_kernel_is_stopped_by_its_loop_iterations():
    @cuda.jit
    def spin(x):
        i = 0
        while x[0] == 0:          # nothing ever writes x[0]
            i += 1

    with pytest.raises(simtlab.RunawayKernelError, match="10,000 loop iterations") as e:
        simtlab.emulate(spin, 1, 1, np.zeros(1, np.int64), trace=False, max_iterations=10_000)
    assert e.value.source.strip() == "while x[0] == 0:          # nothing ever writes x[0]"
    assert "max_iterations=40_000" in e.value.fix


def test_python_errors_in_kernels_and_unsupported_api():
    @cuda.jit
    def divide(x):
        x[0] = 1 // (cuda.threadIdx.x - 3)

    with pytest.raises(simtlab.KernelException, match="ZeroDivisionError") as e:
        simtlab.emulate(divide, 1, 8, np.zeros(1, np.int64))
    assert e.value.thread == (3, 0, 0)
    assert isinstance(e.value.__cause__, ZeroDivisionError)

    @cuda.jit
    def stub(x):
        raise NotImplementedError("Exercise 1")

    with pytest.raises(simtlab.KernelException) as e:
        simtlab.emulate(stub, 1, 1, np.zeros(1))
    assert isinstance(e.value.__cause__, NotImplementedError)

    @cuda.jit
    def exotic(x):
        x[0] = cuda.nanosleep(1)

    with pytest.raises(simtlab.EmulationError, match="cuda.nanosleep is not available"):
        simtlab.emulate(exotic, 1, 1, np.zeros(1))


def test_wrong_argument_count_and_gpu_arrays():
    with pytest.raises(simtlab.LaunchError, match="takes 2 arguments"):
        simtlab.emulate(no_guard, 1, 1, np.zeros(1))


def test_every_error_class_derives_from_emulation_error():
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.EmulationError)
