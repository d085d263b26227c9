"""The emulator runs every part of numba-cuda's kernel API the course uses, like a GPU would."""

import math

import numpy as np
import pytest
from numba import cuda, float32, int32

import simtlab


def test_indices_in_three_dimensions():
    @cuda.jit
    def ids(out):
        x, y, z = cuda.grid(3)
        gx, gy, gz = cuda.gridsize(3)
        lin = (z * gy + y) * gx + x
        out[lin, 0] = cuda.threadIdx.x + 10 * cuda.threadIdx.y + 100 * cuda.threadIdx.z
        out[lin, 1] = cuda.blockIdx.x + 10 * cuda.blockIdx.y + 100 * cuda.blockIdx.z
        out[lin, 2] = cuda.blockDim.x * cuda.gridDim.y
        out[lin, 3] = cuda.laneid
        out[lin, 4] = cuda.warpsize

    grid, block = (2, 3, 2), (4, 2, 3)
    out = np.full((2 * 4 * 3 * 2 * 2 * 3, 5), -1, np.int64)
    simtlab.emulate(ids, grid, block, out)
    gx, gy = 2 * 4, 3 * 2
    for bz in range(2):
        for by in range(3):
            for bx in range(2):
                for tz in range(3):
                    for ty in range(2):
                        for tx in range(4):
                            x, y, z = bx * 4 + tx, by * 2 + ty, bz * 3 + tz
                            row = out[(z * gy + y) * gx + x]
                            linear_tid = tx + 4 * ty + 8 * tz
                            assert list(row) == [tx + 10 * ty + 100 * tz, bx + 10 * by + 100 * bz,
                                                 4 * 3, linear_tid % 32, 32]


def test_one_and_two_dimensional_grid_helpers():
    @cuda.jit
    def k(out1, out2):
        i = cuda.grid(1)
        out1[i] = cuda.gridsize(1)
        x, y = cuda.grid(2)
        w, h = cuda.gridsize(2)
        out2[i] = y * w + x + 1000 * h

    a, b = np.zeros(12, np.int64), np.zeros(12, np.int64)
    simtlab.emulate(k, 3, 4, a, b)
    assert (a == 12).all()
    assert list(b) == [i + 1000 for i in range(12)]


def test_shared_memory_is_per_block_and_syncthreads_orders_it():
    @cuda.jit
    def reverse_in_block(x, out):
        s = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * 64 + t
        s[t] = x[i]
        cuda.syncthreads()
        out[i] = s[63 - t]

    x = np.random.rand(256).astype(np.float32)
    out = np.zeros_like(x)
    run = simtlab.emulate(reverse_in_block, 4, 64, x, out, order="random", seed=3)
    np.testing.assert_array_equal(out, x.reshape(4, 64)[:, ::-1].reshape(-1))
    assert run.metrics["races"] == 0


