"""``simtlab.playground``: any kernel, emulated and seen from every side in one widget.

A ``Playground`` keeps the kernel, its launch and pristine copies of its inputs. Each run
emulates the kernel on fresh copies (so a kernel that accumulates into its output gives the
same answer every time), keeps the previous run for comparison, and redraws the tab in view.
Launches above ``max_traced_threads`` are sampled: the first blocks are traced, the rest run
with every check but unrecorded, and the banner says so.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref

import ipywidgets as widgets
import numpy as np

from .. import backend
from ..emulator import EmulationError, RunawayKernelError, emulate
from ..emulator.binding import kernel_parameters
from ..emulator.launch_spec import TIME_LIMIT
from ..emulator.limits import as_dim3
from ..html_theme import ERROR, SUCCESS, WARN
from ..simt import percent
from .controls import block_options, grid_options, size_options
from .inputs import Recipe, main_length, resize
from .progress import Progress
from .tabs import DRAW_LOCK, make_tabs

#: threads traced in one run by default; more run untraced (a sample of the launch)
MAX_TRACED_THREADS = 8192

# Prefetch threads still running when Python exits are stopped at their next step and joined:
# killing one inside the emulator's greenlets would abort the process ("terminate called").
_PREFETCHES: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()
_EXITING = threading.Event()


@atexit.register
def _stop_prefetches():
    _EXITING.set()
    for thread in list(_PREFETCHES):
        thread.join(timeout=10)


def _short(dims) -> object:
    dims = tuple(int(d) for d in dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims = dims[:-1]
    return dims[0] if len(dims) == 1 else dims


def _in_jupyter_kernel() -> bool:
    """True inside a Jupyter kernel (ipykernel's shell), where a student looks at the widget."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _labelled(options) -> list:
    """(label, value) pairs: a Dropdown would read a bare tuple value as a (label, value) pair."""
    return [(str(o), o) for o in options]


class Playground:
    """What ``simtlab.playground`` returns.

    ``run``: the emulator's ``Run`` (on an error: the partial run up to the fault, or None
    when the launch never started); ``error``: the ``EmulationError`` or None; ``outputs``:
    name -> array after the run; ``tabs``: the ipywidgets ``Tab``; ``widget``: controls,
    banner and tabs in one box (what a notebook shows); ``controls``: grid, block, size.
    """

    def __init__(self, kernel, griddim, blockdim, *args, shared_bytes: int = 0,
                 max_traced_threads: int = MAX_TRACED_THREADS, nbytes=None, flops=None,
                 recipes=None, seed: int = 0, gpu: bool | None = None, repeat: int = 20,
                 prefetch: bool | None = None, max_iterations: int | None = None,
                 time_limit: float | None = TIME_LIMIT, origin: str = "playground"):
        self.kernel = kernel
        self.kernel_name, self.names = kernel_parameters(kernel)    # Python or CUDA C
        self.rng = np.random.default_rng(seed)
        self.recipes = list(recipes) if recipes is not None else [None] * len(args)
        values = [r.make(self.rng) if isinstance(r, Recipe) else a for r, a in zip(self.recipes, args)] \
            if recipes is not None else list(args)
        self.user_args = values                     # the first run updates these in place
        self.inputs = [v.copy() if isinstance(v, np.ndarray) else v for v in values]
        self.size = main_length(self.inputs)
        self.shared_bytes = int(shared_bytes)
        # the emulator's limits (see emulate()); origin: "playground" or "%%simt", where the
        # student would raise them (the runaway error's fix says how, there)
        self.max_iterations, self.time_limit = max_iterations, time_limit
        self.origin = origin
        self.max_traced_threads = int(max_traced_threads)
        self.nbytes, self.flops, self.repeat = nbytes, flops, repeat
        self.gpu = backend.gpu_available() if gpu is None else bool(gpu)
        self.griddim, self.blockdim = as_dim3(griddim, "griddim"), as_dim3(blockdim, "blockdim")
        self.run = self.error = self.previous = None
        self.outputs: dict = {}
        self._gpu_cache: dict = {}
        self._cache: dict = {}
        # Prefetch: after each run, a thread emulates the launches one step away in the block
        # and grid dropdowns and draws the tab in view for each, so picking one is a cache hit. On by
        # default inside a Jupyter kernel (a student at the widget), off elsewhere (scripts, tests).
        self.prefetch = _in_jupyter_kernel() if prefetch is None else bool(prefetch)
        self._lock = threading.RLock()     # one emulation at a time: prefetch or the student's
        self._generation = 0               # bumped by every change; a prefetch of an older one stops
        self._prefetch_thread = None
        self._inputs_by_size: dict = {}
        self._build_widget()
        self._launch(first=True)

    # --- running ------------------------------------------------------------------------------
    def _trace_blocks(self, griddim, blockdim):
        tpb = int(np.prod(blockdim))
        blocks = int(np.prod(griddim))
        if blocks * tpb <= self.max_traced_threads:
            return None
        return max(1, self.max_traced_threads // tpb)

    def _emulate(self, griddim, blockdim, args, progress=None) -> tuple:
        """``(run, error, outputs, seconds)`` of one launch on ``args`` (updated in place)."""
        trace_blocks = self._trace_blocks(griddim, blockdim)
        # both engines report progress without changing how they run (the vector engine after
        # each chunk of blocks); the bar itself shows only for a run that takes over a second
        t0 = time.perf_counter()
        error, run = None, None
        with self._lock:
            try:
                run = emulate(self.kernel, griddim, blockdim, *args, shared_bytes=self.shared_bytes,
                              trace_blocks=trace_blocks, progress=progress,
                              max_iterations=self.max_iterations, time_limit=self.time_limit)
            except EmulationError as exc:
                error, run = exc, getattr(exc, "run", None)
                if isinstance(exc, RunawayKernelError):
                    exc.advise(self._how_to_pass)
        outputs = {n: a for n, a in zip(self.names, args) if isinstance(a, np.ndarray)}
        return run, error, outputs, time.perf_counter() - t0

    def _how_to_pass(self, name: str, value: str) -> str:
        """How the student passes a larger limit from where this playground was made."""
        if self.origin == "%%simt":
            return f"add {name}={value} to the %%simt line"
        return f"simtlab.playground(..., {name}={value})"

    def _launch(self, first=False, key=None):
        self._generation += 1
        args = self.user_args if first else [v.copy() if isinstance(v, np.ndarray) else v for v in self.inputs]
        entry = self._cache.get(key) if key is not None else None
        if entry is None:
            progress = Progress(self.progress_bar, f"emulating {self.kernel_name}", standalone=first)
            try:
                entry = self._emulate(self.griddim, self.blockdim, args, progress)
            finally:
                progress.close()
            if key is not None:
                self._cache[key] = entry
        self.previous = self.run
        self.run, self.error, self.outputs, self.elapsed = entry
        self._after_run()
        self._start_prefetch()

    # --- prefetch -------------------------------------------------------------------------------
    def _neighbours(self) -> list:
        """The launches one step away in the block and grid dropdowns: (griddim, blockdim)."""
        out = []
        for which, options, current in (("block", block_options(self.blockdim), _short(self.blockdim)),
                                        ("grid", grid_options(self.griddim), _short(self.griddim))):
            i = options.index(current)
            for j in (i + 1, i - 1):
                if 0 <= j < len(options):
                    dims = as_dim3(options[j], which)
                    out.append((self.griddim, dims) if which == "block" else (dims, self.blockdim))
        return out

    def _start_prefetch(self):
        if not self.prefetch or self.run is None or _EXITING.is_set():
            return
        generation, inputs, size = self._generation, list(self.inputs), self.size
        self._prefetch_thread = threading.Thread(target=self._prefetch, args=(generation, inputs, size),
                                                 name="simtlab-playground-prefetch", daemon=True)
        _PREFETCHES.add(self._prefetch_thread)
        self._prefetch_thread.start()

    def _prefetch(self, generation, inputs, size):
        """Emulate and draw (the tab in view) each neighbouring launch, until the student changes
        something (the generation moves on). Never raises: a failure only means no prefetch."""
        try:
            for griddim, blockdim in self._neighbours():
                key = (griddim, blockdim, size)
                if generation != self._generation or _EXITING.is_set():
                    return
                if int(np.prod(griddim)) * int(np.prod(blockdim)) > self.max_traced_threads:
                    continue                         # a sampled launch: the greenlet engine, too slow
                with self._lock:
                    if generation != self._generation or _EXITING.is_set():
                        return
                    entry = self._cache.get(key)
                    if entry is None:
                        args = [v.copy() if isinstance(v, np.ndarray) else v for v in inputs]
                        entry = self._emulate(griddim, blockdim, args)
                    run = entry[0]
                    if run is not None and entry[1] is None and run.traced:
                        run.metrics                          # the banner's numbers
                        # what the tab in view will show (the mapping when none is picked)
                        self._tabs[self.tabs.selected_index or 0].prepare(run)
                    if generation == self._generation:
                        self._cache.setdefault(key, entry)
        except Exception:                      # noqa: BLE001 - a prefetch must never disturb the notebook
            return

    def wait_for_prefetch(self, timeout: float | None = None):
        """Block until the background prefetch is done (tests, benchmarks)."""
        if self._prefetch_thread is not None:
            self._prefetch_thread.join(timeout)
        return self

    def _after_run(self):
        self._stale = set(range(len(self._tabs)))
        self.banner.value = self._banner_html()
        if self.error is not None and self.tabs.selected_index != 3:
            self.tabs.selected_index = 3            # the error card; drawn by the observer
        else:
            self._draw(self.tabs.selected_index or 0)

    def relaunch(self, griddim=None, blockdim=None, **args):
        """Run again with another launch and/or other arguments (by parameter name); the run
        before stays as ``previous`` and the compare tab shows both."""
        self._generation += 1                  # a running prefetch stops at its next step
        unknown = set(args) - set(self.names)
        if unknown:
            raise TypeError(f"{self.kernel_name}() has no parameter {sorted(unknown)[0]!r}; its parameters: "
                            f"{', '.join(self.names)}")
        if griddim is not None:
            self.griddim = as_dim3(griddim, "griddim")
        if blockdim is not None:
            self.blockdim = as_dim3(blockdim, "blockdim")
        for name, value in args.items():
            i = self.names.index(name)
            self.recipes[i] = value if isinstance(value, Recipe) else None
            value = value.make(self.rng) if isinstance(value, Recipe) else value
            self.inputs[i] = value.copy() if isinstance(value, np.ndarray) else value
        if args:
            self._cache.clear()
            self._gpu_cache.clear()
            self._inputs_by_size.clear()
            self.size = main_length(self.inputs)
        self._sync_controls()
        self._launch(key=None if args else self._key())
        return self

    def resize(self, n: int):
        """Run again with input size ``n`` (see ``inputs.resize`` for what changes)."""
        if self.size is None:
            raise ValueError(f"{self.kernel_name} has no 1-D array argument whose size could change")
        self._generation += 1
        # the inputs of each size are made once: a cached run of that size was made from them
        self._inputs_by_size.setdefault(self.size, (self.inputs, self.recipes))
        if int(n) not in self._inputs_by_size:
            self._inputs_by_size[int(n)] = resize(self.inputs, self.recipes, self.size, int(n), self.rng)
        self.inputs, self.recipes = self._inputs_by_size[int(n)]
        self.size = int(n)
        self._sync_controls()
        self._launch(key=self._key())
        return self

    def _key(self):
        return (self.griddim, self.blockdim, self.size)

    # --- comparing -------------------------------------------------------------------------------
    def compare(self, other=None):
        """Metric by metric, this run against ``other`` (a Playground or a Run; default: the
        previous run): a ``Comparison`` that shows as a table in a notebook."""
        from ..plots.run_report import compare_html, compare_metrics
        other_run = self.previous if other is None else getattr(other, "run", other)
        if other_run is None or self.run is None:
            raise ValueError("nothing to compare: both sides need a run (relaunch once, or pass another playground)")
        return Comparison(compare_metrics(other_run, self.run), compare_html(other_run, self.run,
                                                                             names=("other", "this")))

    # --- the GPU side -------------------------------------------------------------------------------
    def gpu_result(self):
        """``(gpu_check's dict, "")`` after running on the GPU, or ``(None, why not)``."""
        if self.error is not None:
            return None, "the emulator found an error; fix it first"
        if not self.gpu:
            return None, backend.unavailable_reason() or "no GPU"
        key = self._key()
        if key not in self._gpu_cache:
            from .gpu import gpu_check
            emulated = [self.outputs.get(n) for n in self.names]
            self._gpu_cache[key] = gpu_check(self.kernel, self.griddim, self.blockdim, self.inputs, emulated,
                                             self.names, shared_bytes=self.shared_bytes, nbytes=self.nbytes,
                                             flops=self.flops, repeat=self.repeat)
        return self._gpu_cache[key], ""

    # --- the widget ------------------------------------------------------------------------------
    def _build_widget(self):
        narrow = dict(layout=widgets.Layout(width="230px"), style={"description_width": "70px"})
        self.controls = {
            "block": widgets.Dropdown(options=_labelled(block_options(self.blockdim)), value=_short(self.blockdim),
                                      description="block", **narrow),
            "grid": widgets.Dropdown(options=_labelled(grid_options(self.griddim)), value=_short(self.griddim),
                                     description="grid", **narrow),
            "size": widgets.Dropdown(options=_labelled(size_options(self.size)), value=self.size,
                                     description="input size", style=narrow["style"],
                                     layout=widgets.Layout(width="230px")),   # its own: hidden alone
        }
        self._show_size_control()
        self._syncing = False
        actions = {"block": lambda v: self.relaunch(blockdim=v), "grid": lambda v: self.relaunch(griddim=v),
                   "size": self.resize}
        for name, act in actions.items():
            self.controls[name].observe(lambda c, act=act: None if self._syncing else act(c["new"]), names="value")
        self.progress_bar = widgets.IntProgress(layout=widgets.Layout(display="none", width="400px"))
        self.banner = widgets.HTML()
        self._tabs = make_tabs(cuda_c=getattr(self.kernel, "is_cuda_c", False))    # + the PTX tab
        self.tabs = widgets.Tab(children=[t.box for t in self._tabs], titles=[t.title for t in self._tabs])
        self._stale = set(range(len(self._tabs)))
        self.tabs.observe(self._tab_picked, names="selected_index")
        self.widget = widgets.VBox([widgets.HBox(list(self.controls.values()),
                                                 layout=widgets.Layout(flex_flow="row wrap")),
                                    self.progress_bar, self.banner, self.tabs])
        self.widget.controls = self.controls

    def _sync_controls(self):
        """Show the launch in the dropdowns without re-running (a relaunch() from code)."""
        self._syncing = True
        try:
            for name, value, options in (("block", _short(self.blockdim), block_options(self.blockdim)),
                                         ("grid", _short(self.griddim), grid_options(self.griddim)),
                                         ("size", self.size, size_options(self.size))):
                c = self.controls[name]
                options = _labelled(options)
                if list(c.options) != options:
                    c.options = options
                c.value = value
        finally:
            self._syncing = False
        self._show_size_control()

    def _show_size_control(self):
        """The input-size dropdown only where there is a size to change: without a 1-D array
        (2-D inputs, scalars) it would offer one empty choice."""
        self.controls["size"].layout.display = "none" if self.size is None else None

    def _tab_picked(self, change):
        self._draw(change["new"])
        self._start_prefetch()                 # the neighbours' drawings of this tab

    def _draw(self, index):
        if index is None or index not in self._stale:
            return
        self._stale.discard(index)
        with DRAW_LOCK:
            self._tabs[index].draw(self)

    def draw_all(self):
        """Draw every tab now (a test, or a screenshot of all of them)."""
        for i in range(len(self._tabs)):
            self._draw(i)
        return self

    def _banner_html(self) -> str:
        run = self.run
        parts = [f"<b>{self.kernel_name}</b>: grid {_short(self.griddim)} x block {_short(self.blockdim)}"]
        if run is not None:
            m = run.metrics
            parts.append(f" = {m['threads']:,} threads in {m['warps']:,} warps, emulated in {self.elapsed:.2f} s")
            if run.traced_blocks < run.num_blocks:
                parts.append(f"<br><span style='color:{WARN}'><b>sampled</b>: blocks 0-{run.traced_blocks - 1} "
                             f"of {run.num_blocks} were traced (at most {self.max_traced_threads:,} threads); the "
                             "other blocks ran with every check but are not in the tabs</span>")
            if self.error is None:
                facts = []
                if m["global_sectors_per_request"] is not None:
                    facts.append(f"{m['global_sectors_per_request']:.1f} sectors per global request")
                if m["shared_requests"]:
                    facts.append(f"{m['shared_bank_conflicts']:,} bank conflicts")
                if m["simt_efficiency"] is not None:
                    eff = m["simt_efficiency"]       # coloured by the true value, as the source view
                    colour = SUCCESS if eff == 1 else WARN
                    facts.append(f"SIMT efficiency <span style='color:{colour}'>{percent(eff)}</span>")
                facts.append(f"<span style='color:{ERROR if m['races'] else SUCCESS}'>{m['races'] or 'no'} "
                             f"race{'s' * (m['races'] != 1)}</span>")
                parts.append("<br>" + "; ".join(facts))
        if self.error is not None:
            parts.append(f"<br><span style='color:{ERROR}'><b>{self.error.title}</b>: see the races & errors "
                         "tab</span>")
        return "".join(parts)

    @property
    def figure(self):
        """The mapping tab's image (the figure a control change redraws first)."""
        return self._tabs[0].figure

    @property
    def summary(self):
        """The line above the tabs: launch, sampling, the run's headline metrics."""
        return self.banner

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)

    def __repr__(self):
        return f"<Playground {self.kernel_name} grid={self.griddim} block={self.blockdim} run={self.run!r}>"


class Comparison:
    """Two runs' metrics: ``rows`` (dicts with metric, before, after, delta, better)."""

    def __init__(self, rows, html):
        self.rows = rows
        self.html = html

    def _repr_html_(self):
        return self.html

    def __getitem__(self, key):
        for r in self.rows:
            if r["key"] == key or r["metric"] == key:
                return r
        raise KeyError(key)


def playground(kernel, griddim, blockdim, *args, **options) -> Playground:
    """Emulate ``kernel[griddim, blockdim](*args)`` and show it from every side: mapping,
    memory, divergence, races and errors, barriers, source, GPU, compare. Options:
    ``shared_bytes``, ``max_traced_threads`` (default 8192: larger launches are sampled),
    ``nbytes`` / ``flops`` (per launch, for GB/s and FLOP/s on a GPU), ``seed``, ``gpu``,
    ``max_iterations`` (loop iterations a thread may run before it is stopped as runaway;
    default: scaled to the launch) and ``time_limit`` (seconds of wall-clock time, a backstop;
    None: none), as in ``simtlab.emulate``."""
    return Playground(kernel, griddim, blockdim, *args, **options)


__all__ = ["Playground", "Comparison", "playground", "MAX_TRACED_THREADS"]
