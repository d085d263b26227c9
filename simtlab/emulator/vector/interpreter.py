"""Whole-function vectorisation: a kernel's statements run once for all lanes of a chunk of
blocks, each variable a NumPy vector over the lanes, control flow as lane masks.

A lane is one CUDA thread; lanes are numbered by global thread id. ``if`` runs each branch
under the lanes that take it, loops run while any lane is still inside, ``break``,
``continue`` and ``return`` take lanes out. Device functions are inlined (their lines keep
their own site). The trace gets the same rows as the greenlet engine's: one per access and
active lane, one per executed line and active lane, with the same epoch and syncwarp counts.
Atomics happen in the greenlet engine's order (``arrays.atomic``); an integer division under
a mask with few active lanes (a divergent loop's tail) is computed on those lanes only
(``values.binop``). Anything the engine cannot reproduce exactly (an error, an unsupported construct) raises
``Fallback``, and the launch runs again on the greenlet engine from its original inputs.
"""

from __future__ import annotations

import ast
import itertools
import math
import time
from types import ModuleType

import numpy as np

from ...simt import FULL_MASK, WARP_SIZE, make_site
from ..binding import _is_cuda_dispatcher, _is_numba_cuda_module, to_numpy_dtype
from ..contraction import product_temporaries
from ..errors import EmulationError
from ..function_ast import parse_function
from ..numba_types import float64_constant, numba_float
from . import arrays as va
from . import cuda_calls
from .values import (Fallback, Weak, binop, broadcast, cast, compare, is_vector, multiply_add,
                     raw, select, truth, unary)


# Loop iterations a chunk may run before the launch goes to the greenlet engine, which counts
# each thread's iterations exactly and stops a runaway one (Launch.iteration_limit). An
# iteration of a chunk costs ~20 us + ~5 ns a lane here against ~0.3 us for one thread there,
# so a runaway kernel is handed over early: after HANDOVER_ITERATIONS, or sooner in a chunk of
# many lanes (HANDOVER_LANE_ITERATIONS: iterations x lanes), about a second either way. The
# course stays far below both: 12,401 iterations and 3.2 million lane-iterations in a chunk at
# most (kernels/gemm.py's v5; benchmarks/loop_iterations_in_course.py).
HANDOVER_ITERATIONS = 1 << 16
HANDOVER_LANE_ITERATIONS = 1 << 28

# executed lines (rows of run.lines) a traced launch may record here before it goes to the
# greenlet engine (see line): 16 bytes a row, as much memory as max_trace's memory rows. The
# course records 1.4 million at most (a right answer to exercise ch06.blocked).
HANDOVER_LINE_ROWS = 1 << 24


class _Frame:
    __slots__ = ("vars", "defined", "fn", "returned", "retval", "products")

    def __init__(self, fn):
        self.products = {}           # product temporary -> its operands (contraction.py)
        self.vars = {}
        self.defined = {}            # name -> the lanes that have assigned it (see set_var)
        self.fn = fn
        self.returned = None         # lanes that have returned
        self.retval = None


class _Loop:
    __slots__ = ("broken", "continued")

    def __init__(self):
        self.broken = None
        self.continued = None


