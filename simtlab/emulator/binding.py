"""Rebind a numba-cuda kernel's Python source to the emulator's fake ``cuda`` module.

A ``@cuda.jit`` kernel keeps its original Python function in ``py_func``. That function looks
up ``cuda`` (and any ``@cuda.jit(device=True)`` helpers it calls) in its module's globals, so
the emulator makes a copy of the function whose globals point at the fake module and at
rebound copies of the device functions. The student's source is untouched: the same kernel
still compiles for a real GPU.
"""

from __future__ import annotations

import math
import types
import warnings

import numpy as np

from .errors import UntracedSourceWarning
from .numba_types import NUMBA_MATH, TYPED_MATH_FUNCS, float64_constant, numba_float, retype_constants
from .static_checks import check_source


def _is_numba_cuda_module(value) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__ in (
        "numba.cuda", "numba_cuda.numba.cuda")


def _is_cuda_dispatcher(value) -> bool:
    # numba-cuda's CUDADispatcher (kernels and device functions) and its simulator's FakeCUDAKernel
    # and the grader's interpreted kernels (simtlab.grading.interpret), which say so
    cls = type(value)
    return hasattr(value, "py_func") and ("cuda" in cls.__module__
                                          or getattr(cls, "simtlab_interpreted", False) is True)


def plain_function(kernel):
    """The Python function behind a kernel: ``kernel.py_func`` or the function itself."""
    func = getattr(kernel, "py_func", kernel)
    if not isinstance(func, types.FunctionType):
        raise TypeError(
            f"emulate() needs a kernel written in Python (a @cuda.jit function or a plain "
            f"function), not {type(kernel).__name__}")
    return func


def kernel_parameters(kernel) -> tuple[str, list[str]]:
    """``(kernel name, parameter names)`` of a Python kernel or of a CUDA C kernel
    (``simtlab.cuda_c``'s, whose names come from its CUDA C declaration)."""
    if getattr(kernel, "is_cuda_c", False):
        return kernel.name, list(kernel.parameter_names)
    func = plain_function(kernel)
    return func.__name__, list(func.__code__.co_varnames[:func.__code__.co_argcount])


class KernelBinder:
    """Makes emulator copies of a kernel and of every device function it reaches."""

    def __init__(self, fake_cuda, *, instrument_lines=False, register_code=None,
                 numba_typing=True):
        self.fake_cuda = fake_cuda
        # literals, float globals, math.* and float() typed as numba types them (numba_types.py);
        # the vector engine reads the original function and types values itself
        self.numba_typing = numba_typing
        self._done: dict[int, types.FunctionType] = {}
        self.codes: set = set()          # code objects of kernel + device functions
        self.globals_dicts: list = []    # where the line and loop hooks live (see instrument.py)
        self.instrument_lines = instrument_lines
        self.register_code = register_code
        self.uninstrumented: list = []   # functions whose source could not be found
        self._proxies: dict = {}         # id(module) -> its _ModuleProxy

    def bind(self, kernel) -> types.FunctionType:
        return self._bind_function(plain_function(kernel), kernel=True)

    def _bind_function(self, func: types.FunctionType, kernel: bool = False) -> types.FunctionType:
        key = id(func)
        if key in self._done:
            return self._done[key]
        index = self.register_code(None)     # the kernel gets index 0, its helpers the next
        new_globals = dict(func.__globals__)
        cells = None
        if func.__closure__:
            # a kernel defined inside a function: its free variables live in closure cells
            cells = tuple(types.CellType() for _ in func.__closure__)
        code = retype_constants(func.__code__) if self.numba_typing else func.__code__
        bound = types.FunctionType(code, new_globals, func.__name__, func.__defaults__, cells)
        self._done[key] = bound              # before recursing: device functions may recurse
        check_source(func, kernel=kernel)    # what numba would refuse to compile
        names = _global_names(func.__code__)   # globals and attribute names the code loads
        for name in names:
            if name in new_globals:
                new_globals[name] = self._replacement(new_globals[name], names)
        if self.numba_typing and "float" in names and "float" not in new_globals:
            new_globals["float"] = numba_float       # float(v) is float64 in numba
        if cells:
            for new, old in zip(cells, func.__closure__):
                if _cell_has_value(old):
                    new.cell_contents = self._replacement(old.cell_contents, names)
        if self.instrument_lines or self.numba_typing:
            from .instrument import HOOK, LOOP_HOOK, instrument
            values = tuple(c.cell_contents if _cell_has_value(c) else None for c in cells or ())
            new_globals[HOOK] = new_globals[LOOP_HOOK] = _no_thread
            made = instrument(func, index, new_globals, values, lines=self.instrument_lines)
            if made is not None:
                if self.numba_typing:
                    made.__code__ = retype_constants(made.__code__)
                bound = made
                self._done[key] = bound
                self.globals_dicts.append(new_globals)     # its hooks follow the running thread
            elif self.instrument_lines:
                self.uninstrumented.append(func.__name__)
                warnings.warn(UntracedSourceWarning(
                    f"the source of {'kernel' if kernel else 'device function'} "
                    f"{func.__name__}() cannot be read (defined by exec or in a session "
                    "whose source is gone): it runs and its memory accesses are traced, but "
                    "its executed lines are missing from run.lines (and from divergence "
                    "figures); define it in a .py file or a notebook cell"), stacklevel=2)
        self.register_code(bound.__code__, index)
        self.codes.add(bound.__code__)
        bound.__kwdefaults__ = func.__kwdefaults__
        return bound

    def _replacement(self, value, names=()):
        if _is_numba_cuda_module(value):
            return self.fake_cuda
        if self.numba_typing:
            if value is math:
                return NUMBA_MATH
            if value.__class__ is float:
                return float64_constant(value)
            if isinstance(value, types.BuiltinFunctionType) and value in TYPED_MATH_FUNCS:
                return TYPED_MATH_FUNCS[value]
        if _is_cuda_dispatcher(value) and isinstance(getattr(value, "py_func", None),
                                                      types.FunctionType):
            return self._bind_function(value.py_func)
        if isinstance(value, types.ModuleType):
            # numba itself too: numba.cuda.threadIdx must reach the fake
            if value.__name__ == "numba" or _holds_cuda_code(value):
                proxy = self._proxies.get(id(value))
                if proxy is None:                # one view per module: modules may import each other
                    proxy = self._proxies[id(value)] = _ModuleProxy(value, self._replacement)
                proxy._bind(names)
                return proxy
        return value


