"""Values typed as numba-cuda types them, where NumPy's scalar rules would type them otherwise.

A kernel's Python numbers are NumPy *weak* scalars (NEP 50): ``x * 2.0`` and ``x * 2`` stay
float32 when ``x`` is, and ``int32 + int32`` stays int32. numba-cuda types a Python int as
int64 and a float as float64, and widens integer arithmetic to 64 bits, so on the GPU
``x * 2.0`` is float64, ``acc = 0.0`` (or ``acc = 0``) then ``acc += a[i] * b[i]`` accumulates
in float64, and ``a[i] * b[i]`` of two int32 does not wrap. numba's ``math.*`` on float32
returns float32 (libdevice's ``expf``, ``sqrtf``, ...), where Python's returns a float64.
numba's own type inference, run on the CPU (tests/test_numba_typing.py), decides each rule:

- ``binop_dtype``: the result type of ``a <op> b``; ``TYPED_BINOPS`` apply it to scalars (the
  greenlet engine calls them for every ``+ - * / // % ** << >> & | ^`` of a kernel, see
  instrument.py), ``vector/values.py: binop`` to lane vectors. Two Python numbers keep
  Python's arithmetic (index math stays fast and exact);
- a float constant is float64 (``retype_constants``, ``float64_constant``), and so are float
  globals, ``math.pi`` and ``float(v)``;
- ``math.f(args)`` returns float32 when every argument is float32, else float64, also
  ``floor``/``ceil``/``trunc`` (a float, not Python's int); ``isnan``/``isinf``/``isfinite``
  a bool. A float32 result is the float64 result rounded to float32: the correctly rounded
  value, within 1 ulp of libdevice's and equal to it more often than NumPy's float32
  functions (benchmarks/results/numba_typing_h100.txt).

A kernel whose source cannot be read (made by ``exec``) keeps NumPy's arithmetic for its
operators in the greenlet engine (its constants and ``math`` are still typed).

- integer arithmetic is 64-bit and wraps as numba's does: two Python ints (numba's int64)
  keep Python's fast arithmetic and wrap when the result passes int64 (a 64-bit hash); a
  Python int past int64 (a uint64 literal) enters NumPy arithmetic as its 64 bits;
- ``-x``, ``+x``, ``~x`` (``TYPED_UNARY``): of a narrow integer, an int64/uint64 computed in
  the operand's own width first, as numba lowers it (``-int32(-2**31)`` is the int64 -2**31,
  ``-uint32(5)`` the uint64 2**32 - 5: numba's CPU and CUDA targets alike); ``-``/``+`` of a
  bool is an int64, ``~`` of a bool a bool;
- ``a * b + c`` where numba-cuda's compiler fuses it (contraction.py) is one fused
  multiply-add with one rounding (``TYPED_FUSED``, intrinsics.fma32/fma64), when the product
  and the sum have the same float type (``fused_dtype``).

Not modelled: numba's unification of a variable's types across branches and loop iterations
(the emulator types each value as it is computed); the int32 type of ``threadIdx``,
``blockIdx``, ``blockDim``, ``gridDim``, ``laneid`` and ``warpsize`` (Python ints here, numba's
int64 in arithmetic, which is where numba widens them too; ``cuda.clz`` of one of them
directly counts 64 bits here, 32 on the GPU); the contractions contraction.py lists.
"""

from __future__ import annotations

import functools
import math
import operator
import types

import numpy as np

from .intrinsics import fma32, fma64

# math functions that return a float (numba-cuda: float32 if every argument is float32)
FLOAT_FUNCS = (
    "sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "fabs", "expm1",
    "log1p", "atan", "asin", "acos", "sinh", "cosh", "atan2", "pow", "hypot", "copysign",
    "fmod", "erf", "erfc", "floor", "ceil", "trunc", "asinh", "acosh", "atanh", "gamma",
    "lgamma", "radians", "degrees",
)
BOOL_FUNCS = ("isnan", "isinf", "isfinite")


def float64_constant(value):
    """A Python float as numba types it (float64, strong); anything else unchanged."""
    return np.float64(value) if value.__class__ is float else value


def retype_constants(code: types.CodeType) -> types.CodeType:
    """``code`` with its float literals as float64 scalars (nested code objects too).

    CPython loads a literal with LOAD_CONST from ``co_consts``, which may hold any object."""
    consts = tuple(
        retype_constants(c) if isinstance(c, types.CodeType) else float64_constant(c)
        for c in code.co_consts)
    return code.replace(co_consts=consts)


def math_result_dtype(dtypes) -> np.dtype:
    """numba-cuda's result type of a float-returning ``math`` function of these arguments."""
    return np.dtype(np.float32) if all(d == np.float32 for d in dtypes) else np.dtype(np.float64)


