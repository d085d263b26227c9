"""The kernel playground: any numba-cuda kernel, emulated and seen from every side.

``simtlab.playground(kernel, griddim, blockdim, *args)`` returns a ``Playground`` (session.py)
whose tabs (tabs.py) are drawn by functions in ``simtlab.plots``; ``%%simt`` (magic.py) does
the same from a cell; inputs.py makes the inputs of a ``%%simt`` line; gpu.py runs the kernel
on a GPU, compares and times it; cuda_c.py runs a CUDA C cell.
"""

from .session import Comparison, Playground, playground

__all__ = ["Playground", "Comparison", "playground"]


class _CallableModule(type(__import__("sys"))):
    """``simtlab.playground`` is this package once it is imported (Python sets the attribute),
    and the function before: calling the package calls ``playground()``, so both spellings
    ``simtlab.playground(...)`` and ``from simtlab.playground import playground`` work."""

    def __call__(self, *args, **kwargs):
        return playground(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule
