"""What numba would refuse to compile, found in the kernel's source before it runs.

The emulator runs a kernel as Python, so it would happily accept code that a real GPU never
gets to run because numba rejects it at compile time. The student would then learn that the
kernel "works" and meet the error only on a GPU. The rules checked here, each one a mistake
students make:

* ``cuda.shared.array(shape, dtype)`` and ``cuda.local.array(shape, dtype)`` need a shape numba
  can read as a constant when it compiles: an integer literal, a module-level constant, a
  local name assigned only from those, or a tuple of them. Numba does not fold arithmetic
  (``TILE + 1`` and ``TILE * 2`` are refused: name them at module level instead), does not
  read another module's attribute as a constant (``R.BLOCK``: import ``BLOCK``), and values
  known only at launch (a kernel argument, ``x.shape``, ``len(x)``, ``cuda.blockDim.x``,
  ``cuda.warpsize``) cannot size an array at all.
* A kernel returns nothing (a bare ``return`` to leave early is fine; device functions may
  return values).
* Nothing allocates: no ``np.zeros``/``np.empty``/``np.array``/``np.arange``/``*_like``, no
  ``x.copy()``, no Python list, dict or set (literals or comprehensions). Tuples are fine.
* ``print`` cannot format strings on the GPU: no f-strings.
* Some NumPy math does not compile in a kernel (``np.sqrt``, ``np.exp``, ``np.abs``,
  ``np.floor``, ``np.max``, ``np.dot``): the ``math`` module and built-ins do.

``tools/probe_numba_refusals.py`` asked numba-cuda 0.30 on
an H100 what it accepts, and ``tests/test_static_checks_gpu.py`` compiles every example of
``tests/static_check_cases.py`` to keep these rules and numba's in step.
"""

from __future__ import annotations

import ast
import types

import numpy as np

from .function_ast import parse_function

from .errors import CompileError

#: ``cuda.<name>`` values that exist only on the running GPU
_LAUNCH_TIME_CUDA = {"threadIdx", "blockIdx", "blockDim", "gridDim", "laneid", "warpsize", "grid",
                     "gridsize"}
#: attributes of an array that come with the argument at launch
_LAUNCH_TIME_ATTRS = {"shape", "size", "ndim", "strides"}


#: NumPy functions that allocate a new array (none exists on the GPU: there is no allocator)
_NUMPY_ALLOCATORS = {"zeros", "ones", "empty", "full", "array", "asarray", "arange", "linspace",
                     "zeros_like", "ones_like", "empty_like", "full_like", "copy", "concatenate",
                     "stack", "vstack", "hstack", "tile", "repeat", "eye", "identity"}

#: NumPy calls numba-cuda 0.30 refuses inside a kernel although NumPy has them, each with what
#: compiles instead (probed on the H100: tools/probe_numba_refusals.py; np.log, np.tanh,
#: np.maximum, np.minimum, np.isnan, np.sum and the np.float32(x) casts compile)
_NUMPY_REFUSED = {
    "sqrt": "math.sqrt(x)", "exp": "math.exp(x)", "abs": "the built-in abs(x)",
    "absolute": "the built-in abs(x)", "floor": "math.floor(x)",
    "max": "a loop with the built-in max(m, a[i])", "amax": "a loop with the built-in max(m, a[i])",
    "min": "a loop with the built-in min(m, a[i])", "amin": "a loop with the built-in min(m, a[i])",
    "dot": "a loop that adds a[i] * b[i]",
}

_ALLOCATION_FIX = ("for per-thread scratch use cuda.local.array(SIZE, float32) with a constant "
                   "SIZE; for data the block shares, cuda.shared.array; for results, an output "
                   "array allocated before the launch and passed to the kernel")


#: (code object, kernel) -> the CompileError found, or None: a widget may launch the same
#: kernel hundreds of times, and its source is parsed once
_VERDICTS: dict = {}


def check_source(func: types.FunctionType, *, kernel: bool) -> None:
    """Raise ``CompileError`` at the first construct numba would refuse in ``func`` (the kernel
    itself when ``kernel``, else a device function it calls)."""
    key = (func.__code__, kernel)
    if key not in _VERDICTS:
        if len(_VERDICTS) > 4096:
            _VERDICTS.clear()
        try:
            _check_source(func, kernel)
            _VERDICTS[key] = None
        except CompileError as err:
            _VERDICTS[key] = err
    err = _VERDICTS[key]
    if err is not None:
        raise CompileError(err.problem, line=err.line, source=err.source, function=err.function,
                           fix=err.fix)


