"""The fake ``cuda`` module a kernel sees inside the emulator.

It offers the subset of numba-cuda's kernel API the course uses (and a bit more): thread and
block indices, shared/local/constant arrays, barriers, atomics, warp shuffles and votes, and a
few intrinsics. Every name reads the state of the thread that is running now
(``Scheduler.cur``), so one object serves all threads of a launch. Results have numba-cuda's
types (tests/test_numerics.py checks them against its type inference): bit intrinsics and
``fma`` as intrinsics.py computes them, ``cbrt`` float32 for a float32 argument.
"""

from __future__ import annotations

import sys

import numpy as np

from .binding import to_numpy_dtype
from .conversions import store_converter
from .errors import EmulationError
from .intrinsics import IntrinsicTypeError, bit_intrinsic, fma_scalar
from .numba_types import math_result_dtype
from ..simt import WARP_SIZE

_getframe = sys._getframe


class _Shared:
    def __init__(self, st):
        self._st = st

    def array(self, shape, dtype):
        return self._st.shared_array(shape, to_numpy_dtype(dtype), _getframe(1))


class _Local:
    def __init__(self, st):
        self._st = st

    def array(self, shape, dtype):
        return self._st.local_array(shape, to_numpy_dtype(dtype), _getframe(1))


class _Const:
    def __init__(self, st):
        self._st = st

    def array_like(self, ary):
        return self._st.const_array(ary, _getframe(1))


def _update(ary, idx, update, frame):
    """One atomic read-modify-write; plain NumPy arrays appear when checks are off."""
    if isinstance(ary, np.ndarray):
        old = ary[idx]
        ary[idx] = update(old.item())
        return old
    return ary._atomic_update(idx, update, frame)


def _py(value):
    """NumPy scalars as Python numbers: the update is computed without NumPy's overflow
    warnings, then wrapped to the array's type by _cast."""
    return value.item() if isinstance(value, np.generic) else value


def _operand(array, value):
    """An atomic's operand as numba passes it: converted to the array's type first (a float64
    added to a float32 array is rounded to float32, then added in float32)."""
    return _py(_cast(array, _py(value)))


def _cast(array, value):
    """The value stored by an atomic, in the array's type (wrapped as the hardware would)."""
    convert = store_converter(array.dtype)
    return array.dtype.type(value if convert is None else convert(value))


class _Atomic:
    """``cuda.atomic.*``: each is one indivisible read-modify-write returning the old value."""

    def __init__(self, st):
        self._st = st

    def add(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, old + val), _getframe(1))

    def sub(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, old - val), _getframe(1))

    def max(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, max(old, val)), _getframe(1))

    def min(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, min(old, val)), _getframe(1))

    def nanmax(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, np.fmax(old, val)), _getframe(1))

    def nanmin(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, np.fmin(old, val)), _getframe(1))

    def and_(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, old & val), _getframe(1))

    def or_(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, old | val), _getframe(1))

    def xor(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, old ^ val), _getframe(1))

    def exch(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, val), _getframe(1))

    def inc(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, idx, lambda old: _cast(ary, 0 if old >= val else old + 1),
                                  _getframe(1))

    def dec(self, ary, idx, val):
        val = _operand(ary, val)
        return _update(ary, 
            idx, lambda old: _cast(ary, val if (old == 0 or old > val) else old - 1), _getframe(1))

    def cas(self, ary, idx, old, val):
        frame = _getframe(1)
        self._st.note_cas(frame)
        return _update(ary, idx, lambda cur: _cast(ary, val if cur == old else cur), frame)

    def compare_and_swap(self, ary, old, val):
        frame = _getframe(1)
        self._st.note_cas(frame)
        return _update(ary, 0, lambda cur: _cast(ary, val if cur == old else cur), frame)