class Function:
    """A kernel or device function, parsed once: its AST with file line numbers and names."""

    def site(self, lineno):
        """The trace's site of a line of this function (``lineno``: the tree's numbering)."""
        return make_site(self.code_index, lineno + self.shift)

    def __init__(self, func, code_index):
        # the tree static_checks and subset read too (parsed once per code object): it is only
        # read here, its line numbers counting from 1 at the def; ``site`` adds the shift
        parsed = parse_function(func, shared=True)
        if parsed is None:
            raise Fallback(f"no source for {func.__name__}()")
        _, first, tree = parsed
        self.fdef = tree.body[0]
        self.shift = first - 1
        self.temporaries = product_temporaries(self.fdef)
        # whether the function uses atomics or fences (blocks may hand each other values
        # through global memory)
        self.talks = any(node.__class__ is ast.Attribute and (
            node.attr == "atomic" or node.attr.startswith("threadfence"))
            for node in ast.walk(tree))
        # calls whose value is thrown away (an atomic as a statement: its old value unused)
        self.discarded_calls = {id(node.value) for node in ast.walk(tree)
                                if node.__class__ is ast.Expr
                                and node.value.__class__ is ast.Call}
        # the names an array may be written through (see order.py: the arrays of the other
        # parameters are only read, and their reads are not logged)
        self.stored_names = names_written_through(self.fdef)
        self.func = func
        self.code_index = code_index
        self.params = [a.arg for a in self.fdef.args.args]
        self.globals = func.__globals__
        self.closure = {}
        if func.__closure__:
            for name, cell in zip(func.__code__.co_freevars, func.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass


# calls that cannot write to an array passed to them
_PURE_CALLS = {"len", "range", "min", "max", "abs", "int", "float", "bool", "float32",
               "float64", "int32", "int64", "uint32", "uint64"}


def names_written_through(fdef) -> frozenset:
    """The names an array may be written through in a function: stored to (``a[i] = v``,
    ``a[i] += v``), updated atomically, passed to a function that may store to it, or aliased
    by a name that is (``row = m[i]; row[j] = v``, ``b = a``). A guess that only needs to be
    right for speed: a write the guess misses is caught by the order check (``order.py``)."""
    stored, aliases = set(), []
    for node in ast.walk(fdef):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Subscript):
                        stored.update(_root_names(t.value))
            value = node.iter if isinstance(node, ast.For) else node.value
            if value is not None:
                # a[i] = b[j] aliases nothing; row = m[i] and (p, q) = (a, b) do
                names = set().union(*(_root_names(t) for t in targets
                                      if not isinstance(t, ast.Subscript)))
                aliases.append((names, _root_names(value)))
        elif isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            if "atomic" in func.split("."):
                stored.update(_root_names(node.args[0]) if node.args else ())
            elif not (isinstance(node.func, ast.Name) and node.func.id in _PURE_CALLS):
                for arg in (*node.args, *(k.value for k in node.keywords)):
                    stored.update(_root_names(arg))
    grown = True
    while grown:                          # an alias of an alias of a stored name
        grown = False
        for targets, sources in aliases:
            if targets & stored and not sources <= stored:
                stored |= sources
                grown = True
    return frozenset(stored)


def _root_names(expr) -> set:
    """The names an expression's value may be an array (or a view of one) of: ``a``,
    ``a[i]``, ``a if c else b``; not ``a.shape``, ``a[i] * 2`` or ``f(a)``."""
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, (ast.Subscript, ast.Starred)):
        return _root_names(expr.value)
    if isinstance(expr, ast.IfExp):
        return _root_names(expr.body) | _root_names(expr.orelse)
    if isinstance(expr, (ast.Tuple, ast.List)):
        return set().union(*map(_root_names, expr.elts)) if expr.elts else set()
    if isinstance(expr, ast.NamedExpr):
        return _root_names(expr.value) | {expr.target.id}
    return set()


class TraceOverflow(Exception):
    """A chunk of several blocks passed ``max_trace``. The greenlet engine stops at the end of
    the first barrier round (of one block) after which the trace holds more than
    ``max_trace`` rows: the launch runs again from its inputs, one block per chunk from
    ``block`` on, to stop at that same round with the same partial trace."""

    def __init__(self, block):
        super().__init__(f"the trace passed max_trace in the chunk starting at block {block}")
        self.block = block


_LANE_CONSTANTS: dict = {}    # (griddim, blockdim, b0, b1) -> the vectors below, read-only