def _check_source(func: types.FunctionType, kernel: bool) -> None:
    parsed = parse_function(func, shared=True)     # read only: the tree shared with others
    if parsed is None:
        return                                    # no source (exec'd code): nothing to check
    lines, first, tree = parsed
    fdef = tree.body[0]

    def refuse(node, problem, fix):
        raise CompileError(problem, line=first + node.lineno - 1, source=lines[node.lineno - 1],
                           function=func.__name__, fix=fix)

    _check_array_shapes(fdef, refuse)
    for node in _walk_body(fdef):
        if kernel and isinstance(node, ast.Return) and node.value is not None \
                and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            refuse(node, f"a kernel cannot return a value (`return {ast.unparse(node.value)}`)",
                   "write the result into an output array (out[i] = value); a bare `return` "
                   "to leave the kernel early is fine, and device functions may return values")
        elif isinstance(node, (ast.List, ast.ListComp, ast.Dict, ast.DictComp, ast.Set, ast.SetComp)) \
                and isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            kind = {ast.List: "list", ast.ListComp: "list", ast.Dict: "dict", ast.DictComp: "dict",
                    ast.Set: "set", ast.SetComp: "set"}[type(node)]
            refuse(node, f"`{_short(node)}` builds a Python {kind}, which numba cannot make on the GPU",
                   "use a tuple for a few constants, or cuda.local.array(SIZE, float32) with a "
                   "constant SIZE for per-thread scratch")
        elif isinstance(node, ast.JoinedStr):
            refuse(node, f"`{_short(node)}` is an f-string, and a GPU thread cannot format strings",
                   "print the values as separate arguments: print('x =', x)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and func.__globals__.get(owner.id) is np \
                    and node.func.attr in _NUMPY_ALLOCATORS:
                refuse(node, f"`{_short(node)}` allocates a new array, which a kernel cannot do "
                       "(there is no allocator on the GPU)", _ALLOCATION_FIX)
            if isinstance(owner, ast.Name) and func.__globals__.get(owner.id) is np \
                    and node.func.attr in _NUMPY_REFUSED:
                refuse(node, f"`{_short(node)}`: numba-cuda cannot compile np.{node.func.attr} in a kernel",
                       f"use {_NUMPY_REFUSED[node.func.attr]} (import math at the top of the file)")
            if node.func.attr == "copy" and not node.args and not node.keywords:
                refuse(node, f"`{_short(node)}` copies an array into a new one, which a kernel "
                       "cannot allocate", _ALLOCATION_FIX)


def _walk_body(fdef: ast.FunctionDef):
    """Every node of the function, not of functions defined inside it (they are not compiled
    with it) and not its decorators."""
    todo = list(fdef.body)
    while todo:
        node = todo.pop(0)
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo.append(child)


def _short(node, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _check_array_shapes(fdef: ast.FunctionDef, refuse) -> None:
    """Refuse a shared or local array whose shape is not a compile-time constant."""
    params = {a.arg for a in (*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs)}
    variable = None                   # worked out at the first array: most functions have none
    for node in _walk_body(fdef):
        space = _array_space(node)
        if space is None:
            continue
        if variable is None:
            variable = _variable_locals(fdef, params)
        shape = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "shape"), None)
        if shape is None:
            continue
        why = _why_not_constant(shape, variable)
        if why is None:
            continue
        refuse(node, f"cuda.{space}.array needs a shape numba can read when it compiles the kernel "
                     f"(a number, a module-level constant, or a tuple of them), but its shape uses {why}",
               _fix(space, why))


