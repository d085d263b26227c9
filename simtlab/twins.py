"""A kernel and its CUDA C twin, traced side by side on the CPU.

The course's versions exist twice: a numba kernel (``kernels/<topic>.py``) and a CUDA C kernel
of the same name (``kernels/<topic>.cu``). The emulator runs the first, the PTX engine the
second (NVRTC's PTX), and both give a ``Run`` with the same metrics. ``compare_engines(topic,
labels, *inputs)`` runs each version's launch plan on both and returns an
:class:`EngineComparison`: one row per launch with the two traces' metrics next to each other
(what is the same is the point; where a number differs the row says by how much), plus what
only the PTX engine can count (PTX warp instructions executed) and how many elements of the
plan's output the trace saw written, which is where a wrong kernel shows its fault.
``compare_kernels(numba_kernel, cuda_c_kernel, grid, block, *args)`` does the same for one
launch of any pair, ``compare_twins(topic, names, grid, block, *args)`` for course kernels by
name (chapters 1 and 2, which have no version tables), and ``compare_network(params, x)`` for
chapter 8's whole forward pass, layer by layer. ``EngineComparison.lanes`` shows which lanes of
a warp made each memory request on both sides (where a branch's paths run), ``plot_mapping``
the thread that wrote each element of the CUDA C run, checked against the numba run's.

Without NVRTC (the ``cuda-c`` extra) both raise ``CompilerMissing``; ``show_or_explain`` turns
that into the install command in a notebook, so Run All goes on.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np

from .html_theme import MUTED, NO_WRAP, RAISED, TEXT, WARN

__all__ = ["METRICS", "LaunchPair", "EngineComparison", "compare_engines", "compare_kernels",
           "compare_twins", "compare_network", "request_lanes", "global_requests_by_array", "ptx_warp_instructions", "written_elements", "request_widths", "show_or_explain", "CudaCMissing"]

#: (column title, ``run.metrics`` key) of each metric the table puts side by side
METRICS = (
    ("global requests", "global_requests"),
    ("sectors / request", "global_sectors_per_request"),
    ("shared requests", "shared_requests"),
    ("wavefronts / request", "shared_wavefronts_per_request"),
    ("bank conflicts", "shared_bank_conflicts"),
    ("SIMT efficiency", "simt_efficiency"),
    ("races", "races"),
)


def ptx_warp_instructions(run) -> int | None:
    """PTX instructions the traced warps executed (one per warp per execution; None for a
    numba run or an untraced one)."""
    profile = getattr(run, "ptx_profile", None)
    return None if profile is None else int(profile.warps.sum())


def written_elements(run, array_position: int) -> int:
    """Distinct elements of the run's ``array_position``-th global array (in argument order)
    that the trace saw written, by plain stores or atomics; a vector store (CUDA C's float4:
    one 16-byte access) counts every element it covers."""
    info = [a for a in run.arrays if a.space == "global"][array_position]
    columns = run.memory_columns
    mask = (columns.array == info.id) & (columns.kind != 0)
    first = np.asarray(columns.index[mask], np.int64)
    count = np.maximum(np.asarray(columns.width[mask], np.int64) // info.itemsize, 1)
    covered = np.repeat(first, count) + _ranges(count)
    return int(np.unique(covered).size)


def _ranges(count) -> np.ndarray:
    """0..c-1 for each c of ``count``, concatenated."""
    starts = np.repeat(np.cumsum(count) - count, count)
    return np.arange(int(count.sum()), dtype=np.int64) - starts


def request_widths(run) -> list[dict]:
    """Warp requests of a trace by space, kind and bytes per lane (4: a float, 16: a float4):
    ``[{"space", "kind", "bytes per lane", "requests"}]``. One request is the accesses of one
    warp from one source line's one execution (``(gwarp, line, seq)``, as ``run.metrics``)."""
    from .emulator import KINDS, SPACES
    from .keys import count_distinct

    c = run.memory_columns
    space, kind, width = (np.asarray(c[name]) for name in ("space", "kind", "width"))
    request = tuple(np.asarray(c[name]) for name in ("gwarp", "site", "seq"))
    out = []
    for s_, k_, w_ in sorted(set(zip(space.tolist(), kind.tolist(), width.tolist()))):
        mask = (space == s_) & (kind == k_) & (width == w_)
        out.append({"space": SPACES[s_], "kind": KINDS[k_], "bytes per lane": w_,
                    "requests": count_distinct(*(r[mask] for r in request))})
    return out


