"""One launch on the vector engine: bind, run chunk by chunk of whole blocks, build the trace."""

from __future__ import annotations

import time

import numpy as np

from ...keys import key_order, stable_order
from ...simt import GLOBAL, WARP_SIZE
from ..binding import KernelBinder
from ..launch_spec import GLOBAL_ALIGN, Launch
from ..memory import ArrayInfo
from ..tracing import Trace
from . import arrays as va
from . import order
from .interpreter import Function, Interpreter, TraceOverflow
from .values import Fallback

CHUNK_LANES = 1 << 16        # lanes run together: whole blocks, up to this many threads
# lane arithmetic as the GPU does it, silently: a float overflow gives inf, 0/0 nan (integer
# division by zero never gets here: values.binop hands it to the greenlet engine)
RUN_ERRSTATE = dict(divide="ignore", invalid="ignore", over="ignore")


class _RecordingBinder(KernelBinder):
    """The greenlet engine's binder (same static checks, same code indices), remembering the
    Python function behind each code object."""

    def __init__(self):
        self.codes_list: list = []
        super().__init__(object(), instrument_lines=False, register_code=self._register,
                         numba_typing=False)
        self.funcs: dict = {}

    def _register(self, code, index=None):
        if index is None:
            self.codes_list.append(code)
            return len(self.codes_list) - 1
        self.codes_list[index] = code
        return index

    def _bind_function(self, func, kernel=False):
        bound = super()._bind_function(func, kernel)
        self.funcs[func.__code__] = func
        return bound


_FUNCTIONS: dict = {}      # (function, its code index) -> Function: parsed once


def _parsed(func, index) -> Function:
    key = (func, index)
    fn = _FUNCTIONS.get(key)
    if fn is None or fn.globals is not func.__globals__:
        if len(_FUNCTIONS) > 1024:
            _FUNCTIONS.clear()
        fn = _FUNCTIONS[key] = Function(func, index)
    return fn


