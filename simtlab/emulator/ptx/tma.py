"""Hopper's asynchronous copies and their barriers on the PTX engine: ``mbarrier.*``,
``cp.async.bulk.tensor`` (TMA: the Tensor Memory Accelerator) and ``cp.async.bulk``
(PTX ISA 9.7.13.15 and 9.7.9.25.4-5).

**mbarrier** (an 8-byte object in shared memory, opaque in the ISA): the engine keeps each
one's state beside the chunk (``Chunk.mbarriers``, keyed by block and address): the phase
number, the arrivals still pending in it, the count ``init`` gave, and the transaction count
(bytes expected less bytes delivered). A phase completes when its pending arrivals reach zero
and its transaction count is zero; the next phase then starts with the init count pending.
``arrive`` counts one arrival (or ``count``), ``expect_tx`` adds bytes, ``complete_tx`` (and
every TMA/bulk copy that names the barrier) subtracts the bytes it delivered.
``test_wait``/``try_wait`` with ``.parity P`` ask whether the phase of parity ``P`` has
completed: true when the current phase's parity is not ``P`` (PTX: the parity is that of the
current or the immediately preceding phase); with a state (what ``arrive`` returned: here the
phase number at the arrival), whether that phase has completed.

Waiting: ``try_wait`` is the ISA's potentially blocking test; the engine blocks a lane that
finds the phase incomplete until another lane completes a phase (``Step.kind == "wait"``: the
lane stays at the instruction, the executor runs the others and retries it), so it always
returns true, and a kernel's loop around it (v8's timeout with ``%globaltimer`` and ``trap``)
never iterates. ``test_wait`` never blocks: it returns false, and the lane goes on only after
a phase somewhere completes (as if it had spun while the others ran). When every lane of the
chunk waits and no phase can complete any more, the launch stops with a ``BarrierError``
naming the barrier's state (on a GPU: a hang, or v8's trap after 2 s).

**TMA** (``cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes [dst],
[map, {c0, ...}], [mbar]``, tiled): the box at coordinates ``c0, ...`` (innermost first) of the
tensor the map describes is written to shared memory at ``dst`` as a dense box (innermost
dimension contiguous), each byte address under the map's swizzle (the same XOR of bits 4.. with
bits 7.. that ``wgmma``'s descriptors read: ``wgmma.swizzle``); elements outside the tensor are
zeros; the copy's bytes (the whole box) complete on ``mbar``. With ``.multicast::cluster`` and a
16-bit ``ctaMask`` the box goes to the same offset in every block of the cluster the mask names,
and completes on each one's barrier at ``mbar``'s offset. A map whose elements are TF32 (``TensorMap(...,
tf32=True)``) rounds each float32 element to nearest TF32, ties to even, on its way in, as the H100's TMA
does (benchmarks/tensor_cores_tma_rounding.py measured it). The engine makes the copy when the
instruction runs (one legal order of an asynchronous copy: the data may not be read before the
barrier's phase completes, which needs these bytes).

**Tensor maps**: on a GPU a ``CUtensorMap`` is 128 opaque bytes that the driver's
``cuTensorMapEncodeTiled`` fills; its encoding is not documented, only that function's
arguments are. The engine therefore takes those arguments: a :class:`TensorMap` (the array,
the box, the swizzle) passed for the kernel's ``const __grid_constant__ CUtensorMap`` parameter
(a 128-byte ``.param .align 64 .b8``). The kernel names it by the parameter's address
(``cvta.param``), which the engine maps back to the parameter.

Trace (traced runs): a TMA or bulk copy is the issuing thread's: its global reads, one row per
contiguous run of the box inside the tensor, and its shared writes, one 16-byte row per chunk
at its swizzled address (so the bank and race views see where the bytes land). ``mbarrier``
operations add no rows (the object's state is kept beside the memory).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import BarrierError, EmulationError, OutOfBoundsError
from .memory import PARAM_WINDOW, SHARED_OFFSET_MASK, SHARED_WINDOW, WINDOW_SIZE, cluster_address
from .parser import Address, Imm, Symbol, TensorAddress
from .tensor_ops import tf32_round_nearest_even
from .wgmma import swizzle

#: CU_TENSOR_MAP_SWIZZLE_{NONE,32B,64B,128B}: the swizzles a tensor map may name, in bytes
SWIZZLES = (0, 32, 64, 128)
TENSOR_MAP_BYTES = 128

#: an mbarrier's expected arrival count is 1 to 2^20 - 1 (PTX ISA, mbarrier.init)
MBARRIER_MAX_COUNT = 2 ** 20 - 1


def _unsupported():
    from .instructions import UnsupportedInstruction
    return UnsupportedInstruction


@dataclass(frozen=True, eq=False)
class TensorMap:
    """A tiled tensor map as ``cuTensorMapEncodeTiled`` takes it, for the PTX engine's TMA:
    ``tensor`` (a C-contiguous NumPy array: its dimensions innermost first are the map's,
    its strides the map's global strides), ``box`` (the elements of one copy per dimension,
    innermost first: ``boxDim``), ``swizzle`` (bytes: 0, 32, 64 or 128, the
    ``CU_TENSOR_MAP_SWIZZLE_*``) and ``tf32`` (a float32 tensor whose map says
    ``CU_TENSOR_MAP_DATA_TYPE_TFLOAT32``: each copy rounds the elements to nearest TF32, ties to
    even, as the H100 does). Element strides 1, no interleave, out-of-bound elements read as zeros
    (``CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE``): what the course's v8 and v6w encode. The checks are
    the driver's for these arguments."""

    tensor: np.ndarray
    box: tuple
    swizzle: int = 0
    tf32: bool = False

    def __post_init__(self):
        x = self.tensor
        box = tuple(int(b) for b in self.box)
        object.__setattr__(self, "box", box)
        if not hasattr(x, "flags") or not x.flags.c_contiguous:
            raise ValueError("a TensorMap's tensor is a C-contiguous array (NumPy on the CPU)")
        if not 1 <= x.ndim <= 5 or len(box) != x.ndim:
            raise ValueError(f"a {x.ndim}-D tensor needs a box of {x.ndim} sizes (1 to 5 "
                             f"dimensions), not {box}")
        if any(not 1 <= b <= 256 for b in box):
            raise ValueError(f"box sizes are 1 to 256 elements, not {box}")
        row = box[0] * x.itemsize
        if row % 16:
            raise ValueError(f"the box's inner dimension is {row} bytes: a multiple of 16")
        if self.swizzle not in SWIZZLES:
            raise ValueError(f"swizzle {self.swizzle}: one of {SWIZZLES} bytes")
        if self.swizzle and row > self.swizzle:
            raise ValueError(f"a {self.swizzle}-byte swizzle takes boxes at most {self.swizzle} "
                             f"bytes wide, not {row}")
        if x.ndim > 1 and (x.shape[-1] * x.itemsize) % 16:
            raise ValueError("the tensor's rows must be a multiple of 16 bytes (global strides)")
        if self.tf32 and x.dtype != np.float32:
            raise ValueError(f"a TF32 tensor map describes float32 elements, not {x.dtype}")

    @property
    def dims(self) -> tuple:
        """The tensor's sizes, innermost first (``globalDim``)."""
        return tuple(reversed(self.tensor.shape))

    @property
    def box_bytes(self) -> int:
        return int(np.prod(self.box)) * self.tensor.itemsize


