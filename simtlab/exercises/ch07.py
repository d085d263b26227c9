"""Checks for chapter 7 (convolution as matrix multiplication).

- ``check_layer_numbers(conv_output_size, layer_flops)``: the output size of a convolution for
  any input size, filter, stride and padding, and the FLOPs of a layer (ECE408's C1 and C3 among
  the cases).
- ``check_unroll(unroll)``: the im2col kernel: every entry of the unrolled matrix (row
  (c, p, q), column (b, oy, ox)) holds its input element, or 0 over the padding, for odd
  shapes, stride 1 and 2, 'valid' and 'same'; each entry written once.
- ``check_implicit_gemm(conv_implicit)``: the fused kernel: the right output, a shared-memory
  tile gathered from ``x`` each phase, and no unrolled matrix anywhere in global memory.
- ``check_offset_gather(make_taps, conv_offsets)``: the gather table (offset, p, q per unrolled
  row) and the implicit GEMM that reads it: the right table, the right output, and, from the
  trace, no integer division per gathered element (the divisions a thread executes must not
  grow with the number of unrolled rows).

Every check draws new random inputs on each call.
"""

from __future__ import annotations

import numpy as np

from ._common import cdiv, rng
from .report import CheckFailed, call_student, compare_arrays, failing_in, passed, poison, run_student_kernel
from .card import student_check

__all__ = ["check_layer_numbers", "check_unroll", "check_implicit_gemm", "check_layer_intensity", "RIDGE_H100",
           "check_offset_gather",
           "BLOCK", "TILE"]

BLOCK = 128
TILE = 16


# ------------------------------------------------------------------------------------------
# Exercise 1: output size and FLOPs of a layer
# ------------------------------------------------------------------------------------------
@student_check("ch07.numbers")
def check_layer_numbers(conv_output_size, layer_flops) -> None:
    """``conv_output_size(n, k, stride, pad)``: outputs along one side of n inputs, pad zeros on
    each side; ``layer_flops(b, c, m, k, ho, wo)``: multiplies plus adds of the whole layer."""
    r = rng()
    cases = [(86, 7, 1, 0), (40, 7, 1, 0), (100, 5, 5, 0), (56, 8, 1, 3), (9, 3, 2, 1)]
    cases += [(int(r.integers(5, 60)), int(r.integers(1, 6)), int(r.integers(1, 4)), int(r.integers(0, 3)))
              for _ in range(20)]
    for n, k, s, p in cases:
        want = (n + 2 * p - k) // s + 1
        got = call_student(conv_output_size, "conv_output_size", n, k, s, p)
        if got != want:
            hint = ""
            if got == (n + 2 * p - k) // s:
                hint = " You are one short: the first window sits at position 0, count it too (+ 1)."
            elif got == (n - k) // s + 1:
                hint = " The padding adds pad zeros on each side: the padded length is n + 2 * pad."
            elif got == (n + 2 * p - k) / s + 1:
                hint = " Use integer division (//): a window that would run past the end does not count."
            raise CheckFailed(f"conv_output_size(n={n}, k={k}, stride={s}, pad={p}) returned {got!r}, "
                              f"expected {want}.{hint}")
    layers = [("ECE408 C1", 10_000, 1, 4, 7, 80, 80), ("ECE408 C3", 10_000, 4, 16, 7, 34, 34)]
    layers += [("random layer", int(r.integers(1, 50)), int(r.integers(1, 9)), int(r.integers(1, 33)),
                int(r.integers(1, 8)), int(r.integers(1, 40)), int(r.integers(1, 40))) for _ in range(10)]
    for name, b, c, m, k, ho, wo in layers:
        want = 2 * b * m * ho * wo * c * k * k
        got = call_student(layer_flops, "layer_flops", b, c, m, k, ho, wo)
        if got != want:
            hint = ""
            if got * 2 == want:
                hint = " Each weight of each output is a multiply AND an add: 2 FLOPs."
            elif got == 2 * b * m * ho * wo * k * k:
                hint = " Every filter spans all C input channels: C * K * K weights per output."
            raise CheckFailed(f"layer_flops for {name} (B={b}, C={c}, M={m}, K={k}, {ho}x{wo} outputs) returned "
                              f"{got!r}, expected {want:,}.{hint}")
    passed("conv_output_size and layer_flops are right for every case, ECE408's C1 (25.1 GFLOP at a batch of "
           "10,000) and C3 (72.5 GFLOP) included")


