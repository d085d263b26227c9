"""Every chapter as a student meets it: JupyterLab in Chromium, Run All, then the main widget.

The server is started by ``simtlab open`` (so the course's JupyterLab defaults are the ones
under test) on 127.0.0.1 with a token; the browser is Debian's Chromium driven by Playwright.
For each chapter: open it, Run > Run All Cells, wait until every cell ran and the kernel is
idle, save, and require no error output, no stderr, no "Error displaying widget", rendered
figures and the inline matplotlib backend; then change the main widget's dropdown (the cell
tagged ``main-widget``) and require its figure to change. A screenshot of the whole notebook
and one of the main widget go to ``artifacts/browser/``, with the run times in
``run_times.json`` (the test summary prints both).

The masters (solutions/) are run for every chapter. The student versions of chapters 0 and 1
are opened as a student first meets them: chapter 1 blank runs to its end with a card per check
and its progress cell and "Next" link; chapter 0's cell the text asks to change, and a pasted
copy of it, take typing, and the changed shape runs with the wavefronts the text promises.

The playground's races & errors tab and a wrong check's card are opened at 1280 px with the file
browser open, in JupyterLab Light and JupyterLab Dark: no word is cut off, every text has WCAG AA
contrast on its background, and screenshots go to ``artifacts/browser/theme-<theme>*.png``.
"""

from __future__ import annotations

import shutil
import re
import time
from pathlib import Path

import nbformat
import pytest

from browser_support import (ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, VIEWPORT, LabServer, NotebookPage,
                             missing_chromium_message, record_run_time)
from browser_support import _PANEL as _VISIBLE_PANEL
from load_support import generous

REPO = Path(__file__).resolve().parent.parent
MASTERS = sorted((REPO / "solutions").glob("*.ipynb"))
MAIN_WIDGET_TAG = "main-widget"
WINDOWING = ("@jupyterlab/notebook-extension:tracker", "windowingMode", "none")

# Appended to each chapter's copy: what the kernel's matplotlib runs on.
PROBE_MARK = "simtlab-browser-probe"
PROBE = (f"import os, matplotlib\n"
         f"print('{PROBE_MARK}', matplotlib.get_backend(), os.environ.get('MPLBACKEND'), sep='|')")


