"""PTX text to a ``Module``: entries with their parameters, registers, variables and
instructions, each instruction carrying the CUDA C line of the ``.loc`` before it.

The grammar is ``grammar.PTX_GRAMMAR`` (lark, LALR(1)); the transformer below turns its tree
into plain dataclasses that the executor compiles. A statement outside the grammar raises
``PtxSyntaxError`` with the PTX line.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field

from lark import Lark, Transformer, v_args
from lark.exceptions import LarkError, UnexpectedInput

from .grammar import PTX_GRAMMAR


class PtxSyntaxError(ValueError):
    """PTX the grammar does not accept (the message names the PTX line and the token)."""


# --- operands ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reg:
    name: str                      # "%r3", "%tid.x"


@dataclass(frozen=True)
class NotReg:                      # !%p: the negated predicate as an operand
    name: str


@dataclass(frozen=True)
class RegPair:                     # %r11|%p6: shfl's value and its in-range predicate
    first: str
    second: str


@dataclass(frozen=True)
class Imm:
    value: int | float
    text: str                      # as written: 0f3F800000, -1, 0x10


@dataclass(frozen=True)
class Symbol:
    name: str                      # a variable (shared array, const bank), a label, a param


@dataclass(frozen=True)
class Address:
    base: str | None               # register ("%rd3") or symbol ("c_weights"), None: absolute
    offset: int
    base_is_reg: bool


@dataclass(frozen=True)
class Vector:
    items: tuple


@dataclass(frozen=True)
class TensorAddress:               # [%rd2, {%r1, %r2}]: a tensor map and a box's coordinates
    base: str                      # register or symbol holding the tensor map's address
    coords: tuple                  # operands, innermost dimension first
    base_is_reg: bool


# --- statements ----------------------------------------------------------------------------------
@dataclass
class Instruction:
    opcode: str                    # "ld.global.nc.v4.f32"
    operands: tuple
    guard: str | None = None       # "%p1"
    guard_negated: bool = False
    line: int = 0                  # CUDA C line (.loc), 0 when none came before
    file: int = 0                  # .file index of that line
    ptx_line: int = 0              # line in the PTX text

    @property
    def parts(self) -> list:
        return self.opcode.split(".")

    def __str__(self):
        guard = f"@{'!' if self.guard_negated else ''}{self.guard} " if self.guard else ""
        return f"{guard}{self.opcode} {', '.join(_operand_text(o) for o in self.operands)}"


def _operand_text(op) -> str:
    if isinstance(op, Reg):
        return op.name
    if isinstance(op, NotReg):
        return "!" + op.name
    if isinstance(op, RegPair):
        return f"{op.first}|{op.second}"
    if isinstance(op, Imm):
        return op.text
    if isinstance(op, Symbol):
        return op.name
    if isinstance(op, Address):
        inner = op.base if op.base is not None else ""
        if op.offset or op.base is None:
            inner += f"+{op.offset}" if op.base is not None else str(op.offset)
        return f"[{inner}]"
    if isinstance(op, Vector):
        return "{" + ", ".join(_operand_text(o) for o in op.items) + "}"
    if isinstance(op, TensorAddress):
        return f"[{op.base}, {{{', '.join(_operand_text(o) for o in op.coords)}}}]"
    return str(op)


@dataclass
class Variable:
    name: str
    space: str                     # "shared", "const", "global", "local"
    type: str                      # "b8", "u32", ...
    align: int
    count: int | None              # elements (None: unsized, extern .shared x[])
    extern: bool = False
    init: tuple | None = None

    @property
    def itemsize(self) -> int:
        return type_size(self.type)

    @property
    def nbytes(self) -> int:
        return (self.count or 0) * self.itemsize


@dataclass
class Param:
    name: str
    type: str                      # "u64", "s32", "f32", "b8" (with count: a struct)
    align: int = 0
    count: int | None = None
    pointer_space: str | None = None   # .ptr .global: what NVRTC says a pointer points to


@dataclass
class Entry:
    name: str
    kind: str                      # "entry" or "func"
    params: list
    registers: dict                # name -> type ("%r3" -> "b32"); ranges expanded
    variables: list                # .shared/.local/.const declared inside the body
    instructions: list
    labels: dict                   # label -> index of the instruction after it
    directives: dict = field(default_factory=dict)   # .maxntid and friends


@dataclass
class Module:
    version: str
    target: str
    address_size: int
    entries: dict                  # name -> Entry (kernels and device functions)
    variables: list                # module-level .shared/.const/.global
    files: dict                    # .file index -> path


TYPE_SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
              "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16, "pred": 1}


def type_size(t: str) -> int:
    return TYPE_SIZES[t]


def _int(text: str) -> int:
    text = str(text).rstrip("U")
    neg = text.startswith("-")
    body = text[1:] if neg else text
    if body[:2] in ("0x", "0X"):
        value = int(body, 16)
    elif len(body) > 1 and body.startswith("0"):
        value = int(body, 8)
    else:
        value = int(body)
    return -value if neg else value


class _ToModel(Transformer):
    """Parse tree -> dataclasses (applied inside lark's LALR parser: no tree is kept)."""

    def __init__(self):
        super().__init__()
        self.loc_line = 0
        self.loc_file = 0
        self.user_files: set = set()     # .file indices whose code runs un-inlined
        self.origin: dict = {}           # (file, line) -> the user position it stands for

    # operands
    @v_args(inline=True)
    def reg(self, tok):
        return Reg(str(tok))

    @v_args(inline=True)
    def not_reg(self, _bang, tok):
        return NotReg(str(tok))

    @v_args(inline=True)
    def reg_pair(self, a, b):
        return RegPair(str(a), str(b))

    @v_args(inline=True)
    def symbol(self, tok):
        return Symbol(str(tok))

    @v_args(inline=True)
    def immediate(self, tok):
        text = str(tok)
        if tok.type in ("FLOAT_HEX", "DOUBLE_HEX"):
            return Imm(int(text[2:], 16), text)       # the bits; the executor views them
        return Imm(_int(text), text)

    @v_args(inline=True)
    def memory(self, address):
        return address

    def addr_expr(self, items):
        if len(items) == 1 and items[0].type == "INT":
            return Address(None, _int(items[0]), False)
        base = items[0]
        offset = _int(items[1]) if len(items) > 1 else 0
        return Address(str(base), offset, base.type == "REG")

    def vector(self, items):
        return Vector(tuple(items))

    def tensor_memory(self, items):
        base = items[0]
        return TensorAddress(str(base), tuple(items[1:]), base.type == "REG")

    # statements
    @v_args(inline=True)
    def guard(self, *items):
        negated = len(items) == 2
        return (str(items[-1]), negated)

    def instruction(self, items):
        guard = None
        if items and isinstance(items[0], tuple):
            guard = items[0]
            items = items[1:]
        opcode = items[0]
        ins = Instruction(str(opcode), tuple(items[1:]), line=self.loc_line, file=self.loc_file,
                          ptx_line=opcode.line)
        if guard is not None:
            ins.guard, ins.guard_negated = guard
        return ins

    def loc(self, items):
        # line 0 is DWARF's "no source line" (code the compiler made up, e.g. a loop's
        # shared exit): its instructions stay with the line before them
        if int(items[1]) != 0:
            self.loc_file, self.loc_line = self._user_position(items)
        return None

    def _user_position(self, items):
        """``(file, line)`` an instruction is attributed to: its own, in a file whose code
        runs un-inlined (the kernel's source: its device functions keep their own lines, as
        the numba twins' traces have them); for code inlined from a header (cuda_fp16.h,
        cooperative_groups.h), the kernel's line that called into it, followed through the
        chain of ``inlined_at`` positions."""
        here = (int(items[0]), int(items[1]))
        if len(items) < 6:                              # no inlined_at: the kernel's own code
            self.user_files.add(here[0])
            pos = here
        elif here[0] in self.user_files:
            pos = here
        else:
            caller = (int(items[-3]), int(items[-2]))
            pos = self.origin.get(caller, caller)
        self.origin[here] = pos
        return pos

    @v_args(inline=True)
    def label(self, tok):
        return ("label", str(tok)[:-1])

    def reg_name(self, items):
        name = str(items[0])
        return (name, int(items[1]) if len(items) > 1 else None)

    def reg_decl(self, items):
        items = [i for i in items if not (hasattr(i, "type") and i.type == "VEC_TYPE")]
        if any(hasattr(i, "type") and i.type == "VEC_TYPE" for i in items):
            raise PtxSyntaxError("vector registers (.reg .v4) are not supported")
        rtype = str(items[0])[1:]
        names = {}
        for name, count in items[1:]:
            if count is None:
                names[name] = rtype
            else:
                for i in range(count):
                    names[f"{name}{i}"] = rtype
        return ("regs", names)

    def pragma(self, items):
        return None

    def body(self, items):
        out = []
        for item in items:
            if isinstance(item, list):                 # a nested { } block: same scope here
                out.extend(item)
            elif item is not None:
                out.append(item)
        return out

    # declarations
    @v_args(inline=True)
    def align(self, tok):
        return ("align", _int(tok))

    def dim(self, items):
        return _int(items[0]) if items else None

    def dims(self, items):
        return items

    def var_name(self, items):
        return ("name", str(items[0]))

    def scalar_init(self, items):
        tok = items[0]
        if tok.type in ("FLOAT_HEX", "DOUBLE_HEX"):
            return int(str(tok)[2:], 16)
        if tok.type == "INT":
            return _int(tok)
        return str(tok)                                 # an address of another variable

    def init_list(self, items):
        flat = []
        for item in items:
            flat.extend(item if isinstance(item, list) else [item])
        return flat

    def initializer(self, items):
        item = items[0]
        return ("init", tuple(item if isinstance(item, list) else [item]))

    def var_decl(self, items):
        extern, space, align, vtype, dtype, name, count, init = False, None, 0, None, None, None, 1, None
        for item in items:
            if isinstance(item, tuple):
                if item[0] == "align":
                    align = item[1]
                elif item[0] == "name":
                    name = item[1]
                elif item[0] == "init":
                    init = item[1]
            elif isinstance(item, list):                  # dims
                count = 1
                for d in item:
                    count = None if d is None or count is None else count * d
            elif item.type == "LINKAGE":
                extern = extern or str(item) == ".extern"
            elif item.type == "STATE_SPACE":
                space = str(item)[1:]
            elif item.type == "VEC_TYPE":
                vtype = int(str(item)[2:])
            elif item.type == "DATA_TYPE":
                dtype = str(item)[1:]
        if vtype and count is not None:
            count *= vtype
        return Variable(name, space, dtype, align or type_size(dtype), count, extern, init)

    def module_var(self, items):
        return items[0]

    def param_decl(self, items):
        return None                     # a call's argument slots (the call itself is refused)

    def local_var(self, items):
        return items[0]

    def param_attr(self, items):
        item = items[0]
        if isinstance(item, tuple):
            return item
        return ("space", str(item)[1:]) if item.type == "STATE_SPACE" else ("ptr", True)

    def param(self, items):
        align, dtype, name, count, space = 0, None, None, None, None
        for item in items:
            if isinstance(item, tuple):
                if item[0] == "align":
                    align = item[1]
                elif item[0] == "space":
                    space = item[1]
            elif isinstance(item, list):
                count = 1
                for d in item:
                    count *= d or 0
            elif item.type == "DATA_TYPE":
                dtype = str(item)[1:]
            elif item.type == "IDENT":
                name = str(item)
        return Param(name, dtype, align, count, space)

    def return_params(self, items):
        return ("returns", items)

    def perf_directive(self, items):
        if not items:
            return ("directive", "noreturn", ())
        return ("directive", str(items[0])[1:], tuple(_int(i) for i in items[1:]))

    def explicit_cluster(self, items):
        return ("directive", "explicitcluster", ())

    def function(self, items):
        kind, name, params, directives, statements = None, None, [], {}, None
        for item in items:
            if isinstance(item, Param):
                params.append(item)
            elif isinstance(item, list):
                statements = item
            elif isinstance(item, tuple):
                if item[0] == "directive":
                    directives[item[1]] = item[2]
                elif item[0] == "returns":
                    directives["returns"] = item[1]
            elif item is None:
                continue
            elif item.type == "KERNEL_KIND":
                kind = str(item)[1:]
            elif item.type == "IDENT":
                name = str(item)
        if statements is None:            # a declaration (extern .func): no body
            return ("declaration", name)
        registers, variables, instructions, labels = {}, [], [], {}
        for st in statements:
            if isinstance(st, Instruction):
                instructions.append(st)
            elif isinstance(st, Variable):
                variables.append(st)
            elif st[0] == "regs":
                registers.update(st[1])
            elif st[0] == "label":
                labels[st[1]] = len(instructions)
        return Entry(name, kind, params, registers, variables, instructions, labels, directives)

    @v_args(inline=True)
    def version(self, tok):
        return ("version", str(tok))

    def target(self, items):
        return ("target", ",".join(str(i) for i in items))

    @v_args(inline=True)
    def address_size(self, tok):
        return ("address_size", int(tok))

    def file(self, items):
        return ("file", int(items[0]), str(items[1]).strip('"'))

    def section(self, items):
        return None

    def start(self, items):
        version, target, asize, entries, variables, files = "", "", 64, {}, [], {}
        for item in items:
            if isinstance(item, Entry):
                entries[item.name] = item
            elif isinstance(item, Variable):
                variables.append(item)
            elif isinstance(item, tuple):
                if item[0] == "version":
                    version = item[1]
                elif item[0] == "target":
                    target = item[1]
                elif item[0] == "address_size":
                    asize = item[1]
                elif item[0] == "file":
                    files[item[1]] = item[2]
        return Module(version, target, asize, entries, variables, files)


_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _parser():
    """One LALR parser whose transformer builds the model while parsing (no tree kept)."""
    transformer = _ToModel()
    return Lark(PTX_GRAMMAR, parser="lalr", lexer="contextual", transformer=transformer,
                maybe_placeholders=False), transformer


@functools.lru_cache(maxsize=32)
def parse_module(ptx: str) -> Module:
    """Parse a PTX module (cached per text: a source compiled once is parsed once)."""
    lalr, transformer = _parser()
    with _LOCK:                            # the transformer holds the current .loc
        transformer.loc_line = transformer.loc_file = 0
        transformer.user_files, transformer.origin = set(), {}
        try:
            return lalr.parse(ptx)
        except UnexpectedInput as exc:
            context = exc.get_context(ptx).rstrip()
            raise PtxSyntaxError(f"PTX line {exc.line}, column {exc.column}: not in the PTX "
                                 f"grammar this engine reads:\n{context}") from None
        except LarkError as exc:
            raise PtxSyntaxError(f"PTX could not be parsed: {exc}") from None
