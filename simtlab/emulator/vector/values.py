"""Values of the vector engine: one number per lane, typed as the greenlet engine types them.

In the greenlet engine each thread holds Python numbers (``threadIdx.x``, loop counters,
``t // 2``) and NumPy scalars (what it reads from an array). NumPy treats a Python number as
*weak*: ``np.float32(x) * 3`` stays float32, while ``np.float32(x) * np.int64(3)`` becomes
float64. A lane vector of Python numbers is therefore a ``Weak`` (an int64 or float64 array
marked weak); a vector read from an array is a plain ndarray (strong). ``binop`` combines
them with the same promotion as the scalars would, so both engines compute in the same types.
Float constants are not weak: numba types them float64, and both engines make them NumPy
float64 scalars (``numba_types.py``), so ``x * 2.0`` is float64 as on the GPU.
"""

from __future__ import annotations

import operator

import numpy as np

from ..conversions import float_to_int, store_converter
from ..intrinsics import fma_lanes
from ..numba_types import (PYTHON_DTYPES, TYPED_BINOPS, TYPED_FUSED, TYPED_UNARY, binop_dtype,
                           fused_dtype_of)


class Fallback(Exception):
    """The vector engine cannot run (or finish) this launch: the greenlet engine takes over."""


class Weak:
    """A lane vector of Python numbers (int64, float64 or bool storage)."""

    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a

    def __repr__(self):
        return f"Weak({self.a!r})"


def raw(v):
    """The NumPy data behind a value (for indexing and masks)."""
    return v.a if v.__class__ is Weak else v


class MixedLanes(np.ndarray):
    """A lane vector whose lanes hold values of different types in the greenlet engine (a
    float32 on some, a float64 or an int on others: ``v = x[i] if c else 0.0``), which one
    NumPy array cannot. Storing, comparing or negating it is exact; arithmetic on it is not (the
    greenlet engine computes each lane in its own type), so that falls back to the greenlet
    engine."""


def is_vector(v) -> bool:
    c = v.__class__
    return c is Weak or c is np.ndarray or c is MixedLanes


def _refuse_mixed(*values):
    for v in values:
        if v.__class__ is MixedLanes:
            raise Fallback("arithmetic on a value whose type differs between lanes")


def _type_class(v):
    """What decides a value's arithmetic in numba_types: float width, or int, or bool."""
    dtype = _numba_dtype(v)
    if dtype is None:
        return None
    if dtype.kind == "f":
        return ("f", dtype.itemsize)
    return "b" if dtype.kind == "b" else "i"


def weak(a):
    return Weak(a)


_PY_NUMBERS = (int, float, bool)


def _unify(a, b):
    """Operands with NumPy's scalar promotion: a weak vector takes the strong side's type."""
    wa, wb = a.__class__ is Weak, b.__class__ is Weak
    if wa and wb:
        return a.a, b.a, True
    if wa and b.__class__ in _PY_NUMBERS:
        return a.a, b, True
    if wb and a.__class__ in _PY_NUMBERS:
        return a, b.a, True
    if wa:
        return _weak_as(a.a, b), b, False
    if wb:
        return a, _weak_as(b.a, a), False
    return a, b, False


def _weak_as(arr, strong):
    """Cast a weak vector to the dtype a Python number takes next to ``strong``."""
    if isinstance(strong, (int, float, bool)) and not isinstance(strong, np.generic):
        return arr                          # both Python-typed: plain promotion is Python's
    dt = strong.dtype
    k, wk = dt.kind, arr.dtype.kind
    if wk == "b":
        return arr
    if wk in "iu" and k in "iuf":
        return arr.astype(dt, copy=False)
    if wk == "f" and k == "f":
        return arr.astype(dt, copy=False)
    return arr


def _wrap(result, both_weak):
    if both_weak and isinstance(result, np.ndarray):
        return Weak(result)
    return result


_BINOPS = {
    "Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv,
    "FloorDiv": operator.floordiv, "Mod": operator.mod, "Pow": operator.pow,
    "LShift": operator.lshift, "RShift": operator.rshift, "BitOr": operator.or_,
    "BitXor": operator.xor, "BitAnd": operator.and_,
}
_CMPOPS = {"Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge,
           "Eq": operator.eq, "NotEq": operator.ne}