# --- mbarrier ------------------------------------------------------------------------------------
@dataclass
class Mbarrier:
    expected: int                  # arrivals per phase (init's count)
    pending: int                   # arrivals still to come in the current phase
    phase: int = 0                 # phases completed
    tx: int = 0                    # transaction bytes expected and not delivered yet
    line: int = 0                  # where it was initialised (the error names it)


def _space(flags):
    for f in flags:
        if f in ("shared", "shared::cta", "shared::cluster"):
            return "shared"
    return "generic"


_SEMANTICS = {"release", "acquire", "relaxed", "cta", "cluster", "b64", "shared",
              "shared::cta", "shared::cluster", "parity"}


def h_mbarrier(ins, mods, entry, layout):
    from .instructions import reader, writer

    kind = mods[0] if mods else None
    flags = set(mods[1:])
    expect_tx = "expect_tx" in flags
    flags.discard("expect_tx")
    extra = flags - _SEMANTICS
    if extra or "b64" not in flags:
        raise _unsupported()(f"mbarrier.{kind} with .{', .'.join(sorted(extra or {'(no .b64)'}))}")
    space = _space(flags)
    ops = ins.operands
    if kind == "init":
        addr, count = _addr(ops[0], space, layout, ins), reader(ops[1], "u32", layout)
        return _op(lambda c, m: init(c, m, addr(c), count(c), ins), ins)
    if kind == "inval":
        addr = _addr(ops[0], space, layout, ins)
        return _op(lambda c, m: [c.mbarriers.pop(k, None) for k in _keys(c, m, addr(c), ins)[1]],
                   ins)
    if kind == "arrive":
        state = writer(ops[0], "b64", layout)
        addr = _addr(ops[1], space, layout, ins)
        extra_op = reader(ops[2], "u32", layout) if len(ops) > 2 else None

        def run(c, m):
            value = extra_op(c) if extra_op is not None else None
            tx = value if expect_tx else None
            count = 1 if expect_tx or value is None else value
            state(c, arrive(c, m, addr(c), count, tx, ins), m)
        return _op(run, ins)
    if kind in ("expect_tx", "complete_tx"):
        addr, nbytes = _addr(ops[0], space, layout, ins), reader(ops[1], "u32", layout)
        sign = 1 if kind == "expect_tx" else -1
        return _op(lambda c, m: transact(c, m, addr(c), sign * np.asarray(nbytes(c), np.int64),
                                         ins), ins)
    if kind in ("test_wait", "try_wait"):
        done = writer(ops[0], "pred", layout)
        addr = _addr(ops[1], space, layout, ins)
        token = reader(ops[2], "u32" if "parity" in flags else "b64", layout)
        parity = "parity" in flags

        def wait(c, m):
            complete = completed(c, m, addr(c), token(c), parity, ins)
            act = np.ones(c.n, bool) if m is None else m
            if kind == "try_wait":                 # blocks: true once it goes on
                done(c, np.ones(c.n, bool), act & complete)
            else:
                done(c, complete, m)
            blocked = act & ~complete
            return blocked if blocked.any() else None
        from .instructions import Step
        return Step("wait", wait, ins, retry=kind == "try_wait")
    raise _unsupported()(f"mbarrier.{kind}")


