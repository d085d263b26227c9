"""The result of one emulated launch: the trace, and the metrics the analyses derive from it."""

from __future__ import annotations

import linecache
from functools import cached_property

import numpy as np

from .limits import WARP_SIZE
from .memory import KINDS
from .tracing import build_lines, build_memory


class Run:
    """What ``simtlab.emulate`` returns. Heavy columns are built on first use."""

    def __init__(self, sched, kernel_name: str):
        self.kernel_name = kernel_name
        self.griddim = sched.griddim
        self.blockdim = sched.blockdim
        self.threads_per_block = sched.tpb
        self.warps_per_block = sched.wpb
        self.num_blocks = sched.nblocks
        self.arrays = list(sched.arrays)
        self.traced = sched.trace_memory
        self.lines_traced = sched.trace_lines
        # blocks 0..traced_blocks-1 are in the trace (all of them unless emulate(trace_blocks=))
        self.traced_blocks = sched.traced_blocks if sched.trace_memory else 0
        self.elapsed = sched.elapsed
        self._codes = list(sched.code_list)
        self._kernel_code = sched.kernel_code
        self._memory_records = sched.memory_records
        self._line_records = sched.finished_threads

    def __repr__(self):
        return (f"<Run {self.kernel_name} grid={self.griddim} block={self.blockdim} "
                f"threads={self.num_blocks * self.threads_per_block}>")

    # --- indices --------------------------------------------------------------------------------
    def block_index(self, b: int) -> tuple:
        gx, gy, _ = self.griddim
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def thread_index(self, t: int) -> tuple:
        bx, by, _ = self.blockdim
        return (t % bx, (t // bx) % by, t // (bx * by))

    def _unravel(self, what, i):
        return self.block_index(i) if what == "block" else self.thread_index(i)

    def array(self, name: str):
        for a in self.arrays:
            if a.name == name:
                return a
        raise KeyError(f"no array named {name!r} in this run; arrays: "
                       f"{[a.name for a in self.arrays]}")

    def accesses(self, name: str, kind: str | None = None, block: int | None = None) -> np.recarray:
        """The trace rows (``run.memory``) of one array: ``kind`` "read", "write", "atomic" or
        None for all; ``block`` one block or None for all."""
        mem = self.memory
        keep = mem.array == self.array(name).id
        if kind is not None:
            codes = {v: k for k, v in KINDS.items()}
            if kind not in codes:
                raise ValueError(f"kind must be one of {sorted(codes)} or None, not {kind!r}")
            keep &= mem.kind == codes[kind]
        if block is not None:
            keep &= mem.block == block
        return mem[keep]

    # --- source -------------------------------------------------------------------------------
    def source(self, line: int, site: int | None = None) -> str:
        """The text of a kernel source line (by line number, or by trace ``site``)."""
        if site is not None:
            code = self._codes[site >> 20]
            return linecache.getline(code.co_filename, site & 0xFFFFF).rstrip()
        for code in self._codes:      # the kernel's own code comes first
            if code is None:
                continue
            text = linecache.getline(code.co_filename, line)
            if text:
                return text.rstrip()
        return ""

    # --- trace ----------------------------------------------------------------------------------
    @cached_property
    def memory(self) -> np.recarray:
        if not self.traced:
            raise ValueError("this run was not traced: run emulate(..., trace=True)")
        mem = build_memory(self._memory_records, self.arrays, self.threads_per_block, self.warps_per_block)
        self._memory_records = None
        return mem

    @cached_property
    def lines(self) -> np.recarray:
        if not self.lines_traced:
            raise ValueError("lines were not traced: run emulate(..., trace=True)")
        lines = build_lines(self._line_records, self.threads_per_block, self.warps_per_block)
        self._line_records = None
        return lines

    @cached_property
    def _race_result(self):
        from ..analysis.races import find_races
        return find_races(self.memory, self.arrays, self._unravel)

    @property
    def races(self) -> list:
        if not self.traced:
            return []
        return self._race_result[1]

    @cached_property
    def metrics(self) -> dict:
        from ..analysis import bank_conflicts, coalescing, divergence
        m = {"threads": self.num_blocks * self.threads_per_block,
             "blocks": self.num_blocks,
             "warps": self.num_blocks * self.warps_per_block,
             "global_requests": None, "global_sectors_per_request": None,
             "shared_requests": None, "shared_wavefronts_per_request": None,
             "shared_bank_conflicts": None, "simt_efficiency": None, "races": None,
             "elapsed_s": self.elapsed}
        if self.traced:
            req = coalescing.requests(self.memory, 0)
            m["global_requests"] = int(len(req))
            m["global_sectors_per_request"] = float(req.sectors.mean()) if len(req) else None
            m.update(bank_conflicts.summary(self.memory))
            m["races"] = self._race_result[0]
        if self.lines_traced:
            m["simt_efficiency"] = divergence.simt_efficiency(self.lines)
        return m

    def summary(self) -> str:
        """A few lines a student can read: launch shape and what the analyses found."""
        m = self.metrics
        out = [f"{self.kernel_name}: grid {self.griddim}, block {self.blockdim}: "
               f"{m['threads']} threads in {m['warps']} warps of {WARP_SIZE}"]
        if m["global_requests"]:
            out.append(f"global memory: {m['global_requests']} warp requests, "
                       f"{m['global_sectors_per_request']:.2f} sectors per request")
        if m["shared_requests"]:
            out.append(f"shared memory: {m['shared_requests']} requests, "
                       f"{m['shared_wavefronts_per_request']:.2f} wavefronts per request, "
                       f"{m['shared_bank_conflicts']} bank conflicts")
        if m["simt_efficiency"] is not None:
            out.append(f"SIMT efficiency: {m['simt_efficiency']:.1%}")
        if m["races"]:
            out.append(f"RACES: {m['races']} (first: {self.races[0]})")
        return "\n".join(out)