def _numba_dtype(v):
    """The type numba gives an operand: a weak vector's Python numbers are int64/float64/bool."""
    if v.__class__ is Weak:
        return v.a.dtype
    dtype = PYTHON_DTYPES.get(v.__class__)
    if dtype is not None:
        return dtype
    return getattr(v, "dtype", None)


def _typed_operands(name, a, b):
    """Both operands in numba's result type (numba_types.binop_dtype), or None where NumPy's
    promotion already gives it (or both are Python numbers: Python's arithmetic, as in the
    greenlet engine)."""
    if (a.__class__ is Weak or a.__class__ in _PY_NUMBERS) and \
            (b.__class__ is Weak or b.__class__ in _PY_NUMBERS):
        return None
    da, db = _numba_dtype(a), _numba_dtype(b)
    if da is None or db is None:
        return None
    key = (name, da, db)
    dtype = _RESULT_DTYPES.get(key, _UNKNOWN)
    if dtype is _UNKNOWN:
        dtype = _RESULT_DTYPES[key] = binop_dtype(name, da, db)
    if dtype is None:
        return None
    x, y = raw(a), raw(b)
    try:
        # copy=False: an operand already of the result type is used as it is (binop never
        # writes to its operands), not copied lane by lane
        x = x.astype(dtype, copy=False) if isinstance(x, np.ndarray) else dtype.type(x)
        y = y.astype(dtype, copy=False) if isinstance(y, np.ndarray) else dtype.type(y)
    except OverflowError:
        return None
    return x, y


_RESULT_DTYPES: dict = {}    # (op, dtype, dtype) -> binop_dtype's answer: a few dozen pairs
_UNKNOWN = object()


def binop(name, a, b, m=None):
    """``a <op> b`` per lane; ``m``: the active lanes (None: all), for the division check."""
    if not is_vector(a) and not is_vector(b):
        return TYPED_BINOPS[name](a, b)
    _refuse_mixed(a, b)
    typed = _typed_operands(name, a, b)
    if typed is not None:
        (x, y), both_weak = typed, False
    else:
        x, y, both_weak = _unify(a, b)
    # NumPy's floating-point warnings are off for the whole run (engine.RUN_ERRSTATE), not
    # set here: an errstate per operation cost more than a float32 multiply of 4,096 lanes
    if name in ("Div", "FloorDiv", "Mod"):
        d = y[m] if m is not None and isinstance(y, np.ndarray) else y
        if _has_zero_int_divisor(d) or (both_weak and _has_zero(d)):
            # Python numbers raise ZeroDivisionError where NumPy gives inf or 0: the
            # greenlet engine runs the launch and reports it
            raise Fallback("division by zero in some lane")
        if m is not None and _few_active(m):
            return _wrap(_on_active_lanes(_BINOPS[name], x, y, m), both_weak)
    return _wrap(_BINOPS[name](x, y), both_weak)


def multiply_add(x, y, c, sub, product_left, m, n):
    """``x * y ± c`` (``product_left``) or ``c ± x * y`` per lane, fused into one rounding
    where numba-cuda's compiler fuses it (numba_types.fused_dtype, contraction.py)."""
    if not is_vector(x) and not is_vector(y) and not is_vector(c):
        name = ("MulSub" if sub else "MulAdd") if product_left else ("SubMul" if sub else "AddMul")
        return TYPED_FUSED[name](x, y, c) if product_left else TYPED_FUSED[name](c, x, y)
    _refuse_mixed(x, y, c)
    dtype = fused_dtype_of(_numba_dtype(x), _numba_dtype(y), _numba_dtype(c))
    if dtype is None:                        # rounded product, then the sum
        op = "Sub" if sub else "Add"
        p = binop("Mult", x, y, m)
        return binop(op, p, c, m) if product_left else binop(op, c, p, m)
    fx, fy, fc = (raw(broadcast(v, n)).astype(np.float64) for v in (x, y, c))
    if sub:
        if product_left:
            fc = -fc
        else:
            fx = -fx
    return fma_lanes(fx, fy, fc, dtype)


_SPARSE_FROM = 4096      # lanes: below this, one more NumPy call costs more than it saves


def _few_active(m):
    """A mask with few active lanes, as a divergent loop's last iterations have."""
    n = m.size
    return n >= _SPARSE_FROM and np.count_nonzero(m) * 8 < n