# ------------------------------------------------------------------------------------------
# Exercise 2: the unroll kernel
# ------------------------------------------------------------------------------------------
def _unroll_cases(r):
    cases = [((1, 1, 6, 6), 3, 1, "valid"), ((2, 3, 7, 9), 3, 1, "valid"), ((1, 2, 9, 9), 3, 2, "same"),
             ((2, 1, 7, 7), 4, 1, "same")]
    b, c = int(r.integers(1, 3)), int(r.integers(1, 4))
    h = int(r.integers(6, 11))
    cases.append(((b, c, h, h + int(r.integers(0, 3))), int(r.integers(2, 5)), int(r.integers(1, 3)), 1))
    return cases


@student_check("ch07.unroll")
def check_unroll(unroll) -> None:
    """``unroll(x, cols, k, wo, stride, pad)``: one thread per entry of cols (launch of
    ceil(cols.size / 128) blocks of 128 threads); cols[(c, p, q), (b, oy, ox)] =
    x[b, c, oy*stride + p - pad, ox*stride + q - pad], 0 outside x."""
    from ..kernels.conv import conv_geometry, im2col_cpu

    r = rng()
    for shape, k, stride, padding in _unroll_cases(r):
        b, c, h, w = shape
        ho, wo, pad = conv_geometry(h, w, k, stride, padding)
        x = (r.random(shape, dtype=np.float32) + 0.5).astype(np.float32)
        cols = poison((c * k * k, b * ho * wo), np.float32)
        grid = cdiv(cols.size, BLOCK)
        context = (f"Input x of shape {shape} (B, C, H, W), {k}x{k} filter, stride {stride}, pad {pad}: "
                   f"cols is {cols.shape[0]} x {cols.shape[1]}; launch of {grid} blocks of {BLOCK} threads.")
        with failing_in(context, "Read x only where 0 <= iy < H and 0 <= ix < W; write 0 elsewhere."):
            run = run_student_kernel(unroll, grid, BLOCK, x, cols, k, wo, stride, pad)
        with failing_in(context, "Row r = (c, p, q): c = r // (K*K), p = (r % (K*K)) // K, q = r % K. "
                                 "Column n = (b, oy, ox): b = n // (Ho*Wo), oy = (n % (Ho*Wo)) // Wo, ox = n % Wo."):
            compare_arrays(cols, im2col_cpu(x, k, stride, padding), "cols", rtol=0, atol=0,
                           index_names=("row (c, p, q)", "column (b, oy, ox)"))
        writes = run.accesses("cols", "write")
        per_entry = np.bincount(writes.index.astype(np.int64), minlength=cols.size)
        if per_entry.max() > 1:
            e = int(np.argmax(per_entry))
            raise CheckFailed(f"{context}\ncols entry {np.unravel_index(e, cols.shape)} was written "
                              f"{per_entry.max()} times: each thread should write its own entry once.")
    passed("unroll writes every entry of the unrolled matrix once, with its input element or a padding 0, "
           "for stride 1 and 2, 'valid' and 'same' padding, several images and channels")