def _scalar_dtype(value):
    return value.dtype if isinstance(value, np.generic) else None


# the NumPy function each engine computes ``math.<name>`` with (the vector engine on lane
# vectors, the greenlet engine on one float64): the same bits in both engines, which Python's
# ``math`` and NumPy do not give (tanh differs in 1 ulp on a fifth of inputs). An H100's
# libdevice differs from both by up to 2 ulp (benchmarks/results/numerics_h100.json,
# "float64_math": tanh, sinh, asinh and hypot 2 ulp, the rest at most 1; sqrt, fmod and
# copysign are exact). erf, erfc, gamma and lgamma have no NumPy function: Python's in both.
FLOAT_UFUNCS = {
    "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "fabs": np.fabs,
    "expm1": np.expm1, "log1p": np.log1p, "atan": np.arctan, "asin": np.arcsin,
    "acos": np.arccos, "sinh": np.sinh, "cosh": np.cosh, "atan2": np.arctan2, "pow": np.power,
    "hypot": np.hypot, "copysign": np.copysign, "fmod": np.fmod, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "radians": np.radians, "degrees": np.degrees,
}
ROUNDING_UFUNCS = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}
MATH_ULP_ON_GPU = 2     # the most float64 libdevice differs from NumPy's result, in ulp


def _typed_float_function(name):
    func = getattr(math, name)
    ufunc = FLOAT_UFUNCS.get(name) or ROUNDING_UFUNCS.get(name)

    def typed(*args):
        dtype = math_result_dtype([_scalar_dtype(a) for a in args])
        values = [np.float64(a) for a in args]
        if ufunc is None:
            return dtype.type(func(*values))
        with np.errstate(all="ignore"):
            result = ufunc(*values)
        if result != result and not any(v != v for v in values):
            func(*values)            # outside the domain: Python's error says which
        return dtype.type(result)

    typed.__name__ = name
    typed.__wrapped__ = func
    return typed


class NumbaMath(types.ModuleType):
    """The ``math`` module a kernel sees in the greenlet engine: numba-cuda's result types."""

    def __init__(self):
        super().__init__("math", "math.* typed as numba-cuda types it (simtlab emulator)")
        for name in dir(math):
            if name.startswith("_"):
                continue
            value = getattr(math, name)
            setattr(self, name, float64_constant(value))
        for name in FLOAT_FUNCS:
            if hasattr(math, name):
                setattr(self, name, _typed_float_function(name))


NUMBA_MATH = NumbaMath()
# math's functions by identity, for a kernel that did ``from math import exp``
TYPED_MATH_FUNCS = {getattr(math, n): getattr(NUMBA_MATH, n)
                    for n in FLOAT_FUNCS if hasattr(math, n)}


def numba_float(value=0.0):
    """``float(v)`` in a kernel: numba types it float64."""
    return np.float64(value)


# --- arithmetic ---------------------------------------------------------------------------------
INT64, UINT64, FLOAT64, BOOL = (np.dtype(t) for t in (np.int64, np.uint64, np.float64, np.bool_))
PYTHON_DTYPES = {int: INT64, float: FLOAT64, bool: BOOL}
_BITWISE = ("BitAnd", "BitOr", "BitXor")


@functools.lru_cache(maxsize=None)
def binop_dtype(op: str, da: np.dtype, db: np.dtype):
    """numba-cuda's result type of ``a <op> b`` for operands of these types (None: NumPy's)."""
    if da.kind == "f" or db.kind == "f":
        if op == "Pow" and da.kind == "f" and db.kind != "f":
            return da                    # float32 ** 2 stays float32
        return np.promote_types(da, db)  # float32 with int32/int64: float64; with int16: float32
    if da.kind == "b" and db.kind == "b" and op in _BITWISE:
        return None                      # logical and/or/xor of bools: a bool
    if op == "Div":
        return FLOAT64
    if op in ("LShift", "RShift"):       # the left operand's signedness, 64 bits
        return UINT64 if da.kind == "u" else INT64
    return UINT64 if da.kind == "u" and db.kind == "u" else INT64


def _class_dtype(cls):
    dtype = PYTHON_DTYPES.get(cls)
    if dtype is not None:
        return dtype
    return np.dtype(cls) if issubclass(cls, np.generic) else None


# operand classes whose same-class arithmetic NumPy already types as numba does
_CLOSED = frozenset((int, float, np.float32, np.float64, np.int64, np.uint64))


