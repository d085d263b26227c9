"""What a student finds with help(), dir() and tab completion: every public name of simtlab
has a docstring and its real signature (no bare *args/**kwargs where it takes named options)."""

from __future__ import annotations

import inspect
import pydoc

import simtlab

# the ones that really take any number of positional arguments: the kernel's own arguments
TAKES_KERNEL_ARGUMENTS = {"playground", "emulate", "launch", "compare_engines", "compare_twins"}


def _public_callables():
    for name in simtlab.__all__:
        if name != "__version__":
            yield name, getattr(simtlab, name)


def test_every_public_name_is_listed_and_found():
    for name in ("launch", "show_backend", "backend_banner", "gpu_available", "active_backend",
                 "playground", "emulate", "show_source"):
        assert name in simtlab.__all__, f"{name} is missing from simtlab.__all__"
        assert name in dir(simtlab), f"{name} is missing from dir(simtlab)"
    for name in simtlab.__all__:
        assert getattr(simtlab, name) is not None


def test_every_public_name_has_a_docstring_and_its_real_signature():
    for name, obj in _public_callables():
        assert (inspect.getdoc(obj) or "").strip(), f"simtlab.{name} has no docstring"
        if isinstance(obj, type) and issubclass(obj, Warning):
            continue                       # a warning category: nothing to call
        params = inspect.signature(obj).parameters.values()
        kinds = {p.kind for p in params}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, \
            f"simtlab.{name}{inspect.signature(obj)}: name its keywords instead of **"
        if name not in TAKES_KERNEL_ARGUMENTS:
            assert inspect.Parameter.VAR_POSITIONAL not in kinds, f"simtlab.{name}{inspect.signature(obj)}"


def test_help_on_the_playground_shows_how_to_call_it():
    sig = str(inspect.signature(simtlab.playground))
    assert sig.startswith("(kernel, griddim, blockdim, *args, shared_bytes"), sig
    assert "max_traced_threads" in sig and "**" not in sig
    text = pydoc.render_doc(simtlab.playground, renderer=pydoc.plaintext)
    assert "simtlab.playground(kernel, griddim, blockdim, *args)" in text
    assert "session.py" not in text and "tabs.py" not in text, "help() shows the developer notes"
    launch = inspect.signature(simtlab.launch)
    assert {"shared_bytes", "seed", "engine"} <= set(launch.parameters), launch