def _op(run, ins):
    from .instructions import Step
    return Step("op", run, ins)


def _addr(op, space, layout, ins):
    from .instructions import _address_of
    get = _address_of(op, layout, ins)
    return get if space == "shared" else (lambda c: _generic_shared(c, get(c), ins))


def _generic_shared(c, a, ins):
    a = np.asarray(a, np.int64)
    inside = (a >= SHARED_WINDOW) & (a < SHARED_WINDOW + WINDOW_SIZE)
    return np.where(inside, a - SHARED_WINDOW, -1)


def _keys(c, m, address, ins):
    """``(lanes, [(block, shared offset)] per lane)`` of the active lanes' barriers."""
    lanes = c._active(m)
    a = np.broadcast_to(np.asarray(address, np.int64), (c.n,))[lanes]
    if (a < 0).any() or (a % 8).any():
        bad = int(np.flatnonzero((a < 0) | (a % 8 != 0))[0])
        raise c.error_at(int(lanes[bad]), f"`{ins}`: {int(a[bad]):#x} is not the 8-byte aligned "
                         "shared address of an mbarrier", ins, OutOfBoundsError)
    blocks = c._cluster_blocks(a, lanes, ins)
    offsets = a & SHARED_OFFSET_MASK
    return lanes, list(zip(blocks.tolist(), offsets.tolist()))


