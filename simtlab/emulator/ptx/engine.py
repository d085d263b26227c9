"""One launch of a CUDA C kernel on the PTX engine: check the arguments against the kernel's
parameters, lay out the address spaces, run chunk by chunk of whole blocks, build the trace.

The trace is built exactly as the vector engine builds its own (the same raw columns, sorted
into the greenlet engine's order by ``VectorEngine._memory_order``; plus each access's own byte
address and width, so that a float4 access is one 16-byte access), so ``Run``, its
metrics, races and every plot read a CUDA C run unchanged.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np

from ...simt import WARP_SIZE
from ..errors import EmulationError, LaunchError
from ..launch_spec import GLOBAL_ALIGN, TIME_LIMIT, Launch
from ..limits import as_dim3, check_launch
from ..memory import ArrayInfo
from ..run import Run
from ..tracing import Trace
from ..vector.engine import VectorEngine
from .executor import Chunk
from .instructions import DTYPES, Layout, compile_entry
from .memory import CONST_WINDOW, GLOBAL_BASE, Region, RegionTable
from .parser import type_size
from .tma import TENSOR_MAP_BYTES, TensorMap

CHUNK_LANES = 1 << 16        # lanes run together: whole blocks, up to this many threads
SHARED_ALIGN = 16

# C element types -> NumPy, for the pointer parameters of a kernel's signature
C_TYPES = {
    "float": np.float32, "double": np.float64, "int": np.int32, "unsigned": np.uint32,
    "unsigned int": np.uint32, "long long": np.int64, "long long int": np.int64,
    "unsigned long long": np.uint64, "unsigned long long int": np.uint64,
    "long": np.int64, "unsigned long": np.uint64, "size_t": np.uint64, "int64_t": np.int64,
    "uint64_t": np.uint64, "int32_t": np.int32, "uint32_t": np.uint32, "short": np.int16,
    "unsigned short": np.uint16, "int16_t": np.int16, "uint16_t": np.uint16, "char": np.int8,
    "signed char": np.int8, "unsigned char": np.uint8, "int8_t": np.int8, "uint8_t": np.uint8,
    "bool": np.bool_, "float2": np.float32, "float4": np.float32, "int2": np.int32,
    "int4": np.int32, "double2": np.float64, "uint2": np.uint32, "uint4": np.uint32,
    "half": np.float16, "__half": np.float16,
    # bfloat16 has no NumPy type: its bits as uint16
    "__nv_bfloat16": np.uint16, "nv_bfloat16": np.uint16,
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct)\b")


def c_signature(source: str, name: str):
    """``[(parameter name, element type or None, is pointer)]`` from the kernel's CUDA C
    declaration, or None when it cannot be found (a macro, a template)."""
    m = re.search(r"__global__[^;{(]*?\b" + re.escape(name) + r"\s*\(([^)]*)\)", source)
    if m is None:
        return None
    out = []
    for raw in m.group(1).split(","):
        decl = _QUALIFIERS.sub(" ", raw.split("=")[0]).strip()
        if not decl or decl == "void":
            continue
        pointer = "*" in decl or "[" in decl
        words = decl.replace("*", " ").replace("[", " ").replace("]", " ").split()
        pname = words[-1] if len(words) > 1 else f"arg{len(out)}"
        ctype = " ".join(words[:-1]) if len(words) > 1 else words[0]
        out.append((pname, C_TYPES.get(ctype), pointer))
    return out


@dataclass
class PtxProfile:
    """Per PTX instruction of the kernel (``kernel.entry.instructions``, same order): the warps
    that executed it (``warps``: one per warp per execution) and the lanes active in them
    (``lanes``), summed over the traced blocks. ``run.ptx_profile`` of a CUDA C run."""

    kernel: object
    warps: np.ndarray
    lanes: np.ndarray


class PtxEngine:
    """Runs one checked launch of a ``CudaCKernel``."""

    def __init__(self, launch: Launch, kernel):
        self.launch = launch
        self.kernel = kernel
        self.arrays: list = []
        self.mem_chunks: list = []
        self.mem_rows = 0
        self.line_chunks: list = []
        self.line_counts: list = []      # (first gtid, rows per lane) of each traced chunk
        self.views: dict = {}
        self.t0 = 0.0
        entry = kernel.entry
        regions = {"global": [], "shared": [], "local": [], "const": []}
        self.param_offsets = _param_offsets(entry)
        self.tensor_maps: dict = {}          # param offset -> TensorMap (TMA's tensor maps)
        self.tensor_regions: dict = {}       # id(TensorMap) -> the global Region of its tensor
        self.params = self._bind_params(regions["global"])
        shared, self.shared_size = self._lay_out_shared(entry, regions["shared"])
        const = self._lay_out_const(regions["const"])
        local, self.local_size = self._lay_out_local(entry, regions["local"])
        self.tables = {space: RegionTable(rs) for space, rs in regions.items()}
        self.layout = Layout(shared=shared, const=const, globals_={},
                             params={p.name: p for p in entry.params},
                             registers=entry.registers, local=local,
                             param_offsets=self.param_offsets)
        self.cluster_size, self.explicit_cluster = self._cluster_shape(entry)
        self.steps = _compiled(kernel, self.layout)
        self.cluster_barrier = np.array([s.kind == "bar" and s.scope == "cluster"
                                         for s in self.steps] + [False])
        self.line_starts = _line_starts(entry)
        count = len(entry.instructions)
        self.profile = PtxProfile(kernel, np.zeros(count, np.int64), np.zeros(count, np.int64))
        self.talks = any(s.talks for s in self.steps)

    # --- layout ------------------------------------------------------------------------------------
    def _register(self, name, space, nbytes, dtype, base) -> ArrayInfo:
        dtype = np.dtype(dtype)
        info = ArrayInfo(len(self.arrays), name, space, (max(nbytes // dtype.itemsize, 1),),
                         dtype, dtype.itemsize, base)
        self.arrays.append(info)
        return info

    def _bind_params(self, global_regions):
        """Each parameter's bytes as ``ld.param`` reads them; arrays get device addresses."""
        params, next_base = {}, 0
        for p, value, name in zip(self.kernel.entry.params, self.launch.args,
                                  self.launch.arg_names):
            dt = DTYPES[p.type] if p.type in DTYPES else None
            tensor_map = value if isinstance(value, TensorMap) else None
            if tensor_map is not None:
                value = tensor_map.tensor
            if isinstance(value, np.ndarray):
                info = ArrayInfo(len(self.arrays), name, "global", value.shape, value.dtype,
                                 value.dtype.itemsize, next_base)
                self.arrays.append(info)
                flat = value.reshape(-1).view(np.uint8)
                region = Region(info.id, name, GLOBAL_BASE + next_base, value.nbytes,
                                value.dtype.itemsize, flat)
                global_regions.append(region)
                params[p.name] = np.array([GLOBAL_BASE + next_base], np.uint64).view(np.uint8)
                if tensor_map is not None:       # its 128 bytes: the tensor's address, then 0s
                    params[p.name] = np.concatenate([params[p.name], np.zeros(
                        TENSOR_MAP_BYTES - 8, np.uint8)])
                    self.tensor_maps[self.param_offsets[p.name]] = tensor_map
                    self.tensor_regions[id(tensor_map)] = region
                next_base += -(-max(value.nbytes, 1) // GLOBAL_ALIGN) * GLOBAL_ALIGN
            else:
                params[p.name] = np.array([value], dt).view(np.uint8)
        return params

    def _element_size(self, entry, space):
        """The trace's element size for a shared/local variable: the smallest scalar width
        the kernel's loads and stores of that space use (the PTX declares bytes only)."""
        sizes = []
        for ins in entry.instructions:
            parts = ins.parts
            if parts[0] in ("ld", "st", "atom", "red") and space in parts:
                t = parts[-1]
                if t in DTYPES:
                    sizes.append(DTYPES[t].itemsize)
        return min(sizes) if sizes else 4

    def _lay_out_shared(self, entry, regions):
        module = self.kernel.module
        offsets, offset = {}, 0
        item = self._element_size(entry, "shared")
        variables = [v for v in module.variables + entry.variables if v.space == "shared"]
        dynamic = [v for v in variables if v.count is None or v.extern]
        for v in variables:
            if v in dynamic:
                continue
            offset = -(-offset // v.align) * v.align
            offsets[v.name] = offset
            info = self._register(_demangle(v.name), "shared", v.nbytes, f"u{item}", offset)
            regions.append(Region(info.id, info.name, offset, v.nbytes, item, None))
            offset += v.nbytes
        static = offset
        if static > 48 * 1024:
            raise LaunchError(f"{static} bytes of static shared memory (at most 49152)")
        if dynamic:
            align = max(SHARED_ALIGN, max(v.align for v in dynamic))
            start = -(-static // align) * align
            for v in dynamic:
                offsets[v.name] = start
            nbytes = self.launch.shared_bytes
            if nbytes:
                info = self._register(_demangle(dynamic[0].name), "shared", nbytes, f"u{item}",
                                      start)
                regions.append(Region(info.id, info.name, start, nbytes, item, None))
            offset = start + nbytes
        size = -(-max(offset, 1) // SHARED_ALIGN) * SHARED_ALIGN
        return offsets, size

    def _lay_out_const(self, regions):
        offsets, offset = {}, 0
        chunks = []
        constants = getattr(self.kernel, "constants", {})
        for v in self.kernel.module.variables:
            if v.space != "const":
                continue
            offset = -(-offset // v.align) * v.align
            offsets[v.name] = offset
            data = np.zeros(v.nbytes, np.uint8)
            if v.init:
                init = np.array(v.init, DTYPES.get(v.type, np.uint8))
                data[:init.nbytes] = init.view(np.uint8)
            if v.name in constants:
                given = constants[v.name]
                data[:given.nbytes] = given.view(np.uint8)
            chunks.append((offset, data))
            name = _demangle(v.name)
            dtype = DTYPES.get(v.type, np.uint8) if v.type not in ("b8",) else np.uint8
            if v.name in constants:
                dtype = constants[v.name].dtype
            info = self._register(name, "const", v.nbytes, dtype, CONST_WINDOW + offset)
            regions.append(Region(info.id, name, offset, v.nbytes, info.itemsize, None))
            offset += v.nbytes
        self.const_bytes = np.zeros(max(offset, 16), np.uint8)
        for start, data in chunks:
            self.const_bytes[start:start + len(data)] = data
        return offsets

    def _lay_out_local(self, entry, regions):
        """Each thread's local space: NVRTC's ``__local_depot`` (stack arrays indexed at run
        time) and any other ``.local`` variable, from address 0 (a thread's own copy)."""
        offsets, offset = {}, 0
        item = self._element_size(entry, "local")
        for v in entry.variables:
            if v.space != "local":
                continue
            offset = -(-offset // v.align) * v.align
            offsets[v.name] = offset
            name = "local" if v.name.startswith("__local_depot") else _demangle(v.name)
            info = self._register(name, "local", v.nbytes, f"u{item}", offset)
            regions.append(Region(info.id, name, offset, v.nbytes, item, None))
            offset += v.nbytes
        return offsets, -(-offset // 16) * 16

    def _cluster_shape(self, entry):
        """``(blocks per cluster, explicit?)`` from ``__cluster_dims__`` (``.reqnctapercluster``):
        clusters of (n, 1, 1) blocks along x, as many as fit the grid's x exactly (CUDA's rule)."""
        dims = entry.directives.get("reqnctapercluster")
        if not dims:
            return 1, "explicitcluster" in entry.directives
        dims = tuple(dims) + (1,) * (3 - len(dims))
        if dims[1:] != (1, 1):
            raise LaunchError(f"clusters of {dims} blocks: the PTX engine runs clusters along x "
                              "only, (n, 1, 1)")
        if self.launch.griddim[0] % dims[0]:
            raise LaunchError(f"a grid of {self.launch.griddim} blocks is not a whole number of "
                              f"clusters of {dims}", fix="make gridDim.x a multiple of the "
                              "cluster's size")
        return dims[0], True

    def describe_address(self, space, address):
        table = self.tables.get(space)
        if table is None or not table.regions:
            return f"no {space} arrays"
        nearest = min(table.regions, key=lambda r: min(abs(address - r.start),
                                                       abs(address - r.end)))
        if address >= nearest.end:
            return (f"{address - nearest.end} bytes past the end of {nearest.name}, which has "
                    f"{nearest.nbytes // nearest.itemsize} elements")
        return f"{nearest.start - address} bytes before {nearest.name}"

    # --- run -----------------------------------------------------------------------------------------
    def run(self) -> Trace:
        launch = self.launch
        self.t0 = time.perf_counter()
        per_chunk = 1 if self.talks else max(1, CHUNK_LANES // launch.threads_per_block)
        size = self.cluster_size                 # a chunk holds whole clusters
        per_chunk = max(size, per_chunk // size * size)
        nblocks = launch.num_blocks
        with np.errstate(all="ignore"):
            b1 = 0
            while b1 < nblocks:
                b0, b1 = b1, min(nblocks, b1 + per_chunk)
                if launch.trace_blocks is not None and b0 < launch.trace_blocks < b1:
                    # the traced sample ends inside: the chunk ends with it (on a cluster's
                    # edge), and the next starts there
                    b1 = max(b0 + size, -(-launch.trace_blocks // size) * size)
                traced = launch.trace and (launch.trace_blocks is None or b0 < launch.trace_blocks)
                chunk = Chunk(self, b0, b1, traced)
                try:
                    chunk.run()
                except EmulationError as exc:
                    exc.partial_trace = self.trace()
                    raise
                if launch.trace and self.mem_rows > launch.max_trace:
                    err = EmulationError(f"the trace passed {launch.max_trace:,} memory accesses",
                                         fix="trace a smaller launch, or run with trace=False")
                    err.partial_trace = self.trace()
                    raise err
                if launch.progress is not None:
                    for done in range(b0 + 1, b1 + 1):
                        launch.progress(done, nblocks)
        return self.trace()

    # the vector engine's own trace builders: same columns, same order
    _memory_order = VectorEngine._memory_order

    def _memory_records(self):
        """The vector engine's columns in its order, with each access's own byte address and
        width, and its ``seq`` (``tracing.build_memory``'s ``exact``)."""
        if not self.mem_chunks:
            return ("columns", np.zeros((7, 0), np.int64))
        rows = np.concatenate(self.mem_chunks, axis=1)
        self.mem_chunks = []
        order = self._memory_order(rows)
        # row by row: a 2-D fancy index along the second axis is twice as slow
        raw = [rows[i].take(order) for i in range(7)]
        return ("columns", raw, {name: rows[i].take(order)
                                 for name, i in (("address", 8), ("width", 9), ("seq", 10))})

    def _line_columns(self):
        """The line rows grouped by thread, each thread's in execution order (the vector
        engine's form) plus their ``step``: each row is placed at its thread's first row plus
        its own step, which the executor recorded, so no sort is needed (traced chunks cover
        consecutive thread ids)."""
        if not self.line_chunks:
            z = np.zeros(0, np.int64)
            return ("columns", z, z, z)
        first = self.line_counts[0][0]
        counts = np.concatenate([c for _, c in self.line_counts])
        starts = np.cumsum(counts) - counts
        rows = int(counts.sum())
        gtid = np.concatenate([g for g, _, _, _ in self.line_chunks])
        dest = starts[gtid - first]
        dest += np.concatenate([s for _, _, _, s in self.line_chunks])
        site = np.empty(rows, np.int64)
        site[dest] = np.repeat(np.array([s for _, s, _, _ in self.line_chunks], np.int64),
                               [len(g) for g, _, _, _ in self.line_chunks])
        epoch = np.empty(rows, np.int64)
        epoch[dest] = np.concatenate([e for _, _, e, _ in self.line_chunks])
        self.line_chunks = []
        thread_ids = np.arange(first, first + len(counts), dtype=np.int64)
        step = np.arange(rows, dtype=np.int64) - np.repeat(starts, counts)
        return ("columns", np.repeat(thread_ids, counts), site, epoch, step)

    def trace(self) -> Trace:
        memory = lines = None
        if self.launch.trace:
            memory = self._memory_records()
            lines = self._line_columns()
        return Trace(launch=self.launch, arrays=list(self.arrays), codes=[self.kernel.code],
                     memory_records=memory, line_records=lines,
                     elapsed_s=time.perf_counter() - self.t0, engine="ptx",
                     engine_reason="a CUDA C kernel: NVRTC's PTX runs in the PTX engine")


def _compiled(kernel, layout):
    """The kernel's steps, compiled once per kernel and layout of its variables."""
    key = (tuple(sorted(layout.shared.items())), tuple(sorted(layout.const.items())),
           tuple(sorted((layout.local or {}).items())))
    cache = kernel.__dict__.setdefault("_steps", {})
    steps = cache.get(key)
    if steps is None:
        steps = cache[key] = compile_entry(kernel.entry, layout)
    return steps


def _line_starts(entry) -> list:
    """Per instruction: may a lane start a CUDA C line here? Not where the same line already
    ran earlier in the same basic block (NVRTC interleaves the instructions of neighbouring
    lines: `3 4 3 4` is one execution of each line, as the numba twin's trace has it, not
    four). A lane inside a basic block ran every instruction before it there, so this is
    decided once per kernel; a jump resets the lane's line (``lane_line = -1``)."""
    starts_block = set(entry.labels.values())
    out, seen = [], set()
    for i, ins in enumerate(entry.instructions):
        if i in starts_block:
            seen = set()
        out.append(ins.line not in seen)
        seen.add(ins.line)
        if ins.parts[0] in ("bra", "ret", "exit"):
            seen = set()
    return out


def _param_offsets(entry) -> dict:
    """Each parameter's offset in the kernel's parameter space, in declaration order, each
    aligned to its ``.align`` (or its type's size): what ``cvta.param`` makes generic."""
    offsets, offset = {}, 0
    for p in entry.params:
        size = type_size(p.type) * (p.count or 1)
        align = p.align or type_size(p.type)
        offset = -(-offset // align) * align
        offsets[p.name] = offset
        offset += size
    return offsets


def _demangle(name: str) -> str:
    """``_ZZ21reduce_v1_interleavedE1s`` (a function's static shared variable) -> ``s``."""
    m = re.fullmatch(r"_ZZ\d+\w*?E(\d+)(\w+)", name)
    if m is None:
        m2 = re.fullmatch(r"_ZZ.*E(\d+)(\w+)", name)
        m = m2
    if m is not None:
        length = int(m.group(1))
        return m.group(2)[:length]
    return name


def _check_arguments(kernel, args):
    """Count, and each argument's kind against its parameter: a NumPy array for a pointer
    (of the pointer's element type), a number for a scalar. Returns the names."""
    params = kernel.entry.params
    signature = c_signature(kernel.source, kernel.name)
    if signature is not None and len(signature) != len(params):
        signature = None
    names = [s[0] for s in signature] if signature else [p.name for p in params]
    if len(args) != len(params):
        listed = ", ".join(names)
        raise LaunchError(f"{kernel.name}({listed}) takes {len(params)} arguments, the launch "
                          f"passes {len(args)}", fix="pass one argument per kernel parameter")
    out = []
    for pos, (p, value, name) in enumerate(zip(params, args, names)):
        ctype, pointer = (signature[pos][1], signature[pos][2]) if signature else \
            (None, p.type in ("u64", "b64") and isinstance(value, np.ndarray))
        tensor_map_param = p.type == "b8" and p.count == TENSOR_MAP_BYTES
        if isinstance(value, TensorMap) or tensor_map_param:
            if not (isinstance(value, TensorMap) and tensor_map_param):
                raise LaunchError(
                    f"parameter {name} is " + ("a 128-byte struct passed by value (a "
                                               "CUtensorMap): pass a TensorMap" if tensor_map_param
                                               else "not a CUtensorMap: pass no TensorMap there"),
                    fix="simtlab.emulator.ptx.tma.TensorMap(array, box, swizzle) describes the "
                        "tensor as cuTensorMapEncodeTiled's arguments do on the GPU")
            out.append(value)
            continue
        if hasattr(value, "__cuda_array_interface__") and not isinstance(value, np.ndarray):
            raise LaunchError(f"argument {name} is a GPU array ({type(value).__name__})",
                              fix="the emulator works on NumPy arrays: pass a NumPy array")
        if pointer:
            if not isinstance(value, np.ndarray):
                raise LaunchError(f"parameter {name} is a pointer: pass a NumPy array, not "
                                  f"{type(value).__name__}")
            if ctype is not None and value.dtype != np.dtype(ctype):
                raise LaunchError(f"parameter {name} points to {np.dtype(ctype)} elements, "
                                  f"the array passed holds {value.dtype}",
                                  fix=f"pass the array as .astype(np.{np.dtype(ctype)})")
            out.append(value)
            continue
        if isinstance(value, np.ndarray):
            raise LaunchError(f"parameter {name} is a .{p.type} scalar, not a pointer: pass a "
                              "number, not an array")
        if p.type not in DTYPES or p.count is not None:
            raise LaunchError(f"parameter {name} (.param .{p.type}) is a struct or of a type the "
                              "PTX engine does not pass yet")
        dt = DTYPES[p.type]
        if dt.kind in "iu" and isinstance(value, (float, np.floating)):
            raise LaunchError(f"parameter {name} is an integer (.{p.type}), the launch passes "
                              f"the float {value!r}")
        if ctype is not None:
            dt = np.dtype(ctype)
        try:
            if dt.kind in "iu":
                info = np.iinfo(dt)
                if not info.min <= int(value) <= info.max:
                    raise LaunchError(f"parameter {name} ({dt}) cannot hold {value!r}")
            converted = np.array(value).astype(dt)
        except (TypeError, ValueError):
            raise LaunchError(f"parameter {name} (.{p.type}) cannot take {value!r}") from None
        # a NumPy scalar of the parameter's PTX type (not a 0-d array: that is an ndarray)
        out.append(converted.astype(DTYPES[p.type])[()] if dt.itemsize ==
                   DTYPES[p.type].itemsize else converted[()])
    return out, names


def emulate_cuda_c(kernel, griddim, blockdim, *args, shared_bytes: int = 0, trace=True,
                   order: str = "in_order", seed: int = 0,
                   time_limit: float | None = TIME_LIMIT, max_iterations: int | None = None,
                   max_trace: int | None = None,
                   checks: bool = True, engine: str | None = None,
                   trace_blocks: int | None = None, progress=None) -> Run:
    """``simtlab.emulate`` for a :class:`simtlab.cuda_c.CudaCKernel` (see there)."""
    from ..launch_spec import MAX_TRACE

    if order != "in_order":
        raise ValueError("the PTX engine runs blocks, warps and lanes in order only")
    if engine not in (None, "auto", "ptx"):
        raise ValueError(f"a CUDA C kernel runs on the PTX engine, not engine={engine!r}")
    griddim = as_dim3(griddim, "griddim")
    blockdim = as_dim3(blockdim, "blockdim")
    check_launch(griddim, blockdim, int(shared_bytes),
                 int(getattr(kernel, "max_dynamic_shared_size_bytes", 0)))
    kernel_args, names = _check_arguments(kernel, args)
    copy_back = []
    for i, value in enumerate(kernel_args):
        if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
            data = np.ascontiguousarray(value)
            copy_back.append((value, data))
            kernel_args[i] = data
    launch = Launch(kernel, griddim, blockdim, tuple(kernel_args), tuple(names),
                    shared_bytes=int(shared_bytes), trace=bool(trace), time_limit=time_limit,
                    max_iterations=max_iterations, max_trace=max_trace or MAX_TRACE, checks=checks,
                    progress=progress,
                    trace_blocks=None if trace_blocks is None else int(trace_blocks))
    engine_ = PtxEngine(launch, kernel)
    try:
        trace_ = engine_.run()
    except EmulationError as exc:
        partial = getattr(exc, "partial_trace", None)
        if partial is not None:
            exc.run = Run(partial, kernel.name)
            exc.run.ptx_profile = engine_.profile if launch.trace else None
        raise
    finally:
        for original, data in copy_back:
            original[...] = data
    run = Run(trace_, kernel.name)
    run.ptx_profile = engine_.profile if launch.trace else None
    return run


__all__ = ["PtxEngine", "emulate_cuda_c", "c_signature", "WARP_SIZE"]
