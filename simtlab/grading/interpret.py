"""Answers as data: what an answer cell defines, found by reading its syntax tree, never by
running it.

The grader scores a submission without executing a line of the student's Python. An answer
cell is parsed (``ast``), and each top-level statement must be one of:

- an import of ``numpy``, ``math``, ``numba`` (``cuda`` and its scalar types),
  ``simtlab.student`` or ``simtlab.kernels`` (device functions and constants only: a course
  *kernel* is never an answer);
- a ``@cuda.jit`` kernel or ``@cuda.jit(device=True)`` device function: it becomes an
  :class:`InterpretedKernel` that the emulator's vector engine interprets from its syntax tree
  (its code object is a stand-in whose body only raises, so nothing can execute the student's
  bytecode, and :func:`simtlab.emulator.launch.interpret_only` keeps the greenlet engine off);
- a plain ``def`` (a host helper: an index formula, a size): it becomes a
  :class:`HostFunction`, run by :class:`HostInterpreter` over a small subset of Python
  (arithmetic, comparisons, ``if``, bounded loops over ``range``, tuples, calls to ``min``,
  ``max``, ``len``, ``range``, ``int``, ``math.ceil`` and the like) on plain numbers and tuples;
- a constant: ``NAME = expression`` (the same subset; a course module's constant, such as
  ``P.RADIUS``, may be read);
- a docstring, ``pass``.

Anything else is :class:`NotInterpretable`, naming the line and the construct: that answer
needs manual grading and scores zero. A kernel reaches only names bound to allowed values
(``cuda``, ``math``, NumPy and numba scalar types, constants, device functions); attributes
only on ``cuda``, ``math``, NumPy's scalar types and arrays (``shape``, ``size``...).

:func:`static_problems` is the part that needs only the text (the grader runs it before it
starts anything); :func:`bind_answer` builds the objects (in the scoring process, where the
master's setup cells have run).
"""

from __future__ import annotations

import ast
import math
import numbers
import operator
import types

import numpy as np

from simtlab.emulator.vector.subset import constant_tuple

__all__ = ["ANSWER_LIMIT", "NotInterpretable", "static_problems", "bind_answer", "HostFunction",
           "InterpretedKernel", "HostInterpreter"]

#: the longest answer cell the grader reads (characters); a longer one needs manual grading
ANSWER_LIMIT = 64 * 1024
#: statements a host function may run per call, and nested calls between host functions
HOST_STEPS = 200_000
HOST_DEPTH = 64
#: the largest integer a host function may make (bits), and the longest tuple
INT_BITS = 256
TUPLE_LEN = 100_000


class NotInterpretable(Exception):
    """An answer outside what the grader interprets: ``line`` and ``construct`` say where and what."""

    def __init__(self, line: int, construct: str):
        self.line, self.construct = line, construct
        super().__init__(f"line {line}: {construct}")


class HostError(Exception):
    """A host function did something the interpreter refuses at run time (a huge number, a loop
    past its budget): the check fails, as it would for an exception in the student's code."""


def _refuse(node, construct: str):
    raise NotInterpretable(getattr(node, "lineno", 0), construct)


# ---------------------------------------------------------------------------
# what may be imported

#: numba's scalar types an answer may import (``from numba import float32``)
NUMBA_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
               "uint32", "uint64", "boolean")
_IMPORTS = {
    "numpy": None, "math": None, "numba": {"cuda", *NUMBA_TYPES}, "numba.cuda": None,
    "simtlab.student": {"NotWrittenYet", "hint"},
}
#: scalar types reachable as ``np.NAME`` in a kernel or as a cast
NUMPY_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
               "uint32", "uint64", "bool_", "intp")


def _import_allowed(module: str, names) -> bool:
    if module == "simtlab.kernels" or module.startswith("simtlab.kernels."):
        return True  # each name is checked when it is bound: device functions and constants only
    if module not in _IMPORTS:
        return False
    allowed = _IMPORTS[module]
    return names is None or allowed is None or all(n in allowed for n in names)


