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


_SOURCES: dict = {}     # code object -> (lines, first, dedented text) or None
_TREES: dict = {}       # code object -> the parsed tree shared by read-only callers


def _source(func: types.FunctionType):
    """The source of ``func``, read once per code object (reading it tokenizes the file)."""
    code = func.__code__
    if code not in _SOURCES:
        if len(_SOURCES) > 4096:
            _SOURCES.clear()
            _TREES.clear()
        try:
            lines, first = inspect.getsourcelines(func)
            _SOURCES[code] = (lines, first, textwrap.dedent("".join(lines)))
        except (OSError, TypeError):
            _SOURCES[code] = None
    return _SOURCES[code]


def parse_function(func: types.FunctionType, *, shared: bool = False
                   ) -> tuple[list[str], int, ast.Module] | None:
    """``(lines, first, tree)``: the source lines of ``func``, the file line of the first one,
    and the parsed (dedented) source, whose ``tree.body[0]`` is the ``def``; its line numbers
    count from 1 at ``first``. None when there is no source (code made by ``exec``) or it is
    not a plain ``def``. ``shared=True`` returns one tree per code object for callers that
    only read it (a caller that rewrites the tree, like ``instrument``, gets its own)."""
    src = _source(func)
    if src is None:
        return None
    lines, first, text = src
    tree = _TREES.get(func.__code__) if shared else None
    if tree is None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        if shared:
            _TREES[func.__code__] = tree
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    return lines, first, tree