def _barrier(c, lane, key, ins):
    bar = c.mbarriers.get(key)
    if bar is None:
        raise c.error_at(lane, f"`{ins}` uses the mbarrier at shared address {key[1]:#x}, which "
                         "was not initialised", ins, EmulationError,
                         fix="mbarrier.init it (one thread), then fence.mbarrier_init or "
                             "__syncthreads() before other threads use it")
    return bar


def init(c, m, address, count, ins):
    lanes, keys = _keys(c, m, address, ins)
    counts = np.broadcast_to(np.asarray(count, np.int64), (c.n,))[lanes]
    for lane, key, n in zip(lanes.tolist(), keys, counts.tolist()):
        if not 1 <= n <= MBARRIER_MAX_COUNT:
            raise c.error_at(lane, f"`{ins}`: an mbarrier's count is 1 to 2^20 - 1, not {n}", ins)
        c.mbarriers[key] = Mbarrier(expected=n, pending=n, line=ins.line)
        if c.written is not None:
            c._mark_written(np.array([key[0] * c.shared_stride + key[1]]), 8)


def _settle(c, bar):
    """Complete the phase when nothing is pending: the next one starts."""
    if bar.pending == 0 and bar.tx == 0:
        bar.phase += 1
        bar.pending = bar.expected
        c.mbar_events += 1


def arrive(c, m, address, count, tx, ins):
    """Arrivals (``tx``: bytes expected first, arrive.expect_tx); the state each lane gets: the
    phase it arrived in."""
    lanes, keys = _keys(c, m, address, ins)
    counts = np.broadcast_to(np.asarray(count, np.int64), (c.n,))[lanes]
    txs = None if tx is None else np.broadcast_to(np.asarray(tx, np.int64), (c.n,))[lanes]
    state = np.zeros(c.n, np.uint64)
    for j, (lane, key) in enumerate(zip(lanes.tolist(), keys)):
        bar = _barrier(c, lane, key, ins)
        state[lane] = bar.phase
        if txs is not None:
            bar.tx += int(txs[j])
        if counts[j] > bar.pending:
            raise c.error_at(lane, f"`{ins}`: {int(counts[j])} arrivals on an mbarrier with only "
                             f"{bar.pending} pending in its phase (init count {bar.expected})",
                             ins, BarrierError,
                             fix="give mbarrier.init the number of arrivals each phase expects")
        bar.pending -= int(counts[j])
        _settle(c, bar)
    return state


def transact(c, m, address, delta, ins):
    """``expect_tx`` (``delta`` > 0 bytes announced) or ``complete_tx`` (< 0: delivered)."""
    lanes, keys = _keys(c, m, address, ins)
    amounts = np.broadcast_to(np.asarray(delta, np.int64), (c.n,))[lanes]
    for lane, key, amount in zip(lanes.tolist(), keys, amounts.tolist()):
        bar = _barrier(c, lane, key, ins)
        bar.tx += amount
        _settle(c, bar)


def complete_tx(c, lane, key, nbytes, ins):
    """``nbytes`` a copy delivered to the barrier ``key``."""
    bar = _barrier(c, lane, key, ins)
    bar.tx -= nbytes
    _settle(c, bar)


def completed(c, m, address, token, parity, ins):
    """Per lane: has the phase its parity (or state) names completed?"""
    lanes, keys = _keys(c, m, address, ins)
    tokens = np.broadcast_to(np.asarray(token).astype(np.int64), (c.n,))[lanes]
    out = np.zeros(c.n, bool)
    for lane, key, t in zip(lanes.tolist(), keys, tokens.tolist()):
        bar = _barrier(c, lane, key, ins)
        out[lane] = (bar.phase & 1) != (t & 1) if parity else bar.phase > t
    return out