# ---------------------------------------------------------------------------
# the static part: the text alone

_KERNEL_STATEMENTS = (ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.For, ast.While, ast.Break,
                      ast.Continue, ast.Return, ast.Pass)
_KERNEL_EXPRESSIONS = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
                       ast.IfExp, ast.Call, ast.Attribute, ast.Subscript, ast.Tuple)
_HOST_STATEMENTS = _KERNEL_STATEMENTS
_HOST_EXPRESSIONS = _KERNEL_EXPRESSIONS + (ast.List, ast.Slice)
_CONTEXTS = (ast.Load, ast.Store, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context,
             ast.keyword)
#: attributes of a value computed in a kernel (an array, a dim3)
_VALUE_ATTRIBUTES = {"shape", "size", "ndim", "dtype", "x", "y", "z"}


def _decorator_kind(dec) -> str | None:
    """"kernel", "device", or None (not a decorator the grader knows)."""
    call = dec if isinstance(dec, ast.Call) else None
    target = call.func if call else dec
    chain = _chain(target)
    if chain not in (["cuda", "jit"], ["numba", "cuda", "jit"]):
        return None
    if call is None:
        return "kernel"
    if call.args and not (len(call.args) == 1 and isinstance(call.args[0], ast.Constant)
                          and isinstance(call.args[0].value, str)):
        return None  # a signature string is fine; nothing else is
    device = False
    for kw in call.keywords:
        if kw.arg == "device" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool):
            device = kw.value.value
        elif kw.arg in ("fastmath", "lineinfo", "debug", "opt") and isinstance(kw.value, ast.Constant):
            continue
        else:
            return None
    return "device" if device else "kernel"


def _chain(node) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything but names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _check_signature(fdef: ast.FunctionDef) -> None:
    a = fdef.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults or a.posonlyargs:
        _refuse(fdef, f"{fdef.name}() has default, keyword-only or * arguments")
    if fdef.returns is not None or any(x.annotation is not None for x in a.args):
        _refuse(fdef, f"{fdef.name}() has annotations")


def _check_body(fdef: ast.FunctionDef, statements, expressions, kernel: bool) -> None:
    for node in (n for stmt in fdef.body for n in ast.walk(stmt)):
        if isinstance(node, ast.stmt):
            if not isinstance(node, statements):
                _refuse(node, f"the statement {type(node).__name__} in {fdef.name}()")
            if isinstance(node, (ast.For, ast.While)) and node.orelse:
                _refuse(node, f"a loop with an else clause in {fdef.name}()")
            if isinstance(node, ast.For) and not (
                    isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
                    and node.iter.func.id == "range") and not constant_tuple(node.iter) \
                    and (kernel or not isinstance(node.iter, (ast.Name, ast.Tuple))):
                _refuse(node, f"a for loop over something other than range() in {fdef.name}()")
        elif isinstance(node, ast.expr):
            if not isinstance(node, expressions):
                _refuse(node, f"the expression {type(node).__name__} in {fdef.name}()")
            if isinstance(node, ast.Name) and node.id.startswith("__"):
                _refuse(node, f"the name {node.id}")
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                _refuse(node, f"the attribute .{node.attr}")
            if isinstance(node, ast.Attribute) and _chain(node) is None and node.attr not in _VALUE_ATTRIBUTES:
                _refuse(node, f"the attribute .{node.attr} of a computed value")
            if isinstance(node, ast.Call) and node.keywords:
                _refuse(node, f"keyword arguments in a call in {fdef.name}()")
            if isinstance(node, ast.Call) and _chain(node.func) is None:
                _refuse(node, f"a call through an expression in {fdef.name}()")
            if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool, str, type(None))):
                _refuse(node, f"the constant {node.value!r}")
            if kernel and isinstance(node, ast.Subscript) and (isinstance(node.slice, ast.Slice) or (
                    isinstance(node.slice, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.slice.elts))):
                _refuse(node, "a slice (array views)")
        elif not isinstance(node, _CONTEXTS):
            _refuse(node, f"{type(node).__name__} in {fdef.name}()")


