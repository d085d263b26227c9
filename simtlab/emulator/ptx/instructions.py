"""PTX instructions compiled to functions over lane vectors.

``compile_entry(entry, layout)`` turns each parsed instruction into a ``Step``: its kind (how
the executor moves the program counter: "op", "bra", "exit", "bar", "wait") and ``run(chunk, m)``,
which executes it for the active lanes ``m`` (a boolean vector, or None: every lane of the
chunk). Registers are NumPy vectors of their declared type; an instruction reads them as its
own type (same size: a view of the bits; another size: truncated or extended as PTX says).

An instruction this module does not know compiles to a step that raises
``UnsupportedInstruction`` naming it and its CUDA C line when a lane reaches it, so a kernel
whose unsupported instructions are never reached still runs, and no instruction is ever
skipped or approximated silently.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...simt import ATOMIC, READ, WARP_SIZE, WRITE
from . import numerics as fp
from . import tensor_ops
from . import tma, wgmma
from .memory import (CONST_WINDOW, GLOBAL_BASE, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW,
                     WINDOW_SIZE, cluster_address)
from .parser import Address, Imm, NotReg, Reg, RegPair, Symbol, Vector, type_size


class UnsupportedInstruction(Exception):
    """Raised (as an EmulationError by the executor) for an instruction the engine lacks."""


DTYPES = {"b8": np.uint8, "u8": np.uint8, "s8": np.int8, "b16": np.uint16, "u16": np.uint16,
          "s16": np.int16, "b32": np.uint32, "u32": np.uint32, "s32": np.int32,
          "b64": np.uint64, "u64": np.uint64, "s64": np.int64, "f32": np.float32,
          "f64": np.float64, "pred": np.bool_}
HALF = ("f16", "bf16")         # 16-bit floats: their bits in .b16 registers (numerics.half_*)
# a .f16/.bf16 register, load, store or move holds the bits; every other instruction of these
# types goes to h_half (_compile), never to an integer rule
DTYPES.update({"f16": np.uint16, "bf16": np.uint16})
DTYPES = {k: np.dtype(v) for k, v in DTYPES.items()}
UNSIGNED = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
            8: np.dtype(np.uint64)}
SIGNED = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32),
          8: np.dtype(np.int64)}
ROUNDING = ("rn", "rz", "rm", "rp")
INT_ROUNDING = ("rni", "rzi", "rmi", "rpi")
SPACES = ("global", "shared", "local", "const", "param")
# qualifiers that change nothing in an emulator that runs one access at a time, in order
# (caches, eviction hints, memory-model scopes and orders: every access is seen at once)
NO_EFFECT = {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "acquire",
             "release", "acq_rel", "weak", "sc", "cta", "gpu", "sys", "cluster", "uni",
             "aligned", "sync", "L1::evict_last", "L1::no_allocate"}


@dataclass
class Step:
    kind: str                  # "op", "bra", "exit", "bar", "wait"
    run: object                # run(chunk, m); a "wait": the lanes that must wait (or None)
    ins: object                # the parsed Instruction
    target: int = -1           # bra: instruction index of the label
    talks: bool = False        # atomics, fences, acquire/release: blocks may talk
    scope: str = "cta"         # bar: the threads it waits for ("cta": the block, "cluster")
    retry: bool = True         # wait: a waiting lane runs the step again (False: goes on after)


@dataclass
class Layout:
    """Where a kernel's named variables are: shared offsets, const/global addresses, params."""

    shared: dict               # name -> offset in the block's shared space
    const: dict                # name -> address in the const space
    globals_: dict             # name -> device address of a module .global variable
    params: dict               # name -> (type, size)
    registers: dict            # register name -> type
    local: dict = None         # name -> offset in each thread's local space (__local_depot)
    param_offsets: dict = None  # name -> offset of a kernel parameter in the param space


def dtype_of(t: str) -> np.dtype:
    try:
        return DTYPES[t]
    except KeyError:
        raise UnsupportedInstruction(f"the type .{t}") from None


def as_type(arr, t: str):
    """A register vector (or scalar) read as PTX type ``t``: a view when the sizes match,
    otherwise truncated (narrower) or zero/sign-extended (wider) as PTX operands are."""
    dt = dtype_of(t)
    arr = np.asarray(arr)
    if arr.dtype == dt:
        return arr
    if dt == np.bool_:
        return arr != 0
    if arr.dtype == np.bool_:
        return arr.astype(dt)
    if arr.dtype.itemsize == dt.itemsize:
        return arr.view(dt)
    if arr.dtype.itemsize > dt.itemsize:                 # truncate to the low bits
        return arr.view(UNSIGNED[arr.dtype.itemsize]).astype(UNSIGNED[dt.itemsize]).view(dt)
    src = arr.view(SIGNED[arr.dtype.itemsize] if t.startswith("s") else
                   UNSIGNED[arr.dtype.itemsize])
    return src.astype(SIGNED[dt.itemsize] if t.startswith("s") else UNSIGNED[dt.itemsize]).view(dt)


# --- operands ------------------------------------------------------------------------------------
SPECIAL = {"%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x",
           "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid",
           "%nwarpid", "%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt",
           "%lanemask_ge", "%cluster_ctarank", "%cluster_nctarank", "%clusterid.x",
           "%clusterid.y", "%clusterid.z", "%nclusterid.x", "%nclusterid.y", "%nclusterid.z",
           "%cluster_ctaid.x", "%cluster_ctaid.y", "%cluster_ctaid.z", "%cluster_nctaid.x",
           "%cluster_nctaid.y", "%cluster_nctaid.z", "%is_explicit_cluster"}


def imm_value(op: Imm, t: str):
    """An immediate as a 0-d array of type ``t`` (hex floats are bits; integers wrap)."""
    dt = dtype_of(t)
    text = op.text.lower()
    if text.startswith("0f"):
        v = np.array(op.value, np.uint32).view(np.float32)
        return v.astype(dt) if dt.kind == "f" else v.view(dt) if dt.itemsize == 4 else v
    if text.startswith("0d"):
        v = np.array(op.value, np.uint64).view(np.float64)
        return v.astype(dt) if dt.kind == "f" else v
    if dt.kind == "f":
        return np.array(float(op.value), dt)
    if dt == np.bool_:
        return np.array(bool(op.value))
    bits = int(op.value) & ((1 << (8 * dt.itemsize)) - 1)
    return np.array(bits, UNSIGNED[dt.itemsize]).view(dt)


def _scoped_register(op, layout: Layout):
    """A register of a nested ``{ }`` block is declared and written by a plain name (inline
    PTX's ``.reg .pred p;``), which the grammar reads as a symbol: it is that register."""
    if isinstance(op, Symbol) and layout is not None and op.name in layout.registers:
        return Reg(op.name)
    return op


def reader(op, t: str, layout: Layout):
    """``f(chunk)`` giving the operand's value as PTX type ``t`` for every lane."""
    op = _scoped_register(op, layout)
    if isinstance(op, Reg):
        name = op.name
        if name == "%globaltimer":                   # the GPU's nanosecond wall clock
            return lambda c: as_type(np.array(time.time_ns(), np.uint64), t)
        if name in SPECIAL:
            return lambda c: as_type(c.special(name), t)
        if name not in layout.registers:
            raise UnsupportedInstruction(f"the register {name}")
        rt = layout.registers[name]
        if dtype_of(rt) == dtype_of(t):
            return lambda c: c.regs[name]
        return lambda c: as_type(c.regs[name], t)
    if isinstance(op, NotReg):
        name = op.name
        return lambda c: ~c.regs[name]
    if isinstance(op, Imm):
        value = imm_value(op, t)
        return lambda c: value
    if isinstance(op, Symbol):                       # the address of a variable
        addr = symbol_address(op.name, layout)
        value = as_type(np.array(addr, np.uint64), t)
        return lambda c: value
    raise UnsupportedInstruction(f"the operand {op}")