# ------------------------------------------------------------------------------------------
# Exercise 3: the fused kernel's shared tile
# ------------------------------------------------------------------------------------------
@student_check("ch07.implicit")
def check_implicit_gemm(conv_implicit) -> None:
    """``conv_implicit(x, w, y, stride, pad)``: blocks of TILE x TILE threads on a grid
    (ceil(B*Ho*Wo / TILE), ceil(M / TILE)); y (B, M, Ho, Wo) = the convolution; the B tile is
    gathered from x into shared memory each phase; nothing but y is written to global memory."""
    from ..kernels.conv import conv2d_cpu, conv_geometry

    r = rng()
    cases = [((2, 2, 7, 9), 5, 3, 1, "valid"), ((1, 3, 9, 9), 17, 3, 2, "same"),
             ((int(r.integers(1, 3)), int(r.integers(1, 4)), 8, 8), int(r.integers(2, 20)), 3, 1, 1)]
    for shape, m, k, stride, padding in cases:
        b, c, h, wd = shape
        ho, wo, pad = conv_geometry(h, wd, k, stride, padding)
        x = r.standard_normal(shape).astype(np.float32)
        w = r.standard_normal((m, c, k, k)).astype(np.float32)
        y = poison((b, m, ho, wo), np.float32)
        grid = (cdiv(b * ho * wo, TILE), cdiv(m, TILE))
        context = (f"Input {shape} (B, C, H, W), {m} filters of {k}x{k}, stride {stride}, pad {pad}: "
                   f"grid {grid} of {TILE}x{TILE} threads; the unrolled matrix would be "
                   f"{c * k * k} x {b * ho * wo}.")
        with failing_in(context, "Every thread must store its sb entry in every phase (0.0 outside x "
                                 "or past the last row), before the barrier."):
            run = run_student_kernel(conv_implicit, grid, (TILE, TILE), x, w, y, stride, pad)
        with failing_in(context, "The thread (tx, ty) gathers row r = t*TILE + tx of the unrolled "
                                 "matrix for column nl = blockIdx.x*TILE + ty, into sb[tx, ty]."):
            compare_arrays(y, conv2d_cpu(x, w, stride, padding), "y", rtol=1e-4, atol=1e-4,
                           index_names=("b", "m", "oy", "ox"))
        mem = run.memory
        globals_written = {info.name for info in run.arrays if info.space == "global"
                           and ((mem.array == info.id) & (mem.kind == 1) & (mem.space == 0)).any()}
        if globals_written != {"y"}:
            raise CheckFailed(f"{context}\nThe kernel writes {sorted(globals_written)} in global memory: the fused "
                              "kernel writes only y; the unrolled tile lives in shared memory.")
        shared_writes = mem[(mem.space == 1) & (mem.kind == 1)]
        if len(shared_writes) == 0:
            raise CheckFailed(f"{context}\nThe kernel writes no shared memory: gather the tile into sb.")
    passed("conv_implicit computes the layer for odd shapes, stride 1 and 2 and every padding, gathers its "
           "tiles in shared memory, and writes nothing to global memory but y")


# ------------------------------------------------------------------------------------------
# Exercise 5 (optimisation): the gather indices precomputed, checked by the trace
# ------------------------------------------------------------------------------------------
def _check_taps(make_taps, r):
    from ..kernels.conv import gather_table

    shapes = [(1, 86, 86, 7), (4, 40, 40, 7), (3, 5, 9, 2)]
    shapes.append((int(r.integers(1, 5)), int(r.integers(4, 12)), int(r.integers(4, 12)), int(r.integers(1, 4))))
    for c, h, w, k in shapes:
        want = gather_table(c, h, w, k)
        got = np.asarray(call_student(make_taps, "make_taps", c, h, w, k))
        if got.shape != want.shape:
            raise CheckFailed(f"make_taps({c}, {h}, {w}, {k}) returned shape {got.shape}, expected {want.shape}: "
                              f"3 rows (offset, p, q) of C*K*K = {c * k * k} columns, one per unrolled row.")
        if got.dtype != np.int32:
            raise CheckFailed(f"make_taps returned {got.dtype}, expected int32 (what the kernel indexes with).")
        for row, name in enumerate(("offset", "p", "q")):
            bad = np.flatnonzero(got[row] != want[row])
            if len(bad):
                rr = int(bad[0])
                raise CheckFailed(
                    f"make_taps(C={c}, H={h}, W={w}, K={k}): the {name} of unrolled row {rr} = (c, p, q) = "
                    f"({rr // (k * k)}, {rr % (k * k) // k}, {rr % k}) is {int(got[row, rr])}, expected "
                    f"{int(want[row, rr])}. The offset is c*H*W + p*W + q: where the row's input element sits "
                    "from the window's top-left corner.")


