"""The ``cuda`` module for the vector engine: indices as lane vectors, barriers and warp
collectives over the lanes of each block or warp, shared/local/const arrays per chunk."""

from __future__ import annotations

import linecache
import math
import re

import numpy as np

from ...simt import CONST, FULL_MASK, LOCAL, SHARED, WARP_SIZE
from ..binding import to_numpy_dtype
from ..limits import MAX_STATIC_SHARED_BYTES
from ..intrinsics import (BIT_INTRINSICS, IntrinsicTypeError, bit_intrinsic, bit_intrinsic_lanes,
                          fma_dtype, fma_lanes, fma_scalar)
from ..numba_types import FLOAT_UFUNCS, ROUNDING_UFUNCS, TYPED_MATH_FUNCS, math_result_dtype
from . import arrays as va
from .values import (Fallback, MixedLanes, Weak, broadcast, convert_for_store,
                     is_vector, raw, truth)


class Intrinsic:
    """A ``cuda.*`` function: gets the call's node to evaluate its own arguments."""

    __slots__ = ("fn", "name")

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn

    def __call__(self, eng, node, m, frame, site):
        return self.fn(eng, node, m, frame, site)


class Namespace:
    def __init__(self, name, members):
        self.name = name
        self.members = members

    def get(self, attr):
        v = self.members.get(attr)
        if v is None:
            raise Fallback(f"cuda.{self.name}.{attr}")
        return v


def _args(eng, node, m, frame):
    return [eng.eval(a, m, frame) for a in node.args]


# --- indices ----------------------------------------------------------------------------------
def _grid(eng, node, m, frame, site):
    (ndim,) = _args(eng, node, m, frame)
    d = eng.engine.launch.blockdim
    out = tuple(Weak(raw(b) * d[k] + raw(t)) for k, (b, t) in
                enumerate(zip(eng.block_idx, eng.thread_idx)))
    if ndim == 1:
        return out[0]
    if ndim in (2, 3):
        return out[:ndim]
    raise Fallback("cuda.grid() with ndim outside 1-3")


def _gridsize(eng, node, m, frame, site):
    (ndim,) = _args(eng, node, m, frame)
    g, d = eng.engine.launch.griddim, eng.engine.launch.blockdim
    out = tuple(g[k] * d[k] for k in range(3))
    if ndim == 1:
        return out[0]
    if ndim in (2, 3):
        return out[:ndim]
    raise Fallback("cuda.gridsize() with ndim outside 1-3")


# --- barriers -----------------------------------------------------------------------------------
def _blocks_complete(eng, m):
    """Every block with an active lane has all its lanes here (else: a divergent barrier,
    which the greenlet engine reports with its own message)."""
    if m is eng.ALL:
        return
    per_block = np.bincount(eng.lblock[m], minlength=eng.nb)
    if ((per_block != 0) & (per_block != eng.tpb)).any():
        raise Fallback("a barrier that not every thread of a block reaches")


def _barrier(kind):
    def run(eng, node, m, frame, site):
        args = _args(eng, node, m, frame)
        _blocks_complete(eng, m)
        result = None
        if kind != "syncthreads":
            (pred,) = args
            p = raw(pred)
            if isinstance(p, (bool, np.bool_)) or (isinstance(p, np.ndarray) and p.dtype.kind == "b"):
                raise Fallback("syncthreads_* with a bool predicate")
            t = broadcast(truth(pred), eng.n)
            t = raw(t) if is_vector(t) else np.full(eng.n, bool(t))
            counts = np.bincount(eng.lblock, weights=(t & m), minlength=eng.nb).astype(np.int32)
            per = counts[eng.lblock]             # numba-cuda types these results as int32
            if kind == "syncthreads_count":
                result = per
            elif kind == "syncthreads_and":
                result = (per == eng.tpb).astype(np.int32)
            else:
                result = (per > 0).astype(np.int32)
        va.settle_all(eng)                   # deferred atomics happen before the barrier
        eng.end_of_round(finished=False)     # the greenlet engine checks max_trace here
        eng.epoch[m] += 1
        eng.syncs += 1                       # the order keys change (order.py)
        eng.barriers += 1
        return result
    return run


def _fence(eng, node, m, frame, site):
    return None


