"""Checks for chapter 1 (GPU architecture, grids, blocks and threads).

Each check draws new random inputs on every call, runs the student's kernel on the
emulator (``run_student_kernel``), compares with a NumPy reference through
``compare_arrays`` (outputs are poisoned, so elements no thread wrote are caught) and
calls ``passed`` when everything is right. Otherwise it raises ``CheckFailed`` naming the
launch, the element or thread, and what to change.

- ``check_first_kernel(scale_add)``: ``out = alpha * a + b``, one thread per element.
- ``check_grid_stride(conv2d_relu_gs)``: conv2d + ReLU with a grid-stride loop, any grid.
- ``check_linear_id(linear_thread_id, global_thread_id)``: the thread-numbering formulas.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._common import cdiv, describe_launch, plural, rng, run_1d
from .report import CheckFailed, call_student, compare_arrays, failing_in, passed, poison
from .card import student_check

__all__ = ["check_first_kernel", "hidden_check_first_kernel", "check_grid_stride", "check_linear_id", "conv2d_relu_reference"]


# ------------------------------------------------------------------------------------------
# Exercise 1: scale_add, one thread per element
# ------------------------------------------------------------------------------------------
def _first_kernel_launches(r: np.random.Generator) -> list[tuple[int, int, int]]:
    """(n, blocks, threads per block): n not a multiple of the block, an exact fit, a grid too big."""
    n_odd = int(r.integers(700, 1000))
    while n_odd % 256 == 0:
        n_odd += 1
    return [
        (n_odd, cdiv(n_odd, 256), 256),                   # last block sticks out past the array
        (2048, 16, 128),                                  # exact fit
        (int(r.integers(200, 300)), 8, 64),               # many more threads than elements
    ]


@student_check("ch01.first_kernel")
def check_first_kernel(scale_add, launches=None, seed: int | None = None) -> None:
    """``scale_add(a, b, out, alpha)`` must set ``out[i] = alpha * a[i] + b[i]`` with one thread per element.

    ``launches``: (n, blocks, threads per block) to test instead of the usual three.
    """
    r = rng(seed)
    for n, grid, block in launches or _first_kernel_launches(r):
        a = r.standard_normal(n).astype(np.float32)
        b = r.standard_normal(n).astype(np.float32)
        alpha = np.float32(r.uniform(0.5, 3.0) * r.choice([-1, 1]))
        out = poison(n, np.float32)
        context = f"Launch: n = {n} elements, {describe_launch(grid, block)}, alpha = {alpha:.4g}."
        extra = grid * block - n
        oob = (
            "Thread {thread} has no element: the grid has "
            f"{grid * block} threads for {n} elements, {extra} too many. Put the body under a bounds guard, "
            "`if i < out.size:`, so the extra threads do nothing."
        )
        run_1d(scale_add, grid, block, a, b, out, alpha, context=context, oob_hint=oob, trace=False)
        expected = (alpha * a + b).astype(np.float32)
        with failing_in(context, lambda _: _first_kernel_hint(out, expected, a, b, alpha, block)):
            compare_arrays(out, expected, "out", rtol=1e-5, atol=1e-5, index_names=("i",))
    passed("scale_add computes alpha * a + b for every element, with a bounds guard for the extra threads "
           "(tested with a partial last block, an exact fit and a grid much larger than the array)")


def _first_kernel_hint(out, expected, a, b, alpha, block) -> str | None:
    written = ~np.isnan(out)
    n = out.size
    if written.any() and not written.all() and np.flatnonzero(written).max() < block:
        return ("Only elements of the first block's range were written: cuda.threadIdx.x alone repeats in every "
                "block. The element of a thread is i = cuda.grid(1) = blockIdx.x * blockDim.x + threadIdx.x.")
    if written.all():
        if np.allclose(out, a + b, rtol=1e-5, atol=1e-5) and not np.allclose(out, expected, rtol=1e-5, atol=1e-5):
            return "out holds a + b: multiply a[i] by alpha."
        if np.allclose(out, alpha * (a + b), rtol=1e-5, atol=1e-5):
            return "out holds alpha * (a + b): only a[i] is scaled, out[i] = alpha * a[i] + b[i]."
    if not written.any():
        return f"No element of the {n} was written: does the kernel store into out[i]?"
    return None


#: the hidden check's launches: one element, blocks that are no multiple of a warp, a block of 1024
#: threads for 257 elements, a grid of tiny blocks
HIDDEN_FIRST_KERNEL_LAUNCHES = [(1, 1, 32), (999, 8, 125), (257, 1, 1024), (33, 3, 16)]


@student_check("ch01.first_kernel")
def hidden_check_first_kernel(scale_add) -> None:
    """The graded twin of :func:`check_first_kernel`: odd sizes and block sizes, a fixed seed."""
    check_first_kernel(scale_add, launches=HIDDEN_FIRST_KERNEL_LAUNCHES, seed=14_01)


# ------------------------------------------------------------------------------------------
# Exercise 2: conv2d + ReLU with a grid-stride loop
# ------------------------------------------------------------------------------------------
def conv2d_relu_reference(image: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """NumPy conv2d (stride = filter size, no padding) + ReLU: (H, W), (F, K, K) -> (F, H//K, W//K)."""
    f, k, _ = filters.shape
    h, w = image.shape[0] // k, image.shape[1] // k
    tiles = image[: h * k, : w * k].reshape(h, k, w, k).transpose(0, 2, 1, 3)
    out = np.einsum("hwij,fij->fhw", tiles.astype(np.float64), filters.astype(np.float64))
    return np.maximum(out, 0).astype(np.float32)


def _conv_problem(r: np.random.Generator):
    """A random layer whose output size is no multiple of a warp, so partial blocks are exercised."""
    while True:
        k = int(r.choice([3, 4, 5]))
        f = int(r.integers(3, 7))
        h, w = int(r.integers(8, 17)), int(r.integers(8, 17))
        # more outputs than the 3-block grid has threads, and not a whole number of warps
        if f * h * w >= 400 and (f * h * w) % 32:
            break
    image = r.standard_normal((h * k + int(r.integers(0, k)), w * k + int(r.integers(0, k)))).astype(np.float32)
    filters = r.standard_normal((f, k, k)).astype(np.float32)
    return image, filters


def _covered(n: int, threads: int, stride: int) -> np.ndarray:
    """Which of n flat indices a loop `for o in range(t, n, stride)` over threads t < threads visits."""
    hit = np.zeros(n, dtype=bool)
    if stride <= 0:
        return hit
    for t in range(min(threads, n)):
        hit[t::stride] = True
    return hit


def _unflat(o: int, shape) -> str:
    f, rr, c = np.unravel_index(o, shape)
    return f"(f={f}, r={rr}, c={c})"


@student_check("ch01.grid_stride")
def check_grid_stride(conv2d_relu_gs) -> None:
    """``conv2d_relu_gs(image, filters, out)`` must fill every output for any grid size."""
    r = rng()
    image, filters = _conv_problem(r)
    expected = conv2d_relu_reference(image, filters)
    n = expected.size
    shape_note = (f"This test uses a {image.shape[0]}x{image.shape[1]} image and {filters.shape[0]} filters of "
                  f"{filters.shape[1]}x{filters.shape[2]}: out has shape {expected.shape}, {n} outputs.")
    launches = [(1, 64), (3, 64), (cdiv(n, 128), 128)]
    for grid, block in launches:
        threads = grid * block
        out = poison(expected.shape, np.float32)
        traced = (grid, block) == (3, 64)
        context = (f"{shape_note}\nLaunch: {describe_launch(grid, block)}; "
                   + (f"each thread must compute about {n / threads:.1f} outputs."
                      if threads < n else "that is enough threads for one output each."))
        oob = ("Thread {thread} went out of bounds: the loop must stop at out.size, and every index must be "
               "turned into (f, r, c) inside out.shape.")
        run = run_1d(conv2d_relu_gs, grid, block, image, filters, out, context=context, oob_hint=oob,
                     trace=traced)
        with failing_in(context, lambda _: _stride_hint(out, expected, grid, block)):
            compare_arrays(out, expected, "out", rtol=1e-4, atol=1e-4, index_names=("f", "r", "c"))
        if traced:
            _check_one_writer(run, expected.shape, grid, block)
    passed(f"conv2d_relu_gs fills all {n} outputs with grids of 1 block, 3 blocks and {plural(launches[-1][0], 'block')}: "
           "each thread starts at cuda.grid(1) and steps by cuda.gridsize(1)")


def _stride_hint(out, expected, grid, block) -> str:
    n, threads = expected.size, grid * block
    written = ~np.isnan(out).ravel()
    if written.all():
        return ("Every output was written, but some values are wrong: check how the flat index o is split into "
                "f = o // (out_h * out_w), r = (o % (out_h * out_w)) // out_w, c = o % out_w, and read the sizes "
                "from the arrays' .shape (this test does not use the lab's 100x100 image and 5x5 filters).")
    first = int(np.flatnonzero(~written)[0])
    lines = [f"The first output never written is flat index {first} = {_unflat(first, expected.shape)}."]
    if np.array_equal(written, _covered(n, threads, n)) and threads < n:
        why = "each thread computed one output and stopped"
        if block * block >= n:
            why += (f" (no loop, or a stride past the end of out: blockDim.x * blockDim.x, the Waterloo lab report's typo, "
                    f"is {block * block} here)")
        lines.append(f"Only outputs 0..{threads - 1} were written: {why}. A thread must go on with the output "
                     f"{threads} further on: `for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):`.")
    elif block * block != threads and np.array_equal(written, _covered(n, threads, block * block)):
        lines.append(f"Your stride looks like blockDim.x * blockDim.x = {block * block}, the Waterloo lab report's typo. The "
                     f"grid has gridDim.x * blockDim.x = {threads} threads, so after its first output a thread must "
                     "jump ahead by that many: stride = cuda.gridsize(1).")
    elif block != threads and np.array_equal(written, _covered(n, threads, block)):
        lines.append(f"Your stride looks like blockDim.x = {block}: that is one block, not the whole grid of "
                     f"{threads} threads. stride = cuda.gridsize(1) = gridDim.x * blockDim.x.")
    else:
        lines.append(f"A grid-stride loop visits o = start, start + stride, ... with start = cuda.grid(1) and "
                     f"stride = cuda.gridsize(1) = gridDim.x * blockDim.x = {threads} here, up to out.size = {n}.")
    return "\n".join(lines)


def _check_one_writer(run, shape, grid, block) -> None:
    """Fail when some output was computed by more than one thread (a stride smaller than the grid)."""
    mem = run.memory
    info = run.array("out")
    rows = mem[(mem["array"] == info.id) & (mem["kind"] == 1)]
    if len(rows) == 0:
        return
    writer = rows["block"].astype(np.int64) * run.threads_per_block + rows["thread"]
    pairs = np.unique(np.stack([rows["index"].astype(np.int64), writer]), axis=1)
    counts = np.bincount(pairs[0], minlength=int(np.prod(shape)))
    if counts.max() <= 1:
        return
    o = int(np.flatnonzero(counts > 1)[0])
    who = sorted(int(t) for t in pairs[1][pairs[0] == o])
    names = ", ".join(f"global thread {t} (block {t // block}, thread {t % block})" for t in who[:4])
    raise CheckFailed(
        f"Launch: {describe_launch(grid, block)}.\n"
        f"out{_unflat(o, shape)} (flat index {o}) was computed by {plural(len(who), 'thread')}: {names}. "
        f"The values are right, but the work is done {len(who)} times: the stride is smaller than the "
        f"{grid * block} threads of the grid. Step by cuda.gridsize(1) so each output has exactly one thread."
    )


# ------------------------------------------------------------------------------------------
# Exercise 3: linear thread id and global id
# ------------------------------------------------------------------------------------------
def _ref_linear(tx, ty, tz, bdx, bdy):
    return tx + ty * bdx + tz * bdx * bdy


def _call(fn, name, *args):
    value = call_student(fn, name, *args)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer():
            raise CheckFailed(f"{name}{args} returned {value!r}, a {type(value).__name__}: thread ids are whole "
                              "numbers; use integer arithmetic (* and +, or // rather than /).")
        raise CheckFailed(f"{name}{args} returned {value!r}; it must return an int")
    return int(value)


@student_check("ch01.linear_id")
def check_linear_id(linear_thread_id, global_thread_id) -> None:
    """``linear_thread_id(tx, ty, tz, bdx, bdy)`` and ``global_thread_id(thread_idx, block_idx, block_dim, grid_dim)``."""
    r = rng()
    bdx, bdy = int(r.integers(2, 17)), int(r.integers(2, 9))
    # One term at a time first, so a message can say which term is wrong.
    steps = [
        ((int(r.integers(1, bdx)), 0, 0, bdx, bdy), "with ty = tz = 0 the id is just tx"),
        ((0, int(r.integers(1, bdy)), 0, bdx, bdy),
         "x varies fastest: a whole row of bdx threads comes before row 1, so (tx=0, ty) has id ty * bdx"),
        ((0, 0, int(r.integers(1, 4)), bdx, bdy),
         "a whole bdx * bdy layer of threads comes before layer tz, so (0, 0, tz) has id tz * bdx * bdy"),
    ]
    for _ in range(40):
        bx, by = int(r.integers(1, 33)), int(r.integers(1, 9))
        args = (int(r.integers(0, bx)), int(r.integers(0, by)), int(r.integers(0, 4)), bx, by)
        steps.append((args, "id = tx + ty * bdx + tz * bdx * bdy"))
    for args, why in steps:
        got = _call(linear_thread_id, "linear_thread_id", *args)
        want = _ref_linear(*args)
        if got != want:
            tx, ty, tz, a, b = args
            raise CheckFailed(f"linear_thread_id(tx={tx}, ty={ty}, tz={tz}, bdx={a}, bdy={b}) returned {got}, "
                              f"expected {want}: {why}.")

    # global id: linear block id times threads per block, plus the linear thread id
    for trial in range(40):
        block_dim = (int(r.integers(1, 65)), int(r.integers(1, 5)), int(r.integers(1, 3)))
        grid_dim = (int(r.integers(1, 20)), int(r.integers(1, 6)), int(r.integers(1, 4)))
        if trial == 0:
            block_dim, grid_dim = (block_dim[0], 1, 1), (grid_dim[0], 1, 1)
        thread_idx = tuple(int(r.integers(0, d)) for d in block_dim)
        block_idx = tuple(int(r.integers(0, d)) for d in grid_dim)
        got = _call(global_thread_id, "global_thread_id", thread_idx, block_idx, block_dim, grid_dim)
        tpb = block_dim[0] * block_dim[1] * block_dim[2]
        block_lin = _ref_linear(*block_idx, grid_dim[0], grid_dim[1])
        thread_lin = _ref_linear(*thread_idx, block_dim[0], block_dim[1])
        want = block_lin * tpb + thread_lin
        if got != want:
            raise CheckFailed(
                f"global_thread_id(thread_idx={thread_idx}, block_idx={block_idx}, block_dim={block_dim}, "
                f"grid_dim={grid_dim}) returned {got}, expected {want}.\n"
                f"The block's linear id is {block_lin} (the same formula over blockIdx and gridDim); every block "
                f"before it holds {tpb} threads, so the block starts at {block_lin} * {tpb} = {block_lin * tpb}; "
                f"add the thread's linear id in its block, {thread_lin}."
            )
    passed("linear_thread_id and global_thread_id number threads as CUDA does: x fastest, then y, then z; "
           "blocks likewise, each block holding blockDim.x * blockDim.y * blockDim.z threads")