def _main_widget_cell(nb) -> int:
    tagged = [i for i, c in enumerate(nb.cells) if MAIN_WIDGET_TAG in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, (f"a chapter needs exactly one cell tagged {MAIN_WIDGET_TAG!r} (its main widget); "
                              f"found {len(tagged)}")
    return tagged[0]


#: the student chapters (blank exercises) opened as a student meets them, under these names
STUDENT_CHAPTERS = ("00_playground.ipynb", "01_gpu_architecture.ipynb")
STUDENT_PREFIX = "student-"


@pytest.fixture(scope="module")
def chapter_copies(tmp_path_factory):
    """The masters with the probe cell appended, as the chapters ``simtlab open`` copies, and
    the student versions of chapters 0 and 1 as they are (``student-NN_name.ipynb``)."""
    folder = tmp_path_factory.mktemp("chapters")
    for master in MASTERS:
        nb = nbformat.read(master, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(PROBE))
        nbformat.write(nb, folder / master.name)
    for name in STUDENT_CHAPTERS:
        shutil.copy(REPO / "chapters" / name, folder / f"{STUDENT_PREFIX}{name}")
    return folder


@pytest.fixture(scope="module")
def lab(chapter_copies, tmp_path_factory):
    server = LabServer(chapter_copies, tmp_path_factory.mktemp("lab")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM.exists(), missing_chromium_message()
    from playwright.sync_api import sync_playwright

    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


#: no "Would you like to get notified about official Jupyter news?" pop-up over the notebook
NO_NEWS = ("@jupyterlab/apputils-extension:notification", "fetchNews", "false")


@pytest.mark.parametrize("plugin,key,value", [WINDOWING, NO_NEWS], ids=["windowing-none", "no-news-pop-up"])
def test_simtlab_open_sets_the_course_defaults(lab, plugin, key, value):
    settings = lab.api(f"/lab/api/settings/{plugin}")
    assert settings["schema"]["properties"][key]["default"] == value, (
        "`simtlab open` did not install the course's JupyterLab defaults (simtlab/jupyter_settings.py)")
    assert key not in settings.get("settings", {}), f"the test's user settings must not set {key}"


@pytest.mark.slow
@pytest.mark.parametrize("master", MASTERS, ids=[m.stem for m in MASTERS])
def test_chapter_in_the_browser(master, lab, browser):
    nb = nbformat.read(master, as_version=4)
    main = _main_widget_cell(nb)
    page = browser.new_page(viewport=VIEWPORT)
    console_errors = []
    page.on("pageerror", lambda e: console_errors.append(str(e)))
    try:
        notebook = NotebookPage(page, lab, master.name)
        t0 = time.perf_counter()
        notebook.open(expected_cells=len(nb.cells) + 1)
        open_s = time.perf_counter() - t0
        cells = notebook.cells
        assert cells.count() == len(nb.cells) + 1, (
            f"{cells.count()} cells in the page for {len(nb.cells) + 1} in the notebook: windowingMode "
            "'none' should keep every cell in the page")

        run_s = notebook.run_all()
        saved = notebook.save(lab.work / master.name)

        # -- no error anywhere, figures rendered, inline backend
        problems = []
        for i, cell in enumerate(saved["cells"]):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    problems.append(f"cell {i}: {out.get('ename')}: {out.get('evalue')}")
                elif out.get("output_type") == "stream" and out.get("name") == "stderr":
                    problems.append(f"cell {i} wrote to stderr: {''.join(out.get('text', ''))[:300]}")
        assert not problems, f"{master.name} in JupyterLab:\n" + "\n".join(problems)
        page_text = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").inner_text()
        assert "Error displaying widget" not in page_text, f"{master.name}: a widget did not display"
        # a figure: matplotlib's inline output, or a widget's image (the playground draws only in widgets)
        figures = page.locator(".jp-RenderedImage img, .jp-OutputArea-output .widget-image")
        assert figures.count() > 0, f"{master.name}: no figure rendered"
        probe = "".join(saved["cells"][-1]["outputs"][0]["text"]).strip().split("|")
        assert probe[0] == PROBE_MARK, probe
        assert "inline" in probe[1], f"the kernel's matplotlib backend is {probe[1]!r}, not the inline one"
        assert probe[2] in ("None", "module://matplotlib_inline.backend_inline"), (
            f"MPLBACKEND={probe[2]} leaked into the notebook kernel")

        # -- the main widget: pick another value of its dropdown, the figure must change
        widget = cells.nth(main)
        widget.scroll_into_view_if_needed()
        dropdowns = widget.locator(".widget-dropdown")
        assert dropdowns.count() > 0, f"{master.name}: the main widget has no dropdown"
        labels = [dropdowns.nth(i).locator("label").inner_text().strip() for i in range(dropdowns.count())]
        choice = dropdowns.nth(labels.index("version") if "version" in labels else 0)
        select = choice.locator("select")
        img = widget.locator(".widget-image").first
        before_img = notebook.image_hash(img)
        before_text = widget.locator(".jp-OutputArea-output").inner_text()
        options = [o.replace("\xa0", " ") for o in select.locator("option").all_inner_texts()]
        current = select.evaluate("s => s.selectedIndex")
        assert len(options) > 1, f"{master.name}: the main widget's dropdown has a single option"
        new_index = (current + 1) % len(options)
        notebook.arm_update_clock(select, img)
        t1 = time.perf_counter()
        select.select_option(index=new_index)
        deadline = time.monotonic() + generous(60)
        while notebook.image_hash(img) == before_img and time.monotonic() < deadline:
            page.wait_for_timeout(50)
        update_s = time.perf_counter() - t1            # as this test sees it, polling every 50 ms
        page_update_ms = notebook.update_ms()          # as the page sees it: change -> image loaded
        after_img = notebook.image_hash(img)
        assert after_img != before_img, (f"{master.name}: picking {options[new_index]!r} in the main widget's "
                                         f"{choice.locator('label').inner_text()!r} dropdown did not change its figure")
        page.wait_for_timeout(300)
        after_text = widget.locator(".jp-OutputArea-output").inner_text()

        # -- screenshots: the widget as changed, then the whole notebook
        widget_png = ARTIFACTS / f"{master.stem}.main-widget.png"
        notebook.element_screenshot(widget, widget_png)
        shots = notebook.full_screenshot(ARTIFACTS / f"{master.stem}.png")
        assert not console_errors, f"{master.name}: JavaScript errors in the page: {console_errors}"
        entry = {"open_s": round(open_s, 2), "run_all_s": round(run_s, 2),
                 "widget_update_s": round(update_s, 3),
                 "page_update_ms": None if page_update_ms is None else round(page_update_ms, 1),
                 "cells": len(nb.cells),
                 "control": choice.locator("label").inner_text().strip(),
                 "picked": options[new_index], "numbers_changed": after_text != before_text,
                 "screenshots": [str(p) for p in [*shots, widget_png]]}
        record_run_time(master.stem, entry)
        print(f"{master.stem}: Run All {run_s:.1f} s in the browser, main widget update {update_s * 1000:.0f} ms; "
              f"screenshots in {ARTIFACTS}")
    finally:
        page.close()
        lab.shutdown_kernels()


@pytest.mark.slow
def test_a_run_that_never_finishes_is_reported_with_the_stuck_cell(lab, browser):
    """The harness's own failure path: a cell that runs for a minute must fail Run All with the
    cell named, not with a bare timeout (that is what a CI log has to explain)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("import time\ntime.sleep(60)"),
                nbformat.v4.new_code_cell("y = 2")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.work / "stuck.ipynb")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        notebook = NotebookPage(page, lab, "stuck.ipynb")
        notebook.open(expected_cells=3)
        with pytest.raises(AssertionError) as failure:
            notebook.run_all(timeout_ms=20_000)   # far below the 60 s cell, far above "x = 1"
        message = str(failure.value)
        # the harness may need a second click on Run All to start (a menu that did not open): any try counts
        assert "did not finish" in message and re.search(r"started on try \d", message), message
        assert '"running_or_queued": 2' in message and '"done": 1' in message, message
        assert "time.sleep(60)" in message and '"cell": 1' in message, message
        assert '"kernel": "busy"' in message, message
    finally:
        page.close()
        lab.shutdown_kernels()
        (lab.work / "stuck.ipynb").unlink(missing_ok=True)


PLAYGROUND = REPO / "solutions" / "00_playground.ipynb"
#: what each tab of the playground shows once drawn: an image, or HTML holding this text
PLAYGROUND_TABS = {"mapping": "img", "memory": "img", "divergence": "img", "races & errors": "race",
                   "barriers": "img", "source": "scale()", "GPU": "GPU", "compare": "previous run"}


@pytest.mark.slow
def test_playground_tabs_render_in_the_browser(lab, browser):
    """Chapter 0's main playground: click every tab, each one must show its content (drawn by the
    kernel when the tab is picked); a screenshot of each goes to artifacts/browser/."""
    nb = nbformat.read(PLAYGROUND, as_version=4)
    main = _main_widget_cell(nb)
    page = browser.new_page(viewport=VIEWPORT)
    console_errors = []
    page.on("pageerror", lambda e: console_errors.append(str(e)))
    try:
        notebook = NotebookPage(page, lab, PLAYGROUND.name)
        notebook.open(expected_cells=len(nb.cells) + 1)
        notebook.run_all()
        widget = notebook.cells.nth(main)
        widget.scroll_into_view_if_needed()
        tab_widget = widget.locator(".widget-tab").first
        titles = tab_widget.locator(".lm-TabBar-tab")
        names = [t.strip() for t in titles.all_inner_texts()]
        assert names == list(PLAYGROUND_TABS), f"the playground's tabs are {names}"
        problems = []
        for i, (name, expect) in enumerate(PLAYGROUND_TABS.items()):
            titles.nth(i).click()
            shown = tab_widget.locator(".widget-tab-contents > .widget-box:not(.lm-mod-hidden)").first
            deadline = time.monotonic() + generous(30)
            while time.monotonic() < deadline:
                if expect == "img":
                    if shown.locator(".widget-image").count() and notebook.image_hash(shown.locator(".widget-image").first):
                        break
                elif expect in shown.inner_text():
                    break
                page.wait_for_timeout(100)
            else:
                problems.append(f"tab {name!r} showed no {expect!r}: {shown.inner_text()[:200]!r}")
            notebook.element_screenshot(widget, ARTIFACTS / f"00_playground.tab-{i}.png")
        assert not problems, "\n".join(problems)
        assert not console_errors, f"JavaScript errors in the page: {console_errors}"
    finally:
        page.close()
        lab.shutdown_kernels()


@pytest.mark.slow
def test_a_blank_student_chapter_runs_to_the_end_with_cards(lab, browser):
    """Chapter 1 as a student first meets it: Run All reaches the last cell although no exercise is
    written; each check shows a card (no traceback); the progress cell says none is done; "Next:
    chapter 2" is a link that opens chapter 2; no news pop-up covers the notebook."""
    name = STUDENT_PREFIX + "01_gpu_architecture.ipynb"
    nb = nbformat.read(REPO / "chapters" / "01_gpu_architecture.ipynb", as_version=4)
    checks = [i for i, c in enumerate(nb.cells) if (c.metadata.get("simtlab") or {}).get("role") == "check"]
    page = browser.new_page(viewport=VIEWPORT)
    try:
        notebook = NotebookPage(page, lab, name)
        notebook.open(expected_cells=len(nb.cells))
        notebook.run_all(timeout_ms=240_000)          # every cell ran: Run All did not stop at a check
        saved = notebook.save(lab.work / name)
        errors = [(i, o.get("ename")) for i, c in enumerate(saved["cells"]) for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]
        assert errors == [], f"{name}: cells raised in Run All: {errors}"
        for i in checks:
            marks = [o["metadata"]["simtlab_check"] for o in saved["cells"][i]["outputs"]
                     if "simtlab_check" in o.get("metadata", {})]
            assert [m["status"] for m in marks] == ["not written"], (i, marks)
        cards = page.locator(".simtlab-check-card")
        assert cards.count() == len(checks)
        for k in range(cards.count()):
            text = cards.nth(k).inner_text()
            assert "is not written yet" in text and "hint(" in text and "Traceback" not in text, text
        assert "0 of 3 exercises done" in notebook.cells.nth(len(nb.cells) - 2).inner_text()
        assert "official Jupyter news" not in page.inner_text("body"), "JupyterLab's news pop-up is showing"
        notebook.element_screenshot(cards.first, ARTIFACTS / "student-01.check-card.png")

        link = page.locator(f"{_VISIBLE_PANEL} a[href*='02_warps_and_divergence.ipynb']")
        assert link.count() == 1, "'Next: chapter 2' is not a link to 02_warps_and_divergence.ipynb"
        link.scroll_into_view_if_needed()
        link.click()
        page.wait_for_selector(".lm-TabBar-tab[title*='02_warps_and_divergence.ipynb']", timeout=30_000)
    finally:
        page.close()
        lab.shutdown_kernels()


@pytest.mark.slow
def test_the_cell_the_text_asks_to_change_is_editable_and_so_is_its_copy(lab, browser):
    """Chapter 0 section 2: "change the shape in the cell above and run it again". The student can
    type in that cell, and in a copy of it pasted below (the text's lock: test_notebook_build)."""
    name = STUDENT_PREFIX + "00_playground.ipynb"
    nb = nbformat.read(REPO / "chapters" / "00_playground.ipynb", as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if "cuda.shared.array((32, 32)" in c.source)
    page = browser.new_page(viewport=VIEWPORT)
    try:
        notebook = NotebookPage(page, lab, name)
        notebook.open(expected_cells=len(nb.cells))

        def typed_into(cell, text: str) -> bool:
            cell.scroll_into_view_if_needed()
            cell.locator(".cm-content").click()
            page.keyboard.press("Control+End")
            page.keyboard.type(text)
            page.keyboard.press("Escape")
            return text in cell.locator(".cm-content").inner_text()

        cell = notebook.cells.nth(index)
        assert typed_into(cell, "  # (32, 33)"), "the cell chapter 0 asks to change is read-only"
        page.keyboard.press("c")                       # command mode: copy the cell, paste it below
        page.keyboard.press("v")
        page.wait_for_function(f"() => document.querySelectorAll('{_VISIBLE_PANEL} .jp-Cell').length > "
                               f"{len(nb.cells)}", timeout=10_000)
        assert typed_into(notebook.cells.nth(index + 1), "  # the copy"), "a pasted copy is read-only"
    finally:
        page.close()
        lab.shutdown_kernels()


#: JupyterLab's two themes, as its Settings > Theme menu names them
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
THEME_PLUGIN = "@jupyterlab/apputils-extension:themes"
#: WCAG 2 AA: the least contrast for text of normal size
WCAG_AA = 4.5
#: a playground whose races & errors tab holds everything it can: an error card (with a long fix
#: sentence), the source up to the fault with its marked line, a race; then a wrong check's card
THEME_NOTEBOOK = [
    """import numpy as np
from numba import cuda
import simtlab


@cuda.jit
def racy_then_out_of_bounds(values, running_total, doubled_values_shifted_by_one):
    i = cuda.grid(1)
    running_total[0] = running_total[0] + values[i]
    doubled_values_shifted_by_one[i + 1] = 2 * values[i]


x = np.ones(256, np.float32)
pg = simtlab.playground(racy_then_out_of_bounds, 2, 128, x, np.zeros(1, np.float32), np.zeros(256, np.float32))
pg""",
    """from simtlab.exercises import ch01


def linear_thread_id(tx, ty, tz, bdx, bdy):
    return tx


def global_thread_id(thread_idx, block_idx, block_dim, grid_dim):
    return thread_idx


ch01.check_linear_id(linear_thread_id, global_thread_id)""",
]


def _low_contrast(items: list[dict]) -> list[str]:
    return [f"{c['ratio']:.2f}: {c['text']!r} rgb{tuple(c['fg'])} on rgb{tuple(c['bg'])}"
            for c in items if c["ratio"] < WCAG_AA]


@pytest.mark.slow
@pytest.mark.parametrize("theme", THEMES)
def test_races_tab_wraps_and_reads_in_both_themes(lab, browser, theme):
    """The playground's races & errors tab and a check's card, at 1280 px with the file browser
    open, in JupyterLab's light and dark themes: no text is cut off (it wraps), every text has
    WCAG AA contrast on its background, and the cards' surfaces follow the theme (the dark
    theme's light text once sat on a light card). Screenshots: theme-<theme>*.png."""
    name = f"theme-{theme}.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in THEME_NOTEBOOK]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.work / name)
    lab.put_setting(THEME_PLUGIN, {"theme": THEMES[theme]})
    page = browser.new_page(viewport=VIEWPORT)
    try:
        notebook = NotebookPage(page, lab, name)
        notebook.open(expected_cells=len(nb.cells))
        assert page.evaluate("() => document.body.dataset.jpThemeName") == THEMES[theme]
        if not page.locator(".jp-FileBrowser").is_visible():
            page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id='filebrowser']").click()
        assert page.locator(".jp-FileBrowser").is_visible(), "the file browser is not open beside the notebook"
        notebook.run_all()

        widget = notebook.cells.nth(0).locator(".widget-tab").first
        widget.locator(".lm-TabBar-tab", has_text="races & errors").click()
        shown = widget.locator(".widget-tab-contents > .widget-box:not(.lm-mod-hidden)").first
        shown.locator(".simtlab-error-card").wait_for(timeout=30_000)
        card = page.locator(".simtlab-check-card")
        card.wait_for(timeout=30_000)
        page.wait_for_timeout(300)
        page.screenshot(path=ARTIFACTS / f"theme-{theme}.png")
        notebook.element_screenshot(widget, ARTIFACTS / f"theme-{theme}.races-tab.png")
        notebook.element_screenshot(card, ARTIFACTS / f"theme-{theme}.check-card.png")

        # a wrong answer: one card saying what is wrong, no traceback, nothing on stderr
        check_cell = notebook.cells.nth(1)
        assert "what is wrong:" in card.inner_text() and "Traceback" not in check_cell.inner_text()
        assert check_cell.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0

        text = shown.inner_text()
        assert "fix" in text and "1 race" in text and "racy_then_out_of_bounds()" in text, text[:500]
        cut = notebook.text_cut_off(shown) + notebook.text_cut_off(card)
        assert cut == [], f"{theme} theme, 1280 px with the file browser open: text cut off: {cut}"

        tab_text, card_text = notebook.text_contrast(shown), notebook.text_contrast(card)
        low = _low_contrast(tab_text + card_text)
        assert low == [], f"{theme} theme: text below WCAG AA contrast ({WCAG_AA}):\n" + "\n".join(low)
        # the cards and the source table's function row sit on the theme's surfaces
        surfaces = {"error card": notebook.text_contrast(shown.locator(".simtlab-error-card")),
                    "source table": notebook.text_contrast(shown.locator(".simtlab-source-view").first),
                    "check card": card_text}
        for what, items in surfaces.items():
            assert items, f"no text measured in the {what}"
            light = [c["text"] for c in items if (c["bg_luminance"] > 0.5) != (theme == "light")]
            assert light == [], f"{theme} theme: the {what} keeps a {'dark' if theme == 'light' else 'light'} " \
                                f"background behind {light[:5]}"
    finally:
        page.close()
        lab.put_setting(THEME_PLUGIN, {})
        lab.shutdown_kernels()
        (lab.work / name).unlink(missing_ok=True)


