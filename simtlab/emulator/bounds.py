"""What an out-of-bounds access says: which index, which bound it broke, and a fix that fits.

The fix depends on where the index came from. ``out[i]`` past the end means the grid has more
threads than ``out`` has elements: guard it with ``if i < out.shape[0]``. ``sh[ys[i]*8 + xs[i]]``
past the end means the values read from ``ys`` and ``xs`` do not fit ``sh``: no guard on the
thread index helps. The index expression is read from the kernel's source line (the line the
error names); where it cannot be told apart (no source, several different subscripts of the
array on the line), the message names the bound without guessing the expression.
"""

from __future__ import annotations

import ast


def out_of_bounds_message(name: str, shape: tuple, values: tuple, source: str | None) -> tuple[str, str]:
    """``(problem, fix)`` for an index tuple ``values`` (plain ints) outside an array ``name`` of
    ``shape``: the first axis whose index is out of range is the one reported (``None``: an
    index that is not an integer, never the one out of range)."""
    axis = next(k for k, (v, n) in enumerate(zip(values, shape)) if v is not None and not 0 <= v < n)
    value, length = values[axis], shape[axis]
    expr = index_expression(source, name, axis, len(shape))
    index = f"index `{expr}` = {value}" if expr is not None and expr != str(value) else f"index {value}"
    on_axis = f"{name}'s axis {axis}" if len(shape) > 1 else name
    valid = f"indices 0..{length - 1}" if length else "no index: it is empty"
    bounds = f"{name} has shape {shape}: {valid}" + (" on that axis" if len(shape) > 1 and length else "")
    if value < 0:
        problem = (f"{index} is a negative index ({bounds}). numba would wrap it to the end of the "
                   "array and CUDA C would read before it; both hide a boundary bug")
    else:
        problem = f"{index} is past the end of {on_axis} ({bounds})"
    return problem, _fix(name, len(shape), axis, value, length, expr)


def _fix(name, ndim, axis, value, length, expr) -> str:
    bound = f"{name}.shape[{axis}]"
    if value < 0:
        return ("check the index arithmetic at the boundary (e.g. i - 1 when i == 0) and guard or "
                f"clamp it: `if {expr or 'i'} >= 0:`")
    if expr is None:
        return (f"guard the access with a bounds check on the index of axis {axis}, such as "
                f"`if i < {bound}:`, or correct how the index is computed")
    arrays = _arrays_read(expr)
    if arrays:
        return (f"the index is computed from values read from {', '.join(arrays)}: check those "
                f"values (they must keep it within 0..{length - 1}), or guard the access with "
                f"`if {expr} < {bound}:`")
    if _is_name(expr):
        along = f" along axis {axis}" if ndim > 1 else ""
        return (f"guard the access with `if {expr} < {bound}:`; the grid has more threads than "
                f"{name} has elements{along}")
    return (f"guard the access with `if {expr} < {bound}:`, or correct the index arithmetic "
            f"(it reaches {value} at this thread)")


def index_expression(source: str | None, name: str, axis: int, ndim: int) -> str | None:
    """The text of the index on ``axis`` of the subscript of ``name`` on this source line, or
    None when the line holds no such subscript or several different ones."""
    tree = _parse_line(source)
    if tree is None:
        return None
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name:
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if len(parts) == ndim:
                found.add(ast.unparse(parts[axis]))
    return found.pop() if len(found) == 1 else None


def _parse_line(source: str | None):
    """One source line as a module; a compound statement's header (``if a[i] > 0:``) is
    completed with a body so that it parses."""
    if not source:
        return None
    line = source.strip()
    for text in (line, line + "\n    pass"):
        try:
            return ast.parse(text)
        except SyntaxError:
            continue
    return None


def _arrays_read(expr: str) -> list[str]:
    """The arrays an index expression reads (``ys[i]*8 + xs[i]`` reads ys and xs), in order."""
    reads = [node for node in ast.walk(ast.parse(expr, mode="eval"))
             if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)]
    names = []
    for node in sorted(reads, key=lambda n: n.col_offset):      # as written, left to right
        if node.value.id not in names:
            names.append(node.value.id)
    return names


def _is_name(expr: str) -> bool:
    return isinstance(ast.parse(expr, mode="eval").body, ast.Name)
