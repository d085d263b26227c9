"""``%%simt``: a cell that is a kernel, a line that is its launch and its inputs.

    %%simt grid=8 block=128 a=rand(1000) out=zeros(1000)
    @cuda.jit
    def double(a, out):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = 2 * a[i]

The cell is run in the notebook's namespace (with ``cuda``, ``np`` and ``math`` available),
its kernel -- the ``@cuda.jit`` function, else the last function the cell defines -- is handed
to ``simtlab.playground`` with one input per parameter, named in the line. Other options:
``shared=`` (dynamic shared bytes), ``bytes=`` / ``flops=`` (per launch, for GB/s and FLOP/s
on a GPU), ``trace=`` (most threads traced), ``seed=``, ``kernel=`` (which function), ``as=``
(a name for the playground in the notebook), ``max_iterations=`` (loop iterations a thread may
run before it is stopped as runaway) and ``time_limit=`` (seconds of wall-clock time, or None),
as in ``simtlab.emulate``.
``%%simt --cuda`` takes CUDA C instead (NVRTC's PTX on the PTX engine, see cuda_c.py).

The cell's value is the ``Playground``; ``as=pg`` also binds it to ``pg``, so the arrays of
the last run are ``pg.outputs["out"]`` (one entry per array parameter) without ``_`` or
``Out[n]``, and ``pg.relaunch(...)`` runs it again.
"""

from __future__ import annotations

import ast
import itertools
import keyword
import linecache

from .inputs import InputError, Recipe, parse_value

LAUNCH_KEYS = ("grid", "block")
OPTION_KEYS = ("shared", "bytes", "flops", "trace", "seed", "kernel", "as", "max_iterations",
               "time_limit")
_cells = itertools.count(1)


class MagicError(ValueError):
    """A ``%%simt`` line or cell the magic cannot use: says what is wrong and how to write it."""


USAGE = ("usage: %%simt grid=8 block=128 a=rand(1000) out=zeros(1000) as=pg   (one name=value per kernel "
         "parameter; grid and block are ints or tuples like (8,8); recipes: rand, randn, randint, zeros, "
         "ones, arange, full; as=pg names the playground: pg.outputs['out'] is the output array)")


def split_line(line: str) -> tuple[list[str], dict[str, str]]:
    """``(flags, {name: value text})`` of a magic line; a value may contain spaces inside
    brackets (``block=(16, 16)``, ``a=rand((32, 32))``)."""
    flags, items = [], {}
    tokens, depth, current = [], 0, ""
    for ch in line.strip():
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                raise MagicError(f"unbalanced ')' in {line!r}\n{USAGE}")
        if ch.isspace() and depth == 0:
            if current:
                tokens.append(current)
            current = ""
        else:
            current += ch
    if depth:
        raise MagicError(f"unbalanced '(' in {line!r}\n{USAGE}")
    if current:
        tokens.append(current)
    for token in tokens:
        if token.startswith("--"):
            flags.append(token[2:])
            continue
        name, sep, value = token.partition("=")
        if not sep or not name.isidentifier() or not value:
            raise MagicError(f"{token!r} is not name=value\n{USAGE}")
        if name in items:
            raise MagicError(f"{name!r} is given twice")
        items[name] = value
    return flags, items


def _launch_dim(name: str, text: str):
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise MagicError(f"{name}={text}: {name} must be a positive int or a tuple of 1 to 3 ints, "
                         f"like {name}=8 or {name}=(8,8)") from None
    dims = (value,) if isinstance(value, int) else value
    if not (isinstance(dims, tuple) and 1 <= len(dims) <= 3
            and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)):
        raise MagicError(f"{name}={text}: {name} must be a positive int or a tuple of 1 to 3 positive ints")
    return value


def _number(name: str, text: str, kind=float):
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise MagicError(f"{name}={text}: {name} must be a number >= 0")
    return kind(value)


def _count(name: str, text: str) -> int:
    value = _number(name, text, float)
    if value < 1 or value != int(value):
        raise MagicError(f"{name}={text}: {name} must be a whole number >= 1")
    return int(value)


def _seconds(name: str, text: str) -> float | None:
    if text == "None":
        return None
    value = _number(name, text, float)
    if value <= 0:
        raise MagicError(f"{name}={text}: {name} must be seconds > 0, or None (no limit)")
    return value


