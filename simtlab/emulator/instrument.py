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
import copy
import types

from ..simt import make_site
from .function_ast import parse_function
from .contraction import ADD_SUB, is_product, product_temporaries
from .numba_types import TYPED_BINOPS, TYPED_FUSED, TYPED_UNARY

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
    nothing but where an int32 sum would wrap) that cannot differ from numba's wrapping
    int64 arithmetic (``_exact_as_python``). ``-x``, ``+x`` and ``~x`` of anything but a
    literal become ``__simt_USub__(x)`` (numba widens a narrow integer first).

    A sum the GPU computes as one fused multiply-add (contraction.py) becomes one call:
    ``a * b + c`` is ``__simt_MulAdd__(a, b, c)``, ``c - a * b`` ``__simt_SubMul__(c, a, b)``,
    ``acc += a * b`` ``acc = __simt_AddMul__(acc, a, b)`` (``o[i] += a * b`` too, when ``i``
    reads no memory); a product temporary ``t = a * b`` read once in such a sum keeps its
    operands (``t = (a, b)``) for it."""

    def __init__(self, temporaries=frozenset()):
        self._index_depth = 0
        self._temporaries = temporaries

    def visit_Subscript(self, node):
        node.value = self.visit(node.value)
        self._index_depth += 1
        node.slice = self.visit(node.slice)
        self._index_depth -= 1
        return node

    def visit_BinOp(self, node):
        if self._index_depth and _exact_as_python(node):
            return node
        fused = self._fused_sum(node)
        if fused is not None:
            return fused
        self.generic_visit(node)
        name = node.op.__class__.__name__
        if name not in TYPED_BINOPS or (self._index_depth and _exact_as_python(node)):
            return node
        call = ast.Call(func=ast.Name(_binop_global(name), ast.Load()),
                        args=[node.left, node.right], keywords=[])
        return ast.copy_location(call, node)

    def _product_operands(self, node):
        """``(x, y)`` for a product operand (``a * b``, ``-(a * b)`` or a product temporary),
        else None."""
        if isinstance(node, ast.Name) and node.id in self._temporaries:
            return tuple(ast.Subscript(ast.Name(node.id, ast.Load()), ast.Constant(k), ast.Load())
                         for k in (0, 1))
        if not is_product(node):
            return None
        if isinstance(node, ast.UnaryOp):          # -(a * b) == (-a) * b exactly
            x = self.visit_UnaryOp(ast.UnaryOp(ast.USub(), node.operand.left))
            return x, self.visit(node.operand.right)
        return self.visit(node.left), self.visit(node.right)

    def _fused_sum(self, node):
        if not isinstance(node.op, ADD_SUB):
            return None
        sub = isinstance(node.op, ast.Sub)
        product = self._product_operands(node.left)
        if product is not None:                    # the left product is the fused one
            name, args = ("MulSub" if sub else "MulAdd"), [*product, self.visit(node.right)]
        else:
            product = self._product_operands(node.right)
            if product is None:
                return None
            name, args = ("SubMul" if sub else "AddMul"), [self.visit(node.left), *product]
        call = ast.Call(func=ast.Name(_binop_global(name), ast.Load()), args=args, keywords=[])
        return ast.copy_location(call, node)

    def visit_Assign(self, node):
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, ast.Name) and \
                target.id in self._temporaries and isinstance(node.value, ast.BinOp):
            node.value = ast.copy_location(ast.Tuple(
                [self.visit(node.value.left), self.visit(node.value.right)], ast.Load()),
                node.value)
            return node
        self.generic_visit(node)
        return node

    def _fused_aug_assign(self, node):
        """``acc += a * b`` (or ``-=``) as one fused call, or None."""
        if not isinstance(node.op, ADD_SUB):
            return None
        target = node.target
        if isinstance(target, ast.Subscript) and not (
                isinstance(target.value, ast.Name) and _reads_no_memory(target.slice)):
            return None
        if not isinstance(target, (ast.Name, ast.Subscript)):
            return None
        product = self._product_operands(node.value)
        if product is None:
            return None
        current = copy.deepcopy(target)
        current.ctx = ast.Load()
        if isinstance(current, ast.Subscript):
            current = self.visit(current)
        name = "SubMul" if isinstance(node.op, ast.Sub) else "AddMul"
        call = ast.Call(func=ast.Name(_binop_global(name), ast.Load()),
                        args=[current, *product], keywords=[])
        if isinstance(target, ast.Subscript):
            target = self.visit(target)
        assign = ast.Assign(targets=[target], value=ast.copy_location(call, node))
        return ast.copy_location(assign, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        name = node.op.__class__.__name__
        if name not in TYPED_UNARY or isinstance(node.operand, ast.Constant) or (
                self._index_depth and _is_leaf(node.operand)):
            return node
        call = ast.Call(func=ast.Name(_binop_global(name), ast.Load()), args=[node.operand],
                        keywords=[])
        return ast.copy_location(call, node)

    def visit_AugAssign(self, node):
        fused = self._fused_aug_assign(node)
        if fused is not None:
            return fused
        self.generic_visit(node)
        name = node.op.__class__.__name__
        if not isinstance(node.target, ast.Name) or name not in TYPED_BINOPS:
            return node
        call = ast.Call(func=ast.Name(_binop_global(name), ast.Load()),
                        args=[ast.Name(node.target.id, ast.Load()), node.value], keywords=[])
        assign = ast.Assign(targets=[ast.Name(node.target.id, ast.Store())],
                            value=ast.copy_location(call, node))
        return ast.copy_location(assign, node)


# Wrapping at 64 bits commutes with these (the low 64 bits of a sum, product, power, shift to
# the left or bitwise operation depend only on the operands' low 64 bits): Python's unbounded
# result of them differs from numba's int64 only by a multiple of 2**64, and an index that far
# out is out of bounds either way. ``//``, ``%`` and ``>>`` of such a result would differ.
_WRAP_COMMUTES = frozenset((ast.Add, ast.Sub, ast.Mult, ast.Pow, ast.LShift, ast.BitAnd,
                            ast.BitOr, ast.BitXor))
_SMALL_INT = 1 << 31          # larger literals (hash constants) are where int64 arithmetic wraps


def _is_leaf(node) -> bool:
    """A name, an attribute (``cuda.threadIdx.x``) or a small int literal."""
    if isinstance(node, ast.Constant):
        return node.value.__class__ is int and abs(node.value) < _SMALL_INT
    if isinstance(node, ast.Attribute):
        return _is_leaf(node.value) or isinstance(node.value, ast.Name)
    return isinstance(node, ast.Name)


def _exact_as_python(node) -> bool:
    """Is ``node`` index arithmetic whose Python result numba's int64 arithmetic gives too:
    names and small int literals, under ``// % >>`` only directly (``t % 32``, not
    ``(t + 1) % 32``, whose sum may pass 2**63 before the remainder)?"""
    if _is_leaf(node):
        return True
    if not isinstance(node, ast.BinOp):
        return False
    if node.op.__class__ in _WRAP_COMMUTES:
        return _exact_as_python(node.left) and _exact_as_python(node.right)
    return _no_wrapping_op(node.left) and _no_wrapping_op(node.right)


def _no_wrapping_op(node) -> bool:
    """Leaves combined by ``// % >>`` only: the result stays within its operands' range."""
    if _is_leaf(node):
        return True
    return isinstance(node, ast.BinOp) and node.op.__class__ not in _WRAP_COMMUTES and \
        _no_wrapping_op(node.left) and _no_wrapping_op(node.right)


def _reads_no_memory(node) -> bool:
    """An index made of names, attributes, constants and arithmetic (evaluating it twice
    reads no array and calls nothing)."""
    return all(isinstance(n, (ast.Name, ast.Attribute, ast.Constant, ast.BinOp, ast.UnaryOp,
                              ast.Tuple, ast.expr_context, ast.operator, ast.unaryop))
               for n in ast.walk(node))


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
    _TypedArithmetic(product_temporaries(fdef)).visit(fdef)
    for name, typed in (*TYPED_BINOPS.items(), *TYPED_UNARY.items(), *TYPED_FUSED.items()):
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
