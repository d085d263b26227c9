"""The result of one emulated launch: the trace, and the metrics the analyses derive from it."""

from __future__ import annotations

import dataclasses
import linecache
from functools import cached_property

import numpy as np

from ..analysis import bank_conflicts, coalescing, divergence
from ..analysis.races import find_races
from ..simt import KINDS, WARP_SIZE, percent, site_code, site_line
from .tracing import Trace


class Run:
    """What ``simtlab.emulate`` returns. Heavy columns are built on first use."""

    #: a CUDA C run's per-PTX-instruction counts (``emulator/ptx/engine.PtxProfile``); None
    #: for a Python kernel or an untraced run
    ptx_profile = None

    def __init__(self, trace: Trace, kernel_name: str):
        launch = trace.launch
        self.kernel_name = kernel_name
        self.griddim = launch.griddim
        self.blockdim = launch.blockdim
        self.threads_per_block = launch.threads_per_block
        self.warps_per_block = launch.warps_per_block
        self.num_blocks = launch.num_blocks
        self.arrays = list(trace.arrays)
        self.traced = trace.memory_records is not None
        self.lines_traced = trace.line_records is not None
        # blocks 0..traced_blocks-1 are in the trace (all of them unless emulate(trace_blocks=))
        tb = launch.trace_blocks
        self.traced_blocks = 0 if not self.traced else (
            launch.num_blocks if tb is None else min(launch.num_blocks, int(tb)))
        self.elapsed_s = trace.elapsed_s          # wall time: not a fact about the kernel
        self.engine = trace.engine
        self.engine_reason = trace.engine_reason
        self._codes = list(trace.codes)
        self._trace = dataclasses.replace(trace)   # its fields are dropped once built

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
        None for all; ``block`` one block or None for all.

        Selected from the trace's columns, so only the chosen rows become a record array (one
        block's reads of a 64^3 GEMM trace, 594,000 rows: 39 ms, against 70 ms through the
        whole ``run.memory``; one run each). A run whose ``run.memory`` was built uses it."""
        mem = self.__dict__["memory"] if "memory" in self.__dict__ else self.memory_columns
        keep = mem.array == self.array(name).id
        if kind is not None:
            codes = {v: k for k, v in KINDS.items()}
            if kind not in codes:
                raise ValueError(f"kind must be one of {sorted(codes)} or None, not {kind!r}")
            keep &= mem.kind == codes[kind]
        if block is not None:
            keep &= mem.block == block
        rows = mem[keep]
        return rows if isinstance(rows, np.recarray) else rows.records()

    # --- source -------------------------------------------------------------------------------
    def source(self, line: int, site: int | None = None) -> str:
        """The text of a kernel source line (by line number, or by trace ``site``)."""
        if site is not None:
            code = self._codes[site_code(site)]
            return linecache.getline(code.co_filename, site_line(site)).rstrip()
        for code in self._codes:      # the kernel's own code comes first
            if code is None:
                continue
            text = linecache.getline(code.co_filename, line)
            if text:
                return text.rstrip()
        return ""

    # --- trace ----------------------------------------------------------------------------------
    # The trace is kept as one array per field (``Columns``): the metrics and the race check
    # read those. ``memory`` and ``lines`` are the same rows as record arrays, built on first use
    # (copying every field into records costs more than all the metrics together).
    @cached_property
    def memory_columns(self):
        """The rows of ``run.memory``, one NumPy array per field (``c.block``, ``c[mask]``)."""
        if not self.traced:
            raise ValueError("this run was not traced: run emulate(..., trace=True)")
        mem = self._trace.memory()
        self._trace.memory_records = None       # the columns replace the raw records
        self._trace.memory_table = None
        return mem

    @cached_property
    def line_columns(self):
        """The rows of ``run.lines``, one NumPy array per field."""
        if not self.lines_traced:
            raise ValueError("lines were not traced: run emulate(..., trace=True)")
        lines = self._trace.lines()
        self._trace.line_records = None
        return lines

    @cached_property
    def memory(self) -> np.recarray:
        return self.memory_columns.records()

    @cached_property
    def lines(self) -> np.recarray:
        return self.line_columns.records()

    @cached_property
    def _race_result(self):
        if self._trace.races is not None:
            return self._trace.races
        return find_races(self.memory_columns, self.arrays, self._unravel,
                          cas_sites=self._trace.cas_sites)

    @property
    def races(self) -> list:
        if not self.traced:
            return []
        return self._race_result[1]

    @cached_property
    def metrics(self) -> dict:
        m = {"threads": self.num_blocks * self.threads_per_block,
             "blocks": self.num_blocks,
             "warps": self.num_blocks * self.warps_per_block,
             "global_requests": None, "global_sectors_per_request": None,
             "shared_requests": None, "shared_wavefronts_per_request": None,
             "shared_bank_conflicts": None, "simt_efficiency": None, "races": None}
        if self.traced:
            mem = self.memory_columns
            m.update(coalescing.summary(mem))
            m.update(bank_conflicts.summary(mem))
            m["races"] = self._race_result[0]
        if self.lines_traced:
            m["simt_efficiency"] = divergence.simt_efficiency(self.line_columns)
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
            out.append(f"SIMT efficiency: {percent(m['simt_efficiency'], 1)}")
        if m["races"]:
            out.append(f"RACES: {m['races']} (first: {self.races[0]})")
        return "\n".join(out)