def _no_thread(*site):
    raise RuntimeError("an instrumented kernel ran outside the emulator's scheduler")


def _cell_has_value(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _global_names(code: types.CodeType):
    """Every global name a code object (and its nested code objects) may load."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _holds_cuda_code(module: types.ModuleType) -> bool:
    """Does ``module`` hold device functions or ``cuda`` itself, which a kernel may reach as
    ``module.helper(...)`` or ``module.cuda.threadIdx``? (Other modules, like ``math`` and
    ``numpy``, are left as they are.)"""
    try:
        values = list(vars(module).values())
    except TypeError:
        return False
    return any(_is_cuda_dispatcher(v) or _is_numba_cuda_module(v) for v in values)


class _ModuleProxy:
    """A module the kernel uses as ``module.name``: each attribute is replaced the way a global
    is (device functions rebound to the emulator, ``cuda`` to the fake). The attributes the
    kernel's code names are replaced now, before the launch, so their device functions are
    instrumented with the kernel; any other is replaced on first use."""

    def __init__(self, module, replace):
        self._module = module
        self._replace = replace
        self._busy = False

    def _bind(self, names) -> None:
        if self._busy:                       # a module reached again through its own attributes
            return
        self._busy = True
        try:
            for name in names:
                if not name.startswith("_") and name not in self.__dict__ and hasattr(self._module, name):
                    setattr(self, name, self._replace(getattr(self._module, name), names))
        finally:
            self._busy = False

    def __getattr__(self, name):
        value = self._replace(getattr(self._module, name), ())
        setattr(self, name, value)           # later lookups skip __getattr__
        return value

    def __repr__(self):
        return f"<emulator view of module {self._module.__name__!r}>"


_DTYPES: dict = {}


def to_numpy_dtype(dtype) -> np.dtype:
    """numba types (``float32``, ``types.int32``), NumPy types and strings to a NumPy dtype."""
    try:
        return _DTYPES[dtype]
    except (KeyError, TypeError):
        pass
    result = _to_numpy_dtype(dtype)
    try:
        _DTYPES[dtype] = result
    except TypeError:
        pass
    return result


def _to_numpy_dtype(dtype) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError:
        pass
    try:
        from numba.np.numpy_support import as_dtype
        return as_dtype(dtype)
    except Exception:
        return np.dtype(str(dtype))