def _check_expression(node) -> None:
    """A constant's expression (``NAME = ...`` at the top of a cell): the host subset."""
    holder = ast.FunctionDef(name="<constant>", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                             kw_defaults=[], defaults=[]), body=[ast.Return(value=node, lineno=node.lineno)],
                             decorator_list=[], lineno=node.lineno)
    _check_body(holder, _HOST_STATEMENTS, _HOST_EXPRESSIONS, kernel=False)


def _targets(target) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]
    _refuse(target, "an assignment to something other than names")


def parse_answer(source: str) -> ast.Module:
    """The answer's tree; raises :class:`NotInterpretable` (too long, not Python) or
    every construct outside the subset (the first one met)."""
    if not isinstance(source, str) or len(source) > ANSWER_LIMIT:
        raise NotInterpretable(1, f"an answer cell longer than {ANSWER_LIMIT // 1024} KiB")
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise NotInterpretable(e.lineno or 1, f"not Python ({e.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise NotInterpretable(1, "an expression nested too deeply") from None
    for stmt in tree.body:
        _check_statement(stmt)
    return tree


def _check_statement(stmt) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if not _import_allowed(alias.name, None) or alias.name.startswith("simtlab.kernels") and not alias.asname \
                    or alias.name == "numba.cuda" and not alias.asname:
                _refuse(stmt, f"import {alias.name}")
    elif isinstance(stmt, ast.ImportFrom):
        names = [a.name for a in stmt.names]
        if stmt.level or not stmt.module or "*" in names or not _import_allowed(stmt.module, names):
            _refuse(stmt, f"from {'.' * stmt.level}{stmt.module or ''} import {', '.join(names)}")
    elif isinstance(stmt, ast.FunctionDef):
        _check_signature(stmt)
        if len(stmt.decorator_list) > 1:
            _refuse(stmt, f"more than one decorator on {stmt.name}()")
        if stmt.decorator_list:
            kind = _decorator_kind(stmt.decorator_list[0])
            if kind is None:
                _refuse(stmt.decorator_list[0], f"the decorator of {stmt.name}()")
            _check_body(stmt, _KERNEL_STATEMENTS, _KERNEL_EXPRESSIONS, kernel=True)
        else:
            _check_body(stmt, _HOST_STATEMENTS, _HOST_EXPRESSIONS, kernel=False)
    elif isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            _targets(target)
        _check_expression(stmt.value)
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
        pass  # a docstring or a note
    elif isinstance(stmt, ast.Pass):
        pass
    else:
        _refuse(stmt, f"the statement {type(stmt).__name__} at the top of the cell")


def static_problems(source: str) -> NotInterpretable | None:
    """The first construct of an answer cell outside what the grader interprets, or None."""
    try:
        parse_answer(source)
    except NotInterpretable as e:
        return e
    return None


# ---------------------------------------------------------------------------
# host functions: a small interpreter over plain numbers and tuples

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor, ast.BitAnd: operator.and_}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
_MATH_FUNCS = {name: getattr(math, name) for name in (
    "ceil", "floor", "sqrt", "log", "log2", "log10", "exp", "gcd", "isqrt", "trunc", "fabs", "prod", "comb")}
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf}


def _number(v) -> bool:
    return isinstance(v, (bool, int, float)) or isinstance(v, (np.integer, np.floating, np.bool_))


