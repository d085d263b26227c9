"""Tensor-core instructions of the PTX engine: ``ldmatrix``, ``mma.sync`` and ``wmma.*``.

Registered from ``instructions.py`` (``HANDLERS`` joins its table; ``cvt.rna.tf32.f32`` is
routed here too). All of them are warp-wide: every lane of a warp executes them together, so
each step works on whole warps (``_warps``: the chunk's lanes as a ``(warps, 32)`` table);
a warp with only some lanes at the instruction is a ``WarpCollectiveError`` (the ISA makes it
undefined behaviour).

Fragments (PTX ISA 9.7.14.5, "Matrix fragments for mma.m16n8k8 / m16n8k16"): with
``g = lane >> 2`` and ``t = lane % 4``, element ``i`` of a lane's fragment is
``(row, col)`` of its matrix as ``mma_layout`` writes it down (16-bit elements two to a
register, the lower-numbered in the low half). ``wmma`` fragments are opaque in the ISA; the
engine models NVIDIA's sm_80+ layout as the mma layout repeated over the 16 x 16 tile:

- A (m16n16k8 TF32, m16n16k16 BF16): exactly mma's A fragment (4 registers);
- B: mma's B fragment of columns 0-7, then of columns 8-15 (2 + 2 registers);
- C/D (8 floats): mma's C fragment of columns 0-7, then of columns 8-15;
- FP16 A and B hold 8 registers where 4 are enough: registers 4-7 repeat 0-3.
  (tests/test_ptx_tensor_cores_gpu.py writes the registers a GPU loads out to compare.)

Arithmetic (``mma_f32``): D = A * B + C with FP32 C and D. Each product of two inputs is
exact (at most 11 x 11 significand bits); the sum is taken in float64, C first and then the
products in k order, and rounded once to float32 (to nearest even). Float64 keeps every
product and partial sum exact unless the terms' exponents span more than ~29 binary orders;
otherwise its own rounding, 2^-53 relative, is far below float32's. TF32 operands are read as
the top 19 bits of the register (sign, exponent, 10 mantissa bits: the low 13 bits are
dropped, truncation, as the tensor cores do with raw float bits). The GPU's tensor cores
align and add with their own internal precision (truncating), so a GPU result differs from
the engine's within a bound (``tests/cuda_c_cases.py``'s ``tensor_core_bound``), not bit for
bit.

Trace: ``ldmatrix`` is a shared read. Each 8 x 8 matrix is one phase of the instruction, as on
the GPU (``.x4``: four phases): the 8 rows of 16 bytes of matrix ``j`` are read as 32 words,
word ``w`` of row ``r`` under lane ``4 r + w`` (the lane that receives it without ``.trans``),
one request of the warp per matrix, so the bank-conflict view counts each matrix's
wavefronts (8 rows 128 bytes apart: 8; XOR-swizzled rows: 1). ``wmma.load`` / ``wmma.store``
access each fragment element from its lane (the ISA leaves the access pattern to the
hardware). ``mma.sync`` and ``wmma.mma`` touch registers only: no memory rows.
"""

from __future__ import annotations

import numpy as np

from ..errors import WarpCollectiveError
from ...simt import WARP_SIZE
from .parser import Vector

_TF32_MASK = np.uint32(0xFFFFE000)          # sign, exponent, 10 mantissa bits
_CANONICAL_NAN = np.uint32(0x7FFFFFFF)


def _unsupported():
    from .instructions import UnsupportedInstruction
    return UnsupportedInstruction


