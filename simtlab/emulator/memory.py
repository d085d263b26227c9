"""Arrays as a kernel sees them: every access is bounds-checked and, when tracing, recorded.

A ``TracedArray`` wraps a NumPy array (global memory arguments, shared, local and constant
arrays). Reads and writes go straight to the NumPy data, so the caller's arrays are updated
in place. Each access is appended to the launch's trace as one tuple; ``tracing.py`` turns the
tuples into record arrays once the kernel has finished.
"""

from __future__ import annotations

import linecache
import operator
import sys
from dataclasses import dataclass

import numpy as np

from ..simt import GLOBAL, KINDS, SPACES, make_site  # noqa: F401 (GLOBAL, KINDS: re-exported)
from .bounds import out_of_bounds_message
from .conversions import store_converter
from .errors import EmulationError, OutOfBoundsError, UninitializedReadError

_index = operator.index
_getframe = sys._getframe


@dataclass(frozen=True)
class ArrayInfo:
    """One array of a launch: where it lives and how to turn an index into a byte address."""

    id: int
    name: str
    space: str
    shape: tuple
    dtype: np.dtype
    itemsize: int
    base: int          # byte address of element 0 (global: one address space; shared: per block)


class TracedArray:
    """A NumPy array seen through a kernel: bounds checks, uninitialised-read checks, trace."""

    __slots__ = ("_st", "_id", "_root", "_offset", "_estrides", "_n0", "_s0", "_written",
                 "_readonly", "_convert", "name", "shape", "size", "ndim", "dtype", "space")

    def __init__(self, st, array_id: int, root_flat: np.ndarray, shape, name: str, space: int,
                 *, written=None, readonly=False, offset=0, estrides=None):
        self._st = st
        self._id = array_id
        self._root = root_flat                    # 1-D view of the whole array's storage
        self._offset = offset
        shape = tuple(int(s) for s in shape)
        if estrides is None:                      # C order element strides
            estrides, acc = [], 1
            for s in reversed(shape):
                estrides.append(acc)
                acc *= s
            estrides = tuple(reversed(estrides))
        self._estrides = tuple(estrides)
        self.shape = shape
        self.ndim = len(shape)
        self.size = int(np.prod(shape)) if shape else 1
        self.dtype = root_flat.dtype
        self._convert = store_converter(self.dtype)   # integer stores wrap/saturate as numba's
        self._n0 = shape[0] if shape else 1
        self._s0 = self._estrides[0] if shape else 1
        self._written = written                   # bool mask over root (shared memory only)
        self._readonly = readonly
        self.name = name
        self.space = space

    # --- the array protocol a kernel uses -------------------------------------------------
    def __len__(self):
        return self._n0

    def __repr__(self):
        return f"<{SPACES[self.space]} array {self.name} shape={self.shape} dtype={self.dtype}>"

    @property
    def T(self):
        raise EmulationError("x.T inside a kernel is not supported by the emulator",
                             fix="index the array with swapped indices instead")

    # The two methods below are the emulator's hottest code: every array access of every
    # thread runs them. The 1-D and 2-D cases and the trace record are written inline because
    # each extra Python call costs as much as the access itself (more when lines are traced).
    def __getitem__(self, idx):
        cls = idx.__class__
        if cls is int and self.ndim == 1:
            if not 0 <= idx < self._n0:
                raise self._out_of_bounds(idx, "reads", _getframe(1))
            flat = self._offset + idx * self._s0
        elif cls is tuple and len(idx) == 2 and self.ndim == 2 and idx[0].__class__ is int \
                and idx[1].__class__ is int:
            i, j = idx
            if not (0 <= i < self._n0 and 0 <= j < self.shape[1]):
                raise self._out_of_bounds(idx, "reads", _getframe(1))
            flat = self._offset + i * self._s0 + j * self._estrides[1]
        else:
            flat = self._flat_general(idx, "reads", _getframe(1))
            if flat.__class__ is TracedArray:
                return flat
        st = self._st
        rec = st.rec
        if rec is not None:
            f = _getframe(1)
            ci = st.code_index.get(f.f_code)
            if ci is None:
                ci = st._add_code(f.f_code)
            th = st.cur
            rec((th.gtid, self._id, flat, 0, make_site(ci, f.f_lineno), st.epoch, th.wstate.wsync))
        if self._written is not None and not self._written[flat]:
            raise self._uninitialised(idx, _getframe(1))
        return self._root[flat]

    def __setitem__(self, idx, value):
        cls = idx.__class__
        if cls is int and self.ndim == 1:
            if not 0 <= idx < self._n0:
                raise self._out_of_bounds(idx, "writes", _getframe(1))
            flat = self._offset + idx * self._s0
        elif cls is tuple and len(idx) == 2 and self.ndim == 2 and idx[0].__class__ is int \
                and idx[1].__class__ is int:
            i, j = idx
            if not (0 <= i < self._n0 and 0 <= j < self.shape[1]):
                raise self._out_of_bounds(idx, "writes", _getframe(1))
            flat = self._offset + i * self._s0 + j * self._estrides[1]
        else:
            flat = self._flat_general(idx, "writes", _getframe(1), allow_view=False)
        if self._readonly:
            raise self._st.error(EmulationError, f"writes to {self.name}, which is constant "
                                 "memory and read-only inside a kernel", _getframe(1),
                                 fix="copy the value into a local variable and change that")
        st = self._st
        rec = st.rec
        if rec is not None:
            f = _getframe(1)
            ci = st.code_index.get(f.f_code)
            if ci is None:
                ci = st._add_code(f.f_code)
            th = st.cur
            rec((th.gtid, self._id, flat, 1, make_site(ci, f.f_lineno), st.epoch, th.wstate.wsync))
        if self._convert is not None:
            value = self._convert(value)
        self._root[flat] = value
        if self._written is not None:
            self._written[flat] = 1

    def _flat_general(self, idx, verb, frame, allow_view=True):
        """Any other index: NumPy integers, 1-element tuples, 3-D, slices."""
        if self.ndim == 1 and idx.__class__ is not tuple and idx.__class__ is not slice:
            try:
                i = _index(idx)
            except TypeError:
                raise self._bad_index(idx, frame) from None
            if not 0 <= i < self._n0:
                raise self._out_of_bounds(idx, verb, frame)
            return self._offset + i * self._s0
        return self._flat_nd(idx, verb, frame, allow_view)

    # --- used by cuda.atomic.* --------------------------------------------------------------
    def _atomic_update(self, idx, update, frame):
        """Read-modify-write as one indivisible step; returns the old value."""
        flat = self._flat_general(idx, "updates atomically", frame, allow_view=False)
        if self._readonly:
            raise self._st.error(EmulationError, f"atomic on constant array {self.name}", frame)
        st = self._st
        if st.rec is not None:
            st.record(self._id, flat, 2, frame)
        if self._written is not None and not self._written[flat]:
            raise self._uninitialised(idx, frame)
        old = self._root[flat]
        new = update(old.item())       # Python arithmetic: no NumPy overflow warnings
        self._root[flat] = new if self._convert is None else self._convert(new)
        return old

    # --- helpers ----------------------------------------------------------------------------
    def _flat_nd(self, idx, verb, frame, allow_view=True):
        if idx.__class__ is not tuple:
            idx = (idx,)
        if any(v.__class__ is slice for v in idx):
            if not allow_view:
                raise self._st.error(EmulationError, f"assigns to a slice of {self.name}",
                                     frame, fix="assign element by element in a loop")
            return self._view(idx, frame)
        if len(idx) < self.ndim and allow_view:
            return self._row(idx, verb, frame)
        if len(idx) < self.ndim:
            raise self._st.error(
                EmulationError, f"assigns to {self._describe_index(idx)}, a whole "
                f"{self.ndim - len(idx)}-D part of {self.name} (shape {self.shape})", frame,
                fix="assign element by element in a loop")
        if len(idx) != self.ndim:
            raise self._st.error(
                OutOfBoundsError,
                f"indexes {self.name} (shape {self.shape}) with {len(idx)} indices", frame,
                fix=f"give exactly {self.ndim} indices, e.g. {self.name}[{', '.join('ijk'[:self.ndim])}]")
        flat = self._offset
        for v, n, s in zip(idx, self.shape, self._estrides):
            try:
                v = _index(v)
            except TypeError:
                raise self._bad_index(idx, frame) from None
            if not 0 <= v < n:
                raise self._out_of_bounds(idx, verb, frame)
            flat += v * s
        return flat

    def _row(self, idx, verb, frame):
        """``m[i]`` of a 2-D array (``m[i]``, ``m[i, j]`` of a 3-D one): numba's view of the
        remaining dimensions. It shares the array's id and storage, so accesses through it are
        traced as accesses of ``m`` (same flat index and address) and bounds-checked against
        the row. Taking the view touches no memory and records nothing."""
        k = len(idx)
        offset = self._offset
        for v, n, s in zip(idx, self.shape, self._estrides):
            try:
                v = _index(v)
            except TypeError:
                raise self._bad_index(idx, frame) from None
            if not 0 <= v < n:
                raise self._out_of_bounds(idx, "takes the view", frame)
            offset += v * s
        return TracedArray(self._st, self._id, self._root, self.shape[k:], self.name,
                           self.space, written=self._written, readonly=self._readonly,
                           offset=offset, estrides=self._estrides[k:])

    def _view(self, idx, frame):
        """A slice of the array (``a[i, :]``): a new TracedArray over the same storage."""
        shaped = np.lib.stride_tricks.as_strided(
            self._root[self._offset:], shape=self.shape,
            strides=tuple(s * self.dtype.itemsize for s in self._estrides))
        try:
            view = shaped[idx]
        except IndexError as e:
            raise self._st.error(OutOfBoundsError, f"slice {idx} of {self.name}: {e}", frame) from None
        if view.ndim == 0:
            raise self._st.error(EmulationError, "empty slice", frame)
        start = (view.__array_interface__["data"][0]
                 - self._root.__array_interface__["data"][0]) // self.dtype.itemsize
        estrides = tuple(s // self.dtype.itemsize for s in view.strides)
        return TracedArray(self._st, self._id, self._root, view.shape, self.name, self.space,
                           written=self._written, readonly=self._readonly, offset=start,
                           estrides=estrides)

    def _describe_index(self, idx):
        if idx.__class__ is tuple:
            return f"{self.name}[{', '.join(str(v) for v in idx)}]"
        return f"{self.name}[{idx}]"

    def _out_of_bounds(self, idx, verb, frame):
        values = tuple(_safe_int(v) for v in (idx if idx.__class__ is tuple else (idx,)))
        source = linecache.getline(frame.f_code.co_filename, frame.f_lineno) if frame is not None else None
        problem, fix = out_of_bounds_message(self.name, self.shape, values, source)
        what = f"{verb} {self._describe_index(idx)}: {problem}"
        err = self._st.error(OutOfBoundsError, what, frame, fix=fix)
        err.array, err.index = self.name, idx     # for the exercise checks: which array, which element
        return err

    def _bad_index(self, idx, frame):
        return self._st.error(
            OutOfBoundsError, f"indexes {self.name} with {idx!r} of type {type(idx).__name__}",
            frame, fix="indices must be integers: use // for integer division, or int(...)")

    def _uninitialised(self, idx, frame):
        err = self._st.error(
            UninitializedReadError,
            f"reads {self._describe_index(idx)} of shared array {self.name!r}, which no thread "
            "of this block has written yet", frame,
            fix="if another thread writes this element, put cuda.syncthreads() between that "
                "write and this read; otherwise initialise the shared array first")
        err.array, err.index = self.name, idx     # for the exercise checks: whose slot was it?
        return err


def _safe_int(v):
    try:
        return _index(v)
    except TypeError:
        return None
