"""Where warps are scheduled: one greenlet per CUDA thread, run warp by warp.

A block's threads are greenlets grouped into warps of 32 consecutive linear thread ids. The
scheduler runs the lanes of one warp until each has finished or waits at a barrier or a warp
collective, resolves the collectives whose named lanes have all arrived, and moves on to the
next warp. When no thread of the block can run, every live thread must be waiting at the same
``syncthreads``: the barrier is released and the block's barrier epoch advances. Anything
else is a divergent barrier: undefined behaviour on real hardware (it may hang, or silently
give wrong results; a GPU may even complete it), reported as an error.

Only one greenlet runs at a time, so ``Scheduler.cur`` is the thread whose code is running;
the fake ``cuda`` module reads ``threadIdx`` and friends from it.
"""

from __future__ import annotations

import ctypes
import linecache
import re
import threading
import time

import greenlet
import numpy as np

from ..simt import CONST, FULL_MASK, GLOBAL, LOCAL, SHARED, WARP_SIZE, make_site, site_line
from .binding import KernelBinder
from .cuda_api import FakeCuda
from .errors import (BarrierError, EmulationError, KernelException, RunawayKernelError,
                     WarpCollectiveError)
from .launch_spec import GLOBAL_ALIGN, Launch
from .limits import check_static_shared
from .memory import ArrayInfo, TracedArray
from .tracing import Trace

READY, RUNNING, BARRIER, COLLECTIVE, DONE = range(5)


class _Stop(BaseException):
    """Raised asynchronously inside a kernel that ran past ``time_limit`` (the wall-clock
    backstop; loops are stopped by their iteration count, see ``ThreadState.loops``)."""


class Dim3(tuple):
    """``threadIdx``-style triple with ``.x``, ``.y``, ``.z``."""

    __slots__ = ()

    def __new__(cls, x, y, z):
        return tuple.__new__(cls, (x, y, z))

    x = property(lambda self: self[0])
    y = property(lambda self: self[1])
    z = property(lambda self: self[2])


class ThreadState:
    __slots__ = ("gtid", "tid", "threadIdx", "lane", "warp", "wstate", "g", "status", "resume",
                 "exc", "wait_kind", "wait_site", "wait_value", "wait_arg", "wait_mask",
                 "wait_frame", "lines", "barriers", "calls", "loops", "loop_step")

    def __init__(self, gtid, tid, tidx, wstate, iteration_limit):
        self.gtid = gtid
        self.tid = tid
        self.threadIdx = tidx
        self.lane = tid % WARP_SIZE
        self.warp = tid // WARP_SIZE
        self.wstate = wstate
        self.g = None
        self.status = READY
        self.resume = None
        self.exc = None
        self.wait_kind = None
        self.wait_site = None
        self.wait_value = None
        self.wait_arg = None
        self.wait_mask = None
        self.wait_frame = None
        self.lines = []     # sites this thread executed, in order (when tracing lines)
        self.barriers = []  # len(lines) at each block barrier it passed: where each epoch ends
        self.calls = {}     # n-th call of shared.array / local.array at a site
        # the loop iterations it may still run: each loop body starts by taking one
        # (instrument.py), and the one past the limit raises StopIteration (a C call per
        # iteration; see Scheduler.iterations)
        self.loops = iter(range(iteration_limit))
        self.loop_step = self.loops.__next__


class WarpState:
    __slots__ = ("index", "threads", "size", "wsync", "waiting")

    def __init__(self, index):
        self.index = index
        self.threads = []
        self.size = 0
        self.wsync = 0       # syncwarp epoch: accesses on either side of a syncwarp are ordered
        self.waiting = 0     # lanes waiting at a collective


_SHUFFLES = frozenset(("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync"))


def _int32(bits: int):
    """A lane mask as numba-cuda types it (ballot, match): an int32, negative when lane 31 is
    set."""
    return np.int32(bits - (1 << 32) if bits >= 1 << 31 else bits)


def _lanes(mask: int) -> list[int]:
    return [lane for lane in range(WARP_SIZE) if mask >> lane & 1]


def _ranges(ids) -> str:
    """[0,1,2,3,7,8] -> '0-3, 7-8' (for messages that list many threads)."""
    ids = sorted(ids)
    out, start, prev = [], None, None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(out)