def plain(value, depth: int = 0):
    """A value a host function may hold: a number, None, a string, or a tuple of those
    (a list becomes a tuple; NumPy scalars become Python numbers). Raises TypeError else."""
    if depth > 16:
        raise TypeError("a value nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (tuple, list)):
        if len(value) > TUPLE_LEN:
            raise HostError("a tuple too long")
        return tuple(plain(v, depth + 1) for v in value)
    if isinstance(value, np.ndarray) and value.size <= TUPLE_LEN:
        return plain(value.tolist(), depth + 1)
    raise TypeError(f"a host function works on numbers and tuples, not {type(value).__name__}")


def _checked(value):
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > INT_BITS:
        raise HostError(f"a number larger than 2**{INT_BITS}")
    if isinstance(value, tuple) and len(value) > TUPLE_LEN:
        raise HostError("a tuple too long")
    if isinstance(value, str) and len(value) > 10_000:
        raise HostError("a string too long")
    return value


def _binop(op, a, b):
    if op is operator.pow and _number(b) and abs(b) > 4096:
        raise HostError("a power too large")
    if op in (operator.lshift, operator.rshift) and _number(b) and b > INT_BITS:
        raise HostError("a shift too large")
    numbers_only = _number(a) and _number(b)
    tuples = isinstance(a, tuple) and isinstance(b, tuple) and op is operator.add
    if not (numbers_only or tuples):
        raise HostError(f"{type(a).__name__} {op.__name__} {type(b).__name__}")
    return _checked(op(a, b))


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class HostInterpreter:
    """Runs host functions (``def`` without a decorator) over plain values; one per call tree,
    with one step budget."""

    def __init__(self):
        self.steps = 0
        self.depth = 0

    def tick(self):
        self.steps += 1
        if self.steps > HOST_STEPS:
            raise HostError(f"more than {HOST_STEPS:,} steps")

    def call(self, fn: "HostFunction", args):
        if len(args) != len(fn.params):
            raise TypeError(f"{fn.__name__}() takes {len(fn.params)} arguments, {len(args)} given")
        self.depth += 1
        if self.depth > HOST_DEPTH:
            raise HostError("calls nested too deeply")
        try:
            scope = {name: plain(v) for name, v in zip(fn.params, args)}
            try:
                self.run_body(fn.fdef.body, scope, fn.env)
            except _Return as r:
                return r.value
            return None
        finally:
            self.depth -= 1

    def run_body(self, stmts, scope, env):
        for stmt in stmts:
            self.tick()
            self.run(stmt, scope, env)

    def run(self, s, scope, env):
        t = type(s)
        if t is ast.Assign:
            value = self.eval(s.value, scope, env)
            for target in s.targets:
                self.assign(target, value, scope)
        elif t is ast.AugAssign:
            if not isinstance(s.target, ast.Name):
                raise HostError("augmented assignment to something other than a name")
            old = self.name(s.target.id, scope, env)
            scope[s.target.id] = _binop(_BINOPS[type(s.op)], old, self.eval(s.value, scope, env))
        elif t is ast.Return:
            raise _Return(None if s.value is None else self.eval(s.value, scope, env))
        elif t is ast.If:
            self.run_body(s.body if self.truth(self.eval(s.test, scope, env)) else s.orelse, scope, env)
        elif t is ast.For:
            for value in self.iterate(s.iter, scope, env):
                self.assign(s.target, value, scope)
                try:
                    self.run_body(s.body, scope, env)
                except _Break:
                    break
                except _Continue:
                    continue
        elif t is ast.While:
            while self.truth(self.eval(s.test, scope, env)):
                self.tick()
                try:
                    self.run_body(s.body, scope, env)
                except _Break:
                    break
                except _Continue:
                    continue
        elif t is ast.Break:
            raise _Break()
        elif t is ast.Continue:
            raise _Continue()
        elif t is ast.Expr or t is ast.Pass:
            pass  # a docstring (checked statically); a call for its effect has none here
        else:
            raise HostError(f"statement {t.__name__}")

    def iterate(self, node, scope, env):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" \
                and node.func.id not in scope:
            args = [self.eval(a, scope, env) for a in node.args]
            if not all(isinstance(a, int) for a in args) or not 1 <= len(args) <= 3:
                raise HostError("range() of something other than 1 to 3 integers")
            return range(*args)
        value = self.eval(node, scope, env)
        if not isinstance(value, tuple):
            raise HostError("a for loop over something other than range() or a tuple")
        return value

    def assign(self, target, value, scope):
        if isinstance(target, ast.Name):
            scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise HostError("unpacking a value that is not a tuple of that length")
            for tg, v in zip(target.elts, value):
                self.assign(tg, v, scope)
        else:
            raise HostError(f"assignment to {type(target).__name__}")

    @staticmethod
    def truth(value) -> bool:
        if value is None or isinstance(value, (bool, int, float, str, tuple)):
            return bool(value)
        raise HostError(f"the truth of a {type(value).__name__}")

    def name(self, name, scope, env):
        if name in scope:
            return scope[name]
        if name in env:
            return env[name]
        if name in _HOST_BUILTINS:
            return _HOST_BUILTINS[name]
        raise NameError(f"name {name!r} is not defined")

    def eval(self, node, scope, env):
        t = type(node)
        if t is ast.Constant:
            return node.value
        if t is ast.Name:
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            return self.name(node.id, scope, env)
        if t is ast.BinOp:
            return _binop(_BINOPS[type(node.op)], self.eval(node.left, scope, env), self.eval(node.right, scope, env))
        if t is ast.UnaryOp:
            v = self.eval(node.operand, scope, env)
            if type(node.op) is ast.Not:
                return not self.truth(v)
            if not _number(v):
                raise HostError(f"a unary operator on a {type(v).__name__}")
            return _UNARY[type(node.op)](v)
        if t is ast.Compare:
            left = self.eval(node.left, scope, env)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node, scope, env)
                if type(op) not in _COMPARE:
                    raise HostError(f"the comparison {type(op).__name__}")
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if t is ast.BoolOp:
            is_and = type(node.op) is ast.And
            value = None
            for v in node.values:
                value = self.eval(v, scope, env)
                if self.truth(value) != is_and:
                    return value
            return value
        if t is ast.IfExp:
            return self.eval(node.body if self.truth(self.eval(node.test, scope, env)) else node.orelse, scope, env)
        if t in (ast.Tuple, ast.List):
            return _checked(tuple(self.eval(e, scope, env) for e in node.elts))
        if t is ast.Subscript:
            base = self.eval(node.value, scope, env)
            index = self.eval(node.slice, scope, env) if type(node.slice) is not ast.Slice else slice(
                *(None if x is None else self.eval(x, scope, env) for x in (node.slice.lower, node.slice.upper,
                                                                              node.slice.step)))
            if not isinstance(base, (tuple, str)) or not isinstance(index, (int, slice)):
                raise HostError("indexing something other than a tuple with an integer")
            return base[index]
        if t is ast.Attribute:
            return self.attribute(node, scope, env)
        if t is ast.Call:
            return self.call_node(node, scope, env)
        raise HostError(f"expression {t.__name__}")

    def attribute(self, node, scope, env):
        chain = _chain(node)
        if chain and chain[0] not in scope:
            root = env.get(chain[0])
            if root is math and len(chain) == 2 and chain[1] in _MATH_CONSTANTS:
                return _MATH_CONSTANTS[chain[1]]
            if isinstance(root, types.ModuleType) and len(chain) == 2 and _course_module(root):
                return course_constant(root, chain[1], node)
        base = self.eval(node.value, scope, env)
        raise HostError(f"the attribute .{node.attr} of a {type(base).__name__}")

    def call_node(self, node, scope, env):
        chain = _chain(node.func)
        args = [self.eval(a, scope, env) for a in node.args]
        if chain and len(chain) == 2 and chain[0] not in scope and env.get(chain[0]) is math \
                and chain[1] in _MATH_FUNCS:
            if not all(_number(a) or isinstance(a, tuple) for a in args):
                raise HostError(f"math.{chain[1]}() of something other than numbers")
            return _checked(_MATH_FUNCS[chain[1]](*args))
        if chain and len(chain) == 1:
            fn = self.name(chain[0], scope, env)
            if isinstance(fn, HostFunction):
                return fn.run(self, args)
            if any(fn is c for c in _CALLS.values()):
                return _checked(fn(*args))
        raise HostError(f"a call to {ast.unparse(node.func)}()")


