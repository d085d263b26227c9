"""The playground's inputs: arrays named by a short recipe (``rand(1000)``), and how the
input-size control makes them larger or smaller.

A recipe is a call of one of ``RECIPES`` with sizes and an optional ``dtype=``:
``rand(1000)``, ``zeros((32, 32))``, ``ones(64, dtype='int32')``, ``arange(256)``,
``randint(0, 10, 512)``, ``full(100, 7)``. Anything else must be a number, a tuple of
numbers, or the name of a variable in the notebook.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

#: recipe name -> what it makes (for error messages)
RECIPES = {
    "rand": "uniform random numbers in [0, 1)",
    "randn": "normal random numbers",
    "randint": "random integers: randint(low, high, size)",
    "zeros": "zeros",
    "ones": "ones",
    "arange": "0, 1, 2, ...",
    "full": "one value everywhere: full(size, value)",
}
DEFAULT_DTYPE = {"rand": "float32", "randn": "float32", "randint": "int32", "zeros": "float32",
                 "ones": "float32", "arange": "int32", "full": "float32"}


class InputError(ValueError):
    """A playground input that cannot be made: the message says which and how to write it."""


@dataclass(frozen=True)
class Recipe:
    """How to make one input array; ``size`` is its shape."""

    name: str
    size: tuple
    dtype: str
    extra: tuple = ()          # randint's (low, high), full's value

    def make(self, rng: np.random.Generator) -> np.ndarray:
        dt = np.dtype(self.dtype)
        if self.name == "rand":
            return rng.random(self.size).astype(dt)
        if self.name == "randn":
            return rng.standard_normal(self.size).astype(dt)
        if self.name == "randint":
            low, high = self.extra
            return rng.integers(low, high, self.size).astype(dt)
        if self.name == "zeros":
            return np.zeros(self.size, dt)
        if self.name == "ones":
            return np.ones(self.size, dt)
        if self.name == "arange":
            return np.arange(int(np.prod(self.size)), dtype=dt).reshape(self.size)
        return np.full(self.size, self.extra[0], dt)

    def resized(self, n: int) -> "Recipe":
        """The same recipe with its first axis of length ``n``."""
        return Recipe(self.name, (int(n),) + tuple(self.size[1:]), self.dtype, self.extra)

    def __str__(self):
        args = [str(v) for v in self.extra[:2]] if self.name == "randint" else []
        size = str(self.size[0]) if len(self.size) == 1 else str(self.size)
        args.append(size)
        if self.name == "full":
            args.append(str(self.extra[0]))
        return f"{self.name}({', '.join(args)}, dtype='{self.dtype}')"


def _literal(node, what: str):
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise InputError(f"{what}: {ast.unparse(node)!r} is not a number or a tuple of numbers") from None


def _shape(value, what: str) -> tuple:
    shape = (value,) if isinstance(value, int) else value
    if not isinstance(shape, tuple) or not shape or not all(isinstance(s, int) and s > 0 for s in shape):
        raise InputError(f"{what}: the size must be a positive int or a tuple of them, got {value!r}")
    return tuple(shape)


def parse_recipe(call: ast.Call, text: str) -> Recipe:
    name = call.func.id
    what = f"{text!r}"
    args = [_literal(a, what) for a in call.args]
    kwargs = {k.arg: _literal(k.value, what) for k in call.keywords}
    unknown = set(kwargs) - {"dtype"}
    if unknown:
        raise InputError(f"{what}: unknown option {sorted(unknown)[0]!r}; a recipe takes only dtype=")
    dtype = kwargs.get("dtype", DEFAULT_DTYPE[name])
    try:
        np.dtype(dtype)
    except TypeError:
        raise InputError(f"{what}: {dtype!r} is not a NumPy dtype (try 'float32', 'int32')") from None
    expected = {"randint": 3, "full": 2}.get(name, 1)
    if len(args) != expected:
        usage = {"randint": "randint(low, high, size)", "full": "full(size, value)"}.get(name, f"{name}(size)")
        raise InputError(f"{what}: write {usage}")
    if name == "randint":
        return Recipe(name, _shape(args[2], what), str(np.dtype(dtype)), (int(args[0]), int(args[1])))
    if name == "full":
        return Recipe(name, _shape(args[0], what), str(np.dtype(dtype)), (args[1],))
    return Recipe(name, _shape(args[0], what), str(np.dtype(dtype)))


def parse_value(text: str, namespace: dict | None = None):
    """A value written in a ``%%simt`` line: a recipe (returns a ``Recipe``), a number, a
    tuple of numbers, or the name of a notebook variable (returns its value)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise InputError(f"{text!r} is not a value: write a number, a tuple like (8, 8), a recipe like "
                         "rand(1000), or the name of a variable") from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id not in RECIPES:
            known = ", ".join(RECIPES)
            raise InputError(f"{text!r}: {node.func.id!r} is not an input recipe; use one of {known}")
        return parse_recipe(node, text)
    if isinstance(node, ast.Name):
        if namespace is None or node.id not in namespace:
            raise InputError(f"{text!r}: there is no variable {node.id!r} in the notebook; define it first "
                             "or write a recipe like rand(1000)")
        return namespace[node.id]
    return _literal(node, repr(text))


def main_length(values) -> int | None:
    """The input size the size control changes: the most common length of the 1-D arrays."""
    lengths = [len(v) for v in values if isinstance(v, np.ndarray) and v.ndim == 1]
    if not lengths:
        return None
    counts = {n: lengths.count(n) for n in lengths}
    return max(counts, key=lambda n: (counts[n], -lengths.index(n)))


def resize(values: list, recipes: list, n_old: int, n_new: int, rng: np.random.Generator):
    """``(values, recipes)`` for input size ``n_new``: every 1-D array of length ``n_old``
    remade with ``n_new`` elements (from its recipe; an array given by value keeps its
    constant, or gets random values in its own range), and every int argument equal to
    ``n_old`` (a length parameter) set to ``n_new``."""
    out_values, out_recipes = [], []
    for value, recipe in zip(values, recipes):
        if isinstance(value, np.ndarray) and value.ndim == 1 and len(value) == n_old:
            if recipe is not None:
                recipe = recipe.resized(n_new)
                value = recipe.make(rng)
            elif value.size and (value == value.flat[0]).all():
                value = np.full(n_new, value.flat[0], value.dtype)
            elif np.issubdtype(value.dtype, np.integer):
                value = rng.integers(int(value.min()), int(value.max()) + 1, n_new).astype(value.dtype)
            else:
                value = rng.uniform(float(value.min()), float(value.max()), n_new).astype(value.dtype)
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value == n_old:
            value = type(value)(n_new)
        out_values.append(value)
        out_recipes.append(recipe)
    return out_values, out_recipes


__all__ = ["RECIPES", "Recipe", "InputError", "parse_value", "main_length", "resize"]