def test_dynamic_shared_memory_and_2d_static_shared():
    @cuda.jit
    def k(x, out):
        dyn = cuda.shared.array(0, float32)
        tile = cuda.shared.array((2, 4), int32)
        t = cuda.threadIdx.x
        dyn[t] = x[t] * 2
        tile[t // 4, t % 4] = t
        cuda.syncthreads()
        out[t] = dyn[7 - t] + tile[(7 - t) // 4, (7 - t) % 4]

    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    simtlab.emulate(k, 1, 8, x, out, shared_bytes=8 * 4)
    np.testing.assert_array_equal(out, (2 * x + np.arange(8))[::-1])


def test_local_and_const_arrays_and_device_functions_and_math():
    table = np.array([1.0, 2.0, 3.0, 4.0], np.float32)

    @cuda.jit(device=True)
    def poly(v, coeffs):
        acc = 0.0
        for j in range(coeffs.shape[0]):
            acc = acc * v + coeffs[j]
        return acc

    @cuda.jit
    def k(x, out):
        coeffs = cuda.const.array_like(table)
        loc = cuda.local.array(4, float32)
        i = cuda.grid(1)
        for j in range(4):
            loc[j] = coeffs[3 - j]
        out[i] = poly(x[i], loc) + math.sqrt(abs(x[i])) + math.exp(0.0)

    x = np.linspace(-1, 1, 32).astype(np.float32)
    out = np.zeros_like(x)
    run = simtlab.emulate(k, 1, 32, x, out)
    expected = np.polyval(table[::-1], x) + np.sqrt(np.abs(x)) + 1
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    spaces = {a.name: a.space for a in run.arrays}
    assert spaces == {"x": "global", "out": "global", "coeffs": "const", "loc": "local"}


def test_syncthreads_count_and_or():
    @cuda.jit
    def k(out):
        t = cuda.threadIdx.x
        c = cuda.syncthreads_count(1 if t % 3 == 0 else 0)
        a = cuda.syncthreads_and(1 if t < 100 else 0)
        o = cuda.syncthreads_or(1 if t == 5 else 0)
        n = cuda.syncthreads_and(1 if t < 10 else 0)
        out[t] = c * 1000 + a * 100 + o * 10 + n

    out = np.zeros(64, np.int64)
    simtlab.emulate(k, 1, 64, out)
    assert (out == 22 * 1000 + 100 + 10 + 0).all()

    @cuda.jit
    def with_bool(out):
        out[0] = cuda.syncthreads_count(cuda.threadIdx.x < 3)

    with pytest.raises(simtlab.EmulationError, match="int predicate"):
        simtlab.emulate(with_bool, 1, 8, out)


def test_atomics_combine_all_threads():
    @cuda.jit
    def k(x, out):
        i = cuda.grid(1)
        cuda.atomic.add(out, 0, x[i])
        cuda.atomic.sub(out, 1, x[i])
        cuda.atomic.max(out, 2, x[i])
        cuda.atomic.min(out, 3, x[i])
        cuda.atomic.or_(out, 4, x[i])
        cuda.atomic.xor(out, 5, x[i])
        cuda.atomic.and_(out, 6, x[i])

    x = np.random.default_rng(1).integers(1, 1000, 96).astype(np.int64)
    out = np.array([0, 0, -1, 10**6, 0, 0, -1], np.int64)
    run = simtlab.emulate(k, 3, 32, x, out, order="random", seed=4)
    assert list(out) == [x.sum(), -x.sum(), x.max(), x.min(), np.bitwise_or.reduce(x),
                         np.bitwise_xor.reduce(x), np.bitwise_and.reduce(x)]
    assert run.metrics["races"] == 0              # atomics never race with each other


def test_atomic_cas_exch_inc_dec_and_returned_old_values():
    @cuda.jit
    def k(counter, tickets, flags):
        i = cuda.grid(1)
        tickets[i] = cuda.atomic.add(counter, 0, 1)       # old value: a unique ticket
        cuda.atomic.cas(flags, 0, 0, 7)                   # only the first thread succeeds
        cuda.atomic.exch(flags, 1, 3)
        cuda.atomic.inc(flags, 2, 4)                      # wraps to 0 after 4
        cuda.atomic.dec(flags, 3, 10)

    counter = np.zeros(1, np.int64)
    tickets = np.full(40, -1, np.int64)
    flags = np.zeros(4, np.uint32)
    simtlab.emulate(k, 1, 40, counter, tickets, flags, order="random", seed=7)
    assert counter[0] == 40
    assert sorted(tickets) == list(range(40))
    assert flags[0] == 7 and flags[1] == 3
    assert flags[2] == 40 % 5                               # 0,1,2,3,4,0,... 40 increments
    # dec from 0 wraps to 10 first, then counts down: 10, 9, ..., 0, 10, ...
    assert flags[3] == (10 - (40 - 1) % 11)


def test_shuffles_and_votes():
    @cuda.jit
    def k(x, out):
        t = cuda.threadIdx.x
        v = x[t]
        total = v
        off = 16
        while off > 0:
            total += cuda.shfl_down_sync(0xFFFFFFFF, total, off)
            off //= 2
        out[t, 0] = cuda.shfl_sync(0xFFFFFFFF, total, 0)        # broadcast lane 0's sum
        out[t, 1] = cuda.shfl_up_sync(0xFFFFFFFF, v, 1)
        out[t, 2] = cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
        out[t, 3] = cuda.ballot_sync(0xFFFFFFFF, v % 2 == 1)
        out[t, 4] = cuda.all_sync(0xFFFFFFFF, v >= 0)
        out[t, 5] = cuda.any_sync(0xFFFFFFFF, v == 5)
        out[t, 6] = cuda.eq_sync(0xFFFFFFFF, v < 100)
        cuda.syncwarp()

    x = np.arange(64, dtype=np.int64)
    out = np.zeros((64, 7), np.int64)
    simtlab.emulate(k, 1, 64, x, out)
    for w in range(2):
        lanes = x[w * 32:(w + 1) * 32]
        o = out[w * 32:(w + 1) * 32]
        assert (o[:, 0] == lanes.sum()).all()
        assert list(o[:, 1]) == [lanes[0]] + list(lanes[:-1])
        assert list(o[:, 2]) == [lanes[i ^ 1] for i in range(32)]
        ballot = sum(1 << i for i in range(32) if lanes[i] % 2)      # lanes 1, 3, ..., 31
        assert (o[:, 3] == ballot - (1 << 32)).all()     # bit 31 set: negative, as on a GPU
        assert (o[:, 4] == 1).all()
        assert (o[:, 5] == int(w == 0)).all()
        assert (o[:, 6] == 1).all()


def test_activemask_inside_a_branch_and_partial_mask_shuffle():
    @cuda.jit
    def k(out):
        lane = cuda.laneid
        if lane < 10:
            m = cuda.activemask()
            out[lane] = m
            out[lane] += 1000 * cuda.shfl_sync(m, lane, 9)
        else:
            out[lane] = cuda.activemask()

    out = np.zeros(32, np.int64)
    simtlab.emulate(k, 1, 32, out)
    assert (out[:10] == 0x3FF + 9000).all()
    assert (out[10:] == 0xFFFFFFFF - 0x3FF).all()


@cuda.jit
def _arrival(counter, ticket_of_block, ticket_of_warp, ticket_of_lane):
    """Each block's thread 0, each warp's lane 0 and every lane of warp 0 take a ticket: the
    tickets record the order in which the scheduler ran blocks, warps and lanes."""
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if t == 0:
        ticket_of_block[b] = cuda.atomic.add(counter, 0, 1)
    if b == 0 and t % 32 == 0:
        ticket_of_warp[t // 32] = cuda.atomic.add(counter, 1, 1)
    if b == 0 and t < 32:
        ticket_of_lane[t] = cuda.atomic.add(counter, 2, 1)


def _arrival_order(order, seed):
    tickets = [np.full(n, -1, np.int64) for n in (16, 8, 32)]
    simtlab.emulate(_arrival, 16, 256, np.zeros(3, np.int64), *tickets, order=order, seed=seed)
    for t in tickets:                      # every ticket taken once: a permutation
        assert sorted(t) == list(range(len(t)))
    return tickets


def test_random_order_shuffles_blocks_warps_and_lanes_and_is_seeded():
    in_order = _arrival_order("in_order", 0)
    for t in in_order:
        assert list(t) == list(range(len(t)))
    one, again, two = (_arrival_order("random", s) for s in (1, 1, 2))
    for what, a, a2, b, ref in zip(("blocks", "warps", "lanes"), one, again, two, in_order):
        np.testing.assert_array_equal(a, a2, err_msg=f"the same seed must give the same {what} order")
        assert list(a) != list(ref), f"order='random' did not shuffle the {what}"
        assert list(a) != list(b), f"two seeds gave the same order of {what}"


def test_in_order_and_random_order_give_the_same_result_and_random_is_seeded():
    from simtlab.kernels import reduction
    x = np.random.default_rng(5).random(1000).astype(np.float32)
    outs, firsts = [], []
    for order, seed in [("in_order", 0), ("random", 1), ("random", 2)]:
        partial = np.zeros(4, np.float32)
        run = simtlab.emulate(reduction.block_sum_tree, 4, 256, x, partial, order=order,
                              seed=seed)
        outs.append(partial)
        mem = run.memory
        firsts.append((mem.block[0], mem.thread[:64].tolist()))   # who ran first
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
    # the same result, reached in different orders: the random runs really were shuffled
    assert firsts[0] != firsts[1] and firsts[1] != firsts[2] and firsts[0] != firsts[2]


def test_plain_function_and_closure_kernels():
    def plain(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = i

    x = np.zeros(10, np.int64)
    simtlab.emulate(plain, 1, 16, x)
    assert list(x) == list(range(10))

    def make(scale):
        @cuda.jit
        def k(x):
            i = cuda.grid(1)
            if i < x.size:
                x[i] *= scale
        return k

    simtlab.emulate(make(3), 1, 16, x)
    assert list(x) == [3 * i for i in range(10)]


def test_non_contiguous_argument_is_updated_in_place():
    @cuda.jit
    def k(col):
        i = cuda.grid(1)
        if i < col.size:
            col[i] = 7

    m = np.zeros((4, 3), np.int64)
    simtlab.emulate(k, 1, 8, m[:, 1])
    assert (m[:, 1] == 7).all() and (m[:, [0, 2]] == 0).all()


def test_trace_records_every_access_with_its_context():
    @cuda.jit
    def k(x, out):
        s = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        s[t] = x[t]
        cuda.syncthreads()
        out[t] = s[(t + 1) % 64]

    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    run = simtlab.emulate(k, 1, 64, x, out)
    mem = run.memory
    assert len(mem) == 4 * 64
    xr = mem[(mem.array == run.array("x").id)]
    assert list(xr.kind) == [0] * 64 and list(xr.index) == list(range(64))
    assert list(xr.address - run.array("x").base) == [4 * i for i in range(64)]
    sr = mem[(mem.space == 1) & (mem.kind == 0)]
    assert (sr.epoch == 1).all() and list(sr.index) == [(t + 1) % 64 for t in range(64)]
    assert set(sr.warp) == {0, 1} and list(sr.lane[:3]) == [0, 1, 2]
    assert run.source(int(sr.line[0])).strip() == "out[t] = s[(t + 1) % 64]"
    lines = run.lines
    assert (np.bincount(lines.thread) == 5).all()        # 5 lines per thread


def test_trace_off_gives_the_same_result_and_no_analysis():
    from simtlab.kernels import gemm
    a = np.random.rand(20, 20).astype(np.float32)
    b = np.random.rand(20, 20).astype(np.float32)
    c = np.zeros((20, 20), np.float32)
    run = simtlab.emulate(gemm.gemm_tiled, (2, 2), (16, 16), a, b, c, trace=False)
    np.testing.assert_allclose(c, gemm.gemm_cpu(a, b), rtol=1e-5)
    assert run.metrics["global_requests"] is None and run.metrics["threads"] == 1024
    with pytest.raises(ValueError, match="not traced"):
        run.memory


def test_fast_mode_without_checks_gives_the_same_results():
    from simtlab.kernels import gemm, reduction
    a = np.random.rand(40, 24).astype(np.float32)
    b = np.random.rand(24, 33).astype(np.float32)
    c = np.zeros((40, 33), np.float32)
    simtlab.emulate(gemm.gemm_tiled, (3, 3), (16, 16), a, b, c, trace=False, checks=False)
    np.testing.assert_allclose(c, gemm.gemm_cpu(a, b), rtol=1e-5)
    x = np.random.rand(700).astype(np.float32)
    partial = np.zeros(3, np.float32)
    simtlab.emulate(reduction.block_sum_tree, 3, 256, x, partial, trace=False, checks=False)
    np.testing.assert_allclose(partial.sum(), x.sum(), rtol=1e-5)
    counter = np.zeros(1, np.int64)

    @cuda.jit
    def count(c):
        cuda.atomic.add(c, 0, 1)

    simtlab.emulate(count, 2, 32, counter, trace=False, checks=False)
    assert counter[0] == 64
    with pytest.raises(simtlab.OutOfBoundsError, match="checks=False"):
        simtlab.emulate(count, 1, 1, np.zeros(0, np.int64), trace=False, checks=False)
    with pytest.raises(ValueError, match="needs trace=False"):
        simtlab.emulate(count, 1, 1, counter, checks=False)


_HELPER_MODULE = '''
from numba import cuda

SCALE = 3


@cuda.jit(device=True)
def scaled(x):
    return SCALE * x


@cuda.jit(device=True)
def lane():
    return cuda.threadIdx.x % 32
'''


_KERNEL_MODULE = '''
import numpy as np
from numba import cuda

import simt_helpers_mod as helpers


@cuda.jit
def kernel(a, lanes):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = helpers.scaled(a[i]) + np.float32(helpers.SCALE)
        lanes[i] = helpers.lane()
        lanes[i] += helpers.cuda.threadIdx.x - cuda.threadIdx.x
'''


def test_device_functions_reached_through_a_module_attribute(tmp_path, monkeypatch):
    """`helpers.scaled(x)` compiles with numba; the emulator must run it too, trace its lines,
    and leave the helper module itself untouched."""
    (tmp_path / "simt_helpers_mod.py").write_text(_HELPER_MODULE)
    (tmp_path / "simt_kernel_mod.py").write_text(_KERNEL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    module = importlib.import_module("simt_kernel_mod")
    a = np.arange(40, dtype=np.float32)
    lanes = np.full(40, -1, np.int32)
    run = simtlab.emulate(module.kernel, 2, 32, a, lanes)
    np.testing.assert_array_equal(a, 3 * np.arange(40, dtype=np.float32) + 3)
    np.testing.assert_array_equal(lanes, np.arange(40) % 32)
    executed = {run.source(int(line), site=int(site)).strip()
                for line, site in zip(run.lines.line, run.lines.site)}
    assert "return SCALE * x" in executed, "the module's device function must be traced like a global one"
    assert module.helpers.scaled.py_func.__globals__["cuda"] is cuda, "the helper module must stay untouched"


def test_numba_cuda_reached_through_the_numba_module():
    """`import numba` then `numba.cuda.grid(1)` compiles with numba; the emulator must give the
    kernel its own `cuda` that way too, and leave the real numba module alone."""
    import numba

    def kernel(a):
        i = numba.cuda.grid(1)
        if i < a.size:
            a[i] = i + numba.cuda.blockIdx.x * 1000

    a = np.zeros(40, np.float32)
    simtlab.emulate(numba.cuda.jit(kernel), 2, 32, a)
    np.testing.assert_array_equal(a, np.arange(40) + (np.arange(40) // 32) * 1000)
    assert numba.cuda.grid is cuda.grid