def _offset_launch(conv_offsets, x, w, stride, padding, context):
    from ..kernels.conv import conv_geometry, gather_table

    b, c, h, wd = x.shape
    m, k = w.shape[0], w.shape[2]
    ho, wo, pad = conv_geometry(h, wd, k, stride, padding)
    y = poison((b, m, ho, wo), np.float32)
    grid = (cdiv(b * ho * wo, TILE), cdiv(m, TILE))
    with failing_in(context, "Each thread reads the offset, p and q of its row r from taps (taps[0, r], "
                             "taps[1, r], taps[2, r]) and x at corner + offset when (iy0 + p, ix0 + q) is inside."):
        run = run_student_kernel(conv_offsets, grid, (TILE, TILE), x.reshape(-1), w.reshape(m, -1),
                                 gather_table(c, h, wd, k), y, h, wd, stride, pad)
    return run, y


@student_check("ch07.offsets")
def check_offset_gather(make_taps, conv_offsets) -> None:
    """``make_taps(c, h, w, k)``: int32 (3, C*K*K), for unrolled row r = (c, p, q) the offset
    c*H*W + p*W + q, then p, then q. ``conv_offsets(x, w, taps, y, h, wd, stride, pad)``: x flat,
    w (M, C*K*K), y (B, M, Ho, Wo), blocks of TILE x TILE on (ceil(B*Ho*Wo / TILE), ceil(M / TILE));
    the right output, and no integer division per gathered element (read from the trace)."""
    from ..analysis.unroll import divisions_executed
    from ..kernels.conv import conv2d_cpu

    r = rng()
    _check_taps(make_taps, r)
    cases = [((2, 2, 7, 9), 5, 3, 1, "valid"), ((1, 3, 9, 9), 17, 3, 2, "same"),
             ((int(r.integers(1, 3)), int(r.integers(1, 4)), 8, 8), int(r.integers(2, 20)), 3, 1, 1)]
    for shape, m, k, stride, padding in cases:
        x = r.standard_normal(shape).astype(np.float32)
        w = r.standard_normal((m, shape[1], k, k)).astype(np.float32)
        context = f"Input {shape} (B, C, H, W), {m} filters of {k}x{k}, stride {stride}, padding {padding!r}."
        _, y = _offset_launch(conv_offsets, x, w, stride, padding, context)
        with failing_in(context, "iy = iy0 + p and ix = ix0 + q must both be inside x before x is read; "
                                 "store 0.0 otherwise."):
            compare_arrays(y, conv2d_cpu(x, w, stride, padding), "y", rtol=1e-4, atol=1e-4,
                           index_names=("b", "m", "oy", "ox"))
    # the optimisation: the same layer with 1 and with 4 channels (4x the unrolled rows, 4x the
    # phases); a gather that divides per element executes more divisions per thread with more rows
    divisions = {}
    for c in (1, 4):
        x = r.standard_normal((1, c, 8, 8)).astype(np.float32)
        w = r.standard_normal((4, c, 5, 5)).astype(np.float32)
        run, _ = _offset_launch(conv_offsets, x, w, 1, "valid", f"Input (1, {c}, 8, 8), 4 filters of 5x5.")
        divisions[c] = divisions_executed(run)
    few, many = divisions[1], divisions[4]
    if many["per_thread"] > few["per_thread"]:
        lines = ", ".join(f"line {ln} ({n})" for ln, n in sorted(many["lines"].items()))
        raise CheckFailed(
            f"The output is right, but each thread executes {many['per_thread']:.1f} integer divisions or remainders "
            f"with 4 channels (100 unrolled rows, 7 phases) against {few['per_thread']:.1f} with 1 channel "
            f"(25 rows, 2 phases): the gather still divides for every element it loads. Lines with divisions, "
            f"read from the trace: {lines}. Take the offset, p and q from taps instead of splitting r.")
    passed(f"make_taps builds the table and conv_offsets computes the layer with it; per thread "
           f"{few['per_thread']:.1f} integer divisions with 1 channel and {many['per_thread']:.1f} with 4 "
           "(the column's decoding, once): no division per gathered element")