class FakeCuda:
    """Stands in for ``numba.cuda`` inside an emulated kernel."""

    warpsize = WARP_SIZE

    def __init__(self, st):
        self._st = st
        self.shared = _Shared(st)
        self.local = _Local(st)
        self.const = _Const(st)
        self.atomic = _Atomic(st)
        self.blockDim = _dim3(st.blockdim)
        self.gridDim = _dim3(st.griddim)

    # --- indices ------------------------------------------------------------------------------
    # threadIdx, blockIdx and laneid are plain attributes that the scheduler sets each time it
    # switches to a thread: reading them costs no function call (see Scheduler._run_warp).
    threadIdx = blockIdx = None
    laneid = 0

    def grid(self, ndim):
        st = self._st
        t, b, d = st.cur.threadIdx, st.blockIdx, st.blockdim
        if ndim == 1:
            return b[0] * d[0] + t[0]
        if ndim == 2:
            return (b[0] * d[0] + t[0], b[1] * d[1] + t[1])
        if ndim == 3:
            return (b[0] * d[0] + t[0], b[1] * d[1] + t[1], b[2] * d[2] + t[2])
        raise self._error(f"cuda.grid({ndim}): ndim must be 1, 2 or 3")

    def gridsize(self, ndim):
        st = self._st
        g, d = st.griddim, st.blockdim
        if ndim == 1:
            return g[0] * d[0]
        if ndim == 2:
            return (g[0] * d[0], g[1] * d[1])
        if ndim == 3:
            return (g[0] * d[0], g[1] * d[1], g[2] * d[2])
        raise self._error(f"cuda.gridsize({ndim}): ndim must be 1, 2 or 3")

    # --- barriers and fences ------------------------------------------------------------------
    def syncthreads(self):
        self._st.wait_barrier("syncthreads", None, _getframe(1))

    def syncthreads_count(self, predicate):
        return self._st.wait_barrier("syncthreads_count", self._int_predicate(predicate),
                                     _getframe(1))

    def syncthreads_and(self, predicate):
        return self._st.wait_barrier("syncthreads_and", self._int_predicate(predicate),
                                     _getframe(1))

    def syncthreads_or(self, predicate):
        return self._st.wait_barrier("syncthreads_or", self._int_predicate(predicate),
                                     _getframe(1))

    def _int_predicate(self, predicate):
        # numba-cuda types these predicates as int32 and refuses a bool at compile time
        if isinstance(predicate, (bool, np.bool_)):
            raise self._error("syncthreads_count/_and/_or take an int predicate; numba-cuda "
                              "does not compile a bool here",
                              fix="write `1 if condition else 0`")
        return predicate

    def threadfence(self):
        pass          # one thread runs at a time: memory is always coherent here

    threadfence_block = threadfence_system = threadfence

    # --- warp collectives -----------------------------------------------------------------------
    def syncwarp(self, mask=0xFFFFFFFF):
        self._st.wait_collective("syncwarp", mask, None, None, _getframe(1))

    def activemask(self):
        return self._st.wait_collective("activemask", None, None, None, _getframe(1))

    def lanemask_lt(self):
        return np.uint32((1 << self._st.cur.lane) - 1)      # numba-cuda: a uint32

    def shfl_sync(self, mask, value, src_lane):
        return self._st.wait_collective("shfl_sync", mask, value, src_lane, _getframe(1))

    def shfl_up_sync(self, mask, value, delta):
        return self._st.wait_collective("shfl_up_sync", mask, value, delta, _getframe(1))

    def shfl_down_sync(self, mask, value, delta):
        return self._st.wait_collective("shfl_down_sync", mask, value, delta, _getframe(1))

    def shfl_xor_sync(self, mask, value, lane_mask):
        return self._st.wait_collective("shfl_xor_sync", mask, value, lane_mask, _getframe(1))

    def all_sync(self, mask, predicate):
        return self._st.wait_collective("all_sync", mask, bool(predicate), None, _getframe(1))

    def any_sync(self, mask, predicate):
        return self._st.wait_collective("any_sync", mask, bool(predicate), None, _getframe(1))

    def eq_sync(self, mask, predicate):
        return self._st.wait_collective("eq_sync", mask, bool(predicate), None, _getframe(1))

    def ballot_sync(self, mask, predicate):
        return self._st.wait_collective("ballot_sync", mask, bool(predicate), None, _getframe(1))

    def match_any_sync(self, mask, value):
        return self._st.wait_collective("match_any_sync", mask, value, None, _getframe(1))

    def match_all_sync(self, mask, value):
        return self._st.wait_collective("match_all_sync", mask, value, None, _getframe(1))

    # --- integer and float intrinsics -----------------------------------------------------------
    # at the argument's width and in numba-cuda's result types (intrinsics.py)
    def popc(self, x):
        return self._bits("popc", x)

    def clz(self, x):
        return self._bits("clz", x)

    def ffs(self, x):
        return self._bits("ffs", x)

    def brev(self, x):
        return self._bits("brev", x)

    def _bits(self, name, x):
        try:
            return bit_intrinsic(name, x)
        except IntrinsicTypeError as e:
            raise self._error(f"cuda.{name}() takes {e}",
                              fix="pass an int32, uint32, int64 or uint64 value") from None

    @staticmethod
    def fma(a, b, c):
        return fma_scalar(a, b, c)          # one rounding, as on the GPU

    @staticmethod
    def cbrt(x):
        # numba: float32 for a float32 argument (computed in float64 and rounded, as math.*)
        dtype = math_result_dtype([getattr(x, "dtype", None)])
        return dtype.type(np.cbrt(np.float64(x)))

    @staticmethod
    def selp(cond, a, b):
        return a if cond else b

    def _error(self, problem, fix=None):
        return self._st.error(EmulationError, problem, _getframe(2), fix=fix)

    def __getattr__(self, name):
        raise self._st.error(
            EmulationError, f"cuda.{name} is not available in the emulator", _getframe(1),
            fix="the emulator supports the kernel API listed in simtlab/emulator/cuda_api.py; "
                "ask your instructor if you need more")


def _dim3(d):
    from .scheduler import Dim3
    return Dim3(*d)
