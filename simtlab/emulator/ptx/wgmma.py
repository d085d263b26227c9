"""Hopper's warpgroup MMA on the PTX engine: ``wgmma.fence``, ``wgmma.mma_async``,
``wgmma.commit_group`` and ``wgmma.wait_group`` (PTX ISA 9.7.15, sm_90a).

A warpgroup is 4 consecutive warps of a block, the first warp's index a multiple of 4
(threads ``128 g .. 128 g + 127``). Every ``wgmma`` instruction is ``.sync.aligned``: all 128
threads execute it together. The executor's min-PC schedule brings the lanes at one PC
together, so each step takes the chunk's warpgroups whose 128 lanes are all at the
instruction (``warpgroups``); a warpgroup with only some of its lanes there, or a block whose
last warps do not fill a warpgroup executing it, is a ``WarpCollectiveError``.

Shapes and types (``h_wgmma``): ``.m64nNk16.f32.{f16,bf16}.{same}`` and ``.m64nNk8.f32.tf32.tf32``,
N a multiple of 8 up to 256, FP32 accumulators; A from registers or a shared-memory matrix
descriptor, B from a descriptor. Any other shape or type (FP16 accumulators, k32 integer and
FP8 forms, ``.sp``) is refused by name.

Fragments (PTX ISA 9.7.15.5.1.1): warp ``w`` of the warpgroup holds rows ``16 w .. 16 w + 15``
of A (registers) and of D; within them a warp's fragment is the ``mma.sync`` one of the same
k (``mma.m16n8k8`` for TF32, ``m16n8k16`` for FP16/BF16), and D's register ``4 i + j`` is
``mma``'s C element ``j`` of the columns ``8 i .. 8 i + 7`` (``d_layout``).

Shared-memory matrices (9.7.15.5.1.2): a 64-bit descriptor (``decode_descriptor``) gives the
start address, the leading and stride byte offsets (LBO, SBO) and the swizzle mode; the
canonical layouts of the ISA's table place element ``(mn, k)`` (``operand_addresses``), and
the swizzle XORs address bits 4.. with bits 7.. (``swizzle``: CuTe's ``Swizzle<b,4,3>``, ``b``
= 3, 2, 1 for the 128-, 64- and 32-byte modes) of the absolute shared address, so a tile whose
pattern starts at a 1024/512/256-byte boundary reads back what a kernel wrote with
``chunk ^ (row % 8)``. A non-zero base offset (a pattern that starts elsewhere) is refused.
``imm-trans-a/b`` = 1 reads A as M-major / B as N-major (16-bit types only, as the ISA says).

Arithmetic: ``tensor_ops.mma_f32``, the model of ``mma.sync``: exact products, summed in
float64 (C first, then k in order), one rounding to float32 per instruction; TF32 operands
are the top 19 bits of their 32-bit pattern; ``scale-d`` false drops C; ``imm-scale-a/b`` = -1
negate A / B.

Asynchrony: the engine performs each ``wgmma.mma_async`` when it is issued, reading shared
memory and writing the accumulators at once; ``commit_group`` and ``wait_group`` then have
nothing left to wait for. This is one legal order of the asynchronous operation: the ISA makes
it undefined to touch the accumulators, or to write the shared memory the operation reads,
between the issue and the ``wait_group`` that covers it. A kernel that does so anyway gets
the issue-time values here (the GPU's result is undefined).

Trace: ``wgmma`` is the async proxy reading shared memory, not the threads: like ``mma.sync``
it adds no memory rows; a traced run still refuses a read of shared bytes no thread of the
block has written (``UninitializedReadError``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OutOfBoundsError, UninitializedReadError, WarpCollectiveError
from ...simt import WARP_SIZE
from . import tensor_ops as T
from .parser import Imm, Reg, Symbol, Vector

WARPGROUP = 4 * WARP_SIZE
#: descriptor bits 62-63 -> the swizzle's width in bytes (0: none, the "interleaved" layout)
SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}
#: k of each input type (bytes per element)
_SHAPE_K = {"tf32": 8, "f16": 16, "bf16": 16}
_ELEMENT_BYTES = {"tf32": 4, "f16": 2, "bf16": 2}


def _unsupported():
    from .instructions import UnsupportedInstruction
    return UnsupportedInstruction


# --- matrix descriptors (PTX ISA 9.7.15.5.1.2.2) -----------------------------------------------------
@dataclass(frozen=True)
class MatrixDescriptor:
    start: int                 # byte address in shared memory (bits 0-13, << 4)
    leading: int               # leading dimension byte offset (bits 16-29, << 4)
    stride: int                # stride dimension byte offset (bits 32-45, << 4)
    base_offset: int           # bits 49-51
    swizzle: int               # bytes: 0 (none), 32, 64, 128 (bits 62-63)


def decode_descriptor(desc) -> MatrixDescriptor:
    """The fields of a 64-bit ``wgmma`` matrix descriptor."""
    d = int(desc)
    return MatrixDescriptor(start=(d & 0x3FFF) << 4, leading=((d >> 16) & 0x3FFF) << 4,
                            stride=((d >> 32) & 0x3FFF) << 4, base_offset=(d >> 49) & 7,
                            swizzle=SWIZZLE_BYTES[(d >> 62) & 3])


def swizzle(address, width: int):
    """A byte address under the ``width``-byte swizzle (0: none): the 16-byte chunk index
    (bits 4..) XOR the row of ``width`` bytes within the pattern (bits 7..), ``width / 16``
    chunks wide (CuTe's ``Swizzle<log2(width / 16), 4, 3>``)."""
    a = np.asarray(address, np.int64)
    if not width:
        return a
    return a ^ (((a >> 7) & (width // 16 - 1)) << 4)


def operand_addresses(d: MatrixDescriptor, mn: int, k: int, element_bytes: int,
                      mn_major: bool) -> np.ndarray:
    """``(mn, k)`` shared byte addresses of a descriptor's matrix (A: M x K, B: N x K), from
    the ISA's canonical layouts, ``T = 16 / element_bytes`` elements per 16 bytes, ``W`` the
    swizzle's width in bytes:

    - K-major, no swizzle: ``((8,m),(T,2k)):((1T,SBO),(1,LBO))``: 8 x 16-byte core matrices,
      the next along K at LBO, the next 8 rows at SBO;
    - K-major, swizzled: ``((8,m),(T,2k)):((W/16 T,SBO),(1,T))``: row ``r % 8`` at ``W`` bytes
      a row, K contiguous, the next 8 rows at SBO (LBO unused);
    - MN-major, no swizzle: ``((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))``;
    - MN-major, swizzled: ``((T,W/16,m),(8,k)):((1,T,LBO),(W/16 T,SBO))``: ``W`` bytes of MN
      contiguous, the next ``W`` bytes of MN at LBO, k rows ``W`` bytes apart, the next 8 at SBO;

    then the swizzle of the absolute address."""
    e = element_bytes
    t = 16 // e
    r = np.arange(mn, dtype=np.int64)[:, None]
    c = np.arange(k, dtype=np.int64)[None, :]
    w = d.swizzle
    if not mn_major and not w:
        off = (r % 8) * 16 + (r // 8) * d.stride + (c % t) * e + (c // t) * d.leading
    elif not mn_major:
        off = (r % 8) * w + (r // 8) * d.stride + c * e
    elif not w:
        off = (r % t) * e + (r // t) * d.stride + (c % 8) * 16 + (c // 8) * d.leading
    else:
        span = w // e                                   # MN elements per swizzle row
        off = (r % span) * e + (r // span) * d.leading + (c % 8) * w + (c // 8) * d.stride
    return swizzle(d.start + off, w)


# --- fragments -----------------------------------------------------------------------------------
def d_layout(n: int) -> np.ndarray:
    """``(128, n / 2, 2)``: per thread of the warpgroup, the ``(row, col)`` of each FP32
    accumulator register of an m64nN D."""
    thread = np.arange(WARPGROUP)[:, None]
    warp, lane = thread // WARP_SIZE, thread % WARP_SIZE
    g, t = lane >> 2, lane & 3
    i = np.arange(n // 2)[None, :]
    row = 16 * warp + g + 8 * ((i & 3) >> 1)
    col = 8 * (i >> 2) + 2 * t + (i & 1)
    return np.stack(np.broadcast_arrays(row, col), axis=-1)


def a_layout(precision: str) -> np.ndarray:
    """``(128, elements, 2)``: A (64 x k) from registers: each warp's ``mma.sync`` A fragment of
    its 16 rows."""
    shape = "m16n8k8" if precision == "tf32" else "m16n8k16"
    per_warp = T.mma_layout("a", shape, precision)               # (32, e, 2)
    out = np.concatenate([per_warp + np.array([16 * w, 0]) for w in range(4)], axis=0)
    return out


# --- whole warpgroups ----------------------------------------------------------------------------
def warpgroups(c, m, ins) -> np.ndarray:
    """``(groups, 128)`` lane indices of the warpgroups executing this step: each must be
    whole (its 128 threads, all at this instruction)."""
    whole = c.tpb // WARPGROUP
    threads = c.lanes.reshape(c.nb, c.tpb)
    table = threads[:, :whole * WARPGROUP].reshape(-1, WARPGROUP)
    act = np.ones(c.n, bool) if m is None else m
    outside = act.reshape(c.nb, c.tpb)[:, whole * WARPGROUP:]
    if outside.any():
        b, t = np.argwhere(outside)[0]
        lane = int(b * c.tpb + whole * WARPGROUP + t)
        raise c.error_at(lane, f"`{ins}`: thread {whole * WARPGROUP + int(t)} is in a warpgroup "
                         f"the block's {c.tpb} threads do not fill (a warpgroup is 4 whole warps)",
                         ins, WarpCollectiveError,
                         fix="launch a multiple of 128 threads for the warps that run wgmma")
    here = act[table]
    full = here.all(axis=1)
    partial = here.any(axis=1) & ~full
    if partial.any():
        gi = int(np.flatnonzero(partial)[0])
        lane = int(table[gi][here[gi]][0])
        raise c.error_at(lane, f"`{ins}`: only {int(here[gi].sum())} of the warpgroup's 128 "
                         "threads reach it (a warpgroup-wide instruction)", ins,
                         WarpCollectiveError,
                         fix="every thread of the 4 warps must execute the same wgmma "
                             "instructions (no wgmma inside a branch that splits a warpgroup)")
    return table[full]


# --- the instructions --------------------------------------------------------------------------------
def h_wgmma(ins, mods, entry, layout):
    kind = mods[0] if mods else None
    flags = set(mods[1:])
    if not {"sync", "aligned"} <= flags:
        raise _unsupported()(f"wgmma.{kind} without .sync.aligned")
    if kind in ("fence", "commit_group"):
        _only(flags, {"sync", "aligned"}, kind)
        return _collective_nothing(ins)
    if kind == "wait_group":
        _only(flags, {"sync", "aligned"}, kind)
        if len(ins.operands) != 1 or not isinstance(ins.operands[0], Imm):
            raise _unsupported()("wgmma.wait_group without an immediate group count")
        return _collective_nothing(ins)
    if kind == "mma_async":
        return _mma_async(ins, list(mods[1:]), layout)
    raise _unsupported()(f"wgmma.{kind}")


def _only(flags, allowed, kind):
    extra = flags - allowed
    if extra:
        raise _unsupported()(f"wgmma.{kind} with .{', .'.join(sorted(extra))}")


def _collective_nothing(ins):
    """``fence`` / ``commit_group`` / ``wait_group``: the warpgroup must be whole; nothing is
    in flight (``mma_async`` completes at its issue: the module docstring says why)."""
    def run(c, m):
        warpgroups(c, m, ins)
    return T._step(run, ins)


def _parse_mma(flags):
    """``(n, precision)`` of ``.sync.aligned.m64nNkK.f32.atype.btype``, or an
    UnsupportedInstruction naming what the engine runs instead."""
    supported = ("the PTX engine runs wgmma.mma_async.sync.aligned .m64nNk16.f32.f16.f16, "
                 ".m64nNk16.f32.bf16.bf16 and .m64nNk8.f32.tf32.tf32 (N = 8, 16, ..., 256)")
    shape = next((f for f in flags if f.startswith("m64n")), None)
    types = [f for f in flags if f not in ("sync", "aligned") and f != shape]
    if shape is None or len(types) != 3:
        raise _unsupported()(f"wgmma.mma_async.{'.'.join(flags)}: {supported}")
    if types[0] != "f32":
        raise _unsupported()(f"wgmma.mma_async with .{types[0]} accumulators: {supported}; "
                             "accumulate in float")
    precision = types[1]
    if precision not in _SHAPE_K or types[2] != precision:
        raise _unsupported()(f"wgmma.mma_async of .{types[1]} x .{types[2]}: {supported}")
    try:
        n_text, k_text = shape[4:].split("k")
        n, k = int(n_text), int(k_text)
    except ValueError:
        raise _unsupported()(f"wgmma.mma_async of shape .{shape}: {supported}") from None
    if k != _SHAPE_K[precision] or n % 8 or not 8 <= n <= 256:
        raise _unsupported()(f"wgmma.mma_async of shape .{shape} with .{precision}: {supported}")
    return n, precision


def _register(op, layout):
    """A nested block's register written as a plain name (``p`` of ``.reg .pred p``)."""
    if isinstance(op, Symbol) and op.name in layout.registers:
        return Reg(op.name)
    return op


def _immediate(op, allowed, what):
    if not isinstance(op, Imm) or int(op.value) not in allowed:
        raise _unsupported()(f"wgmma.mma_async with {what} {op} (an immediate in {allowed})")
    return int(op.value)


def _mma_async(ins, flags, layout):
    from .instructions import reader, writer

    if "sp" in flags or "satfinite" in flags:
        raise _unsupported()("wgmma.mma_async.sp (sparse A) or .satfinite")
    n, precision = _parse_mma(flags)
    k = _SHAPE_K[precision]
    ops = [_register(o, layout) for o in ins.operands]
    a_in_registers = isinstance(ops[1], Vector)
    sixteen = precision != "tf32"
    count = 3 + 3 + (int(sixteen) * (1 if a_in_registers else 2))
    if len(ops) != count:
        raise _unsupported()(f"wgmma.mma_async with {len(ops)} operands (expected {count}: d, a, "
                             "b-desc, scale-d, imm-scale-a, imm-scale-b"
                             + (", imm-trans-a, imm-trans-b)" if sixteen and not a_in_registers
                                else ", imm-trans-b)" if sixteen else ")"))
    d, a, b, scale_d = ops[:4]
    scale_a = _immediate(ops[4], (1, -1), "imm-scale-a")
    scale_b = _immediate(ops[5], (1, -1), "imm-scale-b")
    trans = [_immediate(o, (0, 1), "imm-trans") for o in ops[6:]]
    trans_a = trans[0] if sixteen and not a_in_registers else 0
    trans_b = trans[-1] if sixteen else 0
    wd = [writer(x, "f32", layout) for x in T._vector(d, n // 2, "a D fragment", ins)]
    rd = [reader(x, "f32", layout) for x in T._vector(d, n // 2, "a D fragment", ins)]
    rb = reader(b, "b64", layout)
    if a_in_registers:
        per_reg = 1 if precision == "tf32" else 2
        la = a_layout(precision)
        ra = [reader(x, "b32", layout) for x in T._vector(a, la.shape[1] // per_reg,
                                                          "an A fragment", ins)]
    else:
        ra = reader(a, "b64", layout)
    rscale = reader(scale_d, "pred", layout)
    ld = d_layout(n)
    element = _ELEMENT_BYTES[precision]

    def run(c, m):
        groups = warpgroups(c, m, ins)
        if not len(groups):
            return
        if a_in_registers:
            values = T._elements(T._gather(ra, c, groups), precision)
            A = T._matrix(values, la, 64, k)
        else:
            A = _shared_matrix(c, groups, ra, 64, k, element, trans_a, precision, "A", ins)
        B = _shared_matrix(c, groups, rb, n, k, element, trans_b, precision, "B", ins)
        B = B.transpose(0, 2, 1)                                   # (groups, k, n)
        C = T._matrix(np.stack(T._gather(rd, c, groups), axis=-1).astype(np.float64), ld, 64, n)
        keep = np.broadcast_to(np.asarray(rscale(c), bool), (c.n,))[groups[:, 0]]
        C[~keep] = 0.0
        D = T.mma_f32(A * scale_a, B * scale_b, C)
        T._scatter(wd, c, groups, D[:, ld[..., 0], ld[..., 1]])
    return T._step(run, ins)


def _shared_matrix(c, groups, read_desc, mn, k, element, mn_major, precision, which, ins):
    """``(groups, mn, k)`` float64: each warpgroup's operand read through its descriptor from
    its block's shared memory."""
    descs = np.broadcast_to(np.asarray(read_desc(c)).astype(np.uint64), (c.n,))[groups]
    out = np.zeros((len(groups), mn, k), np.float64)
    dtype = np.dtype(np.uint32 if element == 4 else np.uint16)
    view = c._shared_view(dtype)
    for gi, lanes in enumerate(groups):
        if (descs[gi] != descs[gi][0]).any():
            raise c.error_at(int(lanes[0]), f"`{ins}`: the threads of the warpgroup pass different "
                             f"{which} descriptors", ins, fix="compute the descriptor from values "
                             "every thread of the warpgroup shares")
        d = decode_descriptor(descs[gi][0])
        _check_descriptor(c, int(lanes[0]), d, which, ins)
        at = operand_addresses(d, mn, k, element, bool(mn_major))
        block = int(c.lblock[lanes[0]])
        _check_bytes(c, int(lanes[0]), block, at, element, which, ins)
        bits = view[(block * c.shared_stride + at) // element]
        out[gi] = _values(bits, precision)
    return out


def _values(bits, precision):
    if precision == "tf32":
        return T._tf32_values(bits)
    return T._f16_values(bits) if precision == "f16" else T._bf16_values(bits)


def _check_descriptor(c, lane, d, which, ins):
    if d.base_offset and d.swizzle:
        raise c.error_at(lane, f"`{ins}`: the {which} descriptor has a base offset of "
                         f"{d.base_offset} (bits 49-51): the PTX engine reads swizzled matrices "
                         f"whose pattern starts at a {8 * d.swizzle}-byte boundary only", ins,
                         fix=f"align the {which} tile to {8 * d.swizzle} bytes and pass base "
                             "offset 0")


def _check_bytes(c, lane, block, at, element, which, ins):
    """Every byte inside the block's shared arrays, and (traced) written before."""
    table = c.engine.tables["shared"]
    flat = at.ravel()
    bad = table.find(flat, element) < 0
    if bad.any():
        address = int(flat[np.flatnonzero(bad)[0]])
        raise c.error_at(lane, f"`{ins}`: the {which} descriptor reads shared address "
                         f"{address:#x}, outside every shared array "
                         f"({c.engine.describe_address('shared', address)})", ins,
                         OutOfBoundsError, fix="check the descriptor's start address, leading "
                         "and stride byte offsets against the tile's layout")
    if c.written is None:
        return
    pos = block * c.shared_stride + flat
    unwritten = ~c.written[pos[:, None] + np.arange(element)].all(axis=1)
    if unwritten.any():
        address = int(flat[np.flatnonzero(unwritten)[0]])
        err = c.error_at(lane, f"`{ins}` reads shared address {address:#x} through its {which} "
                         "descriptor, which no thread of this block has written yet", ins,
                         UninitializedReadError, fix="wait for the copies that fill the tile "
                         "(cp.async.wait_group / an mbarrier) and __syncthreads() before the wgmma")
        region = c.engine.tables["shared"].regions[int(table.find(np.array([address]), 1)[0])]
        err.array, err.index = region.name, (address - region.start) // region.itemsize
        raise err


#: opcode -> handler, joined to instructions.py's table
HANDLERS = {"wgmma": h_wgmma}