def global_requests_by_array(run) -> dict:
    """Global-memory warp requests per array and access kind: ``{("x", "read"): (requests,
    sectors)}``, with the 32-byte sectors they touched in all (``analysis.coalescing``)."""
    from .analysis.coalescing import requests
    from .emulator import KINDS

    names = {a.id: a.name for a in run.arrays}
    table = requests(run.memory_columns)
    out = {}
    for array, kind in sorted(set(zip(table.array.tolist(), table.kind.tolist()))):
        mine = (table.array == array) & (table.kind == kind)
        out[(names[array], KINDS[kind])] = (int(mine.sum()), int(table.sectors[mine].sum()))
    return out


def request_lanes(run, gwarp: int = 0) -> list[dict]:
    """The memory requests of global warp ``gwarp``, in the order the trace recorded them:
    ``[{"access": "read x", "source": the line's text, "lanes": bit mask of the lanes}]``. On
    a branch, the lanes of each path's requests say which lanes ran that path."""
    from .emulator import KINDS

    c = run.memory_columns
    mine = np.flatnonzero(np.asarray(c.gwarp) == gwarp)
    names = {a.id: a.name for a in run.arrays}
    site, seq = np.asarray(c.site)[mine], np.asarray(c.seq)[mine]
    out, where = [], {}
    for row, s_, q_ in zip(mine.tolist(), site.tolist(), seq.tolist()):
        key = (s_, q_)
        if key not in where:
            where[key] = len(out)
            line = int(c.line[row])
            out.append({"access": f"{KINDS[int(c.kind[row])]} {names[int(c.array[row])]}",
                        "source": run.source(line, site=s_).strip(), "lanes": 0})
        out[where[key]]["lanes"] |= 1 << int(c.lane[row])
    return out


def lane_pattern(mask: int) -> str:
    """32 characters, lane 0 first: ``x`` for a lane in ``mask``, ``.`` for one not."""
    return "".join("x" if mask >> lane & 1 else "." for lane in range(32))


@dataclass
class LaunchPair:
    """One launch of a plan traced twice: ``numba`` and ``cuda_c`` are the two ``Run``s."""

    version: str
    kernel: str
    numba: object
    cuda_c: object
    output_position: int | None = None      # the plan's output among this launch's arrays
    output_size: int = 0

    def metric(self, key: str) -> tuple:
        return self.numba.metrics[key], self.cuda_c.metrics[key]

    def written(self) -> tuple | None:
        """Distinct output elements each trace saw written (None if this launch does not
        write the plan's output)."""
        if self.output_position is None:
            return None
        return (written_elements(self.numba, self.output_position),
                written_elements(self.cuda_c, self.output_position))


