"""A kernel's source is found from its code object's line span (no tokenizing of the file),
and it is the block inspect.getsourcelines finds."""

import importlib
import inspect
import pkgutil
import types

import pytest

from numba import cuda

import simtlab.kernels
from simtlab.emulator import function_ast


@cuda.jit(device=True)
def ends_in_a_call_over_lines(a, b):
    return max(a,
               b
               )


@cuda.jit
def ends_in_pass(x):
    if x[0] > 0:
        x[0] = 1
    else:
        pass


def _course_functions():
    for info in pkgutil.iter_modules(simtlab.kernels.__path__):
        module = importlib.import_module(f"simtlab.kernels.{info.name}")
        for value in vars(module).values():
            func = getattr(value, "py_func", None)
            if isinstance(func, types.FunctionType) and func.__module__ == module.__name__:
                yield func


def test_the_line_span_is_the_block_inspect_finds():
    funcs = list(_course_functions()) + [ends_in_a_call_over_lines.py_func, ends_in_pass.py_func]
    assert len(funcs) > 50
    for func in funcs:
        found = function_ast._lines_by_positions(func.__code__, func.__globals__)
        assert found is not None, func.__name__
        assert function_ast.source_lines(func.__code__) == (found[0], found[1])
        lines, first, tree = found
        ref_lines, ref_first = inspect.getsourcelines(func)
        assert (first, "".join(lines).rstrip()) == (ref_first, "".join(ref_lines).rstrip()), \
            func.__name__
        assert tree.body[0].name == func.__name__


def test_code_without_a_file_has_no_source():
    scope = {}
    exec("def made(x):\n    x[0] = 1\n", scope)
    assert function_ast._lines_by_positions(scope["made"].__code__, scope) is None
    with pytest.raises(OSError):
        function_ast.source_lines(scope["made"].__code__)
    assert function_ast.parse_function(scope["made"]) is None