# --- the ISA's fragment layouts --------------------------------------------------------------------
def mma_layout(matrix: str, shape: str, precision: str) -> np.ndarray:
    """``(32, elements, 2)``: per lane, the ``(row, col)`` of each element of its ``mma.sync``
    fragment of ``matrix`` ("a", "b", "c") for ``shape`` ("m16n8k8" with "tf32", "m16n8k16"
    with "f16"/"bf16"), as PTX ISA 9.7.14.5 gives them."""
    lane = np.arange(WARP_SIZE)[:, None]
    g, t = lane >> 2, lane & 3
    if matrix == "c":
        i = np.arange(4)[None, :]
        row, col = g + 8 * (i >> 1), 2 * t + (i & 1)
    elif shape == "m16n8k8" and precision == "tf32":
        if matrix == "a":
            i = np.arange(4)[None, :]
            row, col = g + 8 * (i & 1), t + 4 * (i >> 1)
        else:
            i = np.arange(2)[None, :]
            row, col = t + 4 * i, g + 0 * i
    elif shape == "m16n8k16" and precision in ("f16", "bf16"):
        if matrix == "a":
            i = np.arange(8)[None, :]
            row, col = g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)
        else:
            i = np.arange(4)[None, :]
            row, col = 2 * t + (i & 1) + 8 * (i >> 1), g + 0 * i
    else:
        raise _unsupported()(f"mma.sync of shape .{shape} with .{precision} inputs")
    return np.stack(np.broadcast_arrays(row, col), axis=-1)


def wmma_layout(matrix: str, k: int, precision: str) -> np.ndarray:
    """The modelled ``wmma`` fragment (m16n16k``k``): mma's layout repeated (module docstring)."""
    mma_shape = "m16n8k8" if k == 8 else "m16n8k16"
    if matrix == "a":
        out = mma_layout("a", mma_shape, precision)
    else:
        tile = mma_layout(matrix, mma_shape, precision)
        right = tile.copy()
        right[..., 1] += 8
        out = np.concatenate([tile, right], axis=1)
    if precision == "f16" and matrix in ("a", "b"):
        out = np.concatenate([out, out], axis=1)          # registers 4-7 repeat 0-3
    return out


# --- whole warps -----------------------------------------------------------------------------------
def _warps(c, m, ins) -> np.ndarray:
    """``(warps, 32)`` lane indices of the warps executing this step: each must be whole (32
    threads, all at this instruction)."""
    table = c.__dict__.get("_warp_table")
    if table is None:
        if c.tpb % WARP_SIZE:
            raise c.error_at(0, f"`{ins}` needs whole warps: {c.tpb} threads a block is not a "
                             f"multiple of {WARP_SIZE}", ins, WarpCollectiveError)
        table = c._warp_table = c.lanes.reshape(-1, WARP_SIZE)
    if m is None:
        return table
    act = m[table]
    full = act.all(axis=1)
    partial = act.any(axis=1) & ~full
    if partial.any():
        w = int(np.flatnonzero(partial)[0])
        lane = int(table[w][act[w]][0])
        raise c.error_at(lane, f"`{ins}`: only {int(act[w].sum())} of the warp's 32 lanes reach "
                         "it (a warp-wide tensor-core instruction)", ins, WarpCollectiveError,
                         fix="every lane of the warp must execute the same mma/ldmatrix/wmma")
    return table[full]


# --- element values --------------------------------------------------------------------------------
def _f16_values(bits16):
    return np.asarray(bits16, np.uint16).view(np.float16).astype(np.float64)


def _bf16_values(bits16):
    return (np.asarray(bits16, np.uint32) << 16).view(np.float32).astype(np.float64)


def _tf32_values(bits32):
    return (np.asarray(bits32, np.uint32) & _TF32_MASK).view(np.float32).astype(np.float64)


def _elements(regs: list, precision: str) -> np.ndarray:
    """``(warps, 32, elements)`` float64 from a fragment's registers (each ``(warps, 32)``
    uint32): 16-bit types two to a register, low half first."""
    r = np.stack(regs, axis=-1).astype(np.uint32)
    if precision == "tf32":
        return _tf32_values(r)
    halves = np.stack([r & 0xFFFF, r >> 16], axis=-1).reshape(*r.shape[:-1], -1)
    return _f16_values(halves) if precision == "f16" else _bf16_values(halves)