def stuck(c, lanes, ins) -> EmulationError:
    """The error when every lane waits and no phase can complete: a lane's barrier's state."""
    lane = int(lanes[0])
    where = ""
    for key, bar in c.mbarriers.items():
        if key[0] == int(c.lblock[lane]):
            where += (f"; the mbarrier at {key[1]:#x} (initialised on line {bar.line}): phase "
                      f"{bar.phase}, {bar.pending} of {bar.expected} arrivals and "
                      f"{bar.tx} transaction bytes still to come")
    return c.error_at(lane, f"threads wait on line {ins.line} for an mbarrier phase that never "
                      f"completes: every other thread of the chunk has exited or waits too{where}",
                      ins, BarrierError,
                      fix="check the count given to mbarrier.init, that every expected thread "
                          "arrives, and that expect_tx's byte count equals the bytes the copies "
                          "deliver")


# --- TMA and bulk copies -------------------------------------------------------------------------------
def h_cp_bulk(ins, mods, entry, layout):
    """``cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes`` (tiled)
    and ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes``."""
    from .instructions import _address_of, reader

    rest = list(mods[2:])                     # after async.bulk
    tensor = bool(rest) and rest[0] == "tensor"
    if tensor:
        rest = rest[1:]
        rank = rest.pop(0) if rest and rest[0].endswith("d") else None
        if rank not in ("1d", "2d", "3d", "4d", "5d"):
            raise _unsupported()(f"cp.async.bulk.tensor of rank {rank}")
    flags = set(rest) - {"tile"}
    multicast = tensor and "multicast::cluster" in flags
    flags.discard("multicast::cluster")
    want = {"shared::cluster", "global", "mbarrier::complete_tx::bytes"}
    if flags != want and flags != (want - {"shared::cluster"}) | {"shared::cta"}:
        raise _unsupported()(f"cp.async.bulk with .{', .'.join(sorted(flags - want)) or 'another form'}: "
                             "the PTX engine copies global -> shared with mbarrier::complete_tx::bytes "
                             "(tensor copies also with .multicast::cluster; no cache hints or im2col)")
    ops = ins.operands
    dst = _address_of(ops[0], layout, ins)
    if tensor:
        src, bar_op = ops[1], ops[2]
        if not isinstance(src, TensorAddress) or len(src.coords) != int(rank[0]) or len(ops) != 3 + multicast:
            raise _unsupported()("cp.async.bulk.tensor other than [dst], [map, {coords}], [mbar] (, ctaMask "
                                 "with .multicast::cluster)")
        coords = [reader(x, "s32", layout) for x in src.coords]
        where = _tensor_map_address(src, layout)
        bar = _address_of(bar_op, layout, ins)
        mask = reader(ops[3], "u16", layout) if multicast else None

        def run(c, m):
            for lane in c._active(m).tolist():
                tm = _tensor_map(c, lane, where(c), ins)
                box = [int(_lane(x(c), lane)) for x in coords]
                d, b = _lane(dst(c), lane), _lane(bar(c), lane)
                if mask is None:
                    tensor_copy(c, lane, d, tm, box, b, ins)
                    continue
                # multicast: the same box to the same offset in every block of the mask, each
                # block's bytes completed on its own barrier at the mbarrier's offset
                bits = int(_lane(mask(c), lane))
                if bits >> c.cluster_size:
                    raise c.error_at(lane, f"`{ins}`: ctaMask {bits:#x} names blocks beyond the cluster's "
                                     f"{c.cluster_size}", ins, OutOfBoundsError)
                for r in range(c.cluster_size):
                    if bits >> r & 1:
                        tensor_copy(c, lane, cluster_address(d, r), tm, box, cluster_address(b, r), ins)
        return _op(run, ins)
    if len(ops) != 4:
        raise _unsupported()("cp.async.bulk other than [dst], [src], size, [mbar]")
    src = _address_of(ops[1], layout, ins)
    size = reader(ops[2], "u32", layout)
    bar = _address_of(ops[3], layout, ins)

    def run_bulk(c, m):
        for lane in c._active(m).tolist():
            bulk_copy(c, lane, _lane(dst(c), lane), _lane(src(c), lane), int(_lane(size(c), lane)),
                      _lane(bar(c), lane), ins)
    return _op(run_bulk, ins)