class VectorEngine:
    def __init__(self, launch: Launch, log_every_read: bool = False):
        self.launch = launch
        self.log_every_read = log_every_read      # see order.UnloggedReads
        self.time_limit = launch.time_limit       # counted from started (Interpreter._iterate)
        self.iteration_limit = launch.iteration_limit
        binder = _RecordingBinder()
        binder.bind(launch.func)
        self.codes = list(binder.codes_list)
        self._functions: dict = {}
        for index, code in enumerate(self.codes):
            func = binder.funcs.get(code)
            if func is not None:
                self._functions[code] = _parsed(func, index)
        self.kernel = self._functions[launch.func.__code__]
        self.arrays: list = []
        self._sites: dict = {}
        self.const_arrays: dict = {}
        self.mem_chunks: list = []
        self.mem_rows = 0
        self.line_chunks: list = []
        self.line_rows = 0
        self.t0 = self.started = 0.0
        self.order_shadows: list = []             # global memory's, see order.release
        self.args = self._bind_arguments()

    def _blocks_talk(self) -> bool:
        """Atomics or fences: blocks may hand each other values through global memory (a
        ticket, a look-back flag). The greenlet engine runs blocks one after another, so
        these kernels do too here, one block at a time, and see what it sees."""
        return any(fn.talks for fn in self._functions.values())

    def function(self, py_func) -> Function:
        fn = self._functions.get(py_func.__code__)
        if fn is None:
            raise Fallback(f"{py_func.__name__}() was not bound before the run")
        return fn

    def register(self, key, name, space, shape, dtype, base) -> ArrayInfo:
        aid = self._sites.get(key)
        if aid is None:
            info = ArrayInfo(len(self.arrays), name, space, tuple(shape), np.dtype(dtype),
                             np.dtype(dtype).itemsize, base)
            self.arrays.append(info)
            aid = self._sites[key] = info.id
        return self.arrays[aid]

    def _bind_arguments(self):
        out, next_base = [], 0
        for name, data in zip(self.launch.arg_names, self.launch.args):
            if not isinstance(data, np.ndarray):
                out.append(data)
                continue
            info = self.register(("arg", len(out)), name, "global", data.shape, data.dtype,
                                 next_base)
            next_base += -(-max(data.nbytes, 1) // GLOBAL_ALIGN) * GLOBAL_ALIGN
            arr = va.VArray(info.id, name, GLOBAL, data.shape or (1,), data.reshape(-1))
            order.state(arr, self._logs_reads_of(name))
            out.append(arr)
        return tuple(out)

    def _logs_reads_of(self, name) -> bool:
        """Does the order check keep the reads of this argument? Not when the kernel never
        writes through its name (``Function.stored_names``): reads alone cannot race."""
        return self.log_every_read or name in self.kernel.stored_names

    def run(self, one_block_from: int | None = None, reported: int = 0) -> Trace:
        """Run the launch chunk by chunk. ``one_block_from``: from this block on, one block per
        chunk (the rerun after a multi-block chunk passed ``max_trace``: see ``TraceOverflow``);
        ``reported``: blocks already announced to ``progress`` by that first attempt."""
        launch = self.launch
        self.t0 = time.perf_counter()
        self.started = self.t0 if launch.started is None else launch.started
        per_chunk = max(1, CHUNK_LANES // launch.threads_per_block)
        if self._blocks_talk():
            per_chunk = 1
        with np.errstate(**RUN_ERRSTATE):
            try:
                self._run_chunks(per_chunk, one_block_from, reported)
            finally:
                order.release(self.order_shadows)       # kept for the next launch
        return self.trace()

    def _run_chunks(self, per_chunk, one_block_from, reported):
        launch = self.launch
        for b0, b1, traced in _chunks(launch.num_blocks, per_chunk, launch.trace_blocks,
                                      one_block_from):
            interp = Interpreter(self, b0, b1, trace=launch.trace and traced)
            try:
                interp.run_kernel(self.kernel, self.args)
            finally:
                order.release(interp.order_shadows)
            interp.end_of_round()               # the greenlet engine's check after a block
            if launch.progress is not None:
                # the greenlet engine reports every block; the blocks of a chunk end
                # together
                for done in range(max(b0, reported) + 1, b1 + 1):
                    launch.progress(done, launch.num_blocks)

    def trace(self, *, drop_lines_from: int | None = None) -> Trace:
        """What ran so far as a ``Trace`` (all of it, or the partial one an error carries);
        ``drop_lines_from``: line chunks from this one on are left out (a block whose threads
        have not finished: the greenlet engine keeps a thread's lines once it finishes)."""
        memory = lines = None
        if self.launch.trace:
            if drop_lines_from is not None:
                del self.line_chunks[drop_lines_from:]
            memory = self._memory_records()
            lines = self._line_columns()
        return Trace(launch=self.launch, arrays=list(self.arrays), codes=self.codes,
                     memory_records=memory, line_records=lines,
                     elapsed_s=time.perf_counter() - self.t0, engine="vector")

    def _memory_records(self):
        if not self.mem_chunks:
            return ("columns", np.zeros((7, 0), np.int64))
        rows = np.concatenate(self.mem_chunks, axis=1)
        self.mem_chunks = []
        # one row per field (Trace.memory_records' "columns" form): no transposed copy
        return ("columns", rows[:7, self._memory_order(rows)])

    def _memory_order(self, rows):
        """The order of the recorded rows (columns gtid, array, index, kind, site, epoch,
        wsync, phase) that the greenlet engine would have recorded them in."""
        tpb = self.launch.threads_per_block
        gtid = rows[0]
        thread = gtid % tpb
        # the greenlet engine's order: block, barrier epoch, warp, collectives passed, lane
        # (one composite key, sorted stably, keeps each thread's own accesses in time order)
        key = gtid // tpb
        bound = self.launch.num_blocks
        for col, size in ((rows[5], int(rows[5].max()) + 1),
                          (thread // WARP_SIZE, self.launch.warps_per_block),
                          (rows[7], int(rows[7].max()) + 1), (thread % WARP_SIZE, WARP_SIZE)):
            key *= size
            key += col
            bound *= size
        return key_order(key, (bound - 1).bit_length())

    def _line_columns(self):
        if not self.line_chunks:
            z = np.zeros(0, np.int64)
            return ("columns", z, z, z)
        gtid = np.concatenate([g for g, _, _ in self.line_chunks])
        site = np.concatenate([np.full(len(g), s, np.int64) for g, s, _ in self.line_chunks])
        epoch = np.concatenate([e for _, _, e in self.line_chunks])
        self.line_chunks = []
        order = stable_order(gtid)
        return ("columns", gtid[order], site[order], epoch[order])


def _chunks(num_blocks, per_chunk, trace_blocks, one_block_from):
    """``(b0, b1, traced)`` per chunk of whole blocks: no chunk straddles the end of a sampled
    trace (``trace_blocks``) or the start of the one-block-per-chunk part."""
    cuts = {num_blocks}
    if trace_blocks is not None and 0 < trace_blocks < num_blocks:
        cuts.add(int(trace_blocks))
    if one_block_from is not None and 0 <= one_block_from < num_blocks:
        cuts.add(one_block_from)
    b0 = 0
    for cut in sorted(cuts):
        step = 1 if one_block_from is not None and b0 >= one_block_from else per_chunk
        for start in range(b0, cut, step):
            yield start, min(cut, start + step), trace_blocks is None or start < trace_blocks
        b0 = cut


def run(launch: Launch, one_block_from: int | None = None, reported: int = 0,
        log_every_read: bool = False) -> Trace:
    """The launch's ``Trace``. Raises ``Fallback`` (the greenlet engine takes over),
    ``TraceOverflow`` (run again from the original inputs with ``one_block_from``),
    ``order.UnloggedReads`` (run again from them with ``log_every_read``) or the
    ``max_trace`` ``EmulationError`` with its partial trace in ``.trace``."""
    return VectorEngine(launch, log_every_read).run(one_block_from, reported)