def _h_len(x):
    if not isinstance(x, (tuple, str)):
        raise HostError("len() of something other than a tuple")
    return len(x)


def _h_numbers(name, python):
    def call(*args):
        values = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
        if not all(_number(v) for v in values):
            raise HostError(f"{name}() of something other than numbers")
        return python(values) if name == "sum" else python(*values) if name in ("min", "max") else python(*args)
    call.__name__ = name
    return call


def _h_range(*args):
    if not all(isinstance(a, int) for a in args) or not 1 <= len(args) <= 3:
        raise HostError("range() of something other than integers")
    r = range(*args)
    if len(r) > TUPLE_LEN:
        raise HostError("a range too long")
    return tuple(r)


def _h_convert(name, python):
    def call(x):
        if not (_number(x) or isinstance(x, str) and name != "bool" and len(x) < 100):
            raise HostError(f"{name}() of a {type(x).__name__}")
        return _checked(python(x))
    call.__name__ = name
    return call


def _h_divmod(a, b):
    return _binop(operator.floordiv, a, b), _binop(operator.mod, a, b)


def _h_round(x, n=None):
    if not _number(x) or not (n is None or isinstance(n, int)):
        raise HostError("round() of something other than numbers")
    return round(x) if n is None else round(x, n)


def _h_abs(x):
    if not _number(x):
        raise HostError("abs() of something other than a number")
    return abs(x)