def _planned(op_name, op):
    """``a <op> b`` typed as numba types it, for operands NumPy would type otherwise."""
    # (class of a, class of b) -> (type for a, type for b): None keeps an operand as it is
    plans: dict = {}

    def plan(ca, cb):
        da, db = _class_dtype(ca), _class_dtype(cb)
        if da is None or db is None:
            return None, None    # an array or anything else: NumPy (or Python) decides
        dtype = binop_dtype(op_name, da, db)
        if dtype is None:
            return None, None
        # both operands of the result type: NumPy's fast same-type scalar arithmetic (mixed
        # types go through its much slower ufunc machinery)
        return dtype.type, dtype.type

    def planned(a, b):
        key = (a.__class__, b.__class__)
        types_ = plans.get(key)
        if types_ is None:
            types_ = plans[key] = plan(*key)
        ta, tb = types_
        try:
            return op(a if ta is None else ta(a), b if tb is None else tb(b))
        except OverflowError:    # a Python int past int64 (a uint64 literal): its 64 bits
            return op(a if ta is None else _bits_as(ta, a), b if tb is None else _bits_as(tb, b))

    return planned


def _bits_as(scalar_type, value):
    """``value``'s low bits in ``scalar_type`` (a Python int past its range wraps, as numba's
    integer conversion does)."""
    if value.__class__ is int and np.dtype(scalar_type).kind in "iu":
        return np.array(value & 0xFFFFFFFFFFFFFFFF, np.uint64).astype(scalar_type)[()]
    return scalar_type(value)


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def wrap_int64(value):
    """A Python int past int64 wrapped to int64, as numba's 64-bit integer arithmetic wraps;
    any other value unchanged."""
    if value.__class__ is int:
        return ((value + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)
    return value


# The greenlet engine calls these for every binary operator of a kernel, so each is written
# out with its operator inline: same-class operands NumPy types as numba does, or two Python
# numbers, cost one call and one operation. Two Python ints are numba's int64: a result past
# int64 (a 64-bit hash, ``i * 6364136223846793005``) wraps as on the GPU, which costs one
# chained comparison on the fast path.
_TEMPLATE = """
def typed_{name}(a, b):
    ca = a.__class__
    cb = b.__class__
    if ca is cb:
        if ca is int:
            r = a {symbol} b
            if -9223372036854775808 <= r <= 9223372036854775807:
                return r
            return _wrap(r)
        if ca in _CLOSED:
            return a {symbol} b
    if ca in _PYTHON and cb in _PYTHON:
        r = a {symbol} b
        if r.__class__ is int and not -9223372036854775808 <= r <= 9223372036854775807:
            return _wrap(r)
        return r
    return _slow(a, b)
"""


def _typed(op_name, op, symbol):
    namespace = {"_CLOSED": _CLOSED, "_PYTHON": PYTHON_DTYPES, "_slow": _planned(op_name, op),
                 "_wrap": wrap_int64}
    exec(_TEMPLATE.format(name=op_name, symbol=symbol), namespace)
    return namespace[f"typed_{op_name}"]


BINOPS = {
    "Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv,
    "FloorDiv": operator.floordiv, "Mod": operator.mod, "Pow": operator.pow,
    "LShift": operator.lshift, "RShift": operator.rshift, "BitOr": operator.or_,
    "BitXor": operator.xor, "BitAnd": operator.and_,
}
_SYMBOLS = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%",
            "Pow": "**", "LShift": "<<", "RShift": ">>", "BitOr": "|", "BitXor": "^",
            "BitAnd": "&"}
TYPED_BINOPS = {name: _typed(name, op, _SYMBOLS[name]) for name, op in BINOPS.items()}


# --- unary operators --------------------------------------------------------------------------
# numba-cuda widens a narrow integer before ``-``, ``+`` and ``~`` (int8/16/32 to int64, unsigned
# to uint64: ``-uint32(5)`` is the uint64 2**64 - 5), ``-``/``+`` of a bool is an int64 and
# ``~`` of a bool its negation (a bool). NumPy keeps the narrow type, so the greenlet engine
# calls these for ``-x``, ``+x`` and ``~x`` of a variable (instrument.py).
_WIDE_UNARY = frozenset((float, np.float32, np.float64, np.int64, np.uint64))


def _narrow(a) -> bool:
    return isinstance(a, np.integer) and a.dtype.itemsize < 8


def _widened(a, result: int):
    """``result`` (a Python int, the operation done in ``a``'s own width) as numba's 64-bit
    result type of a unary operator on the narrow integer ``a``."""
    bits = a.dtype.itemsize * 8
    result &= (1 << bits) - 1
    if a.dtype.kind == "u":
        return np.uint64(result)
    return np.int64(result - (1 << bits) if result >> (bits - 1) else result)