def _lane(values, lane):
    v = np.asarray(values)
    return v if v.ndim == 0 else v[lane]


def _tensor_map_address(src, layout):
    """``f(chunk) -> address`` of the tensor map: a parameter's name (its param-space offset,
    made generic) or a register holding a generic address."""
    from .instructions import symbol_address

    if not src.base_is_reg:
        address = PARAM_WINDOW + symbol_address(src.base, layout)
        return lambda c: np.int64(address)
    name = src.base
    return lambda c: c.regs[name].view(np.int64) if c.regs[name].dtype.itemsize == 8 \
        else c.regs[name].astype(np.int64)


def _tensor_map(c, lane, address, ins) -> TensorMap:
    a = int(_lane(address, lane))
    found = c.engine.tensor_maps.get(a - PARAM_WINDOW)
    if found is None:
        raise c.error_at(lane, f"`{ins}`: the tensor map at address {a:#x} is not a kernel "
                         "parameter", ins, EmulationError,
                         fix="pass the CUtensorMap as a const __grid_constant__ kernel parameter "
                             "(on the CPU: a simtlab TensorMap(array, box, swizzle) argument)")
    return found


def _shared_destination(c, lane, dst, nbytes, align, ins):
    """The block and state-space offset of a copy's shared destination, checked."""
    a = int(dst)
    if SHARED_WINDOW <= a < SHARED_WINDOW + WINDOW_SIZE:
        a -= SHARED_WINDOW
    if a % align:
        raise c.error_at(lane, f"`{ins}`: the shared destination {a:#x} is not {align}-byte "
                         "aligned", ins, OutOfBoundsError)
    block = int(c._cluster_blocks(np.array([a]), np.array([lane]), ins)[0])
    a &= SHARED_OFFSET_MASK
    table = c.engine.tables["shared"]
    if table.containing(a, a + nbytes) is None:
        raise c.error_at(lane, f"`{ins}`: {nbytes} bytes at shared address {a:#x} do not fit in "
                         f"one shared array ({c.engine.describe_address('shared', a)})", ins,
                         OutOfBoundsError, fix="size the dynamic shared memory for every stage")
    return block, a


def tensor_copy(c, lane, dst, tm: TensorMap, coords, bar, ins):
    """One TMA box: read, written swizzled into shared memory, its bytes completed on ``bar``."""
    e = tm.tensor.itemsize
    block, start = _shared_destination(c, lane, dst, tm.box_bytes, 128, ins)
    # the box's elements, innermost first in memory: index arrays per dimension (outermost first)
    axes = [np.arange(b) + c0 for b, c0 in zip(tm.box, coords)]      # innermost first
    grids = np.meshgrid(*reversed(axes), indexing="ij")             # outermost first, as shape
    inside = np.ones(grids[0].shape, bool)
    for g, size in zip(grids, tm.tensor.shape):
        inside &= (g >= 0) & (g < size)
    flat_index = np.ravel_multi_index([np.where(inside, g, 0) for g in grids], tm.tensor.shape)
    words = tm.tensor.reshape(-1).view(np.dtype(f"u{e}"))
    values = np.where(inside, words[flat_index], 0).astype(f"u{e}").reshape(-1)
    if tm.tf32:
        values = tf32_round_nearest_even(values)
    data = values.view(np.uint8)
    offsets = swizzle(start + np.arange(data.size, dtype=np.int64), tm.swizzle)
    c.shared[block * c.shared_stride + offsets] = data
    if c.written is not None:
        c.written[block * c.shared_stride + offsets] = True
    if c.trace:
        _trace_tensor_copy(c, lane, tm, flat_index, inside, start, data.size, ins)
    complete_tx(c, lane, _bar_key(c, lane, bar, ins), tm.box_bytes, ins)