@dataclass
class EngineComparison:
    """The table ``compare_engines`` returns: ``pairs`` (one ``LaunchPair`` per launch), the
    two outputs of each version (``outputs[label] = (numba, cuda_c)``); shown as HTML."""

    pairs: list = field(default_factory=list)
    outputs: dict = field(default_factory=dict)

    def rows(self) -> list[dict]:
        """One dict per launch: version, kernel, ``(numba, cuda_c)`` per metric title, the
        PTX warp instructions, the output elements written (numba, CUDA C, of how many), and
        the largest difference between the two outputs (on the version's last launch)."""
        out, seen = [], set()
        for pair in self.pairs:
            row = {"version": pair.version, "kernel": pair.kernel}
            for title, key in METRICS:
                row[title] = pair.metric(key)
            row["PTX warp instructions"] = ptx_warp_instructions(pair.cuda_c)
            written = pair.written()
            row["outputs written"] = None if written is None else (*written, pair.output_size)
            row["max |numba - CUDA C|"] = None
            if pair.version not in seen and pair is self._last_pair(pair.version):
                seen.add(pair.version)
                a, b = self.outputs[pair.version]
                row["max |numba - CUDA C|"] = _max_difference(a, b)
            out.append(row)
        return out

    def run(self, index: int, impl: str = "cuda-c"):
        """The ``Run`` of launch ``index`` (a row of the table) on one side: "numba" or "cuda-c"."""
        pair = self.pairs[index]
        return pair.numba if impl == "numba" else pair.cuda_c

    def widths(self, index: int):
        """Launch ``index``'s warp requests by space, kind and bytes per lane, numba beside
        CUDA C (``request_widths``), as an HTML table: where a twin loads a float4 (one
        16-byte access per lane) the numba kernel makes four 4-byte ones."""
        from IPython.display import HTML

        pair = self.pairs[index]
        counts = {}
        for side, run in (("numba", pair.numba), ("CUDA C", pair.cuda_c)):
            for r in request_widths(run):
                key = (r["space"], r["kind"], r["bytes per lane"])
                counts.setdefault(key, {})[side] = r["requests"]
        head = "".join(f"<th style='padding:2px 8px'>{h}</th>" for h in
                       ("space", "access", "bytes per lane", "numba requests", "CUDA C requests"))
        body = "".join(
            "<tr>" + "".join(f"<td style='padding:2px 8px;{NO_WRAP}'>{c}</td>" for c in
                             (*key, _number(v.get("numba", 0)), _number(v.get("CUDA C", 0)))) + "</tr>"
            for key, v in sorted(counts.items()))
        return HTML(f"<div style='color:{TEXT}'><b>{html.escape(pair.kernel)}</b>: warp requests"
                    f"<table style='border-collapse:collapse'><tr style='background:{RAISED}'>"
                    f"{head}</tr>{body}</table></div>")

    def arrays(self, index: int):
        """Launch ``index``'s global requests and sectors per array and access, numba beside
        CUDA C (``global_requests_by_array``), as HTML: which array's accesses a twin makes
        fewer or wider of."""
        from IPython.display import HTML

        pair = self.pairs[index]
        numba, cuda_c = (global_requests_by_array(run) for run in (pair.numba, pair.cuda_c))
        head = "".join(f"<th style='padding:2px 8px'>{h}</th>" for h in
                       ("array", "access", "numba requests", "CUDA C requests", "numba sectors",
                        "CUDA C sectors"))
        body = "".join(
            "<tr>" + "".join(f"<td style='padding:2px 8px;{NO_WRAP}'>{c}</td>" for c in
                             (html.escape(name), kind, *(_number(side.get((name, kind), (0, 0))[i])
                                                         for i in (0, 1) for side in (numba, cuda_c))))
            + "</tr>" for name, kind in sorted(set(numba) | set(cuda_c)))
        return HTML(f"<div style='color:{TEXT}'><b>{html.escape(pair.kernel)}</b>: global requests "
                    f"per array<table style='border-collapse:collapse'><tr style='background:{RAISED}'>"
                    f"{head}</tr>{body}</table></div>")

    def lanes(self, index: int, warp: int = 0):
        """Launch ``index``'s memory requests of global warp ``warp`` on both sides
        (``request_lanes``), as HTML: each request's array, source line and active lanes (lane
        0 first). Where a kernel branches, the requests of each path show its lanes."""
        from IPython.display import HTML

        pair = self.pairs[index]
        parts = []
        for side, run in (("numba", pair.numba), ("CUDA C", pair.cuda_c)):
            body = "".join(
                f"<tr><td style='padding:2px 8px;{NO_WRAP}'>{html.escape(r['access'])}</td>"
                f"<td style='padding:2px 8px;font-family:monospace;{NO_WRAP}'>{lane_pattern(r['lanes'])}</td>"
                f"<td style='padding:2px 8px'><code>{html.escape(r['source'])}</code></td></tr>"
                for r in request_lanes(run, warp))
            parts.append(f"<b>{side}</b>: the requests of warp {warp} (x: an active lane, lane 0 first)"
                         f"<table style='border-collapse:collapse'>{body}</table>")
        return HTML(f"<div style='color:{TEXT}'>{''.join(parts)}</div>")

    def plot_mapping(self, index: int, array: str, color_by: str = "block"):
        """The thread-to-element map of launch ``index``'s CUDA C run (who wrote each element of
        ``array``, ``simtlab.plots.mapping``), titled with whether every element was written by
        the same block and thread in the numba run."""
        from .plots.mapping import mapping_from_run, plot_thread_mapping

        pair = self.pairs[index]
        numba_map, cuda_map = (mapping_from_run(run, array) for run in (pair.numba, pair.cuda_c))
        differ = int(((numba_map["block"] != cuda_map["block"]) |
                      (numba_map["thread"] != cuda_map["thread"])).sum())
        fig = plot_thread_mapping(mapping=cuda_map, color_by=color_by)
        same = ("the same block and thread as in the numba run, element by element" if differ == 0
                else f"{differ} elements written by another thread than in the numba run")
        fig.suptitle(f"CUDA C {pair.kernel}: {same}")
        return fig

    def ptx_view(self, index: int, max_instructions: int | None = 400):
        """Launch ``index``'s CUDA C source beside its PTX, with each instruction's warps and
        active lanes (``simtlab.plots.ptx_source``), as HTML for a notebook."""
        from IPython.display import HTML

        from .plots.ptx_source import ptx_source_html

        return HTML(ptx_source_html(self.pairs[index].cuda_c, max_instructions=max_instructions))

    def _last_pair(self, version):
        return [p for p in self.pairs if p.version == version][-1]

    def _repr_html_(self) -> str:
        rows = self.rows()
        titles = [t for t, _ in METRICS if any(_matters(r[t]) for r in rows)]
        head = ["version", "kernel", *titles, "PTX warp instructions", "outputs written",
                "max |numba - CUDA C|"]
        th = "".join(f"<th style='padding:2px 8px;{NO_WRAP}'>{html.escape(h)}</th>" for h in head)
        body = []
        for r in rows:
            cells = [html.escape(r["version"]), f"<code>{html.escape(r['kernel'])}</code>"]
            cells += [_pair_html(r[t]) for t in titles]
            cells.append(_number(r["PTX warp instructions"]))
            cells.append(_written_html(r["outputs written"]))
            diff = r["max |numba - CUDA C|"]
            cells.append("" if diff is None else _number(diff))
            body.append("<tr>" + "".join(f"<td style='padding:2px 8px;{NO_WRAP}'>{c}</td>"
                                         for c in cells) + "</tr>")
        note = (f"<div style='color:{MUTED};font-size:90%'>each cell: numba / CUDA C (PTX engine); "
                f"one value where both traces agree, <span style='color:{WARN}'>orange</span> where "
                "they differ</div>")
        return (f"<div style='color:{TEXT};overflow-x:auto'><table style='border-collapse:collapse'>"
                f"<tr style='background:{RAISED}'>{th}</tr>{''.join(body)}</table>{note}</div>")