def _lane_constants(launch, b0, b1):
    """The lane vectors that depend only on the launch's shape and the chunk: all lanes, ids,
    thread and block indices, warps. Made once per shape (a widget or a benchmark launches
    the same shape again and again; a 16,384-lane chunk's vectors take ~2 ms to make, most
    of it fresh pages) and never written to: every lane value is read-only here."""
    key = (launch.griddim, launch.blockdim, b0, b1)
    found = _LANE_CONSTANTS.get(key)
    if found is not None:
        return found
    tpb = launch.threads_per_block
    n = (b1 - b0) * tpb
    lanes = np.arange(n, dtype=np.int64)
    tid = lanes % tpb
    lblock = lanes // tpb                              # block index inside the chunk
    block = lblock + b0
    bx, by, _ = launch.blockdim
    gx, gy, _ = launch.griddim
    warp = tid // WARP_SIZE
    thread_idx = (tid % bx, (tid // bx) % by, tid // (bx * by))
    block_idx = (block % gx, (block // gx) % gy, block // (gx * gy))
    vectors = (np.ones(n, bool), lanes, lanes + b0 * tpb, tid, lblock, *thread_idx,
               *block_idx, tid % WARP_SIZE, warp,
               lblock * launch.warps_per_block + warp)     # chunk-local warp id
    for v in vectors:
        v.flags.writeable = False
    (all_lanes, lanes, gtid, tid, lblock, tx, ty, tz, bkx, bky, bkz, lane, warp,
     gwarp) = vectors
    found = (all_lanes, lanes, gtid, tid, lblock, (Weak(tx), Weak(ty), Weak(tz)),
             (Weak(bkx), Weak(bky), Weak(bkz)), lane, warp, gwarp)
    if len(_LANE_CONSTANTS) >= 4:       # a few shapes: each holds ~15 vectors of its lanes
        _LANE_CONSTANTS.clear()
    _LANE_CONSTANTS[key] = found
    return found


_CHUNK_SERIALS = itertools.count()


class Interpreter:
    """Runs one chunk of blocks ``[b0, b1)`` of a launch in lockstep (``trace``: recorded)."""

    def __init__(self, engine, b0, b1, trace=None):
        self.engine = engine
        launch = engine.launch
        tpb = launch.threads_per_block
        self.tpb = tpb
        self.b0, self.nb = b0, b1 - b0
        n = self.n = self.nb * tpb
        (self.ALL, self.lanes, self.gtid, self.tid, self.lblock, self.thread_idx,
         self.block_idx, self.lane, self.warp, self.gwarp) = _lane_constants(launch, b0, b1)
        self.epoch = np.zeros(n, np.int64)
        self.wsync = np.zeros(n, np.int64)
        self.phase = np.zeros(n, np.int64)        # collectives passed: orders trace rows
        self.syncs = 0                            # barriers and collectives so far (order.py)
        self.barriers = 0                         # barrier rounds so far (order.py)
        self.order_cache = None                   # see order.chunk_keys
        self.order_ascending: dict = {}           # see order._ascending
        self.order_pairs: dict = {}               # see order._least_difference
        self.chunk_serial = next(_CHUNK_SERIALS)  # names the chunk in order.Shadow.region
        self.order_shadows: list = []             # shared memory's, see order.release
        self.trace = launch.trace if trace is None else trace
        self.first_line_chunk = len(engine.line_chunks)
        self.arrays_at: dict = {}                 # call site -> VArray (shared, const)
        self.index_cache: dict = {}               # see arrays.locate
        self.memo: dict = {}                      # see index_arithmetic
        self.atomic_arrays: set = set()           # arrays with atomics: see arrays.atomic
        # lane vectors each of those keeps: about 4 MB of int64 (kept arrays are memory the
        # allocator cannot hand out again: fresh pages cost more than the work they save)
        self.cache_entries = max(8, min(256, (1 << 19) // max(n, 1)))
        self.dynamic = None
        self.static_used = 0
        # loop iterations run in this chunk: every lane of a loop iterates with it, so no lane
        # has run more (see _iterate)
        self.iterations = 0
        self.handover = min(engine.iteration_limit, HANDOVER_ITERATIONS,
                            max(1, HANDOVER_LANE_ITERATIONS // n))
        self.exits = 0                            # break/continue/return run so far
        self._last_mask = self._last_canonical = None     # see _mask
        self._last_live, self._last_empty = None, False  # see _empty

    # --- trace ------------------------------------------------------------------------------
    def record(self, m, aid, flat, kind, site):
        if not self.trace:
            return
        g = self.gtid if m is self.ALL else self.gtid[m]
        k = len(g)
        e = self.engine
        cols = np.empty((8, k), np.int64)
        cols[0] = g
        cols[1] = aid
        cols[2] = flat
        cols[3] = kind
        cols[4] = site
        if m is self.ALL:
            cols[5], cols[6], cols[7] = self.epoch, self.wsync, self.phase
        else:
            cols[5], cols[6], cols[7] = self.epoch[m], self.wsync[m], self.phase[m]
        e.mem_chunks.append(cols)
        e.mem_rows += k
        if e.mem_rows > e.launch.max_trace and self.nb > 1:
            raise TraceOverflow(self.b0)

    def end_of_round(self, finished=True):
        """Where the greenlet engine checks the trace's size: when every thread of the block
        waits at a barrier (``finished=False``) or has returned. Past ``max_trace``, its error
        carries the trace so far (``.partial_trace``): every row recorded, and the lines of
        the threads that finished (not this block's, at a barrier)."""
        e = self.engine
        if not self.trace or e.mem_rows <= e.launch.max_trace:
            return
        err = EmulationError(f"the trace passed {e.launch.max_trace:,} memory accesses",
                             fix="trace a smaller launch, or run with trace=False for speed")
        err.partial_trace = e.trace(drop_lines_from=None if finished else self.first_line_chunk)
        raise err

    def line(self, m, site):
        if not self.trace:
            return
        e = self.engine
        if m is self.ALL:
            e.line_chunks.append((self.gtid, site, self.epoch.copy()))
            e.line_rows += self.n
        else:
            g = self.gtid[m]
            e.line_chunks.append((g, site, self.epoch[m]))
            e.line_rows += len(g)
        if e.line_rows > HANDOVER_LINE_ROWS:
            # a runaway loop traced in lockstep on every lane of a large chunk would fill
            # memory long before a lane reached the limit; the greenlet engine runs one
            # thread at a time and stops the first that runs away
            raise Fallback(f"the trace passed {HANDOVER_LINE_ROWS:,} executed lines")

    def _iterate(self):
        """One more iteration of a loop whose body some lanes are entering. The chunk's count
        is an upper bound on each lane's (a lane iterates only with its loop): past the
        launch's ``iteration_limit`` some lane *may* have run too many, and the greenlet
        engine, which counts each thread exactly, stops the one that did with its partial
        trace. The launch is handed over sooner (``HANDOVER_ITERATIONS``): a
        runaway kernel reaches the limit faster there."""
        self.iterations += 1
        if self.iterations > self.handover:
            raise Fallback(f"a chunk of blocks ran {self.handover:,} loop iterations: the "
                           "greenlet engine counts each thread's")
        e = self.engine
        if self.iterations & 63 == 0 and e.time_limit and \
                time.perf_counter() - e.started > e.time_limit:
            raise Fallback("the launch ran past time_limit")

    # --- running ------------------------------------------------------------------------------
    def run_kernel(self, fn: Function, args):
        frame = _Frame(fn)
        for name, value in zip(fn.params, args):
            frame.vars[name] = value
            frame.defined[name] = self.ALL
        self.exec_body(fn.fdef.body, self.ALL, frame, None)
        va.forget_order(self)                     # the chunk's deferred atomics happen

    def _mask(self, m):
        """``m`` as the canonical all-lanes mask when it is full (cheap fast paths). A loop
        body starts under the same mask object on every iteration: the last answer is kept
        (masks are never changed in place), which saves an ``all()`` over the lanes."""
        if m is self.ALL:
            return m
        if m is self._last_mask:
            return self._last_canonical
        canonical = self.ALL if m.all() else m
        self._last_mask, self._last_canonical = m, canonical
        return canonical

    def _empty(self, m):
        """No lane active in ``m`` (a canonical mask); remembered as ``_mask`` is."""
        if m is self.ALL:
            return False
        if m is self._last_live:
            return self._last_empty
        empty = not m.any()
        self._last_live, self._last_empty = m, empty
        return empty

    def exec_body(self, stmts, m, frame, loop):
        seen = -1
        for stmt in stmts:
            if seen != self.exits:
                # first statement, or a break, continue or return ran: lanes may have left
                seen = self.exits
                if frame.returned is not None:
                    m = m & ~frame.returned
                if loop is not None:
                    if loop.broken is not None:
                        m = m & ~loop.broken
                    if loop.continued is not None:
                        m = m & ~loop.continued
                m = self._mask(m)
                if self._empty(m):
                    return
            self.line(m, frame.fn.site(stmt.lineno))
            self.exec_stmt(stmt, m, frame, loop)

    def exec_stmt(self, s, m, frame, loop):
        t = s.__class__
        if t is ast.Assign:
            target = s.targets[0]
            if target.__class__ is ast.Name and target.id in frame.fn.temporaries:
                # t = a * b, read once in a sum the GPU fuses: keep the operands for it
                frame.products[target.id] = (self.eval(s.value.left, m, frame),
                                             self.eval(s.value.right, m, frame))
                return
            value = self.eval(s.value, m, frame)
            for target in s.targets:
                self.assign(target, value, m, frame)
        elif t is ast.AugAssign:
            self.aug_assign(s, m, frame)
        elif t is ast.Expr:
            self.eval(s.value, m, frame)
        elif t is ast.If:
            cond = truth(self.eval(s.test, m, frame))
            if isinstance(cond, np.ndarray):
                mt = m & cond
                mf = m & ~cond
                if mt.any():
                    self.exec_body(s.body, mt, frame, loop)
                if s.orelse and mf.any():
                    self.exec_body(s.orelse, mf, frame, loop)
            elif cond:
                self.exec_body(s.body, m, frame, loop)
            elif s.orelse:
                self.exec_body(s.orelse, m, frame, loop)
        elif t is ast.For:
            self.exec_for(s, m, frame)
        elif t is ast.While:
            self.exec_while(s, m, frame)
        elif t is ast.Break:
            self.exits += 1
            loop.broken = m.copy() if loop.broken is None else (loop.broken | m)
        elif t is ast.Continue:
            self.exits += 1
            loop.continued = m.copy() if loop.continued is None else (loop.continued | m)
        elif t is ast.Return:
            if s.value is not None:
                v = self.eval(s.value, m, frame)
                frame.retval = _select(m, v, frame.retval, self.n) \
                    if m is not self.ALL else v
            self.exits += 1
            frame.returned = m.copy() if frame.returned is None else (frame.returned | m)
        elif t is ast.Pass:
            pass
        else:
            raise Fallback(f"statement {t.__name__}")

    def _live(self, m, frame, loop):
        if frame.returned is not None:
            m = m & ~frame.returned
        if loop.broken is not None:
            m = m & ~loop.broken
        return self._mask(m)

    def exec_while(self, s, m, frame):
        loop = _Loop()
        header = frame.fn.site(s.lineno)
        active = m
        while True:
            loop.continued = None
            active = self._live(active, frame, loop)
            if self._empty(active):
                return
            cond = truth(self.eval(s.test, active, frame))
            if isinstance(cond, np.ndarray):
                active = self._mask(active & cond)
                if self._empty(active):
                    return
            elif not cond:
                return
            self.line(active, header)
            self._iterate()
            self.exec_body(s.body, active, frame, loop)

    def exec_for(self, s, m, frame):
        it = s.iter
        if it.__class__ is ast.Tuple:
            return self.exec_for_values(s, [self.eval(e, m, frame) for e in it.elts], m, frame)
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3):
            raise Fallback("a for loop over something other than range()")
        bounds = [self.eval(a, m, frame) for a in it.args]
        start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else \
            (bounds[0], bounds[1], 1) if len(bounds) == 2 else tuple(bounds)
        loop = _Loop()
        header = frame.fn.site(s.lineno)
        if not any(is_vector(b) for b in (start, stop, step)):
            return self.exec_for_values(s, range(int(start), int(stop), int(step)), m, frame)
        if is_vector(step) or raw(step) == 0:
            raise Fallback("a range() whose step differs between lanes")
        counter = raw(broadcast(start, self.n)).astype(np.int64)
        stop = raw(broadcast(stop, self.n))
        step = int(step)
        active = m
        while True:
            loop.continued = None
            active = self._live(active, frame, loop)
            inside = counter < stop if step > 0 else counter > stop
            active = self._mask(active & inside)
            if self._empty(active):
                return
            self.line(active, header)
            self._iterate()
            self.assign(s.target, Weak(counter.copy()), active, frame)
            self.exec_body(s.body, active, frame, loop)
            counter = counter + step

    def exec_for_values(self, s, values, m, frame):
        """A for loop whose values are the same for every lane: a range of scalars, or a
        literal tuple of numbers (``for offset in (16, 8, 4, 2, 1)``)."""
        loop = _Loop()
        header = frame.fn.site(s.lineno)
        for value in values:
            loop.continued = None
            active = self._live(m, frame, loop)
            if self._empty(active):
                return
            self.line(active, header)
            self._iterate()
            self.assign(s.target, value, active, frame)
            self.exec_body(s.body, active, frame, loop)

    # --- assignment ---------------------------------------------------------------------------
    def assign(self, target, value, m, frame):
        t = target.__class__
        if t is ast.Name:
            self.set_var(frame, target.id, value, m)
        elif t is ast.Tuple or t is ast.List:
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise Fallback("tuple unpacking of a non-tuple")
            for tg, v in zip(target.elts, value):
                self.assign(tg, v, m, frame)
        elif t is ast.Subscript:
            arr = self.eval(target.value, m, frame)
            idx = self.eval(target.slice, m, frame)
            if not isinstance(arr, va.VArray):
                raise Fallback("item assignment to something other than an array")
            va.write(self, arr, idx, value, m,
                     frame.fn.site(target.lineno))
        else:
            raise Fallback(f"assignment to {t.__name__}")

    def set_var(self, frame, name, value, m):
        """``name = value`` on the lanes of ``m``. Lanes outside ``m`` keep their value, if
        they have one: when no lane outside ``m`` ever assigned ``name`` (a loop counter or
        an accumulator defined under the same mask), ``value`` is taken as it is, with no
        per-lane select; a lane that never assigned a variable cannot read it (Python
        raises, numba refuses), so what it would see there does not matter."""
        old = frame.vars.get(name)
        if m is self.ALL or old is None:
            frame.vars[name] = value
            frame.defined[name] = m
            return
        had = frame.defined.get(name, self.ALL)
        if had is m or (had is not self.ALL and not (had & ~m).any()):
            frame.vars[name] = value
            frame.defined[name] = m
            return
        frame.vars[name] = _select(m, value, old, self.n)
        frame.defined[name] = self.ALL if had is self.ALL else (had | m)

    def aug_assign(self, s, m, frame):
        op = s.op.__class__.__name__
        target = s.target
        site = frame.fn.site(s.lineno)
        if isinstance(target, ast.Name):
            old = self.lookup(target.id, frame)
            self.set_var(frame, target.id, self.updated(op, old, s.value, m, frame), m)
        elif isinstance(target, ast.Subscript):
            arr = self.eval(target.value, m, frame)
            idx = self.eval(target.slice, m, frame)
            if not isinstance(arr, va.VArray):
                raise Fallback("augmented assignment to something other than an array")
            old = va.read(self, arr, idx, m, site)
            va.write(self, arr, idx, self.updated(op, old, s.value, m, frame), m, site)
        else:
            raise Fallback("augmented assignment target")

    def updated(self, op, old, value_node, m, frame):
        """``old <op> value`` of an augmented assignment (the value evaluated after ``old``
        was read, as Python does); ``acc += a * b`` as one fused multiply-add."""
        product = self.product_operands(value_node, m, frame) if op in ("Add", "Sub") else None
        if product is not None:
            return multiply_add(*product, old, op == "Sub", False, m, self.n)
        return binop(op, old, self.eval(value_node, m, frame), None if m is self.ALL else m)

    # --- expressions --------------------------------------------------------------------------
    def lookup(self, name, frame):
        v = frame.vars.get(name, _MISSING)
        if v is not _MISSING:
            return v
        fn = frame.fn
        if name in fn.closure:
            return float64_constant(fn.closure[name])
        if name in fn.globals:
            return float64_constant(fn.globals[name])
        b = _BUILTINS.get(name, _MISSING)
        if b is not _MISSING:
            return b
        raise Fallback(f"name {name!r} is not defined")

    def eval(self, node, m, frame):
        # the most frequent node types first: this runs for every node of every statement
        t = node.__class__
        if t is ast.Name:
            v = frame.vars.get(node.id, _MISSING)
            if v is _MISSING:
                v = self.lookup(node.id, frame)
            return _CUDA if isinstance(v, ModuleType) and _is_numba_cuda_module(v) else v
        if t is ast.Subscript:
            arr = self.eval(node.value, m, frame)
            sl = node.slice
            if sl.__class__ is ast.Tuple:
                idx = tuple([self.eval(e, m, frame) for e in sl.elts])
            else:
                idx = self.eval(sl, m, frame)
            if arr.__class__ is va.VArray:
                if idx.__class__ is tuple and len(idx) < arr.ndim or \
                        idx.__class__ is not tuple and arr.ndim > 1:
                    return va.view(self, arr, idx if idx.__class__ is tuple else (idx,), m)
                return va.read(self, arr, idx, m, frame.fn.site(node.lineno))
            if isinstance(arr, tuple) and not is_vector(idx):
                return arr[idx]
            raise Fallback("subscript of something other than an array or a tuple")
        if t is ast.BinOp:
            if node.op.__class__ in _ADD_SUB:
                fused = self.fused_sum(node, m, frame)
                if fused is not _MISSING:
                    return fused
            a = self.eval(node.left, m, frame)
            b = self.eval(node.right, m, frame)
            op = _OP_NAMES[node.op.__class__]
            if (a.__class__ is Weak or b.__class__ is Weak) and a.__class__ in _INDEX_TYPES \
                    and b.__class__ in _INDEX_TYPES and op not in _CHECKED_OPS:
                return self.index_arithmetic(op, a, b)
            return binop(op, a, b, None if m is self.ALL else m)
        if t is ast.Constant:
            return float64_constant(node.value)      # numba: a float literal is float64
        if t is ast.Attribute:
            return self.attribute(self.eval(node.value, m, frame), node.attr)
        if t is ast.Compare:
            left = self.eval(node.left, m, frame)
            result = None
            for op, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node, m, frame)
                c = compare(op.__class__.__name__, left, right)
                result = c if result is None else _and(result, c)
                left = right
            return result
        if t is ast.Call:
            return self.call(node, m, frame)
        if t is ast.BoolOp:
            return self.bool_op(node, m, frame)
        if t is ast.IfExp:
            cond = truth(self.eval(node.test, m, frame))
            if not isinstance(cond, np.ndarray):
                return self.eval(node.body if cond else node.orelse, m, frame)
            mt, mf = m & cond, m & ~cond
            a = self.eval(node.body, self._mask(mt), frame) if mt.any() else None
            b = self.eval(node.orelse, self._mask(mf), frame) if mf.any() else None
            if a is None:
                return b
            if b is None:
                return a
            return _select(cond, a, b, self.n)
        if t is ast.UnaryOp:
            return unary(node.op.__class__.__name__, self.eval(node.operand, m, frame))
        if t is ast.Tuple:
            return tuple(self.eval(e, m, frame) for e in node.elts)
        raise Fallback(f"expression {t.__name__}")

    def product_operands(self, node, m, frame):
        """The operands ``(x, y)`` of a product the GPU fuses into a sum (``a * b``,
        ``-(a * b)``, a product temporary), evaluated; None for any other operand (not
        evaluated)."""
        c = node.__class__
        if c is ast.Name:
            return frame.products.get(node.id) if node.id in frame.fn.temporaries else None
        if c is ast.UnaryOp and node.op.__class__ is ast.USub:
            inner = node.operand
            if inner.__class__ is ast.BinOp and inner.op.__class__ is ast.Mult:
                return (unary("USub", self.eval(inner.left, m, frame)),
                        self.eval(inner.right, m, frame))
            return None
        if c is ast.BinOp and node.op.__class__ is ast.Mult:
            return self.eval(node.left, m, frame), self.eval(node.right, m, frame)
        return None

    def fused_sum(self, node, m, frame):
        """``a * b ± c`` or ``c ± a * b`` as the GPU computes it (contraction.py), or _MISSING
        when neither operand is a product."""
        sub = node.op.__class__ is ast.Sub
        product = self.product_operands(node.left, m, frame)
        if product is not None:
            c = self.eval(node.right, m, frame)
            product_left = True
        elif _may_be_product(node.right, frame):
            c = self.eval(node.left, m, frame)
            product = self.product_operands(node.right, m, frame)
            product_left = False
        else:
            return _MISSING
        x, y = product
        if _integral(x) and _integral(y) and _integral(c):
            # index arithmetic (row * n + k): no rounding to fuse, and the memo keeps it fast
            op = "Sub" if sub else "Add"
            p = self.arith("Mult", x, y, m)
            return self.arith(op, p, c, m) if product_left else self.arith(op, c, p, m)
        return multiply_add(x, y, c, sub, product_left, m, self.n)

    def arith(self, op, a, b, m):
        """``a <op> b`` as ``eval`` computes a BinOp of these values."""
        if (a.__class__ is Weak or b.__class__ is Weak) and a.__class__ in _INDEX_TYPES \
                and b.__class__ in _INDEX_TYPES and op not in _CHECKED_OPS:
            return self.index_arithmetic(op, a, b)
        return binop(op, a, b, None if m is self.ALL else m)

    def index_arithmetic(self, op, a, b):
        """``binop`` on Python-number lane vectors (indices, loop counters), remembered by the
        operands' identity (values never change in place): ``ty + u`` in a loop nest is
        computed once per value of ``u``, and the array positions built from it
        (``arrays.locate``) are found again by identity too."""
        key = (op, _operand_key(a), _operand_key(b))
        hit = self.memo.get(key)
        if hit is None:
            if len(self.memo) >= self.cache_entries:
                self.memo.clear()
            hit = self.memo[key] = (binop(op, a, b), a, b)    # a, b kept: their ids stay theirs
        return hit[0]

    def bool_op(self, node, m, frame):
        is_and = isinstance(node.op, ast.And)
        value = self.eval(node.values[0], m, frame)
        for nxt in node.values[1:]:
            cond = truth(value)
            if not isinstance(cond, np.ndarray):
                if cond != is_and:            # short circuit for every lane
                    return value
                value = self.eval(nxt, m, frame)
                continue
            go = m & (cond if is_and else ~cond)
            if not go.any():
                continue
            right = self.eval(nxt, self._mask(go), frame)
            value = select(cond if is_and else ~cond, right, value, self.n)
        return value

    def attribute(self, base, name):
        if isinstance(base, va.VArray):
            if name == "shape":
                return base.shape
            if name == "size":
                return base.size
            if name == "ndim":
                return base.ndim
            if name == "dtype":
                return base.dtype
            raise Fallback(f"array attribute .{name}")
        if base is _CUDA:
            return cuda_calls.cuda_attribute(self, name)
        if isinstance(base, cuda_calls.Namespace):
            return base.get(name)
        if isinstance(base, tuple) and name in ("x", "y", "z"):
            return base["xyz".index(name)]
        if base is math:
            return float64_constant(getattr(math, name))
        if isinstance(base, type(math)) and not _is_cuda_dispatcher(getattr(base, name, None)):
            return getattr(base, name)
        raise Fallback(f"attribute .{name} of {type(base).__name__}")

    # --- calls --------------------------------------------------------------------------------
    def call(self, node, m, frame):
        func = self.eval(node.func, m, frame)
        if node.keywords:
            raise Fallback("keyword arguments")
        site = frame.fn.site(node.lineno)
        if isinstance(func, cuda_calls.Intrinsic):
            return func(self, node, m, frame, site)
        args = [self.eval(a, m, frame) for a in node.args]
        if _is_cuda_dispatcher(func):
            return self.inline(func.py_func, args, m)
        if func in _MATH:
            return cuda_calls.math_call(func, args, m, self)
        b = _BUILTIN_CALLS.get(func) if _hashable(func) else None
        if b is not None:
            return b(self, args, m)
        dtype = _as_dtype(func)
        if dtype is not None and len(args) == 1:
            return cast(args[0], dtype)
        raise Fallback(f"a call to {getattr(func, '__name__', func)!r}")

    def inline(self, py_func, args, m):
        fn = self.engine.function(py_func)
        frame = _Frame(fn)
        if len(args) != len(fn.params):
            raise Fallback("device function called with a different number of arguments")
        for name, value in zip(fn.params, args):
            frame.vars[name] = value
            frame.defined[name] = m
        self.exec_body(fn.fdef.body, m, frame, None)
        return frame.retval


_MISSING = object()
_ADD_SUB = (ast.Add, ast.Sub)


def _integral(v) -> bool:
    """A Python int or bool, or a lane vector of them: nothing to fuse."""
    c = v.__class__
    return c is int or c is bool or (c is Weak and v.a.dtype.kind != "f")


def _may_be_product(node, frame) -> bool:
    c = node.__class__
    if c is ast.BinOp:
        return node.op.__class__ is ast.Mult
    if c is ast.UnaryOp:
        return node.op.__class__ is ast.USub and node.operand.__class__ is ast.BinOp and \
            node.operand.op.__class__ is ast.Mult
    return c is ast.Name and node.id in frame.fn.temporaries
_OP_NAMES = {c: c.__name__ for c in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
                                     ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.BitOr,
                                     ast.BitXor, ast.BitAnd, ast.MatMult)}
_CHECKED_OPS = frozenset(("Div", "FloorDiv", "Mod"))   # a zero divisor depends on the mask


_INDEX_TYPES = frozenset((Weak, int, bool))     # no floats: 0.0 == -0.0 as a key


def _operand_key(v):
    return id(v) if v.__class__ is Weak else (v.__class__, v)


class _CudaMarker:
    def __repr__(self):
        return "<vector engine: cuda>"


_CUDA = _CudaMarker()


def _select(mask, new, old, n):
    """``values.select``, and views of one array on different lanes (``arrays.select_views``)."""
    if (new.__class__ is va.VArray or old.__class__ is va.VArray) and old is not None:
        return va.select_views(mask, new, old, n)
    return select(mask, new, old, n)


def _and(a, b):
    if not is_vector(a) and not is_vector(b):
        return a and b
    return Weak(truth(a) & truth(b))


def _hashable(v):
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _as_dtype(func):
    """numba types (``float32``) and NumPy scalar types as casts; None for anything else."""
    mod = getattr(type(func), "__module__", "") or ""
    if isinstance(func, type) and issubclass(func, np.generic):
        return np.dtype(func)
    if mod.startswith("numba") and hasattr(func, "bitwidth") or \
            mod.startswith("numba.core.types"):
        try:
            return to_numpy_dtype(func)
        except Exception:
            return None
    return None


def _min(eng, args, m):
    return _extreme(eng, args, "Lt", min)


def _max(eng, args, m):
    return _extreme(eng, args, "Gt", max)


def _extreme(eng, args, beats, python):
    """``min``/``max`` of two or more values per lane as Python picks them: the first value,
    replaced by each later one that is strictly smaller (larger), keeping the winner's type."""
    if len(args) < 2:
        raise Fallback(f"{python.__name__}() of fewer than two values")
    if not any(is_vector(a) for a in args):
        return python(*args)
    best = args[0]
    for a in args[1:]:
        wins = truth(compare(beats, a, best))
        if isinstance(wins, np.ndarray):
            best = select(wins, a, best, eng.n)
        elif wins:
            best = a
    return best


def _abs(eng, args, m):
    (a,) = args
    if not is_vector(a):
        return abs(a)
    return Weak(np.abs(a.a)) if a.__class__ is Weak else np.abs(a)


def _int(eng, args, m):
    (a,) = args
    if not is_vector(a):
        return int(a)
    r = raw(a)
    return Weak(np.trunc(r).astype(np.int64) if r.dtype.kind == "f" else r.astype(np.int64))


def _float(eng, args, m):
    (a,) = args
    if not is_vector(a):
        return numba_float(a)
    return raw(a).astype(np.float64)          # float64 in numba: strong


def _len(eng, args, m):
    (a,) = args
    return len(a)


_BUILTINS = {"range": range, "min": min, "max": max, "abs": abs, "int": int, "float": float,
             "len": len, "True": True, "False": False}
_BUILTIN_CALLS = {min: _min, max: _max, abs: _abs, int: _int, float: _float, len: _len}
_MATH = set(cuda_calls.MATH_FUNCS)
