"""How long a widget takes to redraw after a control changes, on the CPU path.

    python benchmarks/widget_latency.py [--repeat 5] [--out benchmarks/results/widget_latency.json]

For every widget in ``simtlab.widgets`` with controls, and for each of its controls, the
control is set to each of its values in turn (a dropdown's options; a slider's min, a
quarter, half, three quarters and max) and the time until ``.value = v`` returns is taken:
the widget's observer recomputes and renders the figure synchronously in that call, as it
does in the kernel when the front end sends a change. Two numbers per control:

- cold: the first time each value is picked (emulator runs behind the widget are not cached
  yet; this is what the student waits for the first time);
- warm: ``--repeat`` more passes over the same values (what every later change costs).

The goal is under 200 ms per update (the course's rule: otherwise ``continuous_update=False``
on sliders, or a progress bar for long computations). Each chapter's main widget (the cell
tagged ``main-widget`` in solutions/) is marked with its chapter and main control: the
``version`` dropdown when there is one, else its first dropdown, as the browser test picks.
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL_MS = 200.0


def main_widgets(solutions: Path = REPO / "solutions") -> dict[str, str]:
    """widget function name -> chapter (notebook stem), from the cells tagged main-widget."""
    found = {}
    for path in sorted(solutions.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if "main-widget" in cell.get("metadata", {}).get("tags", []):
                # a chapter's widget function, or the playground (chapter 0's main widget)
                calls = re.findall(r"(\w+_widget|playground)\(", "".join(cell["source"]))
                if calls:
                    found[calls[-1]] = path.stem
    return found


def main_control(widget) -> str:
    """The control the browser test changes: ``version``, else the first dropdown."""
    import ipywidgets as widgets

    controls = widget.controls
    if "version" in controls:
        return "version"
    for name, control in controls.items():
        if isinstance(control, widgets.Dropdown):
            return name
    return next(iter(controls))


def values_of(control) -> list:
    """The values to step through: every option of a selection, five points of a slider."""
    import ipywidgets as widgets

    if isinstance(control, (widgets.Dropdown, widgets.ToggleButtons, widgets.RadioButtons, widgets.Select)):
        options = list(control.options)
        return [o[1] if isinstance(o, tuple) else o for o in options]
    if isinstance(control, widgets.FloatLogSlider):
        lo, hi = control.min, control.max
        return [control.base ** (lo + f * (hi - lo)) for f in (0, 0.25, 0.5, 0.75, 1)]
    if hasattr(control, "min") and hasattr(control, "max"):
        lo, hi = control.min, control.max
        step = getattr(control, "step", 1) or 1
        vals = []
        for f in (0, 0.25, 0.5, 0.75, 1):
            v = lo + round(f * (hi - lo) / step) * step
            vals.append(type(control.value)(min(v, hi)))
        return vals
    raise TypeError(f"do not know how to step a {type(control).__name__}")


def time_changes(widget, name: str, repeat: int) -> dict:
    """Cold and warm milliseconds per change of control ``name`` of ``widget``."""
    control = widget.controls[name]
    values = values_of(control)
    start_value = control.value
    # start from a value that is not the first one so every set is a real change
    order = [v for v in values if v != start_value] + [start_value]
    cold, warm = [], []
    for rep in range(1 + repeat):
        for v in order:
            if control.value == v:
                continue
            t = time.perf_counter()
            control.value = v
            ms = (time.perf_counter() - t) * 1000
            (cold if rep == 0 else warm).append(ms)
    return {
        "control": name,
        "kind": type(control).__name__,
        "continuous_update": getattr(control, "continuous_update", None),
        "values": len(values),
        "cold_ms": {"median": statistics.median(cold), "max": max(cold)},
        "warm_ms": {"median": statistics.median(warm), "max": max(warm), "n": len(warm)} if warm else None,
    }


def run(repeat: int = 5) -> dict:
    import simtlab.widgets as sw

    chapters = main_widgets()
    rows = []
    for fname in sw.__all__:
        build = getattr(sw, fname)
        t = time.perf_counter()
        widget = build()
        build_ms = (time.perf_counter() - t) * 1000
        controls = getattr(widget, "controls", None)
        if not controls:
            continue  # a display-only widget (device_panel)
        main = main_control(widget) if fname in chapters else None
        for name in controls:
            row = time_changes(widget, name, repeat)
            row.update(widget=fname, chapter=chapters.get(fname), main=name == main,
                       build_ms=build_ms)
            worst = row["warm_ms"]["median"] if row["warm_ms"] else row["cold_ms"]["median"]
            row["meets_goal"] = worst < GOAL_MS or row["continuous_update"] is False
            rows.append(row)
            print(f"{fname:20s} {name:22s} {'main ' + chapters[fname] if row['main'] else '':30s} "
                  f"cold median {row['cold_ms']['median']:7.1f} ms (max {row['cold_ms']['max']:7.1f})  "
                  f"warm median {row['warm_ms']['median'] if row['warm_ms'] else float('nan'):7.1f} ms",
                  flush=True)
    return {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "goal_ms": GOAL_MS,
        "how": inspect.getdoc(sys.modules[__name__]).split("\n\n")[1],
        "rows": rows,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="warm passes over each control's values")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "widget_latency.json"))
    args = parser.parse_args(argv)
    result = run(args.repeat)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    slow = [f"{r['widget']}.{r['control']}" for r in result["rows"] if not r["meets_goal"]]
    print(f"wrote {out}; over {GOAL_MS:.0f} ms without continuous_update=False: {slow or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