def _trace_tensor_copy(c, lane, tm, flat_index, inside, start, nbytes, ins):
    from ...simt import READ, WRITE

    region = c.engine.tensor_regions[id(tm)]
    e = tm.tensor.itemsize
    rows = flat_index.reshape(-1, tm.box[0])
    ok = inside.reshape(-1, tm.box[0])
    for width in np.unique(ok.sum(axis=1)):
        if not width:
            continue
        sel = ok.sum(axis=1) == width
        first = np.where(ok[sel], rows[sel], np.iinfo(np.int64).max).min(axis=1)
        c.record_rows(lane, region, region.start + first * e, int(width) * e, READ, ins)
    chunks = swizzle(start + np.arange(0, nbytes, 16, dtype=np.int64), tm.swizzle)
    table = c.engine.tables["shared"]
    for shared_region, sel in c._each_region("shared", chunks, table.find(chunks, 16), table):
        c.record_rows(lane, shared_region, chunks[sel], 16, WRITE, ins)


def bulk_copy(c, lane, dst, src, size, bar, ins):
    if size <= 0 or size % 16:
        raise c.error_at(lane, f"`{ins}`: a bulk copy's size is a positive multiple of 16, not "
                         f"{size}", ins)
    block, start = _shared_destination(c, lane, dst, size, 16, ins)
    data = _global_bytes(c, lane, int(src), size, ins)
    offsets = start + np.arange(size, dtype=np.int64)
    c.shared[block * c.shared_stride + offsets] = data
    if c.written is not None:
        c.written[block * c.shared_stride + offsets] = True
    if c.trace:
        from ...simt import WRITE
        table = c.engine.tables["shared"]
        chunks = start + np.arange(0, size, 16, dtype=np.int64)
        for region, sel in c._each_region("shared", chunks, table.find(chunks, 16), table):
            c.record_rows(lane, region, chunks[sel], 16, WRITE, ins)
    complete_tx(c, lane, _bar_key(c, lane, bar, ins), size, ins)


def _global_bytes(c, lane, src, size, ins):
    """``size`` bytes at a global address (one array), traced as one read of the thread."""
    from ...simt import READ

    if src % 16:
        raise c.error_at(lane, f"`{ins}`: the global source {src:#x} is not 16-byte aligned", ins,
                         OutOfBoundsError)
    region = c.engine.tables["global"].containing(src, src + size)
    if region is None:
        raise c._out_of_bounds(lane, src, "global", ins)
    if c.trace:
        c.record_rows(lane, region, np.array([src]), size, READ, ins)
    return region.data[src - region.start:src - region.start + size]


def _bar_key(c, lane, bar, ins):
    a = int(bar)
    if SHARED_WINDOW <= a < SHARED_WINDOW + WINDOW_SIZE:
        a -= SHARED_WINDOW
    _, keys = _keys(c, _only(c, lane), np.int64(a), ins)
    return keys[0]


def _only(c, lane):
    m = np.zeros(c.n, bool)
    m[lane] = True
    return m


def handler_for(parts):
    """The handler of an instruction this module runs (``parts``: the opcode split at dots)."""
    if parts[0] == "mbarrier":
        return h_mbarrier
    if parts[:3] == ["cp", "async", "bulk"] and "mbarrier::complete_tx::bytes" in parts:
        return h_cp_bulk
    return None


#: opcodes this module runs (for SUPPORTED_OPCODES)
HANDLERS = {"mbarrier": h_mbarrier}
