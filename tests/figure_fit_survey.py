"""Run the master notebooks' code cells in one IPython shell and check every figure the course's
plot functions make: its text on the canvas and clear of the other axes (the rule of
simtlab/widgets/png.py ``drawn_misfits``). Prints one JSON object: the figures checked per
notebook, the misfits and the cells that raised without being tagged to raise.

    python tests/figure_fit_survey.py solutions/*.ipynb

Run by tests/test_chapter_figures_fit.py in a process of its own (the notebooks import
kernels, set the matplotlib backend and leave state behind)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell

SHELL = InteractiveShell.instance()            # before simtlab is imported: it registers %%simt here


def main(paths: list[str]) -> dict:
    import simtlab.plots.style as style
    from simtlab.widgets import png

    made = []
    new_figure = style.new_figure

    def keep(*args, **kwargs):
        fig, axes = new_figure(*args, **kwargs)
        made.append(fig)
        return fig, axes

    # every plot module took new_figure by name from style
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("simtlab.") and getattr(module, "new_figure", None) is new_figure:
            module.new_figure = keep
    style.new_figure = keep

    report = {"figures": {}, "misfits": [], "errors": []}
    for path in [Path(p).resolve() for p in paths]:         # resolved before the first chdir
        os.chdir(path.parent)
        nb = json.loads(path.read_text(encoding="utf-8"))
        report["figures"][path.stem] = 0
        for index, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            made.clear()
            # the inline backend needs a kernel; the figures are checked here, not shown
            source = "".join(cell["source"]).replace("%matplotlib inline", "")
            result = SHELL.run_cell(source, silent=True)
            if not result.success and "raises-exception" not in cell.get("metadata", {}).get("tags", []):
                error = result.error_in_exec or result.error_before_exec
                report["errors"].append(f"{path.stem} cell {index}: {type(error).__name__}: {error}")
            for fig in list(made):
                report["figures"][path.stem] += 1
                canvas = png.TextCachingCanvas(fig)
                canvas.draw()
                misfits = png.drawn_misfits(fig, canvas.get_renderer())
                if misfits:
                    title = fig._suptitle.get_text() if fig._suptitle is not None else ""
                    report["misfits"].append(f"{path.stem} cell {index}: {title!r}: {misfits}")
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