class Scheduler:
    """Runs one launch. Holds the state the fake ``cuda`` module and the arrays read."""

    def __init__(self, launch: Launch):
        from .launch import interpreting_only
        if interpreting_only():       # the greenlet engine executes the kernel's Python
            raise RuntimeError("the greenlet engine is off in this process (interpretation only)")
        self.launch = launch
        self.griddim = launch.griddim
        self.blockdim = launch.blockdim
        self.tpb = launch.threads_per_block
        self.wpb = launch.warps_per_block
        self.nblocks = launch.num_blocks
        self.shared_bytes = launch.shared_bytes
        self.trace_memory = launch.trace
        self.trace_lines = launch.trace
        self.checks = launch.checks
        self.rng = np.random.default_rng(launch.seed) if launch.order == "random" else None
        self.time_limit = launch.time_limit
        self.iteration_limit = launch.iteration_limit
        self.max_trace = launch.max_trace
        self.trace_blocks = launch.trace_blocks   # trace only blocks below this linear id (None: all)
        self.progress = launch.progress           # progress(blocks done, blocks) after each block
        self._block_traced = True

        self.cur: ThreadState | None = None
        self.blockIdx = Dim3(0, 0, 0)
        self.block = 0
        self.epoch = 0
        self.memory_records: list = []
        self.cas_sites: set = set()       # sites of the compare-and-swaps traced (races.py)
        self.line_records: list = []
        self.rec = self.memory_records.append if self.trace_memory else None
        self.code_index: dict = {}        # code object -> index (see site())
        self.code_list: list = []
        self.finished_threads: list = []  # (gtid, executed sites, barrier positions) per finished thread
        self.arrays: list[ArrayInfo] = []
        self._shared_sites: dict = {}     # (site, n) -> array id
        self._local_sites: dict = {}
        self._const_cache: dict = {}
        self._block_shared: dict = {}
        self._static_shared_used = 0
        self._shared_layout: dict = {}    # array id -> base offset
        self._dynamic = None
        self._main = None
        self._async_target = None
        self.elapsed_s = None

        # the fake cuda module (its indices are set at each switch) and the kernel bound to it
        self.fake = FakeCuda(self)
        binder = KernelBinder(self.fake, instrument_lines=self.trace_lines,
                              register_code=self._add_code)
        self.kernel = binder.bind(launch.func)
        self.codes = frozenset(binder.codes)
        self.hook_dicts = binder.globals_dicts      # globals of instrumented functions
        self.args = self._bind_arguments(launch)

    def _bind_arguments(self, launch: Launch) -> tuple:
        """The kernel's arguments: NumPy arrays become global memory (traced arrays)."""
        out, next_base = [], 0
        for name, data in zip(launch.arg_names, launch.args):
            if not isinstance(data, np.ndarray):
                out.append(data)
                continue
            info = self._register_array(name, "global", data.shape, data.dtype, next_base)
            next_base += -(-max(data.nbytes, 1) // GLOBAL_ALIGN) * GLOBAL_ALIGN
            if self.checks:
                out.append(TracedArray(self, info.id, data.reshape(-1), data.shape or (1,),
                                       name, GLOBAL))
            else:
                out.append(data)
        return tuple(out)

    def trace(self) -> Trace:
        """What the run left behind, for ``Run``: the raw trace and the launch's arrays."""
        return Trace(launch=self.launch, arrays=list(self.arrays), codes=list(self.code_list),
                     memory_records=self.memory_records if self.trace_memory else None,
                     line_records=self.finished_threads if self.trace_lines else None,
                     elapsed_s=self.elapsed_s, engine="greenlet",
                     cas_sites=frozenset(self.cas_sites))

    # --- trace ------------------------------------------------------------------------------
    # A source *site* is one line of one function, as one int (see simtlab.simt.make_site).
    def _add_code(self, code, index=None) -> int:
        """Give a code object its index; ``code=None`` reserves an index for later."""
        if index is None:
            index = len(self.code_list)
            self.code_list.append(code)
        else:
            self.code_list[index] = code
        if code is not None:
            self.code_index[code] = index
        return index

    def site(self, frame) -> int:
        ci = self.code_index.get(frame.f_code)
        if ci is None:
            ci = self._add_code(frame.f_code)
        return make_site(ci, frame.f_lineno)

    def note_cas(self, frame):
        """A compare-and-swap runs at this site: its trace rows (kind atomic) validate the
        thread's earlier plain reads of the element (see analysis/races.py)."""
        if self.rec is not None:
            self.cas_sites.add(self.site(frame))

    def record(self, array_id, flat, kind, frame):
        ci = self.code_index.get(frame.f_code)
        if ci is None:
            ci = self._add_code(frame.f_code)
        th = self.cur
        self.rec((th.gtid, array_id, flat, kind, make_site(ci, frame.f_lineno), self.epoch,
                  th.wstate.wsync))

    def iterations(self, th: ThreadState) -> int:
        """The loop iterations ``th`` has run (passes through a loop body)."""
        return self.iteration_limit - th.loops.__length_hint__()

    # --- errors -----------------------------------------------------------------------------
    def error(self, cls, problem, frame=None, *, fix=None):
        th = self.cur
        line = source = function = None
        if frame is not None:
            line = frame.f_lineno
            source = linecache.getline(frame.f_code.co_filename, line)
            function = frame.f_code.co_name
        return cls(problem, block=tuple(self.blockIdx), thread=tuple(th.threadIdx) if th else None,
                   line=line, source=source, function=function, fix=fix)

    def _kernel_frame(self, tb):
        """The innermost traceback frame that belongs to the kernel or its device functions."""
        found = None
        while tb is not None:
            if tb.tb_frame.f_code in self.codes:
                found = tb
            tb = tb.tb_next
        return found

    def _convert(self, th: ThreadState, exc: BaseException) -> BaseException:
        if isinstance(exc, EmulationError):
            return exc
        if isinstance(exc, (KeyboardInterrupt, SystemExit, greenlet.GreenletExit)):
            return exc
        tb = self._kernel_frame(exc.__traceback__)
        line = source = function = None
        if tb is not None:
            line = tb.tb_lineno
            source = linecache.getline(tb.tb_frame.f_code.co_filename, line)
            function = tb.tb_frame.f_code.co_name
        where = dict(block=tuple(self.blockIdx), thread=tuple(th.threadIdx), line=line,
                     source=source, function=function)
        if isinstance(exc, _Stop):
            return self._out_of_time(where)
        if isinstance(exc, StopIteration) and tb is not None and \
                not th.loops.__length_hint__():
            return RunawayKernelError.too_many_iterations(self.iteration_limit, **where)
        if isinstance(exc, IndexError):
            from .errors import OutOfBoundsError
            return OutOfBoundsError(
                f"{exc} (checks=False: negative indices are not caught in this mode)", **where,
                fix="guard the access with a bounds check; run with checks on for details")
        if isinstance(exc, NotImplementedError):
            err = KernelException(f"NotImplementedError: {exc}", **where,
                                  fix="write the missing code in place of the stub")
            err.__cause__ = exc
            return err
        err = KernelException(f"{type(exc).__name__}: {exc}", **where,
                              fix="this is an ordinary Python error in the kernel's code")
        err.__cause__ = exc
        return err

    # --- the watchdog that stops runaway kernels --------------------------------------------
    def _raise_async(self):
        if self._async_target is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._async_target),
                                                       ctypes.py_object(_Stop))

    def _watchdog(self, lock, finished):
        with lock:
            if finished[0]:
                return
            self._raise_async()

    def _out_of_time(self, where: dict):
        return RunawayKernelError.out_of_time(self.time_limit, **where)

    # --- running ----------------------------------------------------------------------------
    def run(self):
        self._main = greenlet.getcurrent()
        self._async_target = threading.get_ident()
        lock, finished = threading.Lock(), [False]
        timer = None
        if self.time_limit:
            started = self.launch.started
            spent = 0.0 if started is None else time.perf_counter() - started
            timer = threading.Timer(max(0.0, self.time_limit - spent), self._watchdog,
                                    (lock, finished))
            timer.daemon = True
        t_start = time.perf_counter()
        try:
            try:
                if timer is not None:
                    timer.start()
                self._run_blocks()
            finally:
                with lock:
                    finished[0] = True
        except _Stop:
            # delivered while the scheduler itself was running, between two threads
            th = self.cur
            raise self._out_of_time(dict(block=tuple(self.blockIdx),
                                         thread=tuple(th.threadIdx) if th else None)) \
                from None
        finally:
            if timer is not None:
                timer.cancel()
            self.elapsed_s = time.perf_counter() - t_start
        return self.trace()

    def _run_blocks(self):
        order = range(self.nblocks)
        if self.rng is not None:
            order = self.rng.permutation(self.nblocks)
        for done, b in enumerate(order, 1):
            self._run_block(int(b))
            if self.progress is not None:
                self.progress(done, self.nblocks)

    def _thread_body(self, th: ThreadState):
        try:
            # integer arithmetic wraps at 64 bits as on the GPU (numba_types), silently: each
            # greenlet starts with NumPy's default error state, which warns on overflow
            with np.errstate(over="ignore"):
                self.kernel(*self.args)
        except BaseException as exc:          # noqa: BLE001 - reported by the scheduler
            th.exc = exc
        th.status = DONE
        if self.trace_lines and self._block_traced:
            self.finished_threads.append((th.gtid, th.lines, th.barriers))

    def _make_threads(self, b):
        gx, gy, _ = self.griddim
        self.blockIdx = Dim3(b % gx, (b // gx) % gy, b // (gx * gy))
        self.fake.blockIdx = self.blockIdx
        self.block = b
        self.epoch = 0
        self._block_shared = {}
        self._static_shared_used = 0
        self._dynamic = None
        bx, by, _ = self.blockdim
        warps = [WarpState(w) for w in range(self.wpb)]
        threads = []
        base = b * self.tpb
        for t in range(self.tpb):
            w = warps[t // WARP_SIZE]
            th = ThreadState(base + t, t, Dim3(t % bx, (t // bx) % by, t // (bx * by)), w,
                             self.iteration_limit)
            th.g = greenlet.greenlet(self._thread_body)
            th.resume = th                   # the first switch hands the thread its state
            w.threads.append(th)
            threads.append(th)
        for w in warps:
            w.size = len(w.threads)
        return threads, warps

    def _run_block(self, b):
        if self.trace_blocks is not None:
            # a sampled launch: blocks past the sample run with every check, unrecorded
            self._block_traced = b < self.trace_blocks
            self.rec = (self.memory_records.append if self.trace_memory and self._block_traced
                        else None)
        threads, warps = self._make_threads(b)
        while True:
            order = warps
            if self.rng is not None:
                order = [warps[i] for i in self.rng.permutation(len(warps))]
            for w in order:
                self._run_warp(w)
            if self.rec is not None and len(self.memory_records) > self.max_trace:
                raise EmulationError(
                    f"the trace passed {self.max_trace:,} memory accesses",
                    fix="trace a smaller launch, or run with trace=False for speed")
            if not self._release_barrier(threads, warps):
                break

    def _run_warp(self, w: WarpState):
        fake = self.fake
        hooks = self.hook_dicts
        while True:
            ran = False
            lanes = w.threads
            if self.rng is not None:
                lanes = [lanes[i] for i in self.rng.permutation(len(lanes))]
            for th in lanes:
                if th.status == READY:
                    self.cur = th
                    fake.threadIdx = th.threadIdx
                    fake.laneid = th.lane
                    for g in hooks:     # executed lines and loop iterations count for this thread
                        g["__simt_line__"] = th.lines.append
                        g["__simt_loop__"] = th.loop_step
                    th.status = RUNNING
                    th.g.switch(th.resume)
                    ran = True
                    if th.exc is not None:
                        raise self._convert(th, th.exc)
            if w.waiting and self._resolve_collectives(w):
                continue
            if not ran:
                return

    # --- barriers -----------------------------------------------------------------------------
    def wait_barrier(self, kind, value, frame):
        th = self.cur
        th.status = BARRIER
        th.wait_kind = kind
        th.wait_site = self.site(frame)
        th.wait_value = value
        th.wait_frame = frame
        return self._main.switch()

    def _where(self, th: ThreadState) -> str:
        if th.status == DONE:
            return "has finished (returned)"
        return f"waits at {th.wait_kind}() on line {site_line(th.wait_site)}"

    def _release_barrier(self, threads, warps) -> bool:
        """All threads are stuck: release a complete barrier, or report the divergent barrier."""
        stuck = [t for t in threads if t.status == COLLECTIVE]
        if stuck:
            raise self._stuck_collective(stuck[0], warps[stuck[0].warp])
        waiting = [t for t in threads if t.status == BARRIER]
        if not waiting:
            return False
        done = [t for t in threads if t.status == DONE]
        first = waiting[0]
        line = site_line(first.wait_site)
        if done:
            self.cur = first
            raise self.error(
                BarrierError,
                f"threads {_ranges(t.tid for t in waiting)} wait at {first.wait_kind}() on line "
                f"{line}, but threads {_ranges(t.tid for t in done)} of the block have finished "
                "without reaching it (an early return or a barrier inside an if)",
                first.wait_frame,
                fix="every thread of the block must reach every syncthreads(): guard the work "
                    "with `if i < n:` instead of returning early, and keep barriers outside "
                    "conditions that differ between threads")
        sites = {}
        for t in waiting:
            sites.setdefault(t.wait_site, []).append(t)
        if len(sites) > 1:
            desc = "; ".join(
                f"threads {_ranges(t.tid for t in ts)} at line {site_line(s)}"
                for s, ts in sites.items())
            self.cur = first
            raise self.error(
                BarrierError, f"threads of the block wait at different barriers: {desc}",
                first.wait_frame,
                fix="a barrier inside if/else is reached by only part of the block: move "
                    "syncthreads() out of the branch so that all threads meet at one barrier")
        value = None                        # numba-cuda types these results as int32
        if first.wait_kind == "syncthreads_count":
            value = np.int32(sum(1 for t in waiting if t.wait_value))
        elif first.wait_kind == "syncthreads_and":
            value = np.int32(all(t.wait_value for t in waiting))
        elif first.wait_kind == "syncthreads_or":
            value = np.int32(any(t.wait_value for t in waiting))
        self.epoch += 1
        for t in waiting:
            t.status = READY
            t.resume = value
            if self.trace_lines:            # the barrier's own line ends the epoch it closes
                t.barriers.append(len(t.lines))
        return True

    # --- warp collectives ---------------------------------------------------------------------
    def wait_collective(self, kind, mask, value, arg, frame):
        th = self.cur
        w = th.wstate
        if kind != "activemask":
            try:
                mask = int(mask)
            except (TypeError, ValueError):
                raise self.error(WarpCollectiveError, f"{kind}() mask {mask!r} is not an "
                                 "integer", frame, fix="pass a lane mask such as 0xffffffff") from None
            mask &= FULL_MASK
            if not mask >> th.lane & 1:
                raise self.error(
                    WarpCollectiveError,
                    f"lane {th.lane} calls {kind}() with mask {mask:#010x}, which does not "
                    "include the lane itself", frame,
                    fix="the mask names the lanes that take part; include the calling lane "
                        "(cuda.activemask() gives the lanes that are here)")
            missing = [lane for lane in _lanes(mask) if lane >= w.size]
            if missing and kind not in _SHUFFLES:
                # a vote in a partial last warp: the lanes that do not exist do not vote (an
                # H100 gives the ballot of the lanes that exist, numerics_h100.json)
                mask &= (1 << w.size) - 1
            elif missing:
                raise self.error(
                    WarpCollectiveError,
                    f"{kind}() mask {mask:#010x} names lanes {_ranges(missing)}, but warp "
                    f"{w.index} has only {w.size} threads (the block has {self.tpb})", frame,
                    fix="use a block size that is a multiple of 32, or build the mask from "
                        "the lanes that exist (cuda.activemask())")
        th.status = COLLECTIVE
        th.wait_kind = kind
        th.wait_mask = mask
        th.wait_value = value
        th.wait_arg = arg
        th.wait_site = self.site(frame)
        th.wait_frame = frame
        w.waiting += 1
        return self._main.switch()

    def _resolve_collectives(self, w: WarpState) -> bool:
        waiting = [t for t in w.threads if t.status == COLLECTIVE]
        progressed = False
        seen = set()
        for t in waiting:
            if t.wait_kind == "activemask" or t.status != COLLECTIVE:
                continue
            mask = t.wait_mask
            if mask in seen:
                continue
            seen.add(mask)
            group = [w.threads[lane] for lane in _lanes(mask)]
            if all(g.status == COLLECTIVE and g.wait_mask == mask
                   and g.wait_kind != "activemask" for g in group):
                kinds = {g.wait_kind for g in group}
                if len(kinds) > 1:
                    self.cur = t
                    desc = "; ".join(f"lanes {_ranges(g.lane for g in group if g.wait_kind == k)}"
                                     f" at {k}()" for k in sorted(kinds))
                    raise self.error(
                        WarpCollectiveError,
                        f"lanes named in mask {mask:#010x} are at different warp collectives: "
                        f"{desc}", t.wait_frame,
                        fix="all lanes named in the mask must call the same collective")
                self._complete(w, group, t.wait_kind, mask)
                progressed = True
        if not progressed:
            # cuda.activemask(): the lanes that reached the same line together are the active ones
            pending = [t for t in waiting if t.wait_kind == "activemask"]
            by_site = {}
            for t in pending:
                by_site.setdefault(t.wait_site, []).append(t)
            for ts in by_site.values():
                mask = np.uint32(sum(1 << t.lane for t in ts))    # numba-cuda: a uint32
                for t in ts:
                    t.status = READY
                    t.resume = mask
                    w.waiting -= 1
                progressed = True
        return progressed

    def _complete(self, w, group, kind, mask):
        by_lane = {g.lane: g for g in group}
        results = {}
        if kind in ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync"):
            for g in group:
                lane = g.lane
                if kind == "shfl_sync":
                    src = int(g.wait_arg) % WARP_SIZE
                elif kind == "shfl_up_sync":
                    src = lane - int(g.wait_arg)
                    src = lane if src < 0 else src
                elif kind == "shfl_down_sync":
                    src = lane + int(g.wait_arg)
                    src = lane if src >= WARP_SIZE else src
                else:
                    src = lane ^ int(g.wait_arg)
                    src = lane if src >= WARP_SIZE else src
                if src not in by_lane:
                    self.cur = g
                    raise self.error(
                        WarpCollectiveError,
                        f"lane {lane} reads lane {src} in {kind}(), but lane {src} is not in "
                        f"the mask {mask:#010x} (or does not exist): the value is undefined "
                        "on a GPU", g.wait_frame,
                        fix="read only from lanes named in the mask, e.g. guard with "
                            "`if lane + offset < width`")
                results[lane] = by_lane[src].wait_value
        elif kind == "ballot_sync":
            # numba-cuda types the ballot as an int32 (lane 31 voting makes it negative)
            ballot = _int32(sum(1 << g.lane for g in group if g.wait_value))
            results = {g.lane: ballot for g in group}
        elif kind == "all_sync":          # numba-cuda: a bool
            v = all(g.wait_value for g in group)
            results = {g.lane: v for g in group}
        elif kind == "any_sync":
            v = any(g.wait_value for g in group)
            results = {g.lane: v for g in group}
        elif kind == "eq_sync":
            vals = {bool(g.wait_value) for g in group}
            v = len(vals) == 1
            results = {g.lane: v for g in group}
        elif kind == "match_any_sync":    # numba-cuda: an int32 mask
            for g in group:
                results[g.lane] = _int32(sum(1 << h.lane for h in group
                                             if h.wait_value == g.wait_value))
        elif kind == "match_all_sync":    # numba-cuda: (int32 mask, bool)
            same = len({g.wait_value for g in group}) == 1
            results = {g.lane: ((_int32(mask), True) if same else (_int32(0), False))
                       for g in group}
        elif kind == "syncwarp":
            w.wsync += 1
            results = {g.lane: None for g in group}
        else:  # pragma: no cover - every kind is listed above
            raise AssertionError(kind)
        for g in group:
            g.status = READY
            g.resume = results[g.lane]
            w.waiting -= 1

    def _stuck_collective(self, t: ThreadState, w: WarpState):
        self.cur = t
        mask = t.wait_mask
        problems = []
        for lane in _lanes(mask):
            other = w.threads[lane]
            if other.status == COLLECTIVE and other.wait_mask == mask:
                continue
            if other.status == COLLECTIVE:
                problems.append(f"lane {lane} is at {other.wait_kind}() on line "
                                f"{site_line(other.wait_site)} with mask "
                                f"{other.wait_mask:#010x}")
            else:
                problems.append(f"lane {lane} {self._where(other)}")
        return self.error(
            WarpCollectiveError,
            f"lane {t.lane} waits at {t.wait_kind}() with mask {mask:#010x} for lanes that never "
            f"arrive: " + "; ".join(problems[:4]) + ("; ..." if len(problems) > 4 else ""),
            t.wait_frame,
            fix="every lane named in the mask must reach the same collective: move it out "
                "of the branch, or use the mask of the lanes inside the branch")

    # --- shared, local and constant arrays ----------------------------------------------------
    def _array_site(self, frame, kind):
        # numba allocates one shared array per call site, however often the line runs
        return self.site(frame)

    def _register_array(self, name, space, shape, dtype, base):
        info = ArrayInfo(len(self.arrays), name, space, tuple(shape), np.dtype(dtype),
                         np.dtype(dtype).itemsize, base)
        self.arrays.append(info)
        return info

    def shared_array(self, shape, dtype, frame):
        key = self._array_site(frame, "shared")
        arr = self._block_shared.get(key)
        if arr is not None:
            return arr
        shape = (int(shape),) if not isinstance(shape, tuple) else tuple(int(s) for s in shape)
        dtype = np.dtype(dtype)
        dynamic = shape == (0,) or int(np.prod(shape)) == 0
        if dynamic:
            if self.shared_bytes <= 0:
                raise self.error(
                    EmulationError, "cuda.shared.array(0, ...) asks for dynamic shared memory, "
                    "but the launch gives none", frame,
                    fix="pass shared_bytes=<bytes per block> to emulate() (on a GPU: "
                        "kernel[grid, block, 0, nbytes])")
            shape = (self.shared_bytes // dtype.itemsize,)
        aid = self._shared_sites.get(key)
        name = _assigned_name(frame) or f"shared_l{frame.f_lineno}"
        if aid is None:
            base = 0
            if not dynamic:
                base = -(-self._static_shared_used // 16) * 16
            aid = self._register_array(name, "shared", shape, dtype, base).id
            self._shared_sites[key] = aid
        info = self.arrays[aid]
        if not dynamic:
            self._static_shared_used = info.base + int(np.prod(shape)) * dtype.itemsize
            try:
                check_static_shared(self._static_shared_used, name)
            except EmulationError as e:
                raise self.error(type(e), e.problem, frame, fix=e.fix) from None
            storage = np.zeros(int(np.prod(shape)), dtype)
        else:
            if self._dynamic is None:
                self._dynamic = np.zeros(self.shared_bytes, np.uint8)
            storage = self._dynamic[: shape[0] * dtype.itemsize].view(dtype)
        written = bytearray(storage.size)     # 1 = written; bytearray indexing is cheap
        if not self.checks:
            arr = storage.reshape(shape)           # fast mode: a plain NumPy array
        else:
            arr = TracedArray(self, aid, storage, shape, name, SHARED, written=written)
        self._block_shared[key] = arr
        return arr

    def local_array(self, shape, dtype, frame):
        key = self._array_site(frame, "local")
        shape = (int(shape),) if not isinstance(shape, tuple) else tuple(int(s) for s in shape)
        dtype = np.dtype(dtype)
        aid = self._local_sites.get(key)
        if aid is None:
            name = _assigned_name(frame) or f"local_l{frame.f_lineno}"
            aid = self._register_array(name, "local", shape, dtype, 0).id
            self._local_sites[key] = aid
        storage = np.zeros(int(np.prod(shape)), dtype)
        if not self.checks:
            return storage.reshape(shape)
        return TracedArray(self, aid, storage, shape, self.arrays[aid].name, LOCAL)

    def const_array(self, source, frame):
        s = self.site(frame)
        arr = self._const_cache.get(s)
        if arr is None:
            data = np.ascontiguousarray(getattr(source, "_root", source))
            name = _assigned_name(frame) or f"const_l{frame.f_lineno}"
            aid = self._register_array(name, "const", data.shape, data.dtype, 0).id
            arr = TracedArray(self, aid, data.reshape(-1).copy(), data.shape, name, CONST,
                              readonly=True)
            self._const_cache[s] = arr
        return arr


_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=")


def _assigned_name(frame):
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    m = _ASSIGN.match(text)
    return m.group(1) if m else None
