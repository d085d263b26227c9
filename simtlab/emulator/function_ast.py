"""The syntax tree of a kernel or device function, read from its source file.

Two parts of the emulator read a kernel's source: ``static_checks`` (what numba would refuse)
and ``instrument`` (the line-traced copy). Both start here, each with a tree of its own,
since ``instrument`` rewrites the tree it gets.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types


_SOURCES: dict = {}     # code object -> (lines, first, dedented text) or None
_TREES: dict = {}       # code object -> the parsed tree shared by read-only callers


def _source(func: types.FunctionType):
    """The source of ``func``, read once per code object."""
    code = func.__code__
    if code not in _SOURCES and code in _REGISTERED:
        lines, first = _REGISTERED[code]
        _SOURCES[code] = (lines, first, textwrap.dedent("".join(lines)))
    if code not in _SOURCES:
        if len(_SOURCES) > 4096:
            _SOURCES.clear()
            _TREES.clear()
        found = _lines_by_positions(func.__code__, func.__globals__)
        if found is not None:
            found, _TREES[code] = found[:2], found[2]     # its tree serves read-only callers
        else:
            try:
                found = inspect.getsourcelines(func)
            except (OSError, TypeError):
                found = None
        _SOURCES[code] = None if found is None else \
            (found[0], found[1], textwrap.dedent("".join(found[0])))
    return _SOURCES[code]


def register_source(code: types.CodeType, lines: list[str], first: int) -> None:
    """Give ``code`` its source: ``lines`` (the ``def`` with its decorators), starting at file
    line ``first``. The grader interprets kernels it never compiled from their own text (see
    ``simtlab.grading.interpret``): their code object is a stand-in whose body only raises."""
    _REGISTERED[code] = (list(lines), first)
    _SOURCES[code] = (list(lines), first, textwrap.dedent("".join(lines)))
    _TREES.pop(code, None)


_REGISTERED: dict = {}  # code object -> (lines, first): sources given by register_source


def source_lines(code: types.CodeType) -> tuple[list[str], int]:
    """``(lines, first line number)`` of a function's code object, as
    ``inspect.getsourcelines`` gives them, found from the code's line span first (see
    ``_lines_by_positions``: ``inspect`` also searches every loaded module for the code's file,
    ~100 ms with a notebook's imports). Raises OSError when the source cannot be read.
    A CUDA C kernel's code stand-in (``simtlab.cuda_c``) knows its own lines."""
    if not isinstance(code, types.CodeType) and hasattr(code, "source_lines"):
        return code.source_lines()
    if code in _REGISTERED:
        return _REGISTERED[code]
    found = _lines_by_positions(code, None)
    if found is not None:
        return found[0], found[1]
    return inspect.getsourcelines(code)


def _lines_by_positions(code: types.CodeType, module_globals):
    """``(lines, first, tree)`` from the file's lines (linecache) and the code object's own line
    span: from ``co_firstlineno`` (the first decorator) to the last line any of its
    instructions (or those of code nested in it) covers. ``inspect.getsourcelines`` finds the
    same block by tokenizing the file, which costs more than the rest of a small launch the
    first time (it compiles tokenize's regular expressions). None when the span does not
    parse as one ``def`` (the caller then asks ``inspect``)."""
    linecache.checkcache(code.co_filename)    # as inspect does: the file may have changed
    lines = linecache.getlines(code.co_filename, module_globals)
    first = code.co_firstlineno
    if not lines or first < 1:
        return None
    last, todo = first, [code]
    while todo:
        c = todo.pop()
        for _, end, _, _ in c.co_positions():
            if end is not None and end > last:
                last = end
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    block = lines[first - 1:last]
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or \
            tree.body[0].name != code.co_name:
        return None
    return block, first, tree


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
