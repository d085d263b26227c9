"""Line tracing by rewriting the kernel's source: one cheap call per executed statement.

``sys.settrace`` calls a Python function for every line and every function call, which makes a
traced kernel several times slower. Instead, the emulator re-compiles the kernel's source with
a call ``__simt_line__(site)`` in front of every statement (and at the top of every loop
iteration, where the loop header runs again). ``__simt_line__`` is a global of the rebound
kernel that the scheduler points at the running thread's ``list.append`` each time it
switches threads, so recording a line costs one C call.

The result counts lines as ``sys.settrace`` does: a loop header once per iteration plus once
for the exit test, an ``if`` line once, each statement of the branch taken once.

Every loop body also starts with ``__simt_loop__()``, traced or not: the running thread's
iteration counter (see ``Scheduler``), which stops a runaway kernel after the same number of
iterations however fast the machine runs (``launch_spec.iteration_limit``).
"""

from __future__ import annotations

import ast
import types

from ..simt import make_site
from .function_ast import parse_function
from .numba_types import TYPED_BINOPS

HOOK = "__simt_line__"
LOOP_HOOK = "__simt_loop__"


class _Instrument(ast.NodeTransformer):
    def __init__(self, code_index: int):
        self.code_index = code_index

    def _mark(self, lineno):
        call = ast.Call(func=ast.Name(HOOK, ast.Load()),
                        args=[ast.Constant(make_site(self.code_index, lineno))], keywords=[])
        return ast.Expr(call)

    def _body(self, stmts):
        out = []
        for stmt in stmts:
            stmt = self.visit(stmt)
            out.append(self._mark(stmt.lineno))
            out.append(stmt)
        return out

    def visit_FunctionDef(self, node):
        node.body = self._body(node.body)
        node.decorator_list = []
        return node

    def visit_If(self, node):
        node.test = self.visit(node.test)
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse)
        return node

    def _loop(self, node):
        node.body = [self._mark(node.lineno)] + self._body(node.body)
        node.orelse = self._body(node.orelse)
        return node

    visit_For = visit_While = _loop

    def visit_With(self, node):
        node.body = self._body(node.body)
        return node

    def visit_Try(self, node):
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse)
        node.finalbody = self._body(node.finalbody)
        for h in node.handlers:
            h.body = self._body(h.body)
        return node


class _CountLoopIterations(ast.NodeTransformer):
    """``__simt_loop__()`` first in every loop body: one call per iteration of the thread,
    located at the loop's header (a runaway error points at the loop that ran away)."""

    def _loop(self, node):
        self.generic_visit(node)              # nested loops count their own iterations
        call = ast.Call(func=ast.Name(LOOP_HOOK, ast.Load()), args=[], keywords=[])
        node.body.insert(0, ast.copy_location(ast.Expr(call), node))
        return node

    visit_For = visit_While = _loop


class _TypedArithmetic(ast.NodeTransformer):
    """``a + b`` becomes ``__simt_Add__(a, b)`` (and ``x += b`` ``x = __simt_Add__(x, b)``):
    arithmetic typed as numba types it (numba_types.TYPED_BINOPS), where NumPy's scalar rules
    would keep ``float32 * 2`` float32 or ``int32 + int32`` int32. Left alone, to keep the
    greenlet engine's hottest code one Python operation: an augmented store into an array
    element (the store converts to the array's type either way), and index arithmetic of
    names and int literals (``a[row * n + k]``: an index is an int, whose type changes
    nothing but where an int32 sum would wrap)."""

    def __init__(self):
        self._index_depth = 0

    def visit_Subscript(self, node):
        node.value = self.visit(node.value)
        self._index_depth += 1
        node.slice = self.visit(node.slice)
        self._index_depth -= 1
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        name = node.op.__class__.__name__
        if name not in TYPED_BINOPS or (self._index_depth and _names_and_ints(node)):
            return node
        call = ast.Call(func=ast.Name(_binop_global(name), ast.Load()),
                        args=[node.left, node.right], keywords=[])
        return ast.copy_location(call, node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        name = node.op.__class__.__name__
        if not isinstance(node.target, ast.Name) or name not in TYPED_BINOPS:
            return node
        call = ast.Call(func=ast.Name(_binop_global(name), ast.Load()),
                        args=[ast.Name(node.target.id, ast.Load()), node.value], keywords=[])
        assign = ast.Assign(targets=[ast.Name(node.target.id, ast.Store())],
                            value=ast.copy_location(call, node))
        return ast.copy_location(assign, node)


def _names_and_ints(node) -> bool:
    """Is ``node`` arithmetic of names, attributes (``cuda.threadIdx.x``) and int literals?"""
    if isinstance(node, ast.BinOp):
        return _names_and_ints(node.left) and _names_and_ints(node.right)
    if isinstance(node, ast.Constant):
        return node.value.__class__ is int
    if isinstance(node, ast.Attribute):
        return _names_and_ints(node.value) or isinstance(node.value, ast.Name)
    return isinstance(node, ast.Name)


def _binop_global(name):
    return f"__simt_{name}__"


def instrument(func: types.FunctionType, code_index: int, new_globals: dict,
               closure_values: tuple | None, *, lines: bool = True):
    """A copy of ``func`` with numba-typed arithmetic and counted loop iterations that
    (``lines``) records every executed statement, or None without source."""
    parsed = parse_function(func)
    if parsed is None:
        return None
    _, first, tree = parsed
    fdef = tree.body[0]
    ast.increment_lineno(tree, first - 1)
    fdef.decorator_list = []             # @cuda.jit: the function itself is wanted
    if lines:
        _Instrument(code_index).visit(fdef)
    _CountLoopIterations().visit(fdef)
    _TypedArithmetic().visit(fdef)
    for name, typed in TYPED_BINOPS.items():
        new_globals[_binop_global(name)] = typed
    freevars = func.__code__.co_freevars
    if freevars:
        # a closure: build it inside a factory whose parameters are the free variables
        fields = dict(
            name="__simt_factory__",
            args=ast.arguments(posonlyargs=[], args=[ast.arg(v) for v in freevars],
                               kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[],
            returns=None, type_comment=None)
        if "type_params" in ast.FunctionDef._fields:     # Python 3.12+
            fields["type_params"] = []
        tree.body = [ast.FunctionDef(**fields)]
    ast.fix_missing_locations(tree)
    code = compile(tree, func.__code__.co_filename, "exec")
    namespace: dict = {}
    exec(code, new_globals, namespace)
    if freevars:
        made = namespace["__simt_factory__"](*closure_values)
    else:
        made = namespace[fdef.name]
    made.__defaults__ = func.__defaults__
    made.__kwdefaults__ = func.__kwdefaults__
    return made
