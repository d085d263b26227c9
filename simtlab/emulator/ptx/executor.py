"""Run a kernel's compiled PTX for all lanes of a chunk of whole blocks, as NumPy vectors.

Reconvergence: **min-PC scheduling**. Each lane has its own program counter; each step runs
the instruction at the smallest PC among the lanes that can run, for exactly the lanes at
that PC. Within one warp this is the warp's own min-PC schedule (a warp whose lanes are all
further on simply waits), so the active lanes of every warp instruction are the ones a
min-PC SIMT machine gives; lanes that diverged at an ``if`` meet again at the first
instruction both paths reach, with no reconvergence points to compute. Why not an IPDOM
stack: it needs the control-flow graph's post-dominators and fails on the unstructured
branches PTX allows (NVRTC's loops with several exits), while min-PC needs nothing but the
PCs and reconverges at least as early on the structured code the course uses. While every
runnable lane shares one PC (the common case), the executor keeps that PC as one integer and
touches no per-lane PC vector at all.

Barriers (``bar.sync``): a lane waits until every lane of its block waits or has exited;
lanes of one block waiting at different barriers, or waiting while others have exited, is a
divergent barrier (``BarrierError``), as in the other engines. A cluster barrier
(``barrier.cluster.wait``) waits for every lane of the block's cluster; a chunk holds whole
clusters.

mbarrier waits (a "wait" step: ``mbarrier.try_wait`` / ``test_wait``, ``tma.py``): a lane whose
phase has not completed is parked (at the instruction, to retry it, or after it) and the other
lanes run; once every lane is parked, waits at a barrier or has exited, the parked ones retry
if some phase completed meanwhile, and otherwise the launch stops (``tma.stuck``). A block with
parked lanes passes no ``bar.sync``.

Runaway loops: every taken backward branch (a jump to an earlier instruction: one more pass
through a loop) counts one for each lane that takes it; a lane past ``Launch.iteration_limit``
stops the launch with ``RunawayKernelError.too_many_iterations``, the same count on every
machine, traced or not. The chunk also counts its backward branches (an upper bound on every
lane's count), so the per-lane maximum is looked at only once that bound passes the limit.

Uninitialised shared memory (traced runs): one flag per shared byte of each block, set by
every store, atomic and landed ``cp.async``; a load of a byte no thread of the block has
written raises ``UninitializedReadError``, as the other engines do.

What makes it fast (``benchmarks/ptx_engine_speed.py``; every result, trace row and metric
stays bit-identical):

- One NumPy call per instruction for all lanes of a chunk of whole blocks (up to 65,536
  lanes); while the runnable lanes share one PC, the schedule is one integer.
- Memory: an access whose lanes all fall inside one region (nearly all of them) is checked
  with two reductions (lowest, highest address) and one OR (alignment), and indexes a cached
  typed view of the storage with shifts (``_one_region``); only the rest takes the per-lane
  region search, which also finds the errors.
- float32 ``add``/``mul``/``fma`` in round-to-nearest take one pass (IEEE float32 NumPy; the
  vector engine's ``fma_lanes``, which rounds to odd only on halfway lanes).
- Trace: each line row and each access carries the counters the analyses would otherwise
  sort for: a line row its position in the lane's own rows (``step``; the rows are then
  placed, not sorted, in ``engine._line_columns``) and an access its ``seq`` (the lane's
  earlier accesses on that line).
"""

from __future__ import annotations

import linecache
import time

import numpy as np

from ...simt import ATOMIC, READ, WARP_SIZE, WRITE, make_site
from ..errors import (BarrierError, EmulationError, OutOfBoundsError, RunawayKernelError,
                      UninitializedReadError, WarpCollectiveError)
from . import tma
from .instructions import DTYPES, UnsupportedInstruction
from .memory import (CLUSTER_RANK_SHIFT, CONST_WINDOW, GLOBAL_BASE, LOCAL_WINDOW,
                     SHARED_OFFSET_MASK, SHARED_WINDOW, WINDOW_SIZE, typed_view)

_BIG = np.int64(1 << 62)
_SHIFTS = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}
_WINDOWS = (("shared", SHARED_WINDOW), ("local", LOCAL_WINDOW), ("const", CONST_WINDOW))


def _window(space, lo, hi):
    """``(state space, window base)`` of addresses ``lo .. hi`` of ``space``: a generic
    address range inside one window names that window's space; (None, 0) when it spans
    several (the general path splits it)."""
    if space != "generic":
        return space, 0
    if lo >= GLOBAL_BASE:
        return "global", 0
    for name, base in _WINDOWS:
        if base <= lo and hi < base + WINDOW_SIZE:
            return name, base
    return None, 0


class _Registers(dict):
    """Registers are made (zeros, like an uninitialised register's arbitrary bits) on first
    read: a kernel declares hundreds, a block path touches a few."""

    def __init__(self, n, types):
        super().__init__()
        self.n = n
        self.types = types

    def __missing__(self, name):
        value = self[name] = np.zeros(self.n, DTYPES[self.types[name]])
        return value