def find_kernel(cell: str, namespace: dict, wanted: str | None = None):
    """Run the cell in ``namespace`` and return the kernel it defines."""
    try:
        tree = ast.parse(cell)
    except SyntaxError as exc:
        raise MagicError(f"the cell is not valid Python (line {exc.lineno}: {exc.msg}); a %%simt cell holds "
                         "a numba-cuda kernel (for CUDA C, use %%simt --cuda)") from None
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not funcs:
        raise MagicError("the cell defines no function: write the kernel as `@cuda.jit` + `def name(...)`")

    def is_kernel(f):
        for d in f.decorator_list:
            text = ast.unparse(d)
            if "jit" in text and "device=True" not in text:
                return True
        return False

    if wanted is not None:
        names = [f.name for f in funcs]
        if wanted not in names:
            raise MagicError(f"kernel={wanted}: the cell defines {', '.join(names)}, not {wanted}")
        name = wanted
    else:
        kernels = [f for f in funcs if is_kernel(f)]
        name = (kernels or funcs)[-1].name
    # Register the cell as a file, so the emulator (and the source tab) can read its lines.
    filename = f"<simt-cell-{next(_cells)}>"
    linecache.cache[filename] = (len(cell), None, cell.splitlines(True), filename)
    import math

    import numpy as np
    from numba import cuda
    namespace.setdefault("cuda", cuda)
    namespace.setdefault("np", np)
    namespace.setdefault("math", math)
    exec(compile(cell, filename, "exec"), namespace)
    return namespace[name]


def parse_launch(line: str, params: list[str], namespace: dict | None = None) -> dict:
    """The launch a line asks for: ``{"griddim", "blockdim", "args" (one per parameter, a
    value or a Recipe), "options"}``; a ``MagicError`` for anything missing or wrong."""
    _, items = split_line(line)
    for key in LAUNCH_KEYS:
        if key not in items:
            raise MagicError(f"the line has no {key}=: give the launch, e.g. grid=8 block=128\n{USAGE}")
    unknown = [k for k in items if k not in LAUNCH_KEYS + OPTION_KEYS and k not in params]
    if unknown:
        raise MagicError(f"{unknown[0]}= is not a parameter of the kernel ({', '.join(params)}) nor an "
                         f"option ({', '.join(LAUNCH_KEYS + OPTION_KEYS)})")
    missing = [p for p in params if p not in items]
    if missing:
        raise MagicError(f"no value for the kernel parameter {missing[0]!r}: add {missing[0]}=... to the line, "
                         f"e.g. {missing[0]}=zeros(1000)")
    args = []
    for p in params:
        try:
            args.append(parse_value(items[p], namespace))
        except InputError as exc:
            raise MagicError(f"{p}={items[p]}: {exc}") from None
    options = {}
    if "shared" in items:
        options["shared_bytes"] = _number("shared", items["shared"], int)
    if "bytes" in items:
        options["nbytes"] = _number("bytes", items["bytes"])
    if "flops" in items:
        options["flops"] = _number("flops", items["flops"])
    if "trace" in items:
        options["max_traced_threads"] = max(1, _number("trace", items["trace"], int))
    if "seed" in items:
        options["seed"] = _number("seed", items["seed"], int)
    if "max_iterations" in items:
        options["max_iterations"] = _count("max_iterations", items["max_iterations"])
    if "time_limit" in items:
        options["time_limit"] = _seconds("time_limit", items["time_limit"])
    return {"griddim": _launch_dim("grid", items["grid"]), "blockdim": _launch_dim("block", items["block"]),
            "args": args, "options": options}


def simt(line: str, cell: str, namespace: dict):
    """What ``%%simt`` does, as a plain function (the magic is a thin wrapper around it)."""
    flags, items = split_line(line)
    unknown = [f for f in flags if f != "cuda"]
    if unknown:
        raise MagicError(f"--{unknown[0]} is not a flag of %%simt; the only one is --cuda (a CUDA C cell)")
    result_name = _result_name(items)
    if "cuda" in flags:
        from .cuda_c import run_cuda_c
        return run_cuda_c(line, cell, namespace, result_name=result_name)
    kernel = find_kernel(cell, namespace, items.get("kernel"))
    from ..emulator.binding import plain_function
    func = plain_function(kernel)
    params = list(func.__code__.co_varnames[:func.__code__.co_argcount])
    launch = parse_launch(line, params, namespace)
    from .session import Playground
    recipes = [a if isinstance(a, Recipe) else None for a in launch["args"]]
    pg = Playground(kernel, launch["griddim"], launch["blockdim"], *launch["args"], recipes=recipes,
                    origin="%%simt", **launch["options"])
    if result_name is not None:
        namespace[result_name] = pg
    return pg


def _result_name(items: dict) -> str | None:
    """The notebook name ``as=`` gives the playground (checked before the cell runs)."""
    name = items.get("as")
    if name is not None and (not name.isidentifier() or keyword.iskeyword(name)):
        raise MagicError(f"as={name}: give a Python name for the playground, e.g. as=pg; then "
                         "pg.outputs['out'] is the array the kernel wrote into out")
    return name


def register(ipython) -> None:
    """Register ``%%simt`` with an IPython shell (``%load_ext simtlab`` calls this)."""
    from IPython.core.error import UsageError
    from IPython.core.magic import register_cell_magic  # noqa: F401  (IPython is here)

    def simt_magic(line, cell):
        try:
            return simt(line, cell, ipython.user_ns)
        except (MagicError, InputError) as exc:
            raise UsageError(f"%%simt: {exc}") from None

    ipython.register_magic_function(simt_magic, magic_kind="cell", magic_name="simt")


__all__ = ["simt", "split_line", "parse_launch", "find_kernel", "register", "MagicError", "USAGE"]
