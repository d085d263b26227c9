"""The kernel playground: your own kernel, emulated on the CPU and seen from every side.

    pg = simtlab.playground(kernel, griddim, blockdim, *args)
    pg                     # in a notebook: the widget

``kernel`` is a ``@cuda.jit`` function, ``griddim`` and ``blockdim`` the launch (an int or a
tuple of up to 3 ints) and ``args`` its arguments, as in ``kernel[griddim, blockdim](*args)``:
the first run writes into your arrays, as a launch does; later runs (the dropdowns,
``relaunch``) work on copies of the inputs. The widget's tabs show the mapping of
threads to elements, memory requests (coalescing, bank conflicts), divergence, races and
errors, barriers, the source with per-line counts, the run on a GPU when there is one, and the
run before the last change. Dropdowns above them change the grid, the block and the input size.

Keywords: ``shared_bytes`` (dynamic shared memory), ``max_traced_threads`` (larger launches are
sampled: the first blocks traced, the rest only checked), ``nbytes`` / ``flops`` (bytes and
FLOPs per launch: the GPU tab's time as GB/s and FLOP/s), ``seed`` (random inputs), ``gpu``
(False: never run the GPU tab).

The returned ``Playground`` has ``run`` (the emulator's ``Run``), ``error`` (the kernel's
``EmulationError`` or None), ``outputs`` (parameter name -> array after the run),
``relaunch(griddim=..., blockdim=..., name=value)`` and ``compare()``. A ``%%simt`` cell does
the same from a cell: its line is the launch, ``as=pg`` names the result.
"""

# Where the parts live: session.py (Playground), tabs.py (one class per tab, drawn by
# simtlab.plots), magic.py (%%simt), inputs.py (the inputs of a %%simt line), gpu.py (the
# GPU tab), cuda_c.py (%%simt --cuda).

import inspect as _inspect
import sys as _sys

from .session import Comparison, Playground, playground

__all__ = ["Playground", "Comparison", "playground"]

# playground() passes its keywords to Playground: show Playground's own, not **options
playground.__signature__ = _inspect.signature(Playground.__init__).replace(
    parameters=[p for name, p in _inspect.signature(Playground.__init__).parameters.items() if name != "self"],
    return_annotation=Playground)


class _CallableModule(type(_sys)):
    """``simtlab.playground`` is this package once it is imported (Python sets the attribute),
    and the function before: calling the package calls ``playground()``, so both spellings
    ``simtlab.playground(...)`` and ``from simtlab.playground import playground`` work."""

    def __call__(self, *args, **kwargs):
        return playground(*args, **kwargs)


_module = _sys.modules[__name__]
_module.__class__ = _CallableModule
_module.__signature__ = playground.__signature__     # what inspect and help() show for the call