# --- warp collectives ---------------------------------------------------------------------------
def _mask_value(eng, mask, kind):
    """The mask as one int64 per lane (masks may differ between warps)."""
    a = raw(mask)
    if isinstance(a, np.ndarray):
        if a.dtype.kind not in "iub":
            raise Fallback(f"{kind}() mask is not an integer")
        return a.astype(np.int64) & FULL_MASK
    try:
        return np.full(eng.n, int(a) & FULL_MASK, np.int64)
    except (TypeError, ValueError):
        raise Fallback(f"{kind}() mask is not an integer") from None


_SHUFFLES = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync")


def _check_warps(eng, m, mask, kind):
    """The lanes of each warp that are here must be exactly the lanes their mask names;
    any other arrangement is left to the greenlet engine (which reports or resolves it).
    In a partial last warp the lanes that do not exist do not vote (as on the GPU); a shuffle
    whose mask names them is left to the greenlet engine, which reports it. Returns the mask
    of the lanes that take part."""
    if eng.tpb % WARP_SIZE:
        exists = _existing_lanes(eng)
        if kind in _SHUFFLES and (mask & ~exists).any():
            raise Fallback(f"{kind}() names lanes that a partial warp does not have")
        mask = mask & exists
    act = eng.ALL if m is eng.ALL else m
    bits = np.left_shift(1, eng.lane).astype(np.int64)
    here = _per_warp_or(eng, act, bits)
    if (mask[act] != here[act]).any():
        raise Fallback(f"{kind}() reached by other lanes than its mask names")
    eng.phase[m] += 1
    eng.syncs += 1
    return mask


def _existing_lanes(eng):
    """Per lane, the mask of the lanes its warp has (fewer than 32 in a partial last warp)."""
    in_warp = np.minimum(eng.tpb - eng.warp * WARP_SIZE, WARP_SIZE)
    return (np.left_shift(1, in_warp) - 1).astype(np.int64)


def _shuffle(kind):
    def run(eng, node, m, frame, site):
        mask, value, arg = _args(eng, node, m, frame)
        mask = _check_warps(eng, m, _mask_value(eng, mask, kind), kind)
        lane = eng.lane
        a = raw(arg)
        if kind == "shfl_sync":
            src = np.asarray(a) % WARP_SIZE + np.zeros_like(lane)
        elif kind == "shfl_up_sync":
            src = lane - a
            src = np.where(src < 0, lane, src)
        elif kind == "shfl_down_sync":
            src = lane + a
            src = np.where(src >= WARP_SIZE, lane, src)
        else:
            src = lane ^ a
            src = np.where(src >= WARP_SIZE, lane, src)
        act = eng.ALL if m is eng.ALL else m
        if ((mask[act] >> src[act]) & 1 == 0).any():
            raise Fallback(f"{kind}() reads a lane outside its mask")
        v = broadcast(value, eng.n)
        idx = eng.lanes - lane + src
        return Weak(v.a[idx]) if v.__class__ is Weak else v[idx]
    return run


def _per_warp_or(eng, m, bits):
    per_warp = np.zeros(eng.nb * eng.engine.launch.warps_per_block, np.int64)
    np.bitwise_or.at(per_warp, eng.gwarp[m], bits[m])
    return per_warp[eng.gwarp]


def _int32_mask(bits):
    """Lane masks as numba-cuda types ballot and match results: int32 (negative with lane 31)."""
    return bits.astype(np.uint32).view(np.int32)


def _vote(kind):
    def run(eng, node, m, frame, site):
        mask, pred = _args(eng, node, m, frame)
        mask = _check_warps(eng, m, _mask_value(eng, mask, kind), kind)
        p = np.broadcast_to(truth(pred), (eng.n,))
        ballot = _per_warp_or(eng, m, np.where(p, np.left_shift(1, eng.lane), 0).astype(np.int64))
        if kind == "ballot_sync":
            return _int32_mask(ballot)
        if kind == "all_sync":                  # numba-cuda: a bool
            return Weak(ballot == mask)
        if kind == "any_sync":
            return Weak(ballot != 0)
        return Weak((ballot == 0) | (ballot == mask))     # eq_sync
    return run


def _match(kind):
    """``match_any_sync``: per lane, the lanes of its mask holding the same value;
    ``match_all_sync``: (the mask, True) where every lane of the mask holds one value, else
    (0, False)."""
    def run(eng, node, m, frame, site):
        mask, value = _args(eng, node, m, frame)
        mask = _check_warps(eng, m, _mask_value(eng, mask, kind), kind)
        if value.__class__ is MixedLanes:
            raise Fallback(f"{kind}() of a value whose type differs between lanes")
        v = raw(broadcast(value, eng.n))
        base = eng.lanes - eng.lane                 # each lane's warp's lane 0
        same = np.zeros(eng.n, np.int64)
        for k in range(WARP_SIZE):
            other = base + k
            named = ((mask >> k) & 1).astype(bool) & (other < eng.n)
            other = np.minimum(other, eng.n - 1)
            same |= np.where(named & (v[other] == v), np.int64(1) << k, 0)
        if kind == "match_any_sync":
            return _int32_mask(same)
        equal = same == mask
        return (_int32_mask(np.where(equal, mask, 0)), Weak(equal))
    return run


def _syncwarp(eng, node, m, frame, site):
    args = _args(eng, node, m, frame)
    mask = _mask_value(eng, args[0] if args else FULL_MASK, "syncwarp")
    _check_warps(eng, m, mask, "syncwarp")     # (the lanes a partial warp has)
    eng.wsync[m] += 1


def _activemask(eng, node, m, frame, site):
    bits = np.left_shift(1, eng.lane).astype(np.int64)
    act = eng.ALL if m is eng.ALL else m
    eng.phase[m] += 1
    eng.syncs += 1
    return _per_warp_or(eng, act, bits).astype(np.uint32)     # numba-cuda: a uint32


def _lanemask_lt(eng, node, m, frame, site):
    return (np.left_shift(1, eng.lane).astype(np.int64) - 1).astype(np.uint32)


# --- arrays ---------------------------------------------------------------------------------------
_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=")


def _assigned_name(frame, node, prefix):
    lineno = node.lineno + frame.fn.shift          # the file's line number
    text = linecache.getline(frame.fn.func.__code__.co_filename, lineno)
    found = _ASSIGN.match(text)
    return found.group(1) if found else f"{prefix}_l{lineno}"


def _shape(shape):
    if isinstance(shape, tuple):
        return tuple(int(s) for s in shape)
    return (int(shape),)