def _on_active_lanes(op, x, y, m):
    """``op`` (an integer division or modulo: ~10x an add per lane) on the active lanes only;
    the others get 0 (an inactive lane's value is never read: ``Interpreter.set_var``)."""
    lanes = np.flatnonzero(m)
    xa = x[lanes] if isinstance(x, np.ndarray) else x
    ya = y[lanes] if isinstance(y, np.ndarray) else y
    part = op(xa, ya)
    if not isinstance(part, np.ndarray):      # both operands scalar: not a lane vector
        return op(x, y)
    out = np.zeros(m.size, part.dtype)
    out[lanes] = part
    return out


def _has_zero(y):
    if isinstance(y, np.ndarray):
        return not y.all()
    return y == 0


def _has_zero_int_divisor(y):
    if isinstance(y, np.ndarray):
        return y.dtype.kind in "iub" and not y.all()
    return isinstance(y, (int, np.integer)) and y == 0


def compare(name, a, b):
    if not is_vector(a) and not is_vector(b):
        return _CMPOPS[name](a, b)
    x, y, _ = _unify(a, b)
    return Weak(np.asarray(_CMPOPS[name](x, y)))


def unary(name, v):
    """``-v``, ``+v``, ``~v``, ``not v`` per lane, typed as numba types them (numba_types:
    a narrow integer's result is 64 bits wide, computed in the operand's own width first;
    ``-``/``+`` of a bool is an int64)."""
    if not is_vector(v):
        if name == "Not":
            return not v
        return TYPED_UNARY[name](v)
    w = v.__class__ is Weak
    a = raw(v)
    if name == "Not":
        return Weak(~truth(v))
    if a.dtype.kind == "b":
        if name == "Invert":
            return Weak(~a) if w else ~a          # a bool stays a bool
        a = a.astype(np.int64)
    elif a.dtype.kind in "iu" and a.dtype.itemsize < 8:
        with np.errstate(over="ignore"):
            r = -a if name == "USub" else +a if name == "UAdd" else ~a
        r = r.astype(np.uint64 if a.dtype.kind == "u" else np.int64)
        return Weak(r) if w else r
    r = -a if name == "USub" else +a if name == "UAdd" else ~a
    return Weak(r) if w else r


def truth(v):
    """A boolean per lane (``if v:``)."""
    a = raw(v)
    if isinstance(a, np.ndarray):
        if a.__class__ is MixedLanes:        # a mask is a plain bool vector
            a = a.view(np.ndarray)
        return a if a.dtype.kind == "b" else a != 0
    return bool(a)


def select(mask, new, old, n):
    """``new`` on the lanes of ``mask``, ``old`` elsewhere (``old`` None: unset)."""
    if mask is True or (old is None and not is_vector(new)):
        return new
    if old is None:
        return new
    if not is_vector(new) and not is_vector(old) and new.__class__ is old.__class__ \
            and new == old:
        return old
    weak_result = (new.__class__ is Weak or not isinstance(new, (np.ndarray, np.generic))) and \
                  (old.__class__ is Weak or not isinstance(old, (np.ndarray, np.generic)))
    x, y, _ = _unify(new, old)
    r = np.where(mask, x, y)
    if r.shape != (n,):
        r = np.broadcast_to(r, (n,)).copy()
    mixed = new.__class__ is MixedLanes or old.__class__ is MixedLanes or (
        _type_class(new) != _type_class(old) and isinstance(mask, np.ndarray)
        and mask.any() and not mask.all())
    if mixed:
        return r.view(MixedLanes)
    return Weak(r) if weak_result else r


def broadcast(v, n):
    """A full vector of ``v`` (weak for Python numbers)."""
    if v.__class__ is Weak:
        return v
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, np.generic):
        return np.full(n, v)
    return Weak(np.full(n, v))


def convert_for_store(values, dtype):
    """Values converted as a store into an array of ``dtype`` converts them on the GPU."""
    a = raw(values)
    if not isinstance(a, np.ndarray):
        conv = store_converter(dtype)
        return dtype.type(a if conv is None else conv(a))
    if dtype.kind in "iu" and a.dtype.kind == "f":
        return float_to_int(a, dtype)
    return a.astype(dtype)


def cast(values, dtype):
    """``float32(v)``, ``int32(v)``: numba's casts, which NumPy's scalar types perform."""
    a = raw(values)
    if a.__class__ is MixedLanes:            # one type again on every lane
        a = a.view(np.ndarray)
    if not isinstance(a, np.ndarray):
        return dtype.type(a)
    if dtype.kind in "iu" and a.dtype.kind == "f":
        return np.trunc(a).astype(dtype)
    return a.astype(dtype)