# ------------------------------------------------------------------------------------------
# Prediction: which side of the ridge a layer falls
# ------------------------------------------------------------------------------------------
#: the H100 SXM's FP32 peak over its HBM3 bandwidth: 66.9 TFLOP/s / 3.35 TB/s (FLOPs per byte)
RIDGE_H100 = 66.9e12 / 3.35e12


@student_check("ch07.predict")
def check_layer_intensity(layer_intensity) -> None:
    """``layer_intensity(b, c, h, w, m, k)``: FLOPs per byte of a 'valid', stride-1 float32
    convolution if the input, the weights and the output each crossed DRAM once."""
    from ..kernels.conv import conv_bytes, conv_flops

    r = rng()
    layers = [("ECE408 C1", 1000, 1, 86, 86, 4, 7), ("ECE408 C3", 1000, 4, 40, 40, 16, 7),
              ("the electrode CNN's conv2 (valid)", 10, 64, 56, 100, 64, 8)]
    layers += [("a random layer", int(r.integers(1, 50)), int(r.integers(1, 17)), int(r.integers(8, 60)),
                int(r.integers(8, 60)), int(r.integers(1, 65)), int(r.integers(1, 8))) for _ in range(10)]
    for name, b, c, h, w, m, k in layers:
        ho, wo = h - k + 1, w - k + 1
        flops, nbytes = conv_flops(b, c, m, k, ho, wo), conv_bytes(b, c, h, w, m, k, ho, wo)
        want = flops / nbytes
        got = call_student(layer_intensity, "layer_intensity", b, c, h, w, m, k)
        try:
            ok = abs(float(got) - want) <= 1e-9 * want
        except (TypeError, ValueError):
            raise CheckFailed(f"layer_intensity must return a number of FLOPs per byte, got {got!r}") from None
        if not ok:
            hint = ""
            if abs(float(got) * 4 - want) <= 1e-9 * want:
                hint = " A float32 is 4 bytes: divide by 4 * (elements moved)."
            elif abs(float(got) - flops / ((b * c * h * w + b * m * ho * wo) * 4)) <= 1e-9 * want:
                hint = " The weights cross DRAM too (M * C * K * K floats, once)."
            elif abs(float(got) - flops / ((b * c * h * w + m * c * k * k) * 4)) <= 1e-9 * want:
                hint = " The output is written once: B * M * Ho * Wo floats."
            raise CheckFailed(f"layer_intensity for {name} (B={b}, C={c}, {h}x{w}, M={m}, K={k}) returned {got!r}, "
                              f"expected {want:.3f} FLOPs per byte ({flops:,} FLOPs / {nbytes:,} bytes).{hint}")
    c1 = conv_flops(1000, 1, 4, 7, 80, 80) / conv_bytes(1000, 1, 86, 86, 4, 7, 80, 80)
    c3 = conv_flops(1000, 4, 16, 7, 34, 34) / conv_bytes(1000, 4, 40, 40, 16, 7, 34, 34)
    passed(f"C1 does {c1:.1f} FLOPs per byte, C3 {c3:.1f}, against the H100's ridge of {RIDGE_H100:.1f}")