def typed_USub(a):
    cls = a.__class__
    if cls is int:
        return -a if a != INT64_MIN else a        # -(-2**63) wraps to itself in int64
    if cls is bool or cls is np.bool_:
        return -int(a)
    if cls in _WIDE_UNARY and cls is not np.uint64:
        return -a
    if cls is np.uint64:                           # wraps, without NumPy's overflow warning
        return np.uint64(-int(a) & 0xFFFFFFFFFFFFFFFF)
    return _widened(a, -int(a)) if _narrow(a) else -a


def typed_UAdd(a):
    cls = a.__class__
    if cls is int or cls in _WIDE_UNARY:
        return a
    if cls is bool or cls is np.bool_:
        return int(a)
    return _widened(a, int(a)) if _narrow(a) else +a


def typed_Invert(a):
    cls = a.__class__
    if cls is int or cls is np.int64 or cls is np.uint64:
        return ~a
    if cls is bool or cls is np.bool_:
        return not a                               # numba: ~ of a bool is a bool
    return _widened(a, ~int(a)) if _narrow(a) else ~a


TYPED_UNARY = {"USub": typed_USub, "UAdd": typed_UAdd, "Invert": typed_Invert}


# --- fused multiply-add -------------------------------------------------------------------------
# numba-cuda's compiler fuses ``a * b + c`` into one FMA when the product and the sum have the
# same float type (contraction.py says where); the greenlet engine's kernel calls these for
# such sums (instrument.py), the vector engine the same rule on lanes (vector/values.py).
@functools.lru_cache(maxsize=None)
def fused_dtype(cx, cy, cc):
    """The float type ``x * y + c`` is fused in, for operands of these classes; None when
    numba rounds the product first (ints, or a product of another type than the sum)."""
    return fused_dtype_of(_class_dtype(cx), _class_dtype(cy), _class_dtype(cc))


@functools.lru_cache(maxsize=None)
def fused_dtype_of(dx, dy, dc):
    """``fused_dtype`` for operands of these types (None: not fused)."""
    if dx is None or dy is None or dc is None:
        return None
    product = binop_dtype("Mult", dx, dy)
    if product is None or product.kind != "f" or binop_dtype("Add", product, dc) != product:
        return None
    return product


def _fused(x, y, c, negate_product, negate_addend):
    """``±(x * y) ± c`` with one rounding, in ``fused_dtype``'s type."""
    fx, fy, fc = float(x), float(y), float(c)
    if negate_product:
        fx = -fx
    if negate_addend:
        fc = -fc
    if fused_dtype(x.__class__, y.__class__, c.__class__) == np.float32:
        return fma32(fx, fy, fc)
    return fma64(fx, fy, fc)


# name: (sum operator, is the product the left operand); each checks the common cases first
_FUSED_TEMPLATE = """
def typed_{name}({params}):
    cx = x.__class__
    if cx is y.__class__ and cx is c.__class__:
        if cx is _f32:
            return _fma32({fx}, {fy}, {fc})
        if cx is _f64:
            return _fma64({fx}, {fy}, {fc})
        if cx is int:
            r = {expr}
            if -9223372036854775808 <= r <= 9223372036854775807:
                return r
            return _wrap(r)
    if _fused_dtype(cx, y.__class__, c.__class__) is None:
        return {unfused}
    return _fused(x, y, c, {neg_product}, {neg_addend})
"""
_FUSED_FORMS = {
    # name: (parameters, x*y+c as Python, unfused typed form, negate product, negate addend)
    "MulAdd": ("x, y, c", "x * y + c", "_Add(_Mult(x, y), c)", False, False),
    "MulSub": ("x, y, c", "x * y - c", "_Sub(_Mult(x, y), c)", False, True),
    "AddMul": ("c, x, y", "c + x * y", "_Add(c, _Mult(x, y))", False, False),
    "SubMul": ("c, x, y", "c - x * y", "_Sub(c, _Mult(x, y))", True, False),
}


def _typed_fused(name):
    params, expr, unfused, neg_product, neg_addend = _FUSED_FORMS[name]
    source = _FUSED_TEMPLATE.format(
        name=name, params=params, expr=expr, unfused=unfused, neg_product=neg_product,
        neg_addend=neg_addend, fx="-float(x)" if neg_product else "float(x)", fy="float(y)",
        fc="-float(c)" if neg_addend else "float(c)")
    namespace = {"_f32": np.float32, "_fma32": fma32, "_f64": np.float64, "_fma64": fma64,
                 "_wrap": wrap_int64,
                 "_fused_dtype": fused_dtype, "_fused": _fused, "_Add": TYPED_BINOPS["Add"],
                 "_Sub": TYPED_BINOPS["Sub"], "_Mult": TYPED_BINOPS["Mult"]}
    exec(source, namespace)
    return namespace[f"typed_{name}"]


TYPED_FUSED = {name: _typed_fused(name) for name in _FUSED_FORMS}
