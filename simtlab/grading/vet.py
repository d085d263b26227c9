"""Vet answer cells before any of their code runs: a static allowlist (rules in answer_rules.toml).

An answer cell of this course holds kernel and helper function definitions, constants and
imports of numpy, math, numba and ``simtlab.kernels``.  :func:`vet_answer` parses a cell with
``ast`` and returns one :class:`Rejection` per construct outside that: IPython magics and shell
escapes (they are not Python), dunder and private attributes, built-ins that reach code, frames
or files (``getattr``, ``exec``, ``open``...), modules that reach the interpreter or the system
(``sys``, ``os``, ``importlib``...), assignment to attributes (so to modules), class
definitions, ``global``, ``try``/``with``, rebinding a name the course's check and setup cells
use (``ch01``, ``np``, ``print``...), and the course's own kernels for the chapter's exercises.

A rejected cell is never run: its exercise scores zero and the flag names the construct and
the line (see ``gradebook``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AnswerRules", "Rejection", "load_rules", "vet_answer", "course_names"]

RULES_FILE = Path(__file__).with_name("answer_rules.toml")

#: what an answer may hold, said in every rejection so the student knows the fix
ALLOWED = ("answers may hold function definitions, constants and imports of numpy, math, numba "
           "and simtlab.kernels")

# IPython's history and output variables: `_`, `__`, `_i3`, `_oh`, `_ih`, `_dh`...
_IPYTHON_NAME = re.compile(r"^(_+|_i+\d*|_\d+|_oh|_ih|_dh|_ii+)$")


@dataclass(frozen=True)
class Rejection:
    """One construct an answer may not use: where, and what."""

    line: int
    construct: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.construct}"


@dataclass(frozen=True)
class AnswerRules:
    allowed_imports: tuple[str, ...]
    forbidden_names: frozenset[str]
    forbidden_attributes: frozenset[str]
    mutating: frozenset[str]
    numba_only: frozenset[str]
    chapters: dict  # chapter prefix ("03") -> frozenset of forbidden course kernels

    def course_kernels(self, chapter: str) -> frozenset[str]:
        for prefix, names in self.chapters.items():
            if chapter.startswith(prefix):
                return names
        return frozenset()


@functools.lru_cache(maxsize=4)
def load_rules(path: str | Path = RULES_FILE) -> AnswerRules:
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    return AnswerRules(
        allowed_imports=tuple(data["imports"]["allowed"]),
        forbidden_names=frozenset(data["names"]["forbidden"]),
        forbidden_attributes=frozenset(data["attributes"]["forbidden"]),
        mutating=frozenset(data["attributes"]["mutating_through_modules"]),
        numba_only=frozenset(data["attributes"].get("numba_only", [])),
        chapters={k: frozenset(v.get("forbidden", [])) for k, v in data.get("chapters", {}).items()},
    )


def _module_allowed(module: str, rules: AnswerRules) -> bool:
    return any(module == m or module.startswith(m + ".") for m in rules.allowed_imports)


def _allowed_text(rules: AnswerRules) -> str:
    """'numpy, math, numba and simtlab.kernels': the modules an answer may import."""
    names = list(rules.allowed_imports)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def course_names(sources: list[str]) -> tuple[set[str], dict[str, str]]:
    """Names the course's own cells (setup and checks) use or bind, and the modules they import.

    Returns ``(names, imports)``: every identifier in ``sources``, and ``{name: module}`` for
    names bound by ``import``/``from ... import`` (an answer may import the same thing again).
    """
    names: set[str] = set()
    imports: dict[str, str] = {}
    for src in sources:
        text = "\n".join(line for line in src.split("\n") if not line.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    bound = a.asname or a.name.split(".")[0]
                    names.add(bound)
                    imports[bound] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    bound = a.asname or a.name
                    names.add(bound)
                    imports[bound] = f"{node.module}.{a.name}"
    return names, imports


class _Vetter(ast.NodeVisitor):
    def __init__(self, rules: AnswerRules, chapter: str, protected: set[str], course_imports: dict[str, str],
                 own: set[str]):
        self.rules = rules
        self.kernels = rules.course_kernels(chapter)
        self.protected = protected
        self.course_imports = course_imports
        self.own = own  # names the master's own answer binds: the student must bind them
        self.out: list[Rejection] = []
        self.depth = 0  # function nesting
        # names bound to the numba module itself (`numba.jit` is refused, `cuda.jit` is not)
        self.numba_names = {n for n, m in self.course_imports.items() if m == "numba"}

    def bad(self, node, construct: str) -> None:
        self.out.append(Rejection(getattr(node, "lineno", 0), construct))

    # --- bindings at the top of the cell -------------------------------------------------
    def _bind(self, node, name: str, imported: str | None = None) -> None:
        if self.depth:
            return
        if name in self.own:
            return
        if imported is not None and self.course_imports.get(name) == imported:
            return  # `import numpy as np` again: the same binding the setup made
        if name in self.protected:
            self.bad(node, f"rebinds `{name}`, a name the course's setup or check cells use")
        elif hasattr(builtins, name):
            self.bad(node, f"rebinds the built-in `{name}`")

    def _targets(self, target) -> None:
        if isinstance(target, ast.Name):
            self._bind(target, target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._targets(t)
        elif isinstance(target, ast.Starred):
            self._targets(target.value)
        elif isinstance(target, ast.Attribute):
            self.bad(target, f"assignment to an attribute (`.{target.attr} = ...`)")
        elif isinstance(target, ast.Subscript):
            if self.depth == 0:
                self.bad(target, "assignment into an item outside a function")
            elif isinstance(target.value, ast.Attribute):
                self.bad(target, f"assignment into an item of an attribute (`.{target.value.attr}[...] = ...`)")

    # --- statements ------------------------------------------------------------------------
    _TOP = (ast.FunctionDef, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign,
            ast.Expr, ast.Pass)
    _INNER_FORBIDDEN = {
        ast.ClassDef: "a class definition", ast.Global: "`global`", ast.Nonlocal: "`nonlocal`",
        ast.Try: "`try`", ast.With: "`with`", ast.AsyncWith: "`async with`", ast.AsyncFunctionDef:
        "`async def`", ast.AsyncFor: "`async for`", ast.Match: "`match`",
    }

    def visit_Module(self, node):
        for stmt in node.body:
            if not isinstance(stmt, self._TOP):
                name = self._INNER_FORBIDDEN.get(type(stmt)) or f"`{type(stmt).__name__.lower()}` statement"
                self.bad(stmt, f"{name} outside a function")
                continue
            self.visit(stmt)

    def generic_visit(self, node):
        kind = self._INNER_FORBIDDEN.get(type(node))
        if kind:
            self.bad(node, kind)
            return
        if isinstance(node, getattr(ast, "TryStar", ())):
            self.bad(node, "`try`")
            return
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            self.bad(node, f"`{type(node).__name__.lower()}`")
            return
        super().generic_visit(node)

    def visit_FunctionDef(self, node):
        self._bind(node, node.name)
        for dec in node.decorator_list:
            self.visit(dec)
        self.visit(node.args)
        if node.returns:
            self.visit(node.returns)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    def visit_Lambda(self, node):
        self.visit(node.args)
        self.depth += 1
        self.visit(node.body)
        self.depth -= 1

    def visit_arg(self, node):
        self._name(node, node.arg)
        if node.annotation:
            self.visit(node.annotation)

    def visit_Assign(self, node):
        for t in node.targets:
            self._targets(t)
            if not isinstance(t, ast.Name):
                self.visit(t)
        self.visit(node.value)

    def visit_AugAssign(self, node):
        self._targets(node.target)
        if not isinstance(node.target, ast.Name):
            self.visit(node.target)
        self.visit(node.value)

    def visit_AnnAssign(self, node):
        self._targets(node.target)
        self.visit(node.annotation)
        if node.value:
            self.visit(node.value)

    def visit_For(self, node):
        self._targets(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for t in node.targets:
            if isinstance(t, ast.Attribute):
                self.bad(t, f"deleting an attribute (`del ....{t.attr}`)")
            elif self.depth == 0:
                self.bad(t, "`del` outside a function")
        self.generic_visit(node)

    def visit_Import(self, node):
        for a in node.names:
            if not _module_allowed(a.name, self.rules):
                self.bad(node, f"import of `{a.name}` (only {_allowed_text(self.rules)})")
            elif "." in a.name and not a.asname:
                self.bad(node, f"`import {a.name}` binds `{a.name.split('.')[0]}`: write "
                               f"`from {a.name.rsplit('.', 1)[0]} import {a.name.rsplit('.', 1)[1]}`")
            else:
                for part in a.name.split(".")[1:]:
                    self._attribute(node, part)
                self._bind(node, a.asname or a.name, a.name)
                if a.name == "numba":
                    self.numba_names.add(a.asname or a.name)

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level or not _module_allowed(module, self.rules) and not (
                module == "simtlab" and all(a.name == "kernels" for a in node.names)):
            self.bad(node, f"import from `{'.' * node.level}{module}` (only {_allowed_text(self.rules)})")
            return
        for part in module.split(".")[1:]:
            self._attribute(node, part)
        for a in node.names:
            if a.name == "*":
                self.bad(node, f"`from {module} import *`")
                continue
            self._attribute(node, a.name)
            if module == "numba" and a.name in self.rules.numba_only:
                self.bad(node, f"`numba.{a.name}` compiles for the CPU without bounds checks: write `cuda.jit` kernels")
            bound = a.asname or a.name
            self._bind(node, bound, f"{module}.{a.name}")

    # --- expressions -----------------------------------------------------------------------
    def _name(self, node, name: str) -> None:
        if name in self.rules.forbidden_names:
            self.bad(node, f"`{name}` is not allowed in an answer cell")
        elif name.startswith("__") or _IPYTHON_NAME.match(name) and not (name == "_" and self.depth):
            self.bad(node, f"the name `{name}` (dunder and IPython history names are not allowed)")

    def _attribute(self, node, attr: str) -> None:
        if attr.startswith("_"):
            self.bad(node, f"the attribute `.{attr}` (private and dunder attributes are not allowed)")
        elif attr in self.rules.forbidden_attributes:
            self.bad(node, f"the attribute `.{attr}` is not allowed in an answer cell")
        elif attr in self.kernels:
            self.bad(node, f"`{attr}` is the course's own kernel for this exercise: write your own")

    def visit_Name(self, node):
        self._name(node, node.id)
        if isinstance(node.ctx, ast.Store):
            self._bind(node, node.id)

    def visit_Attribute(self, node):
        self._attribute(node, node.attr)
        if node.attr in self.rules.numba_only and isinstance(node.value, ast.Name) \
                and node.value.id in self.numba_names:
            self.bad(node, f"`numba.{node.attr}` compiles for the CPU without bounds checks: write `cuda.jit` kernels")
        self.visit(node.value)

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in self.rules.mutating and isinstance(f.value, ast.Attribute):
            self.bad(node, f"`.{f.attr}(...)` changes an object reached through a module")
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, (str, bytes)):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if "__" in text:
                self.bad(node, "a string holding `__` (a dunder name built at run time)")


def vet_answer(source: str, *, chapter: str = "", protected: set[str] | None = None,
               course_imports: dict[str, str] | None = None, own: set[str] | None = None,
               rules: AnswerRules | None = None) -> list[Rejection]:
    """The constructs of ``source`` an answer may not use (empty: the answer may run).

    ``chapter``: the master's file name (picks the course kernels that are forbidden);
    ``protected``: names the course's setup and check cells use (see :func:`course_names`);
    ``course_imports``: the modules those cells bind; ``own``: names the master's answer binds.
    """
    rules = rules or load_rules()
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        line = (e.text or "").strip()
        what = ("an IPython magic or shell escape" if line.startswith(("%", "!")) or "get_ipython" in line
                else "a syntax error")
        return [Rejection(e.lineno or 0, f"{what}: the cell is not plain Python")]
    except (ValueError, RecursionError, MemoryError) as e:
        return [Rejection(0, f"the cell cannot be parsed ({type(e).__name__})")]
    vetter = _Vetter(rules, chapter, set(protected or ()), dict(course_imports or {}), set(own or ()))
    try:
        vetter.visit(tree)
    except RecursionError:
        return [Rejection(0, "the cell is nested too deeply to read")]
    seen, out = set(), []
    for r in vetter.out:
        if (r.line, r.construct) not in seen:
            seen.add((r.line, r.construct))
            out.append(r)
    return sorted(out, key=lambda r: r.line)


def top_level_bindings(source: str) -> set[str]:
    """Names a (trusted) answer binds at its top level: the master's answer defines these."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for a in stmt.names:
                names.add(a.asname or a.name.split(".")[0])
    return names