def _matrix(values: np.ndarray, layout: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``(warps, rows, cols)``: the fragments' elements put at their ``(row, col)``."""
    out = np.zeros((values.shape[0], rows, cols), np.float64)
    out[:, layout[..., 0], layout[..., 1]] = values
    return out


def round_to_f32(x) -> np.ndarray:
    """float64 -> float32 to nearest even; a NaN is the canonical 0x7FFFFFFF."""
    out = np.asarray(x, np.float64).astype(np.float32)
    nan = np.isnan(out)
    if nan.any():
        out = out.copy()
        out.view(np.uint32)[nan] = _CANONICAL_NAN
    return out


def mma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D = A B + C per warp (``(w, m, k) @ (w, k, n) + (w, m, n)``, float64 inputs holding the
    tensor core's operand values): products exact, summed in float64 (C, then k in order),
    rounded once to float32."""
    acc = c.astype(np.float64, copy=True)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(a.shape[2]):
            acc += a[:, :, k, None] * b[:, None, k, :]
    return round_to_f32(acc)


# --- operands --------------------------------------------------------------------------------------
def _vector(op, count, what, ins):
    items = list(op.items) if isinstance(op, Vector) else [op]
    if len(items) != count:
        raise _unsupported()(f"{what} of {len(items)} registers (expected {count})")
    return items


def _gather(readers, c, lanes):
    return [np.broadcast_to(np.asarray(r(c)), (c.n,))[lanes] for r in readers]


def _scatter(writers, c, lanes, values):
    """Write ``values[..., i]`` (per warp and lane) to register ``i`` of each of ``lanes``."""
    m = np.zeros(c.n, bool)
    m[lanes.ravel()] = True
    for i, w in enumerate(writers):
        full = np.zeros(c.n, values.dtype)
        full[lanes.ravel()] = values[..., i].ravel()
        w(c, full, m)


# --- mma.sync --------------------------------------------------------------------------------------
_MMA_SHAPES = {"m16n8k8": (16, 8, 8), "m16n8k16": (16, 8, 16)}


def h_mma(ins, mods, entry, layout):
    """``mma.sync.aligned.{m16n8k8,m16n8k16}.row.col.f32.{tf32,f16,bf16}.{same}.f32``."""
    from .instructions import reader, writer

    flags = list(mods)
    shape = next((f for f in flags if f in _MMA_SHAPES), None)
    types = [f for f in flags if f in ("f32", "tf32", "f16", "bf16")]
    if ("sync" not in flags or "aligned" not in flags or shape is None or len(types) != 4
            or types[0] != "f32" or types[3] != "f32" or types[1] != types[2]
            or "row" not in flags or "col" not in flags):
        raise _unsupported()("mma other than .sync.aligned.{m16n8k8,m16n8k16}.row.col with FP32 C "
                             "and D (.f32.{tf32,f16,bf16}.{same}.f32)")
    extra = set(flags) - {"sync", "aligned", shape, "row", "col", *types}
    if extra:
        raise _unsupported()(f"mma with .{', .'.join(sorted(extra))}")
    precision = types[1]
    m_, n_, k_ = _MMA_SHAPES[shape]
    la, lb, lc = (mma_layout(x, shape, precision) for x in "abc")
    na = la.shape[1] if precision == "tf32" else la.shape[1] // 2
    nb = lb.shape[1] if precision == "tf32" else lb.shape[1] // 2
    d, a, b, cc = ins.operands
    ra = [reader(x, "b32", layout) for x in _vector(a, na, "an A fragment", ins)]
    rb = [reader(x, "b32", layout) for x in _vector(b, nb, "a B fragment", ins)]
    rc = [reader(x, "f32", layout) for x in _vector(cc, 4, "a C fragment", ins)]
    wd = [writer(x, "f32", layout) for x in _vector(d, 4, "a D fragment", ins)]

    def run(c, m):
        lanes = _warps(c, m, ins)
        if not len(lanes):
            return
        A = _matrix(_elements(_gather(ra, c, lanes), precision), la, m_, k_)
        B = _matrix(_elements(_gather(rb, c, lanes), precision), lb, k_, n_)
        C = _matrix(np.stack(_gather(rc, c, lanes), axis=-1).astype(np.float64), lc, m_, n_)
        D = mma_f32(A, B, C)
        _scatter(wd, c, lanes, D[:, lc[..., 0], lc[..., 1]])
    return _step(run, ins)


def _step(run, ins):
    from .instructions import Step
    return Step("op", run, ins)


# --- ldmatrix --------------------------------------------------------------------------------------
def h_ldmatrix(ins, mods, entry, layout):
    """``ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared{::cta}.b16 {r..}, [addr]``:
    lanes ``8 j .. 8 j + 7`` give the row addresses of matrix ``j`` (8 rows of 8 16-bit
    elements, 16 bytes each); lane ``l`` receives in register ``j`` row ``l / 4``, elements
    ``2 (l % 4)`` and ``+1`` of matrix ``j`` (``.trans``: column ``l / 4``, rows ``2 (l % 4)``
    and ``+1``), the lower-numbered element in the low half."""
    from .instructions import _address_of, writer

    flags = set(mods)
    count = next((int(f[1:]) for f in flags if f in ("x1", "x2", "x4")), None)
    space = flags & {"shared", "shared::cta"}
    if ("sync" not in flags or "aligned" not in flags or "m8n8" not in flags or count is None
            or not space or "b16" not in flags):
        raise _unsupported()("ldmatrix other than .sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16")
    extra = flags - {"sync", "aligned", "m8n8", f"x{count}", "trans", "b16"} - space
    if extra:
        raise _unsupported()(f"ldmatrix with .{', .'.join(sorted(extra))}")
    trans = "trans" in flags
    d, a = ins.operands
    writes = [writer(x, "b32", layout) for x in _vector(d, count, "a destination", ins)]
    addr = _address_of(a, layout, ins)
    lane = np.arange(WARP_SIZE)
    row, word = lane >> 2, lane & 3

    def run(c, m):
        lanes = _warps(c, m, ins)
        if not len(lanes):
            return
        rows_at = np.broadcast_to(np.asarray(addr(c), np.int64), (c.n,))[lanes]     # (w, 32)
        active = np.zeros(c.n, bool)
        active[lanes.ravel()] = True
        out = np.zeros(lanes.shape + (count,), np.uint32)
        for j in range(count):
            # phase j: matrix j's 8 rows, word w of row r read under lane 4 r + w
            at = np.zeros(c.n, np.int64)
            at[lanes] = rows_at[:, 8 * j + row] + 4 * word
            (words,) = c.load("shared", at, active, np.dtype(np.uint32), 1, ins)
            words = words[lanes]                                   # (w, 32): word (l%4) of row l/4
            if not trans:
                out[..., j] = words
            else:
                halves = np.stack([words & 0xFFFF, words >> 16], -1).reshape(len(lanes), 8, 8)
                lo = halves[:, 2 * word, row]                      # M[2t][g]
                hi = halves[:, 2 * word + 1, row]                  # M[2t+1][g]
                out[..., j] = lo | (hi << 16)
            c.phase_step(active)
        _scatter(writes, c, lanes, out)
    return _step(run, ins)


# --- wmma ------------------------------------------------------------------------------------------
_WMMA_SHAPES = {"m16n16k8": 8, "m16n16k16": 16}
_ELEMENT_BYTES = {"tf32": 4, "f16": 2, "bf16": 2, "f32": 4}


def h_wmma(ins, mods, entry, layout):
    kind = mods[0] if mods else None
    if kind == "load":
        return _wmma_load(ins, mods[1:], layout)
    if kind == "store":
        return _wmma_store(ins, mods[1:], layout)
    if kind == "mma":
        return _wmma_mma(ins, mods[1:], layout)
    raise _unsupported()(f"wmma.{kind}")


def _wmma_common(flags, ins):
    shape = next((f for f in flags if f in _WMMA_SHAPES), None)
    if "sync" not in flags or "aligned" not in flags or shape is None:
        raise _unsupported()("wmma other than .sync.aligned.{m16n16k8,m16n16k16}")
    return shape, _WMMA_SHAPES[shape]


def _space(flags):
    space = [f for f in flags if f in ("global", "shared", "shared::cta")]
    return {"shared::cta": "shared"}.get(space[0], space[0]) if space else "generic"


def _element_addresses(c, lanes, base, stride, lay, size):
    """``(warps, 32, elements)`` byte addresses of a row-major fragment with ``stride``
    elements a row."""
    b = np.broadcast_to(np.asarray(base, np.int64), (c.n,))[lanes][..., None]
    s = np.broadcast_to(np.asarray(stride, np.int64), (c.n,))[lanes][..., None]
    return b + (lay[..., 0] * s + lay[..., 1]) * size


def _wmma_load(ins, mods, layout):
    """``wmma.load.{a,b}.sync.aligned.row.{shape}{.space}.{tf32,f16,bf16} {r..}, [p], ldm``:
    each lane reads its fragment's elements (row-major, ``ldm`` elements a row)."""
    from .instructions import _address_of, reader, writer

    flags = list(mods)
    matrix = flags[0] if flags and flags[0] in ("a", "b") else None
    shape, k = _wmma_common(flags, ins)
    precision = flags[-1]
    if matrix is None or precision not in ("tf32", "f16", "bf16") or "row" not in flags \
            or (k == 8) != (precision == "tf32"):
        raise _unsupported()("wmma.load other than .{a,b}.sync.aligned.row.m16n16k8.tf32 or "
                             ".m16n16k16.{f16,bf16}")
    space = _space(flags)
    lay = wmma_layout(matrix, k, precision)
    size = _ELEMENT_BYTES[precision]
    per_reg = 4 // size
    nregs = lay.shape[1] // per_reg
    dests = _vector(ins.operands[0], nregs, "a fragment", ins)
    writes = [writer(x, "b32", layout) for x in dests]
    addr = _address_of(ins.operands[1], layout, ins)
    ldm = reader(ins.operands[2], "u32", layout) if len(ins.operands) > 2 else None
    if ldm is None:
        raise _unsupported()("wmma.load without a stride")
    distinct = lay.shape[1] // 2 if precision == "f16" else lay.shape[1]   # f16: 4-7 repeat 0-3
    dtype = np.dtype(np.uint32 if size == 4 else np.uint16)

    def run(c, m):
        lanes = _warps(c, m, ins)
        if not len(lanes):
            return
        active = np.zeros(c.n, bool)
        active[lanes.ravel()] = True
        at = _element_addresses(c, lanes, addr(c), ldm(c), lay[:, :distinct], size)
        values = np.zeros(lanes.shape + (distinct,), np.uint32)
        for e in range(distinct):
            full = np.zeros(c.n, np.int64)
            full[lanes] = at[..., e]
            (v,) = c.load(space, full, active, dtype, 1, ins)
            values[..., e] = v[lanes]
        if precision == "f16":
            values = np.concatenate([values, values], axis=-1)
        if per_reg == 2:
            values = values[..., 0::2] | (values[..., 1::2] << 16)
        _scatter(writes, c, lanes, values.astype(np.uint32))
    return _step(run, ins)


def _wmma_store(ins, mods, layout):
    """``wmma.store.d.sync.aligned.row.{shape}{.space}.f32 [p], {8 floats}, ldm``."""
    from .instructions import _address_of, reader

    flags = list(mods)
    _, k = _wmma_common(flags, ins)
    if not flags or flags[0] != "d" or flags[-1] != "f32" or "row" not in flags:
        raise _unsupported()("wmma.store other than .d.sync.aligned.row.{shape}.f32")
    space = _space(flags)
    lay = wmma_layout("c", k, "f32")
    addr = _address_of(ins.operands[0], layout, ins)
    values = [reader(x, "f32", layout) for x in _vector(ins.operands[1], 8, "a D fragment", ins)]
    ldm = reader(ins.operands[2], "u32", layout)
    f32 = np.dtype(np.float32)

    def run(c, m):
        lanes = _warps(c, m, ins)
        if not len(lanes):
            return
        active = np.zeros(c.n, bool)
        active[lanes.ravel()] = True
        at = _element_addresses(c, lanes, addr(c), ldm(c), lay, 4)
        for e, r in enumerate(values):
            full = np.zeros(c.n, np.int64)
            full[lanes] = at[..., e]
            c.store(space, full, active, f32, [np.broadcast_to(np.asarray(r(c)), (c.n,))], ins)
    return _step(run, ins)


def _wmma_mma(ins, mods, layout):
    """``wmma.mma.sync.aligned.row.row.{shape}.f32.{atype.btype.}f32``: D = A B + C on the
    16 x 16 tile (FP16's form names only D's and C's types: ``.f32.f32``)."""
    from .instructions import reader, writer

    flags = list(mods)
    _, k = _wmma_common(flags, ins)
    types = [f for f in flags if f in ("f32", "tf32", "f16", "bf16")]
    if types == ["f32", "f32"] and k == 16:
        precision = "f16"
    elif len(types) == 4 and types[0] == types[3] == "f32" and types[1] == types[2]:
        precision = types[1]
    else:
        raise _unsupported()("wmma.mma other than FP32 C and D")
    if flags[:2] != ["sync", "aligned"] or flags[2:4] != ["row", "row"] \
            or (k == 8) != (precision == "tf32"):
        raise _unsupported()("wmma.mma other than .sync.aligned.row.row")
    la, lb, lc = (wmma_layout(x, k, precision) for x in "abc")
    per_reg = 1 if precision == "tf32" else 2
    d, a, b, cc = ins.operands
    ra = [reader(x, "b32", layout) for x in _vector(a, la.shape[1] // per_reg, "an A fragment", ins)]
    rb = [reader(x, "b32", layout) for x in _vector(b, lb.shape[1] // per_reg, "a B fragment", ins)]
    rc = [reader(x, "f32", layout) for x in _vector(cc, 8, "a C fragment", ins)]
    wd = [writer(x, "f32", layout) for x in _vector(d, 8, "a D fragment", ins)]
    used_a = la.shape[1] // 2 if precision == "f16" else la.shape[1]   # f16: the first copy
    used_b = lb.shape[1] // 2 if precision == "f16" else lb.shape[1]

    def run(c, m):
        lanes = _warps(c, m, ins)
        if not len(lanes):
            return
        A = _matrix(_elements(_gather(ra, c, lanes), precision)[..., :used_a], la[:, :used_a], 16, k)
        B = _matrix(_elements(_gather(rb, c, lanes), precision)[..., :used_b], lb[:, :used_b], k, 16)
        C = _matrix(np.stack(_gather(rc, c, lanes), axis=-1).astype(np.float64), lc, 16, 16)
        D = mma_f32(A, B, C)
        _scatter(wd, c, lanes, D[:, lc[..., 0], lc[..., 1]])
    return _step(run, ins)


# --- cvt.rna.tf32.f32 ------------------------------------------------------------------------------
def tf32_round_nearest_away(bits32) -> np.ndarray:
    """``cvt.rna.tf32.f32``: a float32's bits rounded to TF32 (10 mantissa bits) to nearest,
    ties away from zero, the 13 low bits cleared; infinities stay, a NaN is 0x7FFFFFFF."""
    bits = np.asarray(bits32, np.uint32).astype(np.uint64)
    rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)     # a carry may reach infinity
    nan = np.isnan(np.asarray(bits32, np.uint32).view(np.float32))
    return np.where(nan, _CANONICAL_NAN, rounded).astype(np.uint32)


def tf32_round_nearest_even(bits: np.ndarray) -> np.ndarray:
    """FP32 bit patterns (uint32) rounded to nearest TF32, ties to even, as the TMA does with a TF32
    tensor map (tma.py; ``cvt.rna`` above sends ties away instead): the low 13 mantissa bits
    become zero, carrying into the exponent where the mantissa overflows (the largest finite values
    round to infinity, as IEEE rounding does). Infinities and NaNs pass unchanged, subnormals round
    like the rest (neither measured on the GPU: no course input holds one)."""
    bits = np.asarray(bits, np.uint32)
    wide = bits.astype(np.uint64)
    rounded = ((wide + 0xFFF + ((wide >> 13) & 1)) & 0xFFFFE000).astype(np.uint32)
    finite = (bits & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
    return np.where(finite, rounded, bits)


def h_cvt_tf32(ins, mods, entry, layout):
    from .instructions import reader, writer

    if list(mods) != ["rna", "tf32", "f32"]:
        raise _unsupported()("cvt to .tf32 other than cvt.rna.tf32.f32")
    d, a = ins.operands
    ra, w = reader(a, "b32", layout), writer(d, "b32", layout)
    return _step(lambda c, m: w(c, tf32_round_nearest_away(ra(c)), m), ins)


#: opcode -> handler, joined to instructions.py's table
HANDLERS = {"mma": h_mma, "ldmatrix": h_ldmatrix, "wmma": h_wmma}


def handler_for(parts):
    """The handler of an instruction this module runs (``parts``: the opcode split at dots),
    or None."""
    if parts[0] == "cvt" and "tf32" in parts:
        return h_cvt_tf32
    return HANDLERS.get(parts[0])