def symbol_address(name: str, layout: Layout) -> int:
    """A variable's address in its own state space (what ``mov %r, sym`` gives)."""
    if name in layout.shared:
        return layout.shared[name]
    if layout.param_offsets and name in layout.param_offsets:
        return layout.param_offsets[name]            # a kernel parameter (cvta.param: generic)
    if name in layout.const:
        return layout.const[name]
    if name in layout.globals_:
        return layout.globals_[name]
    if layout.local and name in layout.local:
        return layout.local[name]
    raise UnsupportedInstruction(f"the symbol {name}")


def writer(op, t: str, layout: Layout):
    """``f(chunk, value, m)`` storing a value of PTX type ``t`` into the register ``op``."""
    if isinstance(op, Symbol) and op.name == "_":
        return lambda c, v, m: None                  # the sink
    op = _scoped_register(op, layout)
    if not isinstance(op, Reg) or op.name not in layout.registers:
        raise UnsupportedInstruction(f"the destination {op}")
    name = op.name
    rt = layout.registers[name]
    if dtype_of(rt) == dtype_of(t):
        return lambda c, v, m: c.put(name, v, m)
    return lambda c, v, m: c.put(name, to_register(v, t, rt), m)


def to_register(v, t: str, rt: str):
    """A value of PTX type ``t`` as the register type ``rt``: a narrower value is zero- or
    sign-extended by its own type (ld.s8 into a .b16 register keeps its sign)."""
    v = np.asarray(v)
    if dtype_of(t).itemsize < dtype_of(rt).itemsize and t[0] == "s":
        v = as_type(v, f"s{8 * dtype_of(rt).itemsize}")
    return as_type(v, rt)


# --- compile -------------------------------------------------------------------------------------
def compile_entry(entry, layout: Layout) -> list:
    steps = []
    for ins in entry.instructions:
        try:
            step = _compile(ins, entry, layout)
        except UnsupportedInstruction as why:
            step = Step("op", _raiser(ins, str(why)), ins)
        step.ins = ins
        if ins.guard is not None and step.kind == "op":
            step.run = _guarded(step.run, ins.guard, ins.guard_negated)
        elif ins.guard is not None and step.kind == "wait":
            step.run = _guarded_wait(step.run, ins.guard, ins.guard_negated)
        elif ins.guard is not None and step.kind == "bar":
            step = Step("op", _raiser(ins, "a predicated barrier"), ins)
        steps.append(step)
    return steps


def _raiser(ins, why):
    def run(c, m):
        raise UnsupportedInstruction(f"the PTX engine does not run `{ins}` yet ({why})")
    return run


def _guarded(run, pred, negated):
    def guarded(c, m):
        g = c.regs[pred]
        if negated:
            g = ~g
        mm = g if m is None else (m & g)
        if mm.any():
            run(c, mm)
    return guarded


def _guarded_wait(run, pred, negated):
    """A predicated wait: the lanes whose guard is false go on."""
    def guarded(c, m):
        g = c.regs[pred]
        if negated:
            g = ~g
        mm = g if m is None else (m & g)
        return run(c, mm) if mm.any() else None
    return guarded


def _compile(ins, entry, layout) -> Step:
    parts = ins.parts
    op = parts[0]
    tensor = tensor_ops.handler_for(parts)          # mma, ldmatrix, wmma, cvt to .tf32
    if tensor is None:                              # wgmma, mbarrier, cp.async.bulk (Hopper)
        tensor = wgmma.HANDLERS.get(op) or tma.handler_for(parts)
    if tensor is not None:
        return tensor(ins, parts[1:], entry, layout)
    if parts[-1] in HALF and op not in ("ld", "st", "cvt", "mov"):
        return h_half(ins, parts[1:], entry, layout)
    handler = _HANDLERS.get(op) or _REFUSED.get(op)
    if handler is None:
        raise UnsupportedInstruction(f"no rule for `{op}`")
    return handler(ins, parts[1:], entry, layout)


def _mods_type(mods):
    """``(set of modifiers, type)`` from an opcode's parts after the operation."""
    return set(mods[:-1]), mods[-1]


def _check_mods(mods, allowed, ins):
    extra = set(mods) - set(allowed)
    if extra:
        raise UnsupportedInstruction(f"the modifier(s) .{', .'.join(sorted(extra))}")


def _op(run):
    return Step("op", run, None)


# --- integer and float arithmetic ---------------------------------------------------------------
def _binary(ins, mods, entry, layout, fn):
    d, a, b = ins.operands
    _, t = _mods_type(mods)
    ra, rb, w = reader(a, t, layout), reader(b, t, layout), writer(d, t, layout)
    return _op(lambda c, m: w(c, fn(ra(c), rb(c)), m))


def _float_mode(mods, t, ins):
    mode = [x for x in mods if x in ROUNDING]
    return mode[0] if mode else "rn"


def _finish_float(v, mods, t):
    if "ftz" in mods and t == "f32":
        v = fp.ftz32(v)
    if "sat" in mods:
        v = fp.saturate(v)
    return v


def _ftz_in(v, mods, t):
    return fp.ftz32(v) if "ftz" in mods and t == "f32" else v


def h_add_sub(sign):
    def handler(ins, mods, entry, layout):
        flags, t = _mods_type(mods)
        dt = dtype_of(t)
        if dt.kind == "f":
            _check_mods(flags, ROUNDING + ("ftz", "sat"), ins)
            mode = _float_mode(flags, t, ins)
            if mode != "rn" and t != "f32":
                raise UnsupportedInstruction(f".{mode} on .{t}")
            def fn(x, y):
                x, y = _ftz_in(x, flags, t), _ftz_in(y, flags, t)
                y = y if sign > 0 else -y
                r = fp.add_f32(x, y, mode) if t == "f32" else (x + y).astype(dt)
                return _finish_float(np.asarray(r, dt), flags, t)
        else:
            _check_mods(flags, ("sat",) if t == "s32" else (), ins)
            if "sat" in flags:
                def fn(x, y):
                    r = x.astype(np.int64) + sign * y.astype(np.int64)
                    return np.clip(r, -2**31, 2**31 - 1).astype(np.int32)
            else:
                fn = (lambda x, y: np.add(x, y, dtype=dt)) if sign > 0 else \
                    (lambda x, y: np.subtract(x, y, dtype=dt))
        return _binary(ins, mods, entry, layout, fn)
    return handler


def _wide_type(t):
    return ("s" if t[0] == "s" else "u") + str(2 * int(t[1:]))