class Chunk:
    """The lanes of blocks ``b0 .. b1-1``, their registers, PCs and block-local memory."""

    def __init__(self, engine, b0: int, b1: int, trace: bool):
        launch = engine.launch
        self.engine = engine
        self.launch = launch
        self.trace = trace
        self.b0, self.nb = b0, b1 - b0
        tpb = self.tpb = launch.threads_per_block
        n = self.n = self.nb * tpb
        self.lanes = np.arange(n, dtype=np.int64)
        self.thread = self.lanes % tpb
        self.lblock = self.lanes // tpb
        self.gtid = self.lanes + b0 * tpb
        self.laneid = self.thread % WARP_SIZE
        self.warp = self.thread // WARP_SIZE
        self.gwarp = self.lblock * launch.warps_per_block + self.warp
        self.regs = _Registers(n, engine.layout.registers)
        self.params = engine.params
        self._special: dict = {}
        self.epoch = np.zeros(n, np.int64)
        self.wsync = np.zeros(n, np.int64)
        self.phase = np.zeros(n, np.int64)
        self.lane_line = np.full(n, -1, np.int64)
        if trace:       # line rows each lane has recorded: the next one's position (its step)
            self.line_count = np.zeros(n, np.int64)
            engine.line_counts.append((int(self.gtid[0]), self.line_count))
        self.shared_stride = engine.shared_size
        self.shared = np.zeros(self.nb * self.shared_stride, np.uint8)
        self.shared_base = self.lblock * self.shared_stride     # each lane's block's bytes
        self.access_counts: dict = {}      # site -> accesses each lane made on it (trace's seq)
        self._shared_views: dict = {}
        self.local_stride = engine.local_size
        self.local = np.zeros(n * self.local_stride, np.uint8)
        self.step_ins = None
        self.warp_starts = np.flatnonzero(self.laneid == 0)   # first lane of each warp
        self.cluster_size = engine.cluster_size
        self.loops = np.zeros(n, np.int64)       # taken backward branches per lane
        self.chunk_loops = 0                     # ... by any lane: a bound on every lane's
        self.loop_limit = launch.iteration_limit
        # one flag per shared byte: written in this launch (traced runs only)
        self.written = np.zeros(len(self.shared), bool) if trace else None
        self.async_groups = np.zeros(n, np.int64)   # cp.async groups each lane committed
        self.async_pending = []                  # copies issued, not landed yet
        self.mbarriers: dict = {}                # (block, shared offset) -> tma.Mbarrier
        self.mbar_events = 0                     # mbarrier phases completed so far

    # --- the per-instruction profile (the PTX source view) -------------------------------------
    def count_instruction(self, p, m):
        """One execution of instruction ``p`` by the lanes ``m``: the warps that issue it (any
        lane active) and the lanes active in them (Nsight's "instructions executed" and
        "thread instructions executed")."""
        profile = self.engine.profile
        if m is None:
            profile.warps[p] += len(self.warp_starts)
            profile.lanes[p] += self.n
        else:
            profile.warps[p] += np.count_nonzero(np.logical_or.reduceat(m, self.warp_starts))
            profile.lanes[p] += np.count_nonzero(m)

    # --- registers -----------------------------------------------------------------------------
    def put(self, name, value, m):
        reg_dtype = DTYPES[self.regs.types[name]]
        value = np.asarray(value)
        if value.dtype != reg_dtype:
            raise AssertionError(f"{name}: {value.dtype} written to a {reg_dtype} register")
        if m is None:
            if value.shape != (self.n,):
                value = np.full(self.n, value, reg_dtype)
            self.regs[name] = value
        else:
            self.regs[name] = np.where(m, value, self.regs[name])

    def special(self, name):
        value = self._special.get(name)
        if value is None:
            value = self._special[name] = self._make_special(name)
        return value

    def _make_special(self, name):
        launch = self.launch
        bx, by, _ = launch.blockdim
        gx, gy, _ = launch.griddim
        block = self.lblock + self.b0
        axis = {"x": 0, "y": 1, "z": 2}.get(name[-1])
        if name.startswith("%tid."):
            v = (self.thread % bx, (self.thread // bx) % by, self.thread // (bx * by))[axis]
        elif name.startswith("%ctaid."):
            v = (block % gx, (block // gx) % gy, block // (gx * gy))[axis]
        elif name.startswith("%ntid."):
            v = np.int64(launch.blockdim[axis])
        elif name.startswith("%nctaid."):
            v = np.int64(launch.griddim[axis])
        elif name == "%laneid":
            v = self.laneid
        elif name == "%warpid":
            v = self.warp
        elif name == "%nwarpid":
            v = np.int64(launch.warps_per_block)
        elif "cluster" in name:
            v = self._cluster_special(name, block, axis)
        else:                                           # %lanemask_*
            kind = name.split("_")[1]
            lane = self.laneid
            ones = np.int64(0xFFFFFFFF)
            v = {"eq": np.left_shift(1, lane), "lt": np.left_shift(1, lane) - 1,
                 "le": np.left_shift(2, lane) - 1,
                 "gt": ones & ~(np.left_shift(2, lane) - 1),
                 "ge": ones & ~(np.left_shift(1, lane) - 1)}[kind]
        return np.asarray(v).astype(np.uint32)

    def _cluster_special(self, name, block, axis):
        """Cluster registers for clusters of (size, 1, 1) blocks (what the engine runs)."""
        size = self.cluster_size
        gx = self.launch.griddim[0]
        bx = block % gx
        x_only = axis in (None, 0)
        if name in ("%cluster_ctarank", "%cluster_ctaid.x"):
            return bx % size
        if name in ("%cluster_nctarank", "%cluster_nctaid.x"):
            return np.int64(size)
        if name == "%is_explicit_cluster":
            return np.int64(self.engine.explicit_cluster)
        if name.startswith("%clusterid."):
            return bx // size if x_only else (block // gx) % self.launch.griddim[1] \
                if axis == 1 else block // (gx * self.launch.griddim[1])
        if name.startswith("%nclusterid."):
            return np.int64(gx // size if x_only else self.launch.griddim[axis])
        return np.int64(0 if name.startswith("%cluster_ctaid.") else 1)

    # --- errors ----------------------------------------------------------------------------------
    def where(self, lane: int):
        launch = self.launch
        bx, by, _ = launch.blockdim
        gx, gy, _ = launch.griddim
        b = self.b0 + int(self.lblock[lane])
        t = int(self.thread[lane])
        return (b % gx, (b // gx) % gy, b // (gx * gy)), (t % bx, (t // bx) % by, t // (bx * by))

    def error_at(self, lane, problem, ins, cls=EmulationError, fix=None):
        block, thread = self.where(lane)
        source = linecache.getline(self.engine.kernel.filename, ins.line).strip() or None
        err = cls(problem, block=block, thread=thread, line=ins.line or None, source=source,
                  function=self.engine.kernel.name, fix=fix)
        return err

    # --- memory --------------------------------------------------------------------------------
    def _active(self, m):
        return self.lanes if m is None else np.flatnonzero(m)

    def _spaces(self, space, addr, idx, ins):
        """``[(space, positions in idx, state-space addresses)]``: a generic address is split
        by the window it falls in; an address in none of them is out of bounds."""
        a = np.broadcast_to(np.asarray(addr, np.int64), (self.n,))[idx]
        if space != "generic":
            return [(space, slice(None), a)]
        out = []
        known = np.zeros(len(a), bool)
        for name, lo, hi in (("global", GLOBAL_BASE, None), ("shared", SHARED_WINDOW, WINDOW_SIZE),
                             ("local", LOCAL_WINDOW, WINDOW_SIZE), ("const", CONST_WINDOW,
                                                                     WINDOW_SIZE)):
            sel = a >= lo if hi is None else (a >= lo) & (a < lo + hi)
            if sel.any():
                known |= sel
                pos = np.flatnonzero(sel)
                out.append((name, pos, a[pos] - (0 if name == "global" else lo)))
        if not known.all():
            bad = int(np.flatnonzero(~known)[0])
            raise self._out_of_bounds(idx[bad], a[bad], "generic", ins)
        return out

    def _locate(self, space, a, idx, width, ins):
        """``(storage bytes, byte position per lane, region per lane, table)``, bounds and
        alignment checked."""
        eng = self.engine
        table = eng.tables[space]
        blocks = None
        if space == "shared":
            blocks, a = self._cluster_blocks(a, idx, ins), a & SHARED_OFFSET_MASK
        ri = table.find(a, width)
        if (ri < 0).any():
            bad = int(np.flatnonzero(ri < 0)[0])
            raise self._out_of_bounds(idx[bad], a[bad], space, ins)
        if (a % min(width, 16)).any():
            bad = int(np.flatnonzero(a % min(width, 16))[0])
            raise self.error_at(idx[bad], f"misaligned {width}-byte access at address "
                                f"{int(a[bad]):#x} in `{ins}`", ins, OutOfBoundsError)
        if space == "shared":
            return self.shared, blocks * self.shared_stride + a, ri, table, a
        if space == "local":
            return self.local, idx * self.local_stride + a, ri, table, a
        if space == "const":
            return eng.const_bytes, a, ri, table, a
        return None, a, ri, table, a                 # global: per region

    def _cluster_blocks(self, a, idx, ins):
        """The chunk-local block whose shared memory each shared address names: the lane's
        own, or (``mapa``'s addresses) block ``rank`` of its cluster."""
        own = self.lblock[idx]
        rank = a >> CLUSTER_RANK_SHIFT
        if not rank.any():
            return own
        remote = rank > 0
        if (rank > self.cluster_size).any():
            bad = int(np.flatnonzero(rank > self.cluster_size)[0])
            raise self._out_of_bounds(idx[bad], a[bad], "shared", ins)
        return np.where(remote, own - own % self.cluster_size + rank - 1, own)

    def _out_of_bounds(self, lane, address, space, ins):
        near = self.engine.describe_address(space, int(address))
        err = self.error_at(int(lane), f"{space} address {int(address):#x} is outside every "
                            f"array ({near}) in `{ins}`", ins, OutOfBoundsError,
                            fix="check the index against the array's size before the access")
        return err

    def _global_view(self, region, dtype):
        key = (region.aid, dtype)
        view = self.engine.views.get(key)
        if view is None:
            view = self.engine.views[key] = typed_view(region.data, dtype)
        return view

    def _each_region(self, space, a, ri, table):
        """Groups of lanes by region: ``(region, selector)`` (one group in the common case)."""
        lo, hi = int(ri.min()), int(ri.max())
        if lo == hi:
            yield table.regions[lo], slice(None)
            return
        for r in np.unique(ri):
            yield table.regions[int(r)], np.flatnonzero(ri == r)

    # --- the common case: every lane inside one region ----------------------------------------------
    def _one_region(self, space, addr, idx, width, dtype, writable):
        """``(region, typed storage, element index per lane, state-space address per lane)``
        when every lane of ``idx`` (None: all) accesses ``width`` aligned bytes inside one
        region of a global, shared or const space (a generic address: all in one window);
        None otherwise, and the general path finds each lane's window and region, and any
        error. Two reductions (lowest and highest address) and one OR (alignment) instead of
        a region search per lane: nearly every access of the course's kernels is this case."""
        a = np.asarray(addr, np.int64)
        if a.ndim == 0:
            a = np.broadcast_to(a, (self.n,))
        if idx is not None:
            if not len(idx):
                return None
            a = a[idx]
        lo, hi = int(a.min()), int(a.max())
        space, window = _window(space, lo, hi)
        if space not in ("global", "shared", "const") or (space == "const" and writable):
            return None
        if window:                                       # a generic address in its window
            a = a - window
            lo, hi = lo - window, hi - window
        if space == "shared" and hi >> CLUSTER_RANK_SHIFT:
            return None                                  # another block of the cluster's memory
        region = self.engine.tables[space].containing(lo, hi + width)
        if region is None or int(np.bitwise_or.reduce(a)) & (min(width, 16) - 1):
            return None
        shift = _SHIFTS[dtype.itemsize]
        if space == "global":
            return region, self._global_view(region, dtype), (a - region.start) >> shift, a
        if space == "shared":
            base = self.shared_base if idx is None else self.shared_base[idx]
            bpos = base + a
            if self.written is not None:                 # traced: the uninitialised-read flags
                if not writable and not self.written[bpos[:, None] + np.arange(width)].all():
                    return None                          # the general path names the element
                if writable:
                    self._mark_written(bpos, width)
            return region, self._shared_view(dtype), bpos >> shift, a
        return region, self._const_view(dtype), a >> shift, a

    def _shared_view(self, dtype):
        view = self._shared_views.get(dtype)
        if view is None:
            view = self._shared_views[dtype] = typed_view(self.shared, dtype)
        return view

    def _const_view(self, dtype):
        key = ("const", dtype)
        view = self.engine.views.get(key)
        if view is None:
            view = self.engine.views[key] = typed_view(self.engine.const_bytes, dtype)
        return view

    def load(self, space, addr, m, dtype, vec, ins):
        idx = None if m is None else np.flatnonzero(m)
        s = dtype.itemsize
        one = self._one_region(space, addr, idx, s * vec, dtype, False)
        if one is not None:
            region, view, element, a = one
            if idx is None:
                out = [view[element + k if k else element] for k in range(vec)]
            else:
                out = [np.zeros(self.n, dtype) for _ in range(vec)]
                for k in range(vec):
                    out[k][idx] = view[element + k if k else element]
            if self.trace:
                self.record(self.lanes if idx is None else idx, region, a, s * vec, READ, ins)
            return out
        idx = self._active(m)
        out = [np.zeros(self.n, dtype) for _ in range(vec)]
        s = dtype.itemsize
        for sp, pos, a in self._spaces(space, addr, idx, ins):
            lanes = idx[pos]
            data, bpos, ri, table, a = self._locate(sp, a, lanes, s * vec, ins)
            if sp == "shared" and self.written is not None:
                self._check_written(lanes, bpos, a, ri, table, s * vec, ins)
            for region, sel in self._each_region(sp, a, ri, table):
                la = lanes[sel]
                for k in range(vec):
                    if data is None:
                        view = self._global_view(region, dtype)
                        out[k][la] = view[(a[sel] + k * s - region.start) // s]
                    else:
                        out[k][la] = typed_view(data, dtype)[(bpos[sel] + k * s) // s]
                if self.trace:
                    self.record(la, region, a[sel], s * vec, READ, ins)
        return out

    def store(self, space, addr, m, dtype, values, ins):
        idx = None if m is None else np.flatnonzero(m)
        s = dtype.itemsize
        vec = len(values)
        one = self._one_region(space, addr, idx, s * vec, dtype, True)
        if one is not None:
            region, view, element, a = one
            if self.trace:
                self.record(self.lanes if idx is None else idx, region, a, s * vec, WRITE, ins)
            for k in range(vec):
                v = np.asarray(values[k]).astype(dtype, copy=False)
                view[element + k if k else element] = v if idx is None else v[idx]
            return
        idx = self._active(m)
        for sp, pos, a in self._spaces(space, addr, idx, ins):
            lanes = idx[pos]
            data, bpos, ri, table, a = self._locate(sp, a, lanes, s * vec, ins)
            if sp == "shared" and self.written is not None:
                self._mark_written(bpos, s * vec)
            if sp == "const":
                raise self.error_at(int(lanes[0]), f"a store to constant memory in `{ins}`", ins)
            for region, sel in self._each_region(sp, a, ri, table):
                la = lanes[sel]
                if self.trace:
                    self.record(la, region, a[sel], s * vec, WRITE, ins)
                for k in range(vec):
                    v = np.asarray(values[k]).astype(dtype, copy=False)[la]
                    if data is None:
                        view = self._global_view(region, dtype)
                        view[(a[sel] + k * s - region.start) // s] = v
                    else:
                        typed_view(data, dtype)[(bpos[sel] + k * s) // s] = v

    def atomic(self, space, addr, m, dtype, update, args, ins):
        """One read-modify-write per active lane, in lane order (the other engines' order);
        the old values."""
        idx = self._active(m)
        old = np.zeros(self.n, dtype)
        s = dtype.itemsize
        for sp, pos, a in self._spaces(space, addr, idx, ins):
            lanes = idx[pos]
            data, bpos, ri, table, a = self._locate(sp, a, lanes, s, ins)
            if sp == "shared" and self.written is not None:
                self._mark_written(bpos, s)
            if sp == "const":
                raise self.error_at(int(lanes[0]), f"an atomic on constant memory in `{ins}`",
                                    ins)
            for region, sel in self._each_region(sp, a, ri, table):
                la = lanes[sel]
                if self.trace:
                    self.record(la, region, a[sel], s, ATOMIC, ins)
                if data is None:
                    view = self._global_view(region, dtype)
                    where = (a[sel] - region.start) // s
                else:
                    view = typed_view(data, dtype)
                    where = bpos[sel] // s
                b = args[0][la] if args else None
                c = args[1][la] if len(args) > 1 else None
                for j, (lane, p) in enumerate(zip(la.tolist(), np.atleast_1d(where).tolist())):
                    o = view[p]
                    old[lane] = o
                    view[p] = update(o, b[j] if b is not None else None,
                                     c[j] if c is not None else None)
        return old

    # --- uninitialised shared memory ------------------------------------------------------------
    def _mark_written(self, bpos, width):
        self.written[(np.asarray(bpos)[:, None] + np.arange(width)).ravel()] = True

    def _check_written(self, lanes, bpos, a, ri, table, width, ins):
        unwritten = ~self.written[np.asarray(bpos)[:, None] + np.arange(width)].all(axis=1)
        if not unwritten.any():
            return
        j = int(np.flatnonzero(unwritten)[0])
        region = table.regions[int(ri[j])]
        index = int(a[j] - region.start) // region.itemsize
        err = self.error_at(int(lanes[j]), f"reads {region.name}[{index}] of shared array "
                            f"{region.name!r}, which no thread of this block has written yet "
                            f"(`{ins}`)", ins, UninitializedReadError,
                            fix="if another thread writes this element, put __syncthreads() "
                                "between that write and this read; otherwise initialise the "
                                "shared array first")
        err.array, err.index = region.name, index
        raise err

    # --- cp.async: copies that land when their group is waited for -------------------------------
    def async_copy(self, m, dst, src, nbytes, src_size, ins):
        """Read each active lane's ``src_size`` source bytes now (zero fill to ``nbytes``) and
        keep them, with the lane's open group, until a wait lands them in shared memory."""
        lanes = self._active(m)
        given = np.broadcast_to(np.asarray(src_size, np.int64), (self.n,))[lanes]
        if ((given < 0) | (given > nbytes)).any():
            bad = int(lanes[np.flatnonzero((given < 0) | (given > nbytes))[0]])
            raise self.error_at(bad, f"`{ins}`: src-size {int(np.broadcast_to(src_size, (self.n,))[bad])} "
                                f"is not between 0 and the copy's {nbytes} bytes", ins)
        to = np.broadcast_to(np.asarray(dst, np.int64), (self.n,))[lanes]
        self._locate("shared", to, lanes, nbytes, ins)            # bounds: at the copy's line
        data = np.zeros((len(lanes), nbytes), np.uint8)
        for k in np.unique(given[given > 0]).tolist():
            sel = np.flatnonzero(given == k)
            data[sel, :k] = self._read_bytes(src, lanes[sel], k, nbytes, ins)
        self.async_pending.append((lanes, self.async_groups[lanes].copy(), to, data, ins))

    def _read_bytes(self, src, lanes, k, align, ins):
        """``k`` bytes from each lane's global address (aligned to the copy's size), traced."""
        a = np.broadcast_to(np.asarray(src, np.int64), (self.n,))[lanes]
        if (a % align).any():
            bad = int(np.flatnonzero(a % align)[0])
            raise self.error_at(int(lanes[bad]), f"misaligned {align}-byte copy from address "
                                f"{int(a[bad]):#x} in `{ins}`", ins, OutOfBoundsError)
        table = self.engine.tables["global"]
        ri = table.find(a, k)
        if (ri < 0).any():
            bad = int(np.flatnonzero(ri < 0)[0])
            raise self._out_of_bounds(lanes[bad], a[bad], "global", ins)
        out = np.zeros((len(lanes), k), np.uint8)
        for region, sel in self._each_region("global", a, ri, table):
            out[sel] = region.data[(a[sel] - region.start)[:, None] + np.arange(k)]
            if self.trace:
                self.record(lanes[sel], region, a[sel], k, READ, ins)
        return out

    def async_commit(self, m):
        if m is None:
            self.async_groups += 1
        else:
            self.async_groups[m] += 1

    def async_wait(self, m, keep):
        """Land the copies of the active lanes' groups but the ``keep`` most recent ones."""
        act = np.ones(self.n, bool) if m is None else m
        still = []
        for lanes, groups, to, data, ins in self.async_pending:
            due = act[lanes] & (groups < self.async_groups[lanes] - keep)
            if due.any():
                self._land(lanes[due], to[due], data[due], ins)
            if not due.all():
                still.append((lanes[~due], groups[~due], to[~due], data[~due], ins))
        self.async_pending = still

    def _land(self, lanes, to, data, ins):
        stored, bpos, ri, table, a = self._locate("shared", to, lanes, data.shape[1], ins)
        stored[(bpos[:, None] + np.arange(data.shape[1])).ravel()] = data.ravel()
        if self.written is not None:
            self._mark_written(bpos, data.shape[1])
        if self.trace:
            for region, sel in self._each_region("shared", a, ri, table):
                self.record(lanes[sel], region, a[sel], data.shape[1], WRITE, ins)

    def land_all(self):
        """A thread that exits with copies in flight: they still land (in issue order)."""
        for lanes, _, to, data, ins in self.async_pending:
            self._land(lanes, to, data, ins)
        self.async_pending = []

    # --- loops ---------------------------------------------------------------------------------
    def loop_back(self, taken, step):
        """Lanes ``taken`` (None: all) jump back: one more loop iteration each."""
        if taken is None:
            self.loops += 1
        else:
            self.loops[taken] += 1
        self.chunk_loops += 1
        if self.chunk_loops > self.loop_limit:
            top = int(self.loops.max())
            if top > self.loop_limit:
                lane = int(np.argmax(self.loops))
                block, thread = self.where(lane)
                ins = step.ins
                source = linecache.getline(self.engine.kernel.filename, ins.line).strip() or None
                raise RunawayKernelError.too_many_iterations(
                    self.loop_limit, block=block, thread=thread, line=ins.line or None,
                    source=source, function=self.engine.kernel.name)

    def record(self, lanes, region, a, width, kind, ins):
        """One trace row per lane and access, as the GPU issues it: a ``.v4.f32`` access is one
        16-byte access (one request of its warp), its index that of its first element, its
        byte address and width recorded as they are (rows 8 and 9), and its ``seq`` (row 10)."""
        k = len(lanes)
        every = lanes is self.lanes                    # every lane: slices, no gathers
        site = make_site(0, ins.line)
        cols = np.empty((11, k), np.int64)
        cols[0] = self.gtid if every else self.gtid[lanes]
        cols[1] = region.aid
        cols[2] = (a - region.start) // region.itemsize
        cols[3] = kind
        cols[4] = site
        cols[5] = self.epoch if every else self.epoch[lanes]
        cols[6] = self.wsync if every else self.wsync[lanes]
        cols[7] = self.phase if every else self.phase[lanes]
        cols[8] = self.engine.arrays[region.aid].base + (a - region.start)
        cols[9] = width
        # seq: the lane's earlier accesses on this line (a lane's rows come in its own time
        # order, and keep it in the trace's order), counted here instead of by a sort later
        done = self.access_counts.get(site)
        if done is None:
            done = self.access_counts[site] = np.zeros(self.n, np.int64)
        if every:
            cols[10] = done
            done += 1
        else:
            seq = cols[10] = done[lanes]
            done[lanes] = seq + 1
        self.engine.mem_chunks.append(cols)
        self.engine.mem_rows += k

    def record_rows(self, lane, region, a, width, kind, ins):
        """Trace rows of one lane's several accesses (a TMA or bulk copy of the thread that
        issues it), in order: their ``seq`` counts on from the lane's earlier ones."""
        a = np.asarray(a, np.int64)
        k = len(a)
        if not k:
            return
        site = make_site(0, ins.line)
        cols = np.empty((11, k), np.int64)
        cols[0] = self.gtid[lane]
        cols[1] = region.aid
        cols[2] = (a - region.start) // region.itemsize
        cols[3] = kind
        cols[4] = site
        cols[5] = self.epoch[lane]
        cols[6] = self.wsync[lane]
        cols[7] = self.phase[lane]
        cols[8] = self.engine.arrays[region.aid].base + (a - region.start)
        cols[9] = width
        done = self.access_counts.get(site)
        if done is None:
            done = self.access_counts[site] = np.zeros(self.n, np.int64)
        cols[10] = done[lane] + np.arange(k)
        done[lane] += k
        self.engine.mem_chunks.append(cols)
        self.engine.mem_rows += k

    # --- warps -----------------------------------------------------------------------------------
    def warp_or(self, m, bits):
        """Per lane: the OR of ``bits`` over the active lanes of its warp."""
        bits = np.where(np.ones(self.n, bool) if m is None else m, bits, 0).astype(np.int64)
        per_warp = np.zeros(self.nb * self.launch.warps_per_block, np.int64)
        np.bitwise_or.at(per_warp, self.gwarp, bits)
        return per_warp[self.gwarp]

    def check_warp_mask(self, m, mask, ins):
        """The lanes executing a ``.sync`` collective must be exactly the lanes of its
        membermask (that exist); the mask per lane, as int64."""
        member = np.broadcast_to(np.asarray(mask).astype(np.int64), (self.n,)) & 0xFFFFFFFF
        here = self.warp_or(m, np.left_shift(np.int64(1), self.laneid))
        exists = self.warp_or(None, np.left_shift(np.int64(1), self.laneid))
        act = np.ones(self.n, bool) if m is None else m
        bad = act & (((member & exists) != here) | ((member >> self.laneid) & 1 == 0))
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            raise self.error_at(lane, f"`{ins}`: the lanes that reach it ({int(here[lane]):#010x})"
                                f" are not the lanes its mask names ({int(member[lane]):#010x})",
                                ins, WarpCollectiveError,
                                fix="every lane named in the mask must execute the same "
                                    "collective; compute the mask with __activemask() or "
                                    "__ballot_sync() before a divergent branch")
        return member

    def check_sources(self, m, src, ins):
        act = np.ones(self.n, bool) if m is None else m
        inside = (src >= 0) & (src < self.n)
        src_c = np.clip(src, 0, self.n - 1)
        ok = inside & (self.gwarp[src_c] == self.gwarp) & act[src_c]
        bad = act & ~ok
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            raise self.error_at(lane, f"`{ins}` reads a lane that is not active", ins,
                                WarpCollectiveError)

    def phase_step(self, m):
        if m is None:
            self.phase += 1
        else:
            self.phase[m] += 1

    def wsync_step(self, m):
        if m is None:
            self.wsync += 1
        else:
            self.wsync[m] += 1
        self.phase_step(m)

    # --- lines -------------------------------------------------------------------------------------
    def record_line(self, m, line):
        """A line row for each lane of ``m`` that starts ``line`` here, with its position in
        the lane's own rows (``step``), so that the trace is put in thread order by placing
        rows, not by sorting them (``engine._line_columns``)."""
        new = self.lane_line != line
        if m is not None:
            new &= m
        lanes = np.flatnonzero(new)
        if not len(lanes):
            return
        self.lane_line[lanes] = line
        step = self.line_count[lanes]
        self.line_count[lanes] = step + 1
        self.engine.line_chunks.append((self.gtid[lanes], make_site(0, line), self.epoch[lanes],
                                        step))

    # --- the schedule ------------------------------------------------------------------------------
    def run(self):
        steps = self.engine.steps
        nsteps = len(steps)
        n = self.n
        pc = np.zeros(n, np.int64)
        done = np.zeros(n, bool)
        waiting = np.zeros(n, bool)
        parked = np.zeros(n, bool)     # waiting for an mbarrier phase (Step kind "wait")
        seen_events = 0                # mbarrier phases completed when they last retried
        uniform, live = 0, None        # every runnable lane at PC `uniform`; live: those lanes
        t0 = self.engine.t0
        limit = self.launch.time_limit
        count = 0
        trace = self.trace
        line_starts = self.engine.line_starts
        while True:
            if uniform is None:
                runnable = ~(done | waiting | parked)
                if not runnable.any():
                    if parked.any() and self.mbar_events != seen_events:
                        seen_events = self.mbar_events       # a phase completed: they retry
                        parked[:] = False
                        continue
                    if not waiting.any():
                        if parked.any():
                            lanes = np.flatnonzero(parked)
                            raise tma.stuck(self, lanes, self.engine.steps[int(pc[lanes[0]])].ins)
                        self.land_all()
                        return
                    self._release(pc, done, waiting, parked)
                    runnable = ~(done | waiting | parked)
                pcs = np.where(runnable, pc, _BIG)
                p = int(pcs.min())
                m = pcs == p
                if np.count_nonzero(m) == np.count_nonzero(runnable):
                    uniform, live = p, (None if np.count_nonzero(m) == n else m)
                    m = live
            else:
                p, m = uniform, live
            count += 1
            if count & 1023 == 0 and limit and time.perf_counter() - t0 > limit:
                raise RunawayKernelError.out_of_time(limit, function=self.engine.kernel.name)
            if p >= nsteps:                              # fell off the end: as ret
                step_kind, step = "exit", None
            else:
                step = steps[p]
                step_kind = step.kind
                self.step_ins = step.ins
                if trace:
                    if line_starts[p]:
                        self.record_line(m, step.ins.line)
                    self.count_instruction(p, m)
            if step_kind == "op":
                try:
                    step.run(self, m)
                except UnsupportedInstruction as why:
                    lane = 0 if m is None else int(np.flatnonzero(m)[0])
                    raise self.error_at(lane, str(why), step.ins, EmulationError,
                                        fix="rewrite the line without it, or file an issue "
                                            "naming the instruction") from None
                nxt = p + 1
                if uniform is not None:
                    uniform = nxt
                else:
                    pc[m] = nxt
                continue
            if step_kind == "wait":
                try:
                    blocked = step.run(self, m)
                except UnsupportedInstruction as why:
                    lane = 0 if m is None else int(np.flatnonzero(m)[0])
                    raise self.error_at(lane, str(why), step.ins, EmulationError) from None
                if blocked is None:
                    if uniform is not None:
                        uniform = p + 1
                    else:
                        pc[m] = p + 1
                    continue
                act = np.ones(n, bool) if m is None else m
                pc[act] = p + 1
                if step.retry:
                    pc[blocked] = p
                parked |= blocked
                uniform = live = None
                continue
            g = self._guard(step, m)
            if step_kind == "bra":
                taken = g
                if uniform is not None:
                    tc = np.count_nonzero(taken) if taken is not None else -1
                    total = n if live is None else np.count_nonzero(live)
                    if step.target <= p and tc != 0:
                        self.loop_back(live if taken is None or tc == total else taken, step)
                    if taken is None or tc == total:
                        uniform = step.target
                        if trace:
                            if live is None:
                                self.lane_line[:] = -1
                            else:
                                self.lane_line[live] = -1
                    elif tc == 0:
                        uniform = p + 1
                    else:
                        if live is None:
                            pc[:] = p + 1
                        else:
                            pc[live] = p + 1
                        pc[taken] = step.target
                        if trace:
                            self.lane_line[taken] = -1
                        uniform = live = None
                else:
                    taken = m if taken is None else taken
                    if step.target <= p:
                        self.loop_back(taken, step)
                    pc[m] = p + 1
                    pc[taken] = step.target
                    if trace:
                        self.lane_line[taken] = -1
                continue
            if step_kind == "exit":
                leaving = (np.ones(n, bool) if m is None else m) if g is None else g
                if uniform is not None:
                    done |= leaving
                    rest = ~done & ~waiting & ~parked
                    if rest.any():
                        live = rest
                        uniform = p + 1
                    else:                               # (waiting, parked lanes keep their PCs)
                        uniform = live = None
                else:
                    done |= leaving
                    pc[m & ~leaving] = p + 1
                continue
            # a barrier
            if uniform is not None and live is None:
                self.epoch += 1                          # the whole chunk arrived together
                uniform = p + 1
                continue
            act = np.ones(n, bool) if m is None else m
            waiting |= act
            pc[act] = p
            uniform = live = None

    def _guard(self, step, m):
        """The lanes for which a guarded branch/exit happens (None: unguarded, all of m)."""
        ins = None if step is None else step.ins
        if ins is None or ins.guard is None:
            return None
        g = self.regs[ins.guard]
        if ins.guard_negated:
            g = ~g
        return g if m is None else (g & m)

    def _release(self, pc, done, waiting, parked):
        """Every lane waits or has exited: check each block's barrier and let it pass. A block
        with lanes parked on an mbarrier passes no barrier (they have not arrived); with none
        left to pass, it is a deadlock."""
        tpb = self.tpb
        every = waiting                                  # (the executor's own, updated below)
        held = np.repeat(parked.reshape(self.nb, tpb).any(axis=1), tpb)
        if held.any():
            if not (waiting & ~held).any():
                lanes = np.flatnonzero(parked)
                raise tma.stuck(self, lanes, self.engine.steps[int(pc[lanes[0]])].ins)
            waiting = waiting & ~held
        w = waiting.reshape(self.nb, tpb)
        d = done.reshape(self.nb, tpb)
        bad = w.any(axis=1) & d.any(axis=1)
        if bad.any():
            b = int(np.flatnonzero(bad)[0])
            lane = b * tpb + int(np.flatnonzero(w[b])[0])
            ins = self.engine.steps[int(pc[lane])].ins
            raise self.error_at(lane, f"threads of the block wait at the barrier on line "
                                f"{ins.line}, but {int(d[b].sum())} threads of the block have "
                                "exited without reaching it (an early return or a barrier "
                                "inside an if)", ins, BarrierError,
                                fix="every thread of the block must reach every "
                                    "__syncthreads(): guard the work with if (i < n) instead "
                                    "of returning early")
        pcs = np.where(waiting, pc, -1).reshape(self.nb, tpb)
        lo = np.where(w, pcs, _BIG).min(axis=1)
        hi = pcs.max(axis=1)
        split = w.any(axis=1) & (lo != hi)
        if split.any():
            b = int(np.flatnonzero(split)[0])
            lane = b * tpb + int(np.flatnonzero(w[b])[0])
            ins = self.engine.steps[int(pc[lane])].ins
            raise self.error_at(lane, "threads of the block wait at different barriers "
                                f"(lines {sorted({self.engine.steps[int(q)].ins.line for q in pcs[b][w[b]]})})",
                                ins, BarrierError,
                                fix="move __syncthreads() out of the branch so that all "
                                    "threads meet at one barrier")
        released = np.repeat(self._passing_blocks(w, lo), tpb) & waiting
        if not released.any():
            b = int(np.flatnonzero(w.any(axis=1))[0])
            lane = b * tpb + int(np.flatnonzero(w[b])[0])
            ins = self.engine.steps[int(pc[lane])].ins
            raise self.error_at(lane, f"threads of the block wait at the cluster barrier on line "
                                f"{ins.line}, but not every thread of the cluster's "
                                f"{self.cluster_size} blocks reaches it (some exited or wait at "
                                "another barrier)", ins, BarrierError,
                                fix="every thread of every block of the cluster must reach "
                                    "each cluster.sync()")
        pc[released] += 1
        self.epoch[released] += 1
        every[released] = False

    def _passing_blocks(self, w, lo):
        """Per block of the chunk: may its waiting lanes pass? A block barrier passes when the
        block waits; a cluster barrier when every block of the cluster waits at it."""
        at_cluster = self.engine.cluster_barrier[np.where(w.any(axis=1), lo, 0)] & w.any(axis=1)
        passing = w.any(axis=1) & ~at_cluster
        if at_cluster.any():
            size = self.cluster_size
            whole = at_cluster.reshape(-1, size).all(axis=1) & \
                (lo.reshape(-1, size) == lo.reshape(-1, size)[:, :1]).all(axis=1)
            passing |= np.repeat(whole, size)
        return passing