def _shared_array(eng, node, m, frame, site):
    shape, dtype = _args(eng, node, m, frame)
    if is_vector(shape):
        raise Fallback("shared array shape differs between lanes")
    arr = eng.arrays_at.get(("shared", site))
    if arr is not None:
        return arr
    dtype = to_numpy_dtype(dtype)
    shape = _shape(shape)
    size = int(np.prod(shape))
    launch = eng.engine.launch
    dynamic = size == 0
    if dynamic:
        if launch.shared_bytes <= 0:
            raise Fallback("dynamic shared memory without shared_bytes")
        shape = (launch.shared_bytes // dtype.itemsize,)
        size = shape[0]
    name = _assigned_name(frame, node, "shared")
    base = 0 if dynamic else -(-eng.static_used // 16) * 16
    info = eng.engine.register(("shared", site), name, "shared", shape, dtype, base)
    if not dynamic:
        eng.static_used = info.base + size * dtype.itemsize
        if eng.static_used > MAX_STATIC_SHARED_BYTES:
            raise Fallback("static shared memory over the limit")
        storage = np.zeros(eng.nb * size, dtype)
    else:
        if eng.dynamic is None:
            eng.dynamic = np.zeros((eng.nb, launch.shared_bytes), np.uint8)
        storage = eng.dynamic[:, :size * dtype.itemsize].view(dtype).reshape(-1)
        if not storage.flags.c_contiguous or storage.size != eng.nb * size:
            raise Fallback("dynamic shared memory layout")
    written = None
    if launch.checks:
        written = np.zeros(eng.nb * size, bool)
    arr = va.VArray(info.id, name, SHARED, shape, storage, per="block", written=written)
    eng.arrays_at[("shared", site)] = arr
    return arr


def _local_array(eng, node, m, frame, site):
    shape, dtype = _args(eng, node, m, frame)
    dtype = to_numpy_dtype(dtype)
    shape = _shape(shape)
    name = _assigned_name(frame, node, "local")
    info = eng.engine.register(("local", site), name, "local", shape, dtype, 0)
    size = int(np.prod(shape))
    return va.VArray(info.id, info.name, LOCAL, shape, np.zeros(eng.n * size, dtype), per="lane")


def _const_array(eng, node, m, frame, site):
    (source,) = _args(eng, node, m, frame)
    arr = eng.engine.const_arrays.get(site)
    if arr is None:
        data = np.ascontiguousarray(source.storage.reshape(source.shape)
                                    if isinstance(source, va.VArray) else source)
        name = _assigned_name(frame, node, "const")
        info = eng.engine.register(("const", site), name, "const", data.shape, data.dtype, 0)
        arr = va.VArray(info.id, name, CONST, data.shape, data.reshape(-1).copy(),
                        readonly=True)
        eng.engine.const_arrays[site] = arr
    return arr


# --- atomics --------------------------------------------------------------------------------------
def _atomic(kind):
    def run(eng, node, m, frame, site):
        args = _args(eng, node, m, frame)
        if kind == "compare_and_swap":
            ary, old, val = args
            idx = 0
        elif kind == "cas":
            ary, idx, old, val = args
        else:
            ary, idx, val = args
            old = None
        if not isinstance(ary, va.VArray):
            raise Fallback("atomic on something other than an array")
        if old is not None:
            # a CAS loop's retries (and its trace) depend on the order lanes run in: all
            # lanes read one guess, the swap succeeds for one. Left to the greenlet engine.
            raise Fallback("compare-and-swap (its retries depend on the order threads run "
                           "in)")
        # numba converts the operand to the array's type first
        operands = _active_lanes(eng, m, convert_for_store(val, ary.dtype))
        used = id(node) not in frame.fn.discarded_calls
        return va.atomic(eng, ary, idx, m, site, kind, operands, None, used)
    return run


def _active_lanes(eng, m, v):
    """One value per active lane (a scalar: repeated)."""
    if isinstance(v, np.ndarray):
        v = v.view(np.ndarray)                   # MixedLanes: its lanes' stored values
        return v if m is eng.ALL else v[m]
    count = eng.n if m is eng.ALL else int(np.count_nonzero(m))
    return np.full(count, v)


# --- intrinsics and math --------------------------------------------------------------------------
def _fma(eng, node, m, frame, site):
    a, b, c = _args(eng, node, m, frame)
    return fused_multiply_add(a, b, c, eng.n)


def fused_multiply_add(a, b, c, n):
    """``a * b + c`` with one rounding per lane, in numba-cuda's type (intrinsics.py)."""
    if not any(is_vector(v) for v in (a, b, c)):
        return fma_scalar(a, b, c)
    _refuse_mixed_lanes("cuda.fma", (a, b, c))
    dtype = fma_dtype([_arg_dtype(v) for v in (a, b, c)])
    return fma_lanes(*(raw(broadcast(v, n)) for v in (a, b, c)), dtype)


def _refuse_mixed_lanes(what, args):
    if any(a.__class__ is MixedLanes for a in args):
        raise Fallback(f"{what} of a value whose type differs between lanes")


def _cbrt(eng, node, m, frame, site):
    (x,) = _args(eng, node, m, frame)
    if not is_vector(x):
        dtype = math_result_dtype([_arg_dtype(x)])
        return dtype.type(np.cbrt(np.float64(x)))
    _refuse_mixed_lanes("cuda.cbrt", (x,))
    return np.cbrt(raw(x).astype(np.float64)).astype(math_result_dtype([_arg_dtype(x)]))


def _selp(eng, node, m, frame, site):
    from .values import select
    c, a, b = _args(eng, node, m, frame)
    t = truth(c)
    if not isinstance(t, np.ndarray):
        return a if t else b
    return select(t, a, b, eng.n)


def _bits(name):
    """``cuda.popc/clz/ffs/brev`` at the argument's width, in numba-cuda's types."""
    def run(eng, node, m, frame, site):
        (x,) = _args(eng, node, m, frame)
        try:
            if not is_vector(x):
                return bit_intrinsic(name, x)
            _refuse_mixed_lanes(f"cuda.{name}", (x,))
            a = raw(x)
            return bit_intrinsic_lanes(name, a, a.dtype)
        except IntrinsicTypeError:
            raise Fallback(f"cuda.{name}() of a type numba-cuda does not compile") from None
    return run


_ATOMICS = {k: Intrinsic(f"atomic.{k}", _atomic(k)) for k in (
    "add", "sub", "max", "min", "nanmax", "nanmin", "and_", "or_", "xor", "exch", "inc", "dec",
    "cas", "compare_and_swap")}
_SHARED = Namespace("shared", {"array": Intrinsic("shared.array", _shared_array)})
_LOCAL = Namespace("local", {"array": Intrinsic("local.array", _local_array)})
_CONST = Namespace("const", {"array_like": Intrinsic("const.array_like", _const_array)})
_ATOMIC = Namespace("atomic", _ATOMICS)

_FUNCS = {
    "grid": _grid, "gridsize": _gridsize,
    "syncthreads": _barrier("syncthreads"), "syncthreads_count": _barrier("syncthreads_count"),
    "syncthreads_and": _barrier("syncthreads_and"), "syncthreads_or": _barrier("syncthreads_or"),
    "threadfence": _fence, "threadfence_block": _fence, "threadfence_system": _fence,
    "syncwarp": _syncwarp, "activemask": _activemask, "lanemask_lt": _lanemask_lt,
    "shfl_sync": _shuffle("shfl_sync"), "shfl_up_sync": _shuffle("shfl_up_sync"),
    "shfl_down_sync": _shuffle("shfl_down_sync"), "shfl_xor_sync": _shuffle("shfl_xor_sync"),
    "all_sync": _vote("all_sync"), "any_sync": _vote("any_sync"), "eq_sync": _vote("eq_sync"),
    "ballot_sync": _vote("ballot_sync"), "match_any_sync": _match("match_any_sync"),
    "match_all_sync": _match("match_all_sync"), "fma": _fma, "selp": _selp, "cbrt": _cbrt,
    **{name: _bits(name) for name in BIT_INTRINSICS},
}
_INTRINSICS = {k: Intrinsic(k, f) for k, f in _FUNCS.items()}
SUPPORTED = set(_FUNCS) | {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpsize",
                           "laneid", "shared", "local", "const", "atomic"}
SUPPORTED_NAMESPACED = {"shared": {"array"}, "local": {"array"}, "const": {"array_like"},
                        "atomic": set(_ATOMICS)}


def cuda_attribute(eng, name):
    if name == "threadIdx":
        return eng.thread_idx
    if name == "blockIdx":
        return eng.block_idx
    if name == "blockDim":
        return tuple(eng.engine.launch.blockdim)
    if name == "gridDim":
        return tuple(eng.engine.launch.griddim)
    if name == "warpsize":
        return WARP_SIZE
    if name == "laneid":
        return Weak(eng.lane.copy())
    if name == "shared":
        return _SHARED
    if name == "local":
        return _LOCAL
    if name == "const":
        return _CONST
    if name == "atomic":
        return _ATOMIC
    f = _INTRINSICS.get(name)
    if f is None:
        raise Fallback(f"cuda.{name}")
    return f


# math.* on lane vectors, typed as numba-cuda types them (numba_types.py): computed in float64
# with the NumPy function the greenlet engine uses too, then float32 when every argument is
# float32
_FLOAT_FUNCS = {getattr(math, name): f for name, f in FLOAT_UFUNCS.items()}
# numba returns a float of the argument's type here, not Python's int
_ROUNDING_FUNCS = {getattr(math, name): f for name, f in ROUNDING_UFUNCS.items()}
_BOOL_FUNCS = {math.isnan: np.isnan, math.isinf: np.isinf, math.isfinite: np.isfinite}
MATH_FUNCS = (list(_FLOAT_FUNCS) + list(_ROUNDING_FUNCS) + list(_BOOL_FUNCS)
              + [math.erf, math.erfc, math.gamma, math.lgamma])


def _arg_dtype(a):
    a = raw(a)
    return a.dtype if isinstance(a, (np.ndarray, np.generic)) else None


def math_call(func, args, m, eng):
    if not any(is_vector(a) for a in args):
        return TYPED_MATH_FUNCS.get(func, func)(*args)
    if any(a.__class__ is MixedLanes for a in args):
        raise Fallback(f"math.{func.__name__} of a value whose type differs between lanes")
    dtype = math_result_dtype([_arg_dtype(a) for a in args])
    xs = [raw(broadcast(a, eng.n)).astype(np.float64) for a in args]
    act = eng.ALL if m is eng.ALL else m
    with np.errstate(all="ignore"):
        if func in _FLOAT_FUNCS:
            r = _FLOAT_FUNCS[func](*xs)
            if (np.isnan(r[act]) & ~np.any([np.isnan(x[act]) for x in xs], axis=0)).any():
                raise Fallback(f"math.{func.__name__} outside its domain")
            return r.astype(dtype)
        if func in _ROUNDING_FUNCS:
            return _ROUNDING_FUNCS[func](xs[0]).astype(dtype)
        if func in _BOOL_FUNCS:
            return Weak(_BOOL_FUNCS[func](xs[0]))
        try:                            # erf, erfc, gamma, lgamma: Python's, as greenlet
            return np.vectorize(func, otypes=[np.float64])(*xs).astype(dtype)
        except (ValueError, OverflowError):
            raise Fallback(f"math.{func.__name__} outside its domain") from None