def _fix(space: str, why: str) -> str:
    if why.endswith(_ATTRIBUTE):
        return ("import the constant by name (from simtlab.kernels.reduction import BLOCK) or "
                "define it in this module, and use the bare name in the shape")
    if why.endswith(_ARITHMETIC):
        return ("give the value a name at module level, above the kernel (for example "
                "TILE_PAD = TILE + 1), and use that name in the shape")
    if space == "shared":
        return ("give the size as a module-level constant (BLOCK = 256 above the kernel) or a "
                "literal; for a size chosen at launch use dynamic shared memory: "
                "cuda.shared.array(0, float32) in the kernel and shared_bytes= at launch "
                "(numba: kernel[grid, block, 0, nbytes])")
    return ("give the size as a module-level constant or a literal: each thread's local "
            "array is sized when the kernel is compiled")


_ARITHMETIC = "which numba does not compute at compile time"
_ATTRIBUTE = "a module attribute, which numba does not read as a constant"


def _array_space(node) -> str | None:
    """'shared' or 'local' for a call ``<...>.shared.array(...)`` / ``<...>.local.array(...)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "array"):
        return None
    owner = node.func.value
    if isinstance(owner, ast.Attribute) and owner.attr in ("shared", "local"):
        return owner.attr
    return None


def _why_not_constant(expr, variable: dict) -> str | None:
    """Why numba cannot read ``expr`` as a constant (a phrase), or None when it can."""
    if isinstance(expr, ast.Constant):
        return None
    if isinstance(expr, ast.Name):
        return variable.get(expr.id)              # a module-level name is a constant to numba
    if isinstance(expr, ast.Tuple):
        return next(filter(None, (_why_not_constant(e, variable) for e in expr.elts)), None)
    launch = _launch_time(expr, variable)
    if launch is not None:
        return launch
    if isinstance(expr, ast.Attribute):           # numba types R.BLOCK as a plain int64
        return f"`{ast.unparse(expr)}`, {_ATTRIBUTE}"
    return f"`{ast.unparse(expr)}`, an expression, {_ARITHMETIC}"


def _launch_time(expr, variable: dict) -> str | None:
    """The first value inside ``expr`` that exists only at launch, as a phrase."""
    if isinstance(expr, ast.Name) and expr.id in variable:
        return variable[expr.id]
    if isinstance(expr, ast.Attribute):
        chain = _attribute_chain(expr)            # the whole `cuda.blockDim.x`, not a part of it
        if _LAUNCH_TIME_ATTRS & set(chain[1:]):
            return f"`{ast.unparse(expr)}`, the size of an argument, known only at launch"
        if _LAUNCH_TIME_CUDA & set(chain[1:]):
            return f"`{ast.unparse(expr)}`, a property of the launch"
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "len":
        return f"`{ast.unparse(expr)}`, the size of an argument, known only at launch"
    for child in ast.iter_child_nodes(expr):
        reason = _launch_time(child, variable)
        if reason is not None:
            return reason
    return None


def _attribute_chain(node: ast.Attribute) -> list[str]:
    """``a.b.c`` -> ['a', 'b', 'c'] (the root is '' when it is not a plain name)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "")
    return parts[::-1]


def _variable_locals(fdef: ast.FunctionDef, params: set) -> dict:
    """Local names numba cannot read as constants, each with the reason, to a fixpoint:
    parameters, loop variables, and names assigned from anything but a constant."""
    why = {p: f"`{p}`, a kernel argument, known only at launch" for p in params}
    assigns = []
    for node in ast.walk(fdef):
        if isinstance(node, ast.Assign):
            assigns += [(t, node.value) for t in node.targets]
        elif isinstance(node, ast.AugAssign):
            assigns.append((node.target, node))   # x += ... is never a constant
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            assigns.append((node.target, node.value))
        elif isinstance(node, ast.For):
            for name in _names(node.target):
                why.setdefault(name, f"`{name}`, a loop variable")
    changed = True
    while changed:
        changed = False
        for target, value in assigns:
            names = [n for n in _names(target) if n not in why]
            if not names:
                continue
            if isinstance(target, ast.Tuple) or isinstance(value, ast.AugAssign):
                reason = "a value numba does not treat as a constant"
            else:
                reason = _why_not_constant(value, why)
            if reason is None:
                continue
            for name in names:
                why[name] = f"`{name}`, computed from {reason}"
                changed = True
    return why


def _names(target) -> list[str]:
    """The names an assignment target binds: ``a``, ``a, b``; not the names an item
    assignment only reads (``s[i // TILE] = ...`` binds nothing)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []
