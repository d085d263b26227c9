"""The syntax tree of a kernel or device function, read from its source file.

Two parts of the emulator read a kernel's source: ``static_checks`` (what numba would refuse)
and ``instrument`` (the line-traced copy). Both start here, each with a tree of its own,
since ``instrument`` rewrites the tree it gets.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types


def parse_function(func: types.FunctionType) -> tuple[list[str], int, ast.Module] | None:
    """``(lines, first, tree)``: the source lines of ``func``, the file line of the first one,
    and the parsed (dedented) source, whose ``tree.body[0]`` is the ``def``; its line numbers
    count from 1 at ``first``. None when there is no source (code made by ``exec``) or it is
    not a plain ``def``."""
    try:
        lines, first = inspect.getsourcelines(func)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    return lines, first, tree