_CALLS = {
    "min": _h_numbers("min", min), "max": _h_numbers("max", max), "sum": _h_numbers("sum", sum),
    "len": _h_len, "range": _h_range, "int": _h_convert("int", int), "float": _h_convert("float", float),
    "bool": _h_convert("bool", bool), "abs": _h_abs, "divmod": _h_divmod, "round": _h_round,
    "tuple": lambda x=(): plain(x) if isinstance(x, tuple) else _fail("tuple() of something other than a tuple"),
}
_HOST_BUILTINS = dict(_CALLS)


def _fail(message):
    raise HostError(message)


class HostFunction:
    """A student's plain ``def``, called like the function (``f(3, 4)``) and run by
    :class:`HostInterpreter`: its arguments become plain values first (numbers, tuples)."""

    def __init__(self, fdef: ast.FunctionDef, env: dict):
        self.fdef = fdef
        self.env = env            # the names it may read: its cell's and the setup's, vetted
        self.params = [a.arg for a in fdef.args.args]
        self.__name__ = self.__qualname__ = fdef.name

    def run(self, interp: HostInterpreter, args):
        return interp.call(self, args)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{self.__name__}() takes no keyword arguments here")
        return plain(self.run(HostInterpreter(), args))  # only data leaves the interpreter

    def __repr__(self):
        return f"<interpreted function {self.__name__}>"


# ---------------------------------------------------------------------------
# kernels: a stand-in function for the vector engine, the student's tree for its source


class _InterpretedOnly(Exception):
    pass


def _never_run(*args, **kwargs):  # pragma: no cover - what the stand-in's body would reach
    raise _InterpretedOnly("an interpreted kernel's Python never runs")


class InterpretedKernel:
    """A student's ``@cuda.jit`` function as the emulator needs it: ``py_func`` is a stand-in
    whose body only raises, named and numbered like the student's ``def``, whose source (the
    student's text, registered with :func:`simtlab.emulator.function_ast.register_source`) is
    what the vector engine interprets. ``kernel[grid, block](args)`` launches it on the emulator."""

    simtlab_interpreted = True   # simtlab.emulator.binding takes it for a cuda dispatcher

    def __init__(self, py_func, device: bool):
        self.py_func = py_func
        self.device = device
        self.targetoptions = {"device": device}
        self.__name__ = self.__qualname__ = py_func.__name__

    def __getitem__(self, config):
        from simtlab import emulate

        grid, block = config[0], config[1]
        shared = config[3] if len(config) > 3 else 0

        def launch(*args):
            emulate(self, grid, block, *args, shared_bytes=shared, trace=False)
        return launch

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.__name__} is a kernel: launch it with {self.__name__}[blocks, threads](...)")

    def __repr__(self):
        return f"<interpreted {'device function' if self.device else 'kernel'} {self.__name__}>"


def _stand_in(fdef: ast.FunctionDef, filename: str, first: int) -> types.FunctionType:
    """A function named and numbered like ``fdef`` whose body only raises; its code object
    lists the names ``fdef`` reads (the emulator binds a kernel's globals by them)."""
    params = [a.arg for a in fdef.args.args]
    text = f"def {fdef.name}({', '.join(params)}):\n    raise _InterpretedOnly()\n"
    module = compile(text, filename, "exec")
    code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    names = []
    for node in ast.walk(fdef):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and name not in names and name not in code.co_names:
            names.append(name)
    code = code.replace(co_names=code.co_names + tuple(names), co_firstlineno=first)
    return types.FunctionType(code, {"_InterpretedOnly": _InterpretedOnly}, fdef.name)


# ---------------------------------------------------------------------------
# binding a cell: the objects its names stand for


def _course_module(module) -> bool:
    return isinstance(module, types.ModuleType) and (
        module.__name__ == "simtlab.kernels" or module.__name__.startswith("simtlab.kernels."))


def _is_data(value, depth=0) -> bool:
    if depth > 4:
        return False
    if value is None or isinstance(value, (bool, int, float, str)) or isinstance(value, (np.integer, np.floating)):
        return True
    return isinstance(value, tuple) and len(value) <= 64 and all(_is_data(v, depth + 1) for v in value)


def _is_device_function(value) -> bool:
    from simtlab.emulator.binding import _is_cuda_dispatcher

    return _is_cuda_dispatcher(value) and bool((getattr(value, "targetoptions", None) or {}).get("device"))


def course_constant(module, name: str, node):
    """``module.name`` of a course module (``P.RADIUS``): a constant, or refused."""
    if name.startswith("_") or name not in vars(module):
        _refuse(node, f"{module.__name__.rsplit('.', 1)[-1]}.{name}")
    value = vars(module)[name]
    if not _is_data(value):
        _refuse(node, f"{module.__name__}.{name} is not a constant (a course kernel is not an answer)")
    return plain(value)


def _is_dtype(value) -> bool:
    from simtlab.emulator.vector.interpreter import _as_dtype

    try:
        return _as_dtype(value) is not None
    except Exception:  # noqa: BLE001
        return False


def _kernel_value_ok(value) -> bool:
    """What a name a kernel reads may stand for."""
    import numba
    import numba.cuda

    if value is math or value is numba.cuda or value is np or value is numba:
        return True
    if _is_data(value) or _is_device_function(value):
        return True
    return _is_dtype(value)


def _kernel_globals(fdef: ast.FunctionDef, env: dict) -> dict:
    """The globals a kernel's stand-in gets: every free name it reads, each bound to a value
    a kernel may reach (``cuda``, ``math``, scalar types, constants, device functions)."""
    import numba
    import numba.cuda

    local = {a.arg for a in fdef.args.args}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    found = {"_InterpretedOnly": _InterpretedOnly}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Attribute):
            chain = _chain(node)
            if chain and chain[0] not in local and chain[0] in env:
                root = env[chain[0]]
                if root is np and (len(chain) != 2 or chain[1] not in NUMPY_TYPES):
                    _refuse(node, f"np.{'.'.join(chain[1:])} in a kernel")
                if root is numba and not (len(chain) == 2 and chain[1] in NUMBA_TYPES):
                    _refuse(node, f"numba.{'.'.join(chain[1:])} in a kernel")
                if isinstance(root, types.ModuleType) and root not in (np, numba, numba.cuda, math):
                    _refuse(node, f"the module {chain[0]} in a kernel (only cuda, math and scalar types)")
        if not isinstance(node, ast.Name) or node.id in local:
            continue
        if node.id in env:
            value = env[node.id]
            if not _kernel_value_ok(value):
                kind = "a course kernel" if hasattr(value, "py_func") else type(value).__name__
                _refuse(node, f"{node.id} ({kind}) in a kernel")
            found[node.id] = value
        elif node.id not in ("range", "min", "max", "abs", "int", "float", "len", "True", "False"):
            _refuse(node, f"the name {node.id} is not defined")
    return found


def _import_value(stmt, alias, node):
    import importlib

    module = stmt.module if isinstance(stmt, ast.ImportFrom) else alias.name
    mod = importlib.import_module(module)  # allowlisted modules only (checked statically)
    if isinstance(stmt, ast.Import):
        if alias.asname is None:
            return alias.name.split(".")[0], importlib.import_module(alias.name.split(".")[0])
        return alias.asname, mod
    name = alias.name
    if _course_module(mod):
        value = vars(mod).get(name)
        if isinstance(value, types.ModuleType) and _course_module(value):
            pass
        elif not (_is_data(value) or _is_device_function(value)):
            _refuse(node, f"from {module} import {name}: "
                          + ("a course kernel is not an answer" if hasattr(value, "py_func") else "not a constant"))
    else:
        value = getattr(mod, name)
    return alias.asname or name, value


def bind_answer(source: str, cell_name: str, env: dict) -> dict:
    """The names an answer cell defines, as objects the checks can use: kernels
    (:class:`InterpretedKernel`), host functions (:class:`HostFunction`), constants, imports.
    ``env``: the names the cell may read (the master's setup cells and earlier answers).
    Nothing of the cell is executed. Raises :class:`NotInterpretable`."""
    import linecache

    from simtlab.emulator.function_ast import register_source
    from simtlab.emulator import vector

    tree = parse_answer(source)
    lines = source.splitlines(True)
    linecache.cache[cell_name] = (len(source), None, lines, cell_name)  # run.source() reads kernel lines
    bound: dict = {}
    scope = dict(env)   # what later statements of the cell see
    kernels = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                name, value = _import_value(stmt, alias, stmt)
                bound[name] = scope[name] = value
        elif isinstance(stmt, ast.Assign):
            try:
                value = HostInterpreter().eval(stmt.value, {}, scope)
                if not _is_data(value):   # a constant is data: never a kernel or a module of the course
                    raise TypeError(f"a {type(value).__name__}, not a number or a tuple")
            except (HostError, NameError, TypeError, ValueError, ZeroDivisionError, OverflowError,
                    IndexError) as e:
                raise NotInterpretable(stmt.lineno, f"the value of this constant: {e}") from None
            for target in stmt.targets:
                names = _targets(target)
                values = [value] if len(names) == 1 and isinstance(target, ast.Name) else value
                if not isinstance(values, (tuple, list)) or len(values) != len(names):
                    _refuse(stmt, "unpacking a value that is not a tuple of that length")
                for name, v in zip(names, values):
                    bound[name] = scope[name] = v
        elif isinstance(stmt, ast.FunctionDef):
            if stmt.decorator_list:
                first = stmt.decorator_list[0].lineno
                func = _stand_in(stmt, cell_name, first)
                register_source(func.__code__, lines[first - 1:stmt.end_lineno], first)
                kernel = InterpretedKernel(func, _decorator_kind(stmt.decorator_list[0]) == "device")
                kernels.append((stmt, kernel))
                bound[stmt.name] = scope[stmt.name] = kernel
            else:
                bound[stmt.name] = scope[stmt.name] = HostFunction(stmt, scope)
    for fdef, kernel in kernels:  # after every def: a kernel may call a device function defined below it
        kernel.py_func.__globals__.update(_kernel_globals(fdef, scope))
    for fdef, kernel in kernels:
        for name, value in kernel.py_func.__globals__.items():
            if isinstance(value, InterpretedKernel) and not value.device:
                _refuse(fdef, f"{fdef.name}() calls the kernel {name} (only device functions)")
        why = vector.why_not(kernel.py_func)
        if why is not None:
            raise NotInterpretable(fdef.lineno, why)
    return bound