def _matters(pair) -> bool:
    """A metric column worth showing: not zero or empty on both sides everywhere."""
    return any(v not in (None, 0) for v in pair)


def _max_difference(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(both_nan, 0.0, np.abs(a - b))
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0


def _number(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and not float(v).is_integer():
        return f"{v:.3g}" if v < 1 else f"{v:.2f}"
    return f"{int(v):,}"


def _pair_html(pair) -> str:
    a, b = pair
    if a == b or (a is not None and b is not None and np.isclose(a, b, rtol=1e-9, atol=0)):
        return _number(a)
    return f"<span style='color:{WARN}'>{_number(a)} / {_number(b)}</span>"


def _written_html(written) -> str:
    if written is None:
        return ""
    a, b, size = written
    text = f"{a:,} of {size:,}" if a == b else f"{a:,} / {b:,} of {size:,}"
    return text if a == b == size else f"<span style='color:{WARN}'>{text}</span>"


def _output_position(args, out) -> int | None:
    """Where the plan's output is among a launch's array arguments (None: not there)."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for i, a in enumerate(arrays):
        if a is out or a.base is out:
            return i
    return None


def compare_engines(topic: str, labels, *inputs, max_blocks: int | None = None,
                    plan_options: dict | None = None) -> EngineComparison:
    """Run each version of ``labels`` (``kernels/<topic>.py: VERSIONS``; "v3 sequential" or
    "sequential") on ``inputs`` twice, numba kernel on the emulator and CUDA C twin on the PTX
    engine, traced, from copies of the same inputs. ``max_blocks`` caps a 1-D plan's grid (to
    see a grid-stride loop at work); ``plan_options``, the plan's other options (``stride``,
    ``blockdim`` ...). Keep the launches small (a few blocks): every block is traced. Without
    NVRTC: a :class:`CudaCMissing` note with the command that installs it."""
    options = dict(plan_options or {})
    if max_blocks is not None:
        options["max_blocks"] = max_blocks
    return show_or_explain(lambda: _compare_engines(topic, labels, *inputs, **options))


def _compare_engines(topic, labels, *inputs, **options) -> EngineComparison:
    import importlib

    from . import versions
    from .cuda_c_kernels import emulate_version

    module = importlib.import_module(f"simtlab.kernels.{topic}")
    table = EngineComparison()
    for label in ([labels] if isinstance(labels, str) else labels):
        version = versions.find(module.VERSIONS, label)
        numba_inputs = [np.array(a, copy=True) for a in inputs]
        cuda_inputs = [np.array(a, copy=True) for a in inputs]
        out_n, runs_n = versions.emulate(topic, version, *numba_inputs, **dict(options))
        out_c, runs_c = emulate_version(topic, version, *cuda_inputs, **dict(options))
        launches, plan_out = version.launches("cuda-c", np, *[np.array(a, copy=True) for a in inputs],
                                              **_plan_options(version, options))
        for step, run_n, run_c in zip(launches, runs_n, runs_c):
            position = _output_position(step.args, plan_out)
            table.pairs.append(LaunchPair(version.label, step.kernel, run_n, run_c, position,
                                          int(np.size(out_c))))
        table.outputs[version.label] = (out_n, out_c)
    return table


def _plan_options(version, options) -> dict:
    import inspect

    accepted = inspect.signature(version.plan).parameters
    return {k: v for k, v in options.items() if k in accepted}


def compare_kernels(numba_kernel, cuda_c_kernel, grid, block, *args, output=-1,
                    label="", **options) -> EngineComparison:
    """One launch of a numba kernel and of a CUDA C kernel on copies of the same arrays
    (``args`` as the CUDA C kernel takes them; the NumPy integer scalars, its sizes, are left
    out for numba). ``output``: which array argument is the output (default: the last).
    Without NVRTC: a :class:`CudaCMissing` note."""
    return show_or_explain(lambda: _compare_kernels(numba_kernel, cuda_c_kernel, grid, block,
                                                    *args, output=output, label=label, **options))


def _compare_kernels(numba_kernel, cuda_c_kernel, grid, block, *args, output, label, **options):
    from . import emulate
    from .versions import numba_args

    copies_n = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    copies_c = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    run_n = emulate(numba_kernel, grid, block, *numba_args(copies_n), **options)
    run_c = emulate(cuda_c_kernel, grid, block, *copies_c, **options)
    arrays_n = [a for a in copies_n if isinstance(a, np.ndarray)]
    arrays_c = [a for a in copies_c if isinstance(a, np.ndarray)]
    position = range(len(arrays_c))[output]
    name = label or getattr(cuda_c_kernel, "name", "kernel")
    table = EngineComparison()
    table.pairs.append(LaunchPair(name, getattr(cuda_c_kernel, "name", name), run_n, run_c,
                                  position, int(arrays_c[position].size)))
    table.outputs[name] = (arrays_n[position], arrays_c[position])
    return table


def compare_twins(topic: str, names, grid, block, *args, output: int = -1) -> EngineComparison:
    """Course kernels by name, ``kernels/<topic>.py``'s numba kernel and ``kernels/<topic>.cu``'s
    twin of the same name, each launched once on copies of ``args`` (as the CUDA C kernel takes
    them: arrays, then its sizes as NumPy integers, which the numba kernel does without), traced
    side by side: one row per name. For topics without a version table (chapters 1 and 2).
    Without NVRTC: a :class:`CudaCMissing` note."""
    return show_or_explain(lambda: _compare_twins(topic, names, grid, block, *args, output=output))


def _compare_twins(topic, names, grid, block, *args, output):
    import importlib

    from .cuda_c_kernels import course_kernel

    module = importlib.import_module(f"simtlab.kernels.{topic}")
    table = EngineComparison()
    for name in ([names] if isinstance(names, str) else names):
        one = _compare_kernels(getattr(module, name), course_kernel(topic, name), grid, block, *args,
                               output=output, label=name)
        table.pairs += one.pairs
        table.outputs.update(one.outputs)
    return table


def compare_network(params: dict, x, conv: str = "fused", fc: str = "gemm") -> EngineComparison:
    """Chapter 8's forward pass (``kernels/cnn.py: network_plan``) on images ``x`` twice, the
    numba kernels on the emulator and ``kernels/cnn.cu``'s on the PTX engine, every launch
    traced: one row per launch, named by its layer; each layer's output from both sides is
    compared on its last launch. Keep ``x`` to an image or two: every block is traced.
    Without NVRTC: a :class:`CudaCMissing` note."""
    return show_or_explain(lambda: _compare_network(params, x, conv, fc))


def _compare_network(params, x, conv, fc):
    from . import emulate
    from .cuda_c_kernels import emulate_launches
    from .kernels import cnn
    from .versions import run_plan

    x = np.ascontiguousarray(x, np.float32)
    steps_n, out_n = cnn.network_plan(params, x.copy(), np, "numba", conv, fc)
    steps_c, out_c = cnn.network_plan(params, x.copy(), np, "cuda-c", conv, fc)
    table = EngineComparison()
    for (layer, launches_n), (_, launches_c) in zip(steps_n, steps_c):
        runs_n = run_plan(cnn.TOPIC, launches_n, emulate)
        runs_c = emulate_launches(cnn.TOPIC, launches_c)
        result = layer.split("+")[-1]                          # conv1+pool1 writes pool1
        for step, run_n, run_c in zip(launches_c, runs_n, runs_c):
            table.pairs.append(LaunchPair(layer, step.kernel, run_n, run_c,
                                          _output_position(step.args, out_c[result]),
                                          int(out_c[result].size)))
        table.outputs[layer] = (out_n[result], out_c[result])
    return table


def show_or_explain(make):
    """``make()`` or, where NVRTC is not installed, a note with the command that installs it
    (:class:`CudaCMissing`): a chapter's CUDA C cells must not stop Run All on a machine
    without the ``cuda-c`` extra."""
    from .cuda_c_kernels import CompilerMissing
    from .paths import install_command

    try:
        return make()
    except CompilerMissing as exc:
        return CudaCMissing(install_command("cuda-c"), str(exc))


class CudaCMissing:
    """What a CUDA C cell shows without NVRTC: which command installs it. Any method a later
    cell calls on it (``table.ptx_view(0)``) returns the same note, so Run All goes on."""

    def __init__(self, command: str, reason: str = ""):
        self.command = command
        self.reason = reason

    def __repr__(self):
        return (f"CUDA C on the CPU needs NVIDIA's NVRTC compiler (the cuda-c extra), which is "
                f"not installed. Install it with:\n    {self.command}\nthen restart the kernel.")

    def _repr_html_(self):
        return (f"<div style='color:{TEXT}'>CUDA C on the CPU needs NVIDIA's NVRTC compiler (the "
                f"<code>cuda-c</code> extra), which is not installed. Install it with "
                f"<code>{html.escape(self.command)}</code>, then restart the kernel.</div>")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self