def h_mul(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    dt = dtype_of(t)
    if dt.kind == "f":
        _check_mods(flags, ROUNDING + ("ftz", "sat"), ins)
        mode = _float_mode(flags, t, ins)
        if mode != "rn" and t != "f32":
            raise UnsupportedInstruction(f".{mode} on .{t}")
        def fn(x, y):
            x, y = _ftz_in(x, flags, t), _ftz_in(y, flags, t)
            r = fp.mul_f32(x, y, mode) if t == "f32" else (x * y).astype(dt)
            return _finish_float(np.asarray(r, dt), flags, t)
        return _binary(ins, mods, entry, layout, fn)
    _check_mods(flags, ("lo", "hi", "wide"), ins)
    if "wide" in flags:
        d, a, b = ins.operands
        wt = _wide_type(t)
        wdt = dtype_of(wt)
        ra, rb, w = reader(a, t, layout), reader(b, t, layout), writer(d, wt, layout)
        return _op(lambda c, m: w(c, np.multiply(ra(c).astype(wdt), rb(c).astype(wdt),
                                                 dtype=wdt), m))
    if "hi" in flags:
        return _binary(ins, mods, entry, layout, lambda x, y: mul_hi(x, y, t))
    return _binary(ins, mods, entry, layout, lambda x, y: np.multiply(x, y, dtype=dt))


def mul_hi(x, y, t):
    """The high half of the full product."""
    size = int(t[1:])
    signed = t[0] == "s"
    if size <= 32:
        wide = np.int64 if signed else np.uint64
        p = np.multiply(np.asarray(x).astype(wide), np.asarray(y).astype(wide))
        return (p >> size).astype(dtype_of(t))
    ux, uy = np.asarray(x).view(np.uint64), np.asarray(y).view(np.uint64)
    lo32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    xl, xh, yl, yh = ux & lo32, ux >> s32, uy & lo32, uy >> s32
    ll, lh, hl, hh = xl * yl, xl * yh, xh * yl, xh * yh
    mid = (ll >> s32) + (lh & lo32) + (hl & lo32)
    hi = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    if signed:                     # two's complement correction of the unsigned product
        hi = hi - np.where(np.asarray(x) < 0, uy, np.uint64(0)) \
            - np.where(np.asarray(y) < 0, ux, np.uint64(0))
    return hi.view(dtype_of(t))


def h_mad(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    dt = dtype_of(t)
    if dt.kind == "f":
        return h_fma(ins, mods, entry, layout)
    _check_mods(flags, ("lo", "hi", "wide"), ins)
    d, a, b, cc = ins.operands
    if "wide" in flags:
        wt = _wide_type(t)
        wdt = dtype_of(wt)
        ra, rb, rc, w = (reader(a, t, layout), reader(b, t, layout), reader(cc, wt, layout),
                         writer(d, wt, layout))
        return _op(lambda c, m: w(c, np.add(np.multiply(ra(c).astype(wdt), rb(c).astype(wdt),
                                                        dtype=wdt), rc(c), dtype=wdt), m))
    ra, rb, rc, w = (reader(a, t, layout), reader(b, t, layout), reader(cc, t, layout),
                     writer(d, t, layout))
    if "hi" in flags:
        return _op(lambda c, m: w(c, np.add(mul_hi(ra(c), rb(c), t), rc(c), dtype=dt), m))
    return _op(lambda c, m: w(c, np.add(np.multiply(ra(c), rb(c), dtype=dt), rc(c), dtype=dt), m))


def h_fma(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    _check_mods(flags, ROUNDING + ("ftz", "sat"), ins)
    mode = _float_mode(flags, t, ins)
    d, a, b, cc = ins.operands
    ra, rb, rc, w = (reader(a, t, layout), reader(b, t, layout), reader(cc, t, layout),
                     writer(d, t, layout))
    if t == "f32":
        def fn(x, y, z):
            x, y, z = (_ftz_in(v, flags, t) for v in (x, y, z))
            return _finish_float(fp.fma_f32(x, y, z, mode), flags, t)
    elif t == "f64" and mode == "rn":
        def fn(x, y, z):
            return _finish_float(fp.fma_f64(x, y, z), flags, t)
    else:
        raise UnsupportedInstruction(f"fma.{mode}.{t}")
    return _op(lambda c, m: w(c, fn(ra(c), rb(c), rc(c)), m))


def h_div(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    dt = dtype_of(t)
    if dt.kind == "f":
        if t == "f32" and flags & {"approx", "full"}:
            _check_mods(flags, ("approx", "full", "ftz"), ins)
            how = "approx" if "approx" in flags else "full"
            return _binary(ins, mods, entry, layout,
                           lambda x, y: fp.div_approx_f32(x, y, how, "ftz" in flags))
        _check_mods(flags, ("rn", "ftz"), ins)
        if "rn" not in flags:
            raise UnsupportedInstruction("a division without .rn, .approx or .full")
        return _binary(ins, mods, entry, layout,
                       lambda x, y: _finish_float(np.divide(_ftz_in(x, flags, t),
                                                            _ftz_in(y, flags, t), dtype=dt),
                                                  flags, t))
    return _int_division(ins, mods, entry, layout, "div")


def _int_division(ins, mods, entry, layout, kind):
    d, a, b = ins.operands
    _, t = _mods_type(mods)
    dt = dtype_of(t)
    ra, rb, w = reader(a, t, layout), reader(b, t, layout), writer(d, t, layout)

    def run(c, m):
        x, y = np.broadcast_arrays(ra(c), rb(c))
        act = np.ones(len(x), bool) if m is None else m
        if (y[act] == 0).any():
            lane = int(np.flatnonzero(act & (y == 0))[0])
            raise c.error_at(lane, f"integer {kind}ision by zero in `{ins}` (undefined in CUDA C)", ins)
        safe = np.where(y == 0, 1, y).astype(dt)
        if dt.kind == "u":
            r = x // safe if kind == "div" else x % safe
        else:                                       # C: truncate toward zero
            r = np.fmod(x, safe) if kind == "rem" else \
                (np.abs(x.astype(np.int64) if dt.itemsize < 8 else x) //
                 np.abs(safe.astype(np.int64) if dt.itemsize < 8 else safe)
                 * np.sign(x) * np.sign(safe))
        w(c, np.asarray(r).astype(dt), m)
    return _op(run)


def h_rem(ins, mods, entry, layout):
    return _int_division(ins, mods, entry, layout, "rem")


def h_minmax(kind):
    def handler(ins, mods, entry, layout):
        flags, t = _mods_type(mods)
        dt = dtype_of(t)
        if dt.kind == "f":
            _check_mods(flags, ("ftz", "NaN"), ins)
            if "NaN" in flags:
                f = np.minimum if kind == "min" else np.maximum
            else:
                f = np.fmin if kind == "min" else np.fmax      # a NaN loses to a number
            return _binary(ins, mods, entry, layout,
                           lambda x, y: _finish_float(f(_ftz_in(x, flags, t),
                                                        _ftz_in(y, flags, t)).astype(dt),
                                                      flags, t))
        _check_mods(flags, (), ins)
        f = np.minimum if kind == "min" else np.maximum
        return _binary(ins, mods, entry, layout, lambda x, y: f(x, y).astype(dt))
    return handler


def _unary(ins, mods, entry, layout, fn):
    d, a = ins.operands
    _, t = _mods_type(mods)
    ra, w = reader(a, t, layout), writer(d, t, layout)
    return _op(lambda c, m: w(c, fn(ra(c)), m))


def h_neg(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    _check_mods(flags, ("ftz",), ins)
    dt = dtype_of(t)
    return _unary(ins, mods, entry, layout,
                  lambda x: _finish_float(-_ftz_in(x, flags, t), flags, t) if dt.kind == "f"
                  else np.negative(x, dtype=dt))


def h_abs(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    _check_mods(flags, ("ftz",), ins)
    dt = dtype_of(t)
    return _unary(ins, mods, entry, layout,
                  lambda x: _finish_float(np.abs(_ftz_in(x, flags, t)), flags, t)
                  if dt.kind == "f" else np.abs(x).astype(dt))


def h_bitwise(kind):
    fns = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
    def handler(ins, mods, entry, layout):
        flags, t = _mods_type(mods)
        _check_mods(flags, (), ins)
        if kind == "not":
            return _unary(ins, mods, entry, layout, np.invert)
        return _binary(ins, mods, entry, layout, fns[kind])
    return handler


def h_shift(kind):
    def handler(ins, mods, entry, layout):
        flags, t = _mods_type(mods)
        _check_mods(flags, (), ins)
        d, a, b = ins.operands
        dt = dtype_of(t)
        bits = 8 * dt.itemsize
        ra, rb, w = reader(a, t, layout), reader(b, "u32", layout), writer(d, t, layout)

        def run(c, m):
            x, n = ra(c), rb(c).astype(np.int64)
            over = n >= bits                      # PTX clamps the shift amount to the width
            s = np.minimum(n, bits - 1).astype(dt)
            if kind == "shl":
                r = np.where(over, 0, np.left_shift(x, s))
            elif t[0] == "s":                     # arithmetic: fills with the sign
                r = np.right_shift(x, s)
                r = np.where(over, np.where(x < 0, -1, 0), r)
            else:
                r = np.where(over, 0, np.right_shift(x, s))
            w(c, np.asarray(r).astype(dt), m)
        return _op(run)
    return handler


# --- moves and conversions -----------------------------------------------------------------------
def h_mov(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    d, a = ins.operands
    if isinstance(a, Vector) or isinstance(d, Vector):
        return _pack_unpack(ins, d, a, t, layout)
    ra, w = reader(a, t, layout), writer(d, t, layout)
    return _op(lambda c, m: w(c, ra(c), m))


def _pack_unpack(ins, d, a, t, layout):
    """mov.b64 %rd, {%r1, %r2} (pack: element 0 in the low bits) and its reverse."""
    size = type_size(t)
    if isinstance(a, Vector):
        part = f"b{8 * size // len(a.items)}"
        reads = [reader(x, part, layout) for x in a.items]
        w = writer(d, t, layout)
        def pack(c, m):
            vals = np.stack(np.broadcast_arrays(*[np.asarray(r(c)) for r in reads]), axis=-1)
            w(c, np.ascontiguousarray(vals).view(dtype_of(t)).reshape(vals.shape[:-1]), m)
        return _op(pack)
    part = f"b{8 * size // len(d.items)}"
    ra = reader(a, t, layout)
    writes = [writer(x, part, layout) for x in d.items]
    def unpack(c, m):
        v = np.ascontiguousarray(np.asarray(ra(c))).reshape(-1)
        pieces = v.view(dtype_of(part)).reshape(len(v), len(writes))
        for i, w in enumerate(writes):
            w(c, pieces[:, i], m)
    return _op(unpack)


def h_cvt(ins, mods, entry, layout):
    d, a = ins.operands
    flags = [x for x in mods if x not in DTYPES]
    if any(x in HALF for x in mods):
        return _half_cvt(ins, mods, layout)
    types = [x for x in mods if x in DTYPES]
    if len(types) != 2:
        raise UnsupportedInstruction("cvt with packed or unusual types")
    dt_name, st_name = types
    _check_mods(flags, ROUNDING + INT_ROUNDING + ("ftz", "sat"), ins)
    dt, st = dtype_of(dt_name), dtype_of(st_name)
    ra, w = reader(a, st_name, layout), writer(d, dt_name, layout)
    fn = _conversion(dt, st, set(flags), ins)
    return _op(lambda c, m: w(c, fn(np.asarray(ra(c))), m))


def _conversion(dt, st, flags, ins):
    irnd = [x for x in flags if x in INT_ROUNDING]
    frnd = [x for x in flags if x in ROUNDING]
    sat = "sat" in flags
    if st.kind == "f" and dt.kind == "f":
        def f2f(x):
            x = fp.ftz32(x) if "ftz" in flags and st == np.float32 else x
            if irnd:                               # round to an integral value, same type
                r = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[irnd[0]](x)
            elif dt.itemsize < st.itemsize:
                r = fp.to_f32(x, frnd[0] if frnd else "rn")
            else:
                r = x
            r = np.asarray(r).astype(dt)
            r = fp.ftz32(r) if "ftz" in flags and dt == np.float32 else r
            return fp.saturate(r) if sat else r
        return f2f
    if st.kind == "f":                             # float -> integer: PTX saturates, NaN -> 0
        rnd = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[
            irnd[0] if irnd else "rzi"]
        info = np.iinfo(dt)
        def f2i(x):
            x = fp.ftz32(x) if "ftz" in flags and st == np.float32 else x
            r = rnd(x.astype(np.float64))
            r = np.where(np.isnan(r), 0, np.clip(r, float(info.min), float(info.max)))
            if dt.itemsize == 8:                   # 2^63/2^64 are not below the max in float
                big = r >= 2.0 ** (63 if dt.kind == "i" else 64)
                out = r.astype(dt)
                return np.where(big, info.max, out).astype(dt)
            return r.astype(dt)
        return f2i
    if dt.kind == "f":                             # integer -> float
        mode = frnd[0] if frnd else "rn"
        if mode != "rn":
            def i2f_directed(x):
                exact = x.astype(np.float64)
                if dt == np.float32:
                    wide = x.astype(np.float64)
                    if x.dtype.itemsize == 8:
                        raise UnsupportedInstruction(f"`{ins}`: directed rounding of 64-bit ints")
                    return fp.to_f32(wide, mode)
                if x.dtype.itemsize == 8:
                    raise UnsupportedInstruction(f"`{ins}`: directed rounding of 64-bit ints")
                return exact
            return i2f_directed
        return lambda x: x.astype(dt)
    if sat:                                        # integer -> integer, clamped
        info = np.iinfo(dt)
        return lambda x: np.clip(x.astype(object) if x.dtype.itemsize == 8 else
                                 x.astype(np.int64), info.min, info.max).astype(dt)
    return lambda x: x.astype(dt)                  # wraps (truncates) or extends by sign


def h_cvta(ins, mods, entry, layout):
    d, a = ins.operands
    flags, t = _mods_type(mods)
    to = "to" in flags
    space = [x for x in flags if x in SPACES]
    if not space:
        raise UnsupportedInstruction("cvta without a state space")
    window = {"global": 0, "shared": SHARED_WINDOW, "local": LOCAL_WINDOW,
              "const": CONST_WINDOW, "param": PARAM_WINDOW}.get(space[0])
    if window is None:
        raise UnsupportedInstruction(f"cvta .{space[0]}")
    ra, w = reader(a, t, layout), writer(d, t, layout)
    delta = np.array(window, dtype_of(t))
    if to:
        return _op(lambda c, m: w(c, np.subtract(ra(c), delta, dtype=dtype_of(t)), m))
    return _op(lambda c, m: w(c, np.add(ra(c), delta, dtype=dtype_of(t)), m))


# --- comparisons and selection ---------------------------------------------------------------------
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal,
            "hi": np.greater, "hs": np.greater_equal}
_BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _compare(cmp, t):
    dt = dtype_of(t)
    if cmp in _COMPARE:
        f = _COMPARE[cmp]
        if dt.kind == "f" and cmp == "ne":      # ordered: NaN compares false
            return lambda x, y: (x != y) & ~np.isnan(x) & ~np.isnan(y)
        return f
    if dt.kind == "f":
        if cmp == "num":
            return lambda x, y: ~np.isnan(x) & ~np.isnan(y)
        if cmp == "nan":
            return lambda x, y: np.isnan(x) | np.isnan(y)
        if cmp.endswith("u") and cmp[:-1] in _COMPARE:   # unordered: NaN compares true
            f = _COMPARE[cmp[:-1]]
            return lambda x, y: f(x, y) | np.isnan(x) | np.isnan(y)
    raise UnsupportedInstruction(f"the comparison .{cmp}")


def h_setp(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    cmp = mods[0]
    boolop = [x for x in flags if x in _BOOL]
    _check_mods(flags - {cmp}, tuple(_BOOL) + ("ftz",), ins)
    f = _compare(cmp, t)
    dest, a, b = ins.operands[:3]
    ra, rb = reader(a, t, layout), reader(b, t, layout)
    rc = reader(ins.operands[3], "pred", layout) if boolop else None
    bf = _BOOL[boolop[0]] if boolop else None
    ftz = "ftz" in flags and t == "f32"
    if isinstance(dest, RegPair):
        wp, wq = writer(Reg(dest.first), "pred", layout), writer(Reg(dest.second), "pred", layout)
    else:
        wp, wq = writer(dest, "pred", layout), None

    def run(c, m):
        x, y = ra(c), rb(c)
        if ftz:
            x, y = fp.ftz32(x), fp.ftz32(y)
        p = np.asarray(f(x, y))
        q = ~p
        if bf is not None:
            cc = rc(c)
            p, q = bf(p, cc), bf(q, cc)
        wp(c, p, m)
        if wq is not None:
            wq(c, q, m)
    return _op(run)


def h_selp(ins, mods, entry, layout):
    _, t = _mods_type(mods)
    d, a, b, p = ins.operands
    ra, rb, rp, w = (reader(a, t, layout), reader(b, t, layout), reader(p, "pred", layout),
                     writer(d, t, layout))
    return _op(lambda c, m: w(c, np.where(rp(c), ra(c), rb(c)).astype(dtype_of(t)), m))


# --- special functions (.approx) -------------------------------------------------------------------
def h_approx(kind):
    """``ex2``/``lg2``/``rsqrt``/``sin``/``cos``/``tanh``.approx and ``rcp``/``sqrt`` (``.approx``
    or ``.rn``): the approx forms are ``numerics.approx_f32`` (float64 rounded to float32, inside
    the PTX ISA's error bounds, not the GPU's own bits); ``.rn`` is IEEE's operation."""
    def handler(ins, mods, entry, layout):
        flags, t = _mods_type(mods)
        _check_mods(flags, ("approx", "ftz", "rn"), ins)
        if t != "f32" and "approx" in flags:
            raise UnsupportedInstruction(f"{kind}.approx.{t}")
        if "approx" not in flags and (kind not in ("rcp", "sqrt") or "rn" not in flags):
            raise UnsupportedInstruction(f"{kind} without .approx" if kind not in ("rcp", "sqrt")
                                         else f"{kind} rounding")
        dt = dtype_of(t)
        ftz = "ftz" in flags and t == "f32"

        def fn(x):
            if "approx" in flags:
                return fp.approx_f32(kind, x, ftz)
            x = _ftz_in(x, flags, t)                 # correctly rounded: IEEE in NumPy
            r = (np.divide(np.ones_like(x), x) if kind == "rcp" else np.sqrt(x)).astype(dt)
            return _finish_float(r, flags, t)
        return _unary(ins, mods, entry, layout, fn)
    return handler


# --- control -------------------------------------------------------------------------------------
def h_bra(ins, mods, entry, layout):
    target = ins.operands[0]
    if not isinstance(target, Symbol) or target.name not in entry.labels:
        raise UnsupportedInstruction(f"a branch to {target}")
    return Step("bra", None, ins, target=entry.labels[target.name])


def h_exit(ins, mods, entry, layout):
    return Step("exit", None, ins)


def h_bar(ins, mods, entry, layout):
    flags = set(mods)
    if "cluster" in flags:
        return _cluster_barrier(ins, flags)
    if "warp" in flags:                              # bar.warp.sync membermask
        rm = reader(ins.operands[0], "b32", layout)
        def warp_sync(c, m):
            c.check_warp_mask(m, rm(c), ins)
            c.wsync_step(m)
        return _op(warp_sync)
    _check_mods(flags, ("sync", "aligned", "cta"), ins)
    if ins.operands and not (isinstance(ins.operands[0], Imm) and ins.operands[0].value == 0):
        raise UnsupportedInstruction("named barriers other than 0")
    if len(ins.operands) > 1:
        raise UnsupportedInstruction("a barrier with a thread count")
    return Step("bar", None, ins)


def _cluster_barrier(ins, flags):
    """``barrier.cluster.arrive`` then ``.wait`` (what ``cluster.sync()`` compiles to): the
    arrive is a no-op and the wait a barrier of every thread of the cluster (accesses are seen
    at once here, so nothing between the two can tell the difference)."""
    _check_mods(flags, ("cluster", "arrive", "wait", "aligned", "relaxed", "acquire",
                        "release"), ins)
    if "arrive" in flags:
        return Step("op", lambda c, m: None, ins)
    if "wait" not in flags:
        raise UnsupportedInstruction("barrier.cluster without .arrive or .wait")
    return Step("bar", None, ins, scope="cluster")


def h_trap(ins, mods, entry, layout):
    """``trap`` (``asm("trap;")``): the kernel stops itself; on a GPU the launch fails."""
    def run(c, m):
        lane = 0 if m is None else int(np.flatnonzero(m)[0])
        raise c.error_at(lane, "the kernel executed `trap`: on a GPU the launch ends with an "
                         "error (cudaErrorLaunchFailure)", ins,
                         fix="find the condition the kernel traps on (the line above)")
    return _op(run)


def h_setmaxnreg(ins, mods, entry, layout):
    """``setmaxnreg.{inc,dec}.sync.aligned.u32 n``: a warpgroup's registers per thread change to n (a
    producer warpgroup gives its registers to the consumers). The engine has no register file to
    share, so it checks n as the ISA requires (24 to 256, a multiple of 8) and does nothing else."""
    _check_mods(mods, ("inc", "dec", "sync", "aligned", "u32"), ins)
    if not {"sync", "aligned", "u32"} <= set(mods) or len({"inc", "dec"} & set(mods)) != 1:
        raise UnsupportedInstruction(f"`{ins}`: setmaxnreg needs .inc or .dec, .sync.aligned.u32")
    (n,) = ins.operands
    if not isinstance(n, Imm) or not 24 <= int(n.value) <= 256 or int(n.value) % 8:
        raise UnsupportedInstruction(f"`{ins}`: the register count must be a constant from 24 to 256, a multiple of 8")
    return _op(lambda c, m: None)


def h_nothing(ins, mods, entry, layout):
    """membar/fence: every access is visible at once here (blocks that talk run in order)."""
    return Step("op", lambda c, m: None, ins, talks=True)


# --- warp collectives -------------------------------------------------------------------------------
def h_shfl(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    mode = [x for x in flags if x in ("up", "down", "bfly", "idx")]
    if "sync" not in flags or not mode or t != "b32":
        raise UnsupportedInstruction("shfl without .sync or of another type than .b32")
    mode = mode[0]
    dest, a, b, cc, mask = ins.operands
    if isinstance(dest, RegPair):
        wd, wp = writer(Reg(dest.first), t, layout), writer(Reg(dest.second), "pred", layout)
    else:
        wd, wp = writer(dest, t, layout), None
    ra, rb, rc, rm = (reader(a, t, layout), reader(b, "u32", layout), reader(cc, "u32", layout),
                      reader(mask, "b32", layout))

    def run(c, m):
        c.check_warp_mask(m, rm(c), ins)
        lane = c.laneid
        bval = np.broadcast_to(rb(c), lane.shape).astype(np.int64)
        cval = np.broadcast_to(rc(c), lane.shape).astype(np.int64)
        clamp, segmask = cval & 0x1F, (cval >> 8) & 0x1F
        max_lane = (lane & segmask) | (clamp & ~segmask)
        min_lane = lane & segmask
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~segmask)
            ok = j <= max_lane
        j = np.where(ok, j, lane)
        src = c.lanes - lane + j
        c.check_sources(m, src, ins)
        value = np.broadcast_to(ra(c), lane.shape)
        wd(c, value[np.clip(src, 0, c.n - 1)], m)
        if wp is not None:
            wp(c, ok, m)
        c.phase_step(m)
    return _op(run)


def h_vote(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    kind = [x for x in flags if x in ("all", "any", "uni", "ballot")]
    if "sync" not in flags or not kind:
        raise UnsupportedInstruction("vote without .sync")
    kind = kind[0]
    d, a, mask = ins.operands
    ra, rm = reader(a, "pred", layout), reader(mask, "b32", layout)
    w = writer(d, "b32" if kind == "ballot" else "pred", layout)

    def run(c, m):
        member = c.check_warp_mask(m, rm(c), ins)
        p = np.broadcast_to(ra(c), c.laneid.shape)
        bits = np.where(p, np.left_shift(np.int64(1), c.laneid), 0)
        ballot = c.warp_or(m, bits) & member
        if kind == "ballot":
            w(c, ballot.astype(np.uint32), m)
        elif kind == "all":
            w(c, ballot == member, m)
        elif kind == "any":
            w(c, ballot != 0, m)
        else:
            w(c, (ballot == 0) | (ballot == member), m)
        c.phase_step(m)
    return _op(run)


# --- memory --------------------------------------------------------------------------------------
# a block's own shared memory and any block's of its cluster: one space here, the address says
# which block (memory.cluster_address)
_CTA_SPACES = {"shared::cta": "shared", "shared::cluster": "shared"}


def _access_shape(mods):
    flags, t = _mods_type(mods)
    vec = 1
    for f in flags:
        if f in ("v2", "v4", "v8"):
            vec = int(f[1:])
    flags = {_CTA_SPACES.get(f, f) for f in flags}
    space = [f for f in flags if f in SPACES]
    unknown = flags - set(SPACES) - {"v2", "v4", "v8"} - NO_EFFECT
    return (space[0] if space else "generic"), vec, t, unknown


def _address_of(op, layout, ins):
    """``f(chunk) -> int64 address per lane`` (a state-space or generic address)."""
    if not isinstance(op, Address):
        raise UnsupportedInstruction(f"the address operand {op}")
    off = op.offset
    if op.base is None:
        return lambda c: np.int64(off)
    if op.base_is_reg:
        name = op.base
        return lambda c: c.regs[name].view(np.int64) + off if c.regs[name].dtype.itemsize == 8 \
            else c.regs[name].astype(np.int64) + off
    addr = symbol_address(op.base, layout) + off
    return lambda c: np.int64(addr)


def h_ld(ins, mods, entry, layout):
    space, vec, t, unknown = _access_shape(mods)
    if unknown:
        raise UnsupportedInstruction(f"ld with .{', .'.join(sorted(unknown))}")
    d, a = ins.operands
    dests = list(d.items) if isinstance(d, Vector) else [d]
    if len(dests) != vec:
        raise UnsupportedInstruction("a vector load whose register list does not match")
    if space == "param":
        return _ld_param(ins, dests[0], a, t, layout)
    addr = _address_of(a, layout, ins)
    writes = [writer(x, t, layout) for x in dests]
    dt = dtype_of(t if t != "pred" else "u8")

    def run(c, m):
        values = c.load(space, addr(c), m, dt, vec, ins)
        for k, w in enumerate(writes):
            w(c, values[k], m)
    return Step("op", run, ins, talks="acquire" in mods or "volatile" in mods)


def _ld_param(ins, d, a, t, layout):
    if not isinstance(a, Address) or a.base not in layout.params:
        raise UnsupportedInstruction(f"a parameter load from {a}")
    name, off = a.base, a.offset
    w = writer(d, t, layout)
    dt = dtype_of(t)
    def run(c, m):
        raw = c.params[name]
        w(c, raw[off:off + dt.itemsize].view(dt)[0], m)
    return _op(run)


def h_st(ins, mods, entry, layout):
    space, vec, t, unknown = _access_shape(mods)
    if unknown:
        raise UnsupportedInstruction(f"st with .{', .'.join(sorted(unknown))}")
    if space == "param":                      # a call's argument: the call is what is refused
        raise UnsupportedInstruction(_call_refusal(_next_call(entry, ins)))
    if space == "const":
        raise UnsupportedInstruction(f"a store to .{space}")
    a, v = ins.operands
    srcs = list(v.items) if isinstance(v, Vector) else [v]
    addr = _address_of(a, layout, ins)
    reads = [reader(x, t, layout) for x in srcs]
    dt = dtype_of(t)

    def run(c, m):
        values = [np.broadcast_to(r(c), (c.n,)) for r in reads]
        c.store(space, addr(c), m, dt, values, ins)
    return Step("op", run, ins, talks="release" in mods or "volatile" in mods)


_ATOMIC_OPS = {
    "add": lambda old, b, c: old + b,
    "min": lambda old, b, c: min(old, b),
    "max": lambda old, b, c: max(old, b),
    "and": lambda old, b, c: old & b,
    "or": lambda old, b, c: old | b,
    "xor": lambda old, b, c: old ^ b,
    "exch": lambda old, b, c: b,
    "cas": lambda old, b, c: c if old == b else old,
    "inc": lambda old, b, c: type(old)(0) if old >= b else old + type(old)(1),
    "dec": lambda old, b, c: b if (old == 0 or old > b) else old - type(old)(1),
}


def h_atom(ins, mods, entry, layout, reduction=False):
    flags, t = _mods_type(mods)
    ops = [f for f in flags if f in _ATOMIC_OPS]
    if not ops:
        raise UnsupportedInstruction("an atomic operation")
    op = ops[0]
    flags = {_CTA_SPACES.get(f, f) for f in flags}
    space = [f for f in flags if f in SPACES]
    space = space[0] if space else "generic"
    unknown = flags - set(SPACES) - set(_ATOMIC_OPS) - NO_EFFECT
    if unknown:
        raise UnsupportedInstruction(f"atom with .{', .'.join(sorted(unknown))}")
    dt = dtype_of(t)
    if dt.kind == "f" and op not in ("add", "exch", "min", "max"):
        raise UnsupportedInstruction(f"atom.{op}.{t}")
    operands = ins.operands
    if reduction:
        a, rest = operands[0], operands[1:]
        w = None
    else:
        w = writer(operands[0], t, layout)
        a, rest = operands[1], operands[2:]
    addr = _address_of(a, layout, ins)
    reads = [reader(x, t, layout) for x in rest]
    update = _ATOMIC_OPS[op]

    def run(c, m):
        args = [np.broadcast_to(r(c), (c.n,)) for r in reads]
        old = c.atomic(space, addr(c), m, dt, update, args, ins)
        if w is not None:
            w(c, old, m)
    return Step("op", run, ins, talks=True)


def h_red(ins, mods, entry, layout):
    return h_atom(ins, mods, entry, layout, reduction=True)


# --- bit manipulation (PTX ISA 9.7.8) ------------------------------------------------------------
def _bits(t):
    return 8 * dtype_of(t).itemsize


def _as_u64(x):
    """A register vector's bits as non-negative int64 below 2**bits (uint64 above 2**63 stays
    exact as object math would not: 64-bit operands are handled bit-plane by bit-plane)."""
    return np.asarray(x).astype(np.uint64)


def _bit_planes(x, bits):
    """``(bits, n)`` bool: bit i of each lane's value."""
    u = _as_u64(x)
    return ((u[None, :] >> np.arange(bits, dtype=np.uint64)[:, None]) & np.uint64(1)).astype(bool)


def _from_planes(planes, dt):
    bits = planes.shape[0]
    weights = np.left_shift(np.uint64(1), np.arange(bits, dtype=np.uint64))
    value = np.bitwise_or.reduce(np.where(planes, weights[:, None], np.uint64(0)), axis=0)
    return value.astype(np.uint64).astype(dt) if dt.kind == "u" else \
        value.astype(np.uint64).view(np.int64).astype(dt)


def h_popc(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    _check_mods(flags, (), ins)
    bits = _bits(t)
    d, a = ins.operands
    ra, w = reader(a, t, layout), writer(d, "u32", layout)
    return _op(lambda c, m: w(c, _bit_planes(np.atleast_1d(ra(c)), bits).sum(axis=0)
                             .astype(np.uint32), m))


def h_clz(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    _check_mods(flags, (), ins)
    bits = _bits(t)
    d, a = ins.operands
    ra, w = reader(a, t, layout), writer(d, "u32", layout)

    def run(c, m):
        planes = _bit_planes(np.atleast_1d(ra(c)), bits)[::-1]       # most significant first
        zeros = np.where(planes.any(axis=0), planes.argmax(axis=0), bits)
        w(c, zeros.astype(np.uint32), m)
    return _op(run)


def h_brev(ins, mods, entry, layout):
    flags, t = _mods_type(mods)
    _check_mods(flags, (), ins)
    bits, dt = _bits(t), dtype_of(t)
    d, a = ins.operands
    ra, w = reader(a, t, layout), writer(d, t, layout)
    return _op(lambda c, m: w(c, _from_planes(_bit_planes(np.atleast_1d(ra(c)), bits)[::-1], dt), m))


def _field(c_pos, c_len):
    """PTX takes the position and the length of a bit field from their low 8 bits."""
    return (np.asarray(c_pos).astype(np.int64) & 0xFF), (np.asarray(c_len).astype(np.int64) & 0xFF)


def h_bfe(ins, mods, entry, layout):
    """d[i] = a[pos + i] for i < len and pos + i <= msb, else the sign bit (signed: a's bit at
    min(pos + len - 1, msb), 0 when len is 0; unsigned: 0)."""
    flags, t = _mods_type(mods)
    _check_mods(flags, (), ins)
    bits, dt = _bits(t), dtype_of(t)
    d, a, b, cc = ins.operands
    ra, rb, rc = reader(a, t, layout), reader(b, "u32", layout), reader(cc, "u32", layout)
    w = writer(d, t, layout)

    def run(c, m):
        x = np.atleast_1d(ra(c))
        pos, length = _field(rb(c), rc(c))
        pos, length = np.broadcast_to(pos, x.shape), np.broadcast_to(length, x.shape)
        planes = _bit_planes(x, bits)
        i = np.arange(bits)[:, None]
        src = pos[None, :] + i
        inside = (i < length[None, :]) & (src <= bits - 1)
        got = np.take_along_axis(planes, np.minimum(src, bits - 1), axis=0)
        if t[0] == "s":
            top = np.minimum(pos + length - 1, bits - 1)
            sign = np.where(length == 0, False,
                            np.take_along_axis(planes, np.clip(top, 0, bits - 1)[None, :], 0)[0])
        else:
            sign = np.zeros(x.shape, bool)
        w(c, _from_planes(np.where(inside, got, sign[None, :]), dt), m)
    return _op(run)


def h_bfi(ins, mods, entry, layout):
    """d = b with bits pos .. pos+len-1 (those below the width) taken from a's low bits."""
    flags, t = _mods_type(mods)
    _check_mods(flags, (), ins)
    bits, dt = _bits(t), dtype_of(t)
    d, a, b, cc, dd = ins.operands
    ra, rb = reader(a, t, layout), reader(b, t, layout)
    rc, rd, w = reader(cc, "u32", layout), reader(dd, "u32", layout), writer(d, t, layout)

    def run(c, m):
        f, base = np.atleast_1d(ra(c)), np.atleast_1d(rb(c))
        shape = np.broadcast_shapes(f.shape, base.shape)
        f, base = np.broadcast_to(f, shape), np.broadcast_to(base, shape)
        pos, length = _field(rc(c), rd(c))
        pos, length = np.broadcast_to(pos, shape), np.broadcast_to(length, shape)
        i = np.arange(bits)[:, None]                      # destination bit
        k = i - pos[None, :]                              # its bit of f
        take = (k >= 0) & (k < length[None, :])
        fbits = np.take_along_axis(_bit_planes(f, bits), np.clip(k, 0, bits - 1), axis=0)
        w(c, _from_planes(np.where(take, fbits, _bit_planes(base, bits)), dt), m)
    return _op(run)


def h_prmt(ins, mods, entry, layout):
    """The default (generic) byte permute: byte i of d is byte (c >> 4i) & 7 of {b, a}, its
    sign replicated when (c >> 4i) & 8. The .f4e/.b4e/.rc8/.ecl/.ecr/.rc16 modes are refused."""
    flags, t = _mods_type(mods)
    _check_mods(flags, (), ins)
    d, a, b, cc = ins.operands
    ra, rb, rc = reader(a, "u32", layout), reader(b, "u32", layout), reader(cc, "u32", layout)
    w = writer(d, "b32", layout)

    def run(c, m):
        x = np.atleast_1d(ra(c)).astype(np.uint64)
        y = np.atleast_1d(rb(c)).astype(np.uint64)
        shape = np.broadcast_shapes(x.shape, y.shape, np.shape(np.atleast_1d(rc(c))))
        both = np.broadcast_to((y << np.uint64(32)) | x, shape)
        sel = np.broadcast_to(np.atleast_1d(rc(c)).astype(np.uint64), shape)
        out = np.zeros(shape, np.uint64)
        for i in range(4):
            s = (sel >> np.uint64(4 * i)) & np.uint64(0xF)
            byte = (both >> ((s & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
            byte = np.where((s & np.uint64(8)) != 0,
                            np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
            out |= byte << np.uint64(8 * i)
        w(c, out.astype(np.uint32), m)
    return _op(run)


# --- half precision: .f16/.bf16 arithmetic and conversions (PTX ISA 9.7.4) ----------------------
_HALF_MODS = ("rn", "ftz", "sat")


def h_half(ins, mods, entry, layout):
    """``add``/``sub``/``mul``/``fma``/``neg``/``abs`` of ``.f16``/``.bf16`` (scalar; the
    ``x2`` packed forms are refused): the operands' exact values, the result rounded once to
    nearest even (``numerics.f64_to_half``); NaN results are the canonical 0x7FFF."""
    op = ins.parts[0]
    flags, t = _mods_type(mods)
    if op not in ("add", "sub", "mul", "fma", "neg", "abs"):
        raise UnsupportedInstruction(f"{op}.{t}")
    _check_mods(flags, _HALF_MODS if t == "f16" else ("rn",), ins)
    d, *srcs = ins.operands
    reads = [reader(x, "b16", layout) for x in srcs]
    w = writer(d, "b16", layout)
    sign = np.uint16(0x8000)

    def value(r, c):
        return fp.ftz_half(fp.half_to_f64(np.atleast_1d(r(c)), t), t) if "ftz" in flags else \
            fp.half_to_f64(np.atleast_1d(r(c)), t)

    def finish(bits):
        if "ftz" in flags:
            bits = fp.f64_to_half(fp.ftz_half(fp.half_to_f64(bits, t), t), t)
        if "sat" in flags:
            x = fp.half_to_f64(bits, t)
            bits = fp.f64_to_half(np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0)), t)
        return bits

    def run(c, m):
        if op == "neg":
            r = np.atleast_1d(reads[0](c)).astype(np.uint16) ^ sign
        elif op == "abs":
            r = np.atleast_1d(reads[0](c)).astype(np.uint16) & np.uint16(0x7FFF)
        else:
            x = [value(rd, c) for rd in reads]
            if op == "mul":
                r = fp.f64_to_half(x[0] * x[1], t)             # exact: 11 x 11 bits
            else:                                        # an exact pair, rounded once
                total, err = fp.two_sum(x[0] * x[1], x[2]) if op == "fma" else \
                    fp.two_sum(x[0], x[1] if op == "add" else -x[1])
                r = fp.f64_to_half(total, t, err)
            r = finish(r)
        w(c, np.asarray(r, np.uint16), m)
    return _op(run)


def _half_cvt(ins, mods, layout):
    """cvt to or from ``.f16``/``.bf16``: widening is exact; narrowing (``.rn`` only) rounds the
    source's exact value once to nearest even; integers go through their exact float64 value
    (32 bits at most) with the integer rules of ``_conversion``."""
    d, a = ins.operands
    flags = {x for x in mods if x not in DTYPES and x not in HALF}
    dt_name, st_name = [x for x in mods if x in DTYPES or x in HALF]
    _check_mods(flags, ("rn", "ftz", "sat") + INT_ROUNDING, ins)
    if dt_name in HALF and st_name in HALF:
        raise UnsupportedInstruction(f"cvt.{dt_name}.{st_name}")
    if dt_name in HALF:                             # narrowing to a half
        if flags - {"rn", "ftz", "sat"} or "rn" not in flags:
            raise UnsupportedInstruction(f"cvt to .{dt_name} with another rounding than .rn")
        st = dtype_of(st_name)
        if st.kind in "iu" and st.itemsize == 8:
            raise UnsupportedInstruction(f"cvt.rn.{dt_name}.{st_name}")
        ra, w = reader(a, st_name, layout), writer(d, "b16", layout)

        def narrow(c, m):
            x = np.atleast_1d(ra(c)).astype(np.float64)  # exact for f32/f64 and 32-bit ints
            if "ftz" in flags and st == np.float32:
                x = fp.ftz32(x.astype(np.float32)).astype(np.float64)
            if "sat" in flags:
                x = np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))
            w(c, fp.f64_to_half(x, dt_name), m)
        return _op(narrow)
    dt = dtype_of(dt_name)                         # widening from a half: exact
    ra, w = reader(a, "b16", layout), writer(d, dt_name, layout)
    if dt.kind == "f":
        if flags - {"ftz", "sat"}:
            raise UnsupportedInstruction(f"cvt.{dt_name}.{st_name} with .{', .'.join(flags)}")
        nan = np.array(0x7FFFFFFF, np.uint32).view(np.float32) if dt == np.float32 else \
            np.array(0x7FFFFFFFFFFFFFFF, np.uint64).view(np.float64)

        def widen(c, m):
            bits = np.atleast_1d(ra(c))
            if st_name == "bf16" and dt == np.float32:
                # bf16 is float32's top half: the H100 widens by a shift, keeping a NaN's sign
                # and payload (tests/test_ptx_engine_gpu.py::test_half_precision_bits_equal_the_gpus)
                r = (bits.astype(np.uint32) << 16).view(np.float32)
            else:                                   # .f16: a NaN widens to the canonical NaN
                x = fp.half_to_f64(bits, st_name)
                r = np.where(np.isnan(x), nan, x.astype(dt)).astype(dt)
            w(c, fp.saturate(r) if "sat" in flags else r, m)
        return _op(widen)
    to_int = _conversion(dt, np.dtype(np.float64), flags, ins)
    return _op(lambda c, m: w(c, to_int(fp.half_to_f64(np.atleast_1d(ra(c)), st_name)), m))


# --- thread-block clusters (PTX ISA 9.7.13.5: mapa, barrier.cluster) -----------------------------
def h_mapa(ins, mods, entry, layout):
    """``mapa.shared::cluster.u32 d, a, rank``: the address of the same variable in block
    ``rank`` of the cluster (``memory.cluster_address``); the generic ``.u64`` form likewise
    inside the shared window."""
    flags, t = _mods_type(mods)
    _check_mods(flags, ("shared::cluster",), ins)
    d, a, rank = ins.operands
    ra, rr, w = reader(a, t, layout), reader(rank, "u32", layout), writer(d, t, layout)
    generic = "shared::cluster" not in flags

    def run(c, m):
        addr = np.atleast_1d(ra(c)).astype(np.int64)
        ranks = np.broadcast_to(np.atleast_1d(rr(c)).astype(np.int64), (c.n,))
        act = np.ones(c.n, bool) if m is None else m
        bad = act & (ranks >= c.cluster_size)
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            raise c.error_at(lane, f"`{ins}` maps to block rank {int(ranks[lane])} of a cluster "
                             f"of {c.cluster_size} blocks", ins)
        base = SHARED_WINDOW if generic else 0
        out = cluster_address(np.broadcast_to(addr, (c.n,)) - base, ranks) + base
        w(c, out.astype(dtype_of(t)), m)
    return _op(run)


# --- asynchronous copies to shared memory (PTX ISA 9.7.9.25: cp.async) --------------------------
def h_cp(ins, mods, entry, layout):
    """``cp.async.{ca,cg}.shared.global [dst], [src], size{, src-size}``: the source is read
    when the instruction runs (a global read in the trace, of ``src-size`` bytes; the rest of
    ``size`` is zero fill) and lands in shared memory when the thread waits for its group
    (``cp.async.wait_group N`` / ``wait_all``; the shared write rows carry the copy's line).
    Until then the destination keeps its old bytes: a read there before the wait sees them,
    and, traced, is reported as a read of uninitialised shared memory when nothing was
    written there before (``Chunk.async_*``)."""
    if not mods or mods[0] != "async":
        raise UnsupportedInstruction("cp without .async")
    rest = mods[1:]
    if rest == ["commit_group"]:
        return _op(lambda c, m: c.async_commit(m))
    if rest == ["wait_all"]:
        return _op(lambda c, m: (c.async_commit(m), c.async_wait(m, 0)))
    if rest == ["wait_group"]:
        n = ins.operands[0]
        if not isinstance(n, Imm):
            raise UnsupportedInstruction("cp.async.wait_group with a register count")
        return _op(lambda c, m: c.async_wait(m, int(n.value)))
    flags = set(rest)
    hints = {f for f in flags if f.startswith("L2::")}
    _check_mods(flags - hints, ("ca", "cg", "shared", "shared::cta", "global"), ins)
    if "global" not in flags or not flags & {"shared", "shared::cta"}:
        raise UnsupportedInstruction("cp.async other than shared <- global")
    if len(ins.operands) not in (3, 4):
        raise UnsupportedInstruction("cp.async with a cache policy or an ignore-src predicate")
    dst, src, size = ins.operands[:3]
    if not isinstance(size, Imm) or int(size.value) not in (4, 8, 16):
        raise UnsupportedInstruction("cp.async of another size than 4, 8 or 16 bytes")
    if "cg" in flags and int(size.value) != 16:
        raise UnsupportedInstruction("cp.async.cg of another size than 16 bytes")
    nbytes = int(size.value)
    dst_addr, src_addr = _address_of(dst, layout, ins), _address_of(src, layout, ins)
    src_size = reader(ins.operands[3], "u32", layout) if len(ins.operands) == 4 else None

    def run(c, m):
        given = nbytes if src_size is None else \
            np.broadcast_to(np.atleast_1d(src_size(c)).astype(np.int64), (c.n,))
        c.async_copy(m, dst_addr(c), src_addr(c), nbytes, given, ins)
    return _op(run)


# --- calls of device functions (.func) ------------------------------------------------------------
def h_call(ins, mods, entry, layout):
    """NVRTC inlines every device function it can; a ``.func`` stays only for ``__noinline__``
    (or recursion), which the engine refuses by name (also at the ``st.param`` of its
    arguments, which come first)."""
    raise UnsupportedInstruction(_call_refusal(ins))


def _next_call(entry, ins):
    later = entry.instructions[entry.instructions.index(ins):]
    return next((i for i in later if i.parts[0] == "call"), None)


def _call_refusal(call) -> str:
    target = "?" if call is None else \
        next((o.name for o in call.operands if isinstance(o, Symbol)), "?")
    return (f"a call of the device function {target} (a .func: __noinline__ or recursive); "
            "the PTX engine runs inlined device functions only: drop __noinline__")


def h_activemask(ins, mods, entry, layout):
    """The lanes of the warp executing this instruction together (min-PC: those at this PC)."""
    (d,) = ins.operands
    w = writer(d, "b32", layout)
    return _op(lambda c, m: w(c, c.warp_or(m, np.left_shift(np.int64(1), c.laneid))
                             .astype(np.uint32), m))


_HANDLERS = {
    "popc": h_popc, "clz": h_clz, "brev": h_brev, "bfe": h_bfe, "bfi": h_bfi, "prmt": h_prmt,
    "activemask": h_activemask,
    "add": h_add_sub(1), "sub": h_add_sub(-1), "mul": h_mul, "mad": h_mad, "fma": h_fma,
    "div": h_div, "rem": h_rem, "min": h_minmax("min"), "max": h_minmax("max"),
    "neg": h_neg, "abs": h_abs, "and": h_bitwise("and"), "or": h_bitwise("or"),
    "xor": h_bitwise("xor"), "not": h_bitwise("not"), "shl": h_shift("shl"),
    "shr": h_shift("shr"), "mov": h_mov, "cvt": h_cvt, "cvta": h_cvta, "setp": h_setp,
    "selp": h_selp, "bra": h_bra, "ret": h_exit, "exit": h_exit, "bar": h_bar,
    "barrier": h_bar, "membar": h_nothing, "fence": h_nothing, "shfl": h_shfl,
    "vote": h_vote, "ld": h_ld, "st": h_st, "atom": h_atom, "red": h_red,
    "ex2": h_approx("ex2"), "lg2": h_approx("lg2"), "rsqrt": h_approx("rsqrt"),
    "sin": h_approx("sin"), "cos": h_approx("cos"), "rcp": h_approx("rcp"),
    "sqrt": h_approx("sqrt"), "tanh": h_approx("tanh"), "mapa": h_mapa, "cp": h_cp,
    "trap": h_trap, "setmaxnreg": h_setmaxnreg,
}
# opcodes refused with a message of their own (the error names why and what to change)
_REFUSED = {"call": h_call}

#: the opcodes (first part of the instruction) the engine compiles
SUPPORTED_OPCODES = tuple(sorted({*_HANDLERS, *tensor_ops.HANDLERS, *wgmma.HANDLERS,
                                  *tma.HANDLERS}))