def _shared_wavefronts_per_request(row_length: int) -> float:
    """Chapter 0's row_sums on a 32 x ``row_length`` float32 tile, counted by hand: 32 stores of
    a row (lane t: word r*row_length + t) and 32 reads of a column (lane t: word t*row_length + r);
    a request takes as many wavefronts as the most distinct words it asks of one of the 32 banks."""
    def wavefronts(words):
        per_bank: dict[int, set] = {}
        for w in words:
            per_bank.setdefault(w % 32, set()).add(w)
        return max(len(s) for s in per_bank.values())
    stores = [wavefronts([r * row_length + t for t in range(32)]) for r in range(32)]
    reads = [wavefronts([t * row_length + r for t in range(32)]) for r in range(32)]
    return (sum(stores) + sum(reads)) / (len(stores) + len(reads))


@pytest.mark.slow
def test_the_shape_the_text_asks_to_change_runs_again_with_the_new_shape(lab, browser):
    """Chapter 0 section 2 as a student follows it: run the bank-conflict cell, read its
    wavefronts, change (32, 32) to (32, 33) in the cell and run it again: the wavefronts drop to
    the conflict-free count (both counted by hand, _shared_wavefronts_per_request)."""
    name = STUDENT_PREFIX + "00_playground.ipynb"
    nb = nbformat.read(REPO / "chapters" / "00_playground.ipynb", as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if "cuda.shared.array((32, 32)" in c.source)
    page = browser.new_page(viewport=VIEWPORT)

    def prompt(cell) -> str:
        return cell.locator(".jp-InputPrompt").inner_text().strip()

    def run_and_wait(cell, previous_prompt: str) -> None:
        page.keyboard.press("Shift+Enter")
        page.wait_for_function("([el, before]) => /\\[\\d+\\]/.test(el.textContent) && el.textContent.trim() !== before",
                               arg=[cell.locator(".jp-InputPrompt").element_handle(), previous_prompt],
                               timeout=120_000, polling=200)

    try:
        notebook = NotebookPage(page, lab, name)
        notebook.open(expected_cells=len(nb.cells))
        cell = notebook.cells.nth(index)
        cell.scroll_into_view_if_needed()
        cell.locator(".jp-InputPrompt").click()
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Above Selected Cell", exact=True).click()
        last_above = max(i for i in range(index) if nb.cells[i].cell_type == "code")
        page.wait_for_function("(el) => /\\[\\d+\\]/.test(el.textContent)",
                               arg=notebook.cells.nth(last_above).locator(".jp-InputPrompt").element_handle(),
                               timeout=120_000, polling=200)
        cell.locator(".jp-InputPrompt").click()
        run_and_wait(cell, prompt(cell))

        cell.locator(".jp-InputPrompt").click()               # command mode on the cell: add one below
        page.keyboard.press("b")
        probe = notebook.cells.nth(index + 1)
        page.keyboard.press("Enter")
        page.keyboard.type('print(conflicts.run.metrics["shared_wavefronts_per_request"])')
        run_and_wait(probe, prompt(probe))
        before = float(probe.locator(".jp-OutputArea-output").inner_text().strip())

        editor = cell.locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+Home")
        for _ in range(2):
            page.keyboard.press("ArrowDown")                  # line 3: tile = cuda.shared.array((32, 32), ...)
        page.keyboard.press("End")
        for _ in range(len("), np.float32)")):
            page.keyboard.press("ArrowLeft")
        page.keyboard.press("Backspace")
        page.keyboard.type("3")
        assert "cuda.shared.array((32, 33), np.float32)" in editor.inner_text(), editor.inner_text()[:300]
        run_and_wait(cell, prompt(cell))
        probe.locator(".jp-InputPrompt").click()
        run_and_wait(probe, prompt(probe))
        after = float(probe.locator(".jp-OutputArea-output").inner_text().strip())
        assert (before, after) == (_shared_wavefronts_per_request(32), _shared_wavefronts_per_request(33))
    finally:
        page.close()
        lab.shutdown_kernels()
