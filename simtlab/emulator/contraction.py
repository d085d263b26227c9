"""Where numba-cuda's compiler fuses a multiply and an add into one FMA (one rounding).

NVVM and ptxas contract a floating-point add or subtract with a multiply whose result has no
other use, in float32 and float64 alike. What an H100 computes, bit for bit on 4096 random
inputs (benchmarks/results/numerics_h100.json, "fma"):

- ``a*b + c``, ``c + a*b``: ``fma(a, b, c)``; ``a*b - c``: ``fma(a, b, -c)``; ``c - a*b``
  and ``-(a*b) + c``: ``fma(-a, b, c)``; ``(a+b)*c + d``: ``fma(a+b, c, d)``;
- two products: the left one is fused, ``a*b + c*d`` is ``fma(a, b, c*d)`` (``c*d`` rounded);
- a chain: ``a*b + c + d`` is ``fma(a, b, c) + d``, ``c + d + a*b`` is ``fma(a, b, c + d)``;
- ``acc += a*b`` (also in a loop, also ``o[i] += a*b``) and ``acc = acc + a*b``;
- across statements, ``t = a*b`` then ``o = t + c`` when ``t`` has no other use (with another
  use of ``t``, nothing is fused).

The emulator models each of these (both engines): an add or subtract whose operand is a
product in the source, or a name that ``product_temporaries`` found, is computed as one
fused multiply-add when the product and the sum have the same float type (numba's types,
numba_types.py). A float32 product added to a float64 is not fused (the float32 product is
rounded, then converted), as on the GPU (tests/numba_typing_cases.py, float64_accumulator).

Not modelled: a product temporary assigned in one block and used in another (inside an
``if`` or a loop below it, or assigned twice), which LLVM may or may not fuse; a product
passed to a device function and added there. Such a sum is rounded twice in the emulator
and may differ from the GPU's by one rounding of the product: at most half an ulp of the
product (``FMA_PRODUCT_ULPS``), which bounds where a comparison with the GPU may differ.
"""

from __future__ import annotations

import ast

ADD_SUB = (ast.Add, ast.Sub)
FMA_PRODUCT_ULPS = 0.5


def is_product(node) -> bool:
    """``a * b`` or ``-(a * b)`` in the source."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)


def product_temporaries(fdef: ast.FunctionDef) -> frozenset:
    """Names assigned a product once (``t = a * b``) and read once, as an operand of ``+`` or
    ``-`` (or the value of ``+=``/``-=``) in a later simple statement of the same block: the
    GPU fuses that product into the sum."""
    stores, loads = {}, {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name):
            counts = loads if isinstance(node.ctx, ast.Load) else stores
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            loads[node.target.id] = loads.get(node.target.id, 0) + 1
    params = {a.arg for a in fdef.args.args}
    found = set()
    for body in _blocks(fdef):
        for k, stmt in enumerate(body):
            name = _assigned_product(stmt)
            if name is None or name in params or stores.get(name) != 1 or loads.get(name) != 1:
                continue
            if any(_sum_operand_uses(later, name) for later in body[k + 1:]):
                found.add(name)
    return frozenset(found)


def _blocks(fdef):
    """Every statement list of the function (its body, loop and branch bodies)."""
    for node in ast.walk(fdef):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                yield stmts


def _assigned_product(stmt):
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and is_product(stmt.value) and \
            isinstance(stmt.value, ast.BinOp):
        return stmt.targets[0].id
    return None


def _sum_operand_uses(stmt, name) -> bool:
    """Is ``name`` read in ``stmt`` (a simple statement) as an operand of ``+``/``-``?"""
    if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)):
        return False
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ADD_SUB) and \
            _is_name(stmt.value, name):
        return True
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ADD_SUB)
               and (_is_name(n.left, name) or _is_name(n.right, name))
               for n in ast.walk(stmt))


def _is_name(node, name) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
