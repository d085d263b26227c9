"""Is a kernel within the vector engine's subset? A static look at its syntax tree (and at
the device functions it calls), so that ``engine="auto"`` can say why it chose greenlet."""

from __future__ import annotations

import ast
import math

from ..binding import _is_cuda_dispatcher, _is_numba_cuda_module
from ..function_ast import parse_function
from . import cuda_calls

_STATEMENTS = (ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.For, ast.While, ast.Break,
               ast.Continue, ast.Return, ast.Pass)
_EXPRESSIONS = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
                ast.IfExp, ast.Call, ast.Attribute, ast.Subscript, ast.Tuple, ast.Load,
                ast.Store, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context)
_BUILTINS = {"range", "min", "max", "abs", "int", "float", "len", "True", "False"}
_MATH = {f.__name__ for f in cuda_calls.MATH_FUNCS}


_VERDICTS: dict = {}


def constant_tuple(node) -> bool:
    """``(16, 8, 4, 2, 1)``: a literal tuple of numbers, which a for loop may walk (numba
    unrolls it)."""
    return isinstance(node, ast.Tuple) and bool(node.elts) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
        for e in node.elts)


def why_not(func) -> str | None:
    """None when the vector engine can run ``func``; else the reason, naming the construct.
    Remembered per function: a device function redefined later (a notebook cell run again)
    is met by the interpreter, which hands anything outside the subset to the greenlet engine."""
    key = (func.__code__, id(func.__globals__))
    if key not in _VERDICTS:
        if len(_VERDICTS) > 4096:
            _VERDICTS.clear()
        _VERDICTS[key] = _why_not(func)
    return _VERDICTS[key]


def _why_not(func, _path=()) -> str | None:
    if func.__code__ in _path:
        return f"{func.__name__}() calls itself (recursion)"
    seen = _path + (func.__code__,)
    parsed = parse_function(func, shared=True)
    if parsed is None:
        return f"the source of {func.__name__}() cannot be read"
    _, first, tree = parsed
    fdef = tree.body[0]

    def at(node):
        return f"{func.__name__}() line {first + node.lineno - 1}"

    scope = dict(func.__globals__)
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                pass
    if fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs or fdef.args.defaults:
        return f"{func.__name__}() has default, keyword-only or * arguments"
    for node in (n for stmt in fdef.body for n in ast.walk(stmt)):     # not the decorators
        if isinstance(node, ast.stmt) and not isinstance(node, _STATEMENTS):
            return f"{at(node)}: the statement {type(node).__name__} is outside the subset"
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            return f"{at(node)}: a loop with an else clause"
        if isinstance(node, ast.For):
            it = node.iter
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                    and it.func.id == "range") and not constant_tuple(it):
                return f"{at(node)}: a for loop over something other than range()"
        if isinstance(node, ast.expr) and not isinstance(node, _EXPRESSIONS):
            return f"{at(node)}: the expression {type(node).__name__} is outside the subset"
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            return f"{at(node)}: a slice (array views)"
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and \
                any(isinstance(e, ast.Slice) for e in node.slice.elts):
            return f"{at(node)}: a slice (array views)"
        if isinstance(node, ast.Call):
            reason = _check_call(node, scope, seen, at)
            if reason:
                return reason
    return None


def _check_call(node, scope, seen, at):
    f = node.func
    if node.keywords:
        return f"{at(node)}: keyword arguments"
    if isinstance(f, ast.Name):
        if f.id in _BUILTINS and f.id not in scope:
            return None
        value = scope.get(f.id)
        if value is None:
            return f"{at(node)}: {f.id}() is not known to the vector engine"
        if _is_cuda_dispatcher(value):
            return _why_not(value.py_func, seen)
        if value in cuda_calls.MATH_FUNCS:
            return None
        from .interpreter import _as_dtype
        if _as_dtype(value) is not None:
            return None
        return f"{at(node)}: a call to {f.id}()"
    chain = []
    while isinstance(f, ast.Attribute):
        chain.append(f.attr)
        f = f.value
    if not isinstance(f, ast.Name):
        return f"{at(node)}: a call through an expression"
    chain.reverse()
    root = scope.get(f.id)
    if _is_numba_cuda_module(root) or (getattr(root, "__name__", "") == "numba"
                                       and chain[:1] == ["cuda"] and (chain := chain[1:])):
        if len(chain) == 1 and chain[0] in cuda_calls.SUPPORTED:
            return None
        if len(chain) == 2 and chain[1] in cuda_calls.SUPPORTED_NAMESPACED.get(chain[0], ()):
            return None
        return f"{at(node)}: cuda.{'.'.join(chain)}() is outside the vector engine's subset"
    if root is math and len(chain) == 1 and chain[0] in _MATH:
        return None
    return f"{at(node)}: a call to {f.id}.{'.'.join(chain)}()"
