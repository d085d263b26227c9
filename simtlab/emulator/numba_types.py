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

Not modelled: numba's unification of a variable's types across branches and loop iterations
(the emulator types each value as it is computed), unary operators on narrow integers, and
the GPU's fused multiply-add (NVVM contracts float32 ``acc += a * b`` into one rounding).
"""

from __future__ import annotations

import functools
import math
import operator
import types

import numpy as np

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


def _typed_float_function(name):
    func = getattr(math, name)
    rounding = name in ("floor", "ceil", "trunc")

    def typed(*args):
        dtype = math_result_dtype([_scalar_dtype(a) for a in args])
        values = [float(a) for a in args]
        if rounding:                 # numba returns a float here (and inf stays inf)
            result = getattr(np, name)(values[0])
        else:
            result = func(*values)   # Python's errors for bad domains, as before
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
        except OverflowError:    # a Python int beyond 64 bits: Python's arithmetic
            return op(a, b)

    return planned


# The greenlet engine calls these for every binary operator of a kernel, so each is written
# out with its operator inline: same-class operands NumPy types as numba does, or two Python
# numbers, cost one call and one operation.
_TEMPLATE = """
def typed_{name}(a, b):
    ca = a.__class__
    cb = b.__class__
    if (ca is cb and ca in _CLOSED) or (ca in _PYTHON and cb in _PYTHON):
        return a {symbol} b
    return _slow(a, b)
"""


def _typed(op_name, op, symbol):
    namespace = {"_CLOSED": _CLOSED, "_PYTHON": PYTHON_DTYPES, "_slow": _planned(op_name, op)}
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
