"""JupyterLab in a real browser for the tests (a helper module, not a test file).

``LabServer`` starts JupyterLab the way a student does, through ``simtlab open``, on a free
port of 127.0.0.1 with a token, in folders of its own (work folder, user settings,
workspaces, Jupyter config), so nothing of the developer's own JupyterLab set-up is used.
``NotebookPage`` drives one notebook in Debian's Chromium through Playwright: run all
cells, wait for the kernel, save, change a widget's control, take screenshots.

The browser is always the system's Chromium (``/usr/bin/chromium``, or ``SIMTLAB_CHROMIUM``
pointing at another installed Chromium): Playwright's own browser downloads are never used.
``tools/install_chromium.sh`` installs it with apt (the README's test command runs it).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from load_support import generous

REPO = Path(__file__).resolve().parent.parent


def _ms(seconds: float) -> int:
    """A browser wait, in Playwright's milliseconds, for a step of ``seconds`` on an idle machine."""
    return int(generous(seconds) * 1000)


CHROMIUM = Path(os.environ.get("SIMTLAB_CHROMIUM", "/usr/bin/chromium"))
# Root needs --no-sandbox; the rest keeps a headless Chromium off the (closed) network.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--disable-default-apps", "--disable-extensions",
]
#: a student's laptop screen
VIEWPORT = {"width": 1280, "height": 900}

#: screenshots and run times land here (CI keeps artifacts/; SIMTLAB_ARTIFACTS moves it)
ARTIFACTS = Path(os.environ.get("SIMTLAB_ARTIFACTS", REPO / "artifacts")) / "browser"
RUN_TIMES = ARTIFACTS / "run_times.json"

#: user settings for the test only: none, so that the course's own JupyterLab defaults (installed
#: by `simtlab open`, simtlab/jupyter_settings.py: no news pop-up, every cell in the page) are
#: the ones under test
_TEST_USER_SETTINGS: dict = {}


def missing_chromium_message() -> str:
    return (f"no Chromium at {CHROMIUM}: the browser test needs Debian's Chromium. Install it with "
            "`bash tools/install_chromium.sh` (apt-get install chromium fonts-dejavu-core, as root "
            "or through sudo), or set SIMTLAB_CHROMIUM to an installed Chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = generous(5.0)) -> tuple[int, bytes]:
    """(status, body) of a GET; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def wait_for_lab(base_url: str, token: str, proc: subprocess.Popen, log: Path, timeout: float) -> dict:
    """Poll ``/api/status`` until JupyterLab answers; return the status JSON."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"JupyterLab exited with status {proc.returncode} before answering:\n"
                                 + log_tail(log))
        status, body = http_get(f"{base_url}/api/status?token={token}")
        if status == 200:
            return json.loads(body)
        time.sleep(0.5)
    raise AssertionError(f"JupyterLab did not answer on {base_url} within {timeout:.0f} s:\n" + log_tail(log))


def log_tail(log: Path, chars: int = 4000) -> str:
    try:
        return log.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def stop_process_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group ``proc`` leads (JupyterLab and its kernels), then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace)
    except ProcessLookupError:
        pass


class LabServer:
    """``simtlab open --chapters CHAPTERS --work WORK`` on a free port, isolated from ``~``."""

    def __init__(self, chapters: Path, root: Path, env: dict | None = None):
        self.chapters = Path(chapters)
        self.root = Path(root)
        self.work = self.root / "work"
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log = self.root / "jupyterlab.log"
        self.env = dict(os.environ if env is None else env)
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = generous(120.0)) -> "LabServer":
        settings = self.root / "user-settings"
        for name, value in _TEST_USER_SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        for sub in ("workspaces", "config", "runtime"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # Only Jupyter's own folders are moved; MPLBACKEND and the rest of the environment
        # reach the kernels as they would from the developer's shell or CI.
        self.env.update(JUPYTERLAB_SETTINGS_DIR=str(settings),
                        JUPYTERLAB_WORKSPACES_DIR=str(self.root / "workspaces"),
                        JUPYTER_CONFIG_DIR=str(self.root / "config"),
                        JUPYTER_RUNTIME_DIR=str(self.root / "runtime"))
        simtlab = Path(sys.executable).parent / "simtlab"
        cmd = [str(simtlab)] if simtlab.exists() else [sys.executable, "-m", "simtlab.cli"]
        cmd += ["open", "--chapters", str(self.chapters), "--work", str(self.work),
                "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                f"--IdentityProvider.token={self.token}", "--ServerApp.port_retries=0"]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=self.root, env=self.env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_lab(self.base_url, self.token, self.proc, self.log, timeout)
        return self

    def api(self, path: str) -> dict | list:
        status, body = http_get(f"{self.base_url}{path}{'&' if '?' in path else '?'}token={self.token}")
        assert status == 200, f"GET {path}: HTTP {status}: {body[:500]!r}"
        return json.loads(body)

    def put_setting(self, plugin: str, values: dict) -> None:
        """Write the user's settings of ``plugin`` (as JupyterLab's Settings editor does); a page
        opened afterwards uses them. ``{}`` goes back to the defaults."""
        req = urllib.request.Request(f"{self.base_url}/lab/api/settings/{plugin}",
                                     data=json.dumps({"raw": json.dumps(values)}).encode(), method="PUT",
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status in (200, 204), f"PUT settings of {plugin}: HTTP {r.status}"

    def delete(self, path: str) -> None:
        req = urllib.request.Request(f"{self.base_url}{path}?token={self.token}", method="DELETE")
        try:
            urllib.request.urlopen(req, timeout=10).close()
        except (urllib.error.URLError, OSError):
            pass

    def shutdown_kernels(self) -> None:
        # jupyter_server answers GET /api/kernels with 500 while a kernel is starting (its model is read before
        # the kernel manager's last_activity is set: TraitError in the server's log, seen once in CI right after a
        # test opened another notebook), so the list is asked for again after a moment
        for attempt in range(10):
            status, body = http_get(f"{self.base_url}/api/kernels?token={self.token}")
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, f"GET /api/kernels: HTTP {status} ten times: {body[:500]!r}"
        for k in json.loads(body):
            self.delete(f"/api/kernels/{k['id']}")

    def url(self, notebook: str) -> str:
        # ?reset: a fresh workspace, only this notebook open
        return f"{self.base_url}/lab/tree/{notebook}?token={self.token}&reset"

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)


# ---- driving a notebook in the page ------------------------------------------------------

_PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"

_ALL_RUN_JS = """() => {
  const panel = document.querySelector('%s');
  if (!panel) return false;
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator')
                    || document.querySelector('.jp-Notebook-ExecutionIndicator');
  const idle = indicator !== null && indicator.dataset.status === 'idle';
  // Run All stops at the first cell that raises: then the kernel goes idle with cells left unrun,
  // and waiting for them would only time out; the caller reports the error output instead
  const failed = panel.querySelector('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
  return prompts.length > 0 && idle && (failed !== null || prompts.every(p => /\\[\\d+\\]/.test(p.textContent)));
}""" % _PANEL

# Run All has begun: some code cell is running ([*]) or has run ([n])
_RUN_STARTED_JS = """() => {
  const panel = document.querySelector('%s');
  if (!panel) return false;
  return [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent));
}""" % _PANEL

# a run started, or a dialog came instead (JupyterLab's "Select Kernel": see NotebookPage.accept_kernel_dialog)
_RUN_STARTED_OR_DIALOG_JS = "() => (%s)() || document.querySelector('.jp-Dialog') !== null" % _RUN_STARTED_JS

# what a failure message needs: kernel status, prompts by state, the first cell not done, dialogs
_STATE_JS = """() => {
  const panel = document.querySelector('%s');
  if (!panel) return {panel: null};
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator')
                    || document.querySelector('.jp-Notebook-ExecutionIndicator');
  const pending = prompts.findIndex(p => !/\\[\\d+\\]/.test(p));
  const cells = [...panel.querySelectorAll('.jp-Cell')];
  const code = [...panel.querySelectorAll('.jp-CodeCell')];
  const stuck = pending >= 0 ? code[pending] : null;
  return {
    kernel: indicator ? indicator.dataset.status : null,
    code_cells: prompts.length,
    blank: prompts.filter(p => /^\\[\\s*\\]/.test(p) || p === '').length,
    running_or_queued: prompts.filter(p => p.includes('*')).length,
    done: prompts.filter(p => /\\[\\d+\\]/.test(p)).length,
    first_not_done: stuck ? {cell: cells.indexOf(stuck), prompt: prompts[pending],
                             source: stuck.querySelector('.jp-InputArea-editor').innerText.slice(0, 200)} : null,
    dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.textContent.slice(0, 200)),
  };
}""" % _PANEL

# every cell of the notebook is in the page (JupyterLab adds them in batches while it opens)
_CELL_COUNT_JS = """(n) => document.querySelectorAll('%s .jp-WindowedPanel-viewport > .jp-Cell').length >= n""" % _PANEL

# A small hash of an <img>'s bytes (the figure widget's PNG), read back through its blob URL.
_IMG_HASH_JS = """async (img) => {
  if (!img.src) return null;
  const buf = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
  let h = 2166136261 >>> 0;
  for (let i = 0; i < buf.length; i++) { h ^= buf[i]; h = Math.imul(h, 16777619) >>> 0; }
  return buf.length + ':' + h.toString(16);
}"""


# The page's own clock around a widget update: the time of the dropdown's change event and of
# the next image load after it (the new figure decoded), both read with performance.now(). The
# test's polling loop (fetch and hash the image, every 50 ms) only says *that* it changed.
_ARM_UPDATE_CLOCK_JS = """([select, img]) => {
  window.__simtlabChange = undefined; window.__simtlabLoad = undefined;
  select.addEventListener('change', () => { window.__simtlabChange = performance.now(); },
                          {once: true, capture: true});
  img.addEventListener('load', () => { window.__simtlabLoad = performance.now(); }, {once: true});
}"""
_READ_UPDATE_CLOCK_JS = """() => (window.__simtlabChange === undefined || window.__simtlabLoad === undefined)
  ? null : window.__simtlabLoad - window.__simtlabChange"""


# Text cut off: each word (run of non-space characters) of each text node under the element, and
# every ancestor up to <body> that clips (overflow-x other than visible: hidden, auto, scroll); a
# word that reaches past the clipping box's visible width (left or right) is cut, or hidden until
# scrolled sideways. Words, not whole text nodes: the spaces at the end of a wrapped line of
# pre-wrap text hang past the line's end by design, and draw nothing.
_TEXT_CUT_JS = """(root) => {
  const clipping = (el) => {
    const out = [];
    for (let e = el; e && e !== document.body; e = e.parentElement)
      if (getComputedStyle(e).overflowX !== 'visible') out.push(e);
    return out;
  };
  const cut = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.trim()) continue;
    const range = document.createRange(), words = [];
    for (const word of node.textContent.matchAll(/\\S+/g)) {
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      words.push(...[...range.getClientRects()].filter(r => r.width > 0));
    }
    for (const box of clipping(node.parentElement)) {
      const b = box.getBoundingClientRect();
      const left = b.left + box.clientLeft, right = left + box.clientWidth;
      const past = Math.max(0, ...words.map(r => Math.max(r.right - right, left - r.left)));
      if (past > 1) {
        cut.push({text: node.textContent.trim().slice(0, 100), past_px: Math.round(past),
                  clipped_by: box.className || box.tagName});
        break;
      }
    }
  }
  return cut;
}"""

# WCAG 2 contrast of each text node under the element: its colour over its background, where
# the background is every ancestor's background-color painted from <html> down (so a half-
# transparent tint lands on what is behind it). A canvas does the painting and reads the
# colours back as sRGB bytes, whatever the CSS form (rgba(), color-mix()'s color(srgb ...)).
_CONTRAST_JS = """(root) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const paint = (colours) => {
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, 1, 1);
    for (const c of colours) {
      ctx.fillStyle = '#010203';
      ctx.fillStyle = c;
      if (ctx.fillStyle === '#010203') throw new Error('the canvas cannot read the colour ' + c);
      ctx.fillRect(0, 0, 1, 1);
    }
    const d = ctx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2]];
  };
  const luminance = (rgb) => {
    const f = (c) => { c /= 255; return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2]);
  };
  const out = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    if (![...range.getClientRects()].some(r => r.width > 0)) continue;       // not drawn
    const el = node.parentElement;
    const backgrounds = [];
    for (let e = el; e; e = e.parentElement) backgrounds.unshift(getComputedStyle(e).backgroundColor);
    const bg = paint(backgrounds), fg = paint([...backgrounds, getComputedStyle(el).color]);
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    out.push({text: node.textContent.trim().slice(0, 60), ratio: (hi + 0.05) / (lo + 0.05),
              fg: fg, bg: bg, bg_luminance: luminance(bg)});
  }
  return out;
}"""


class NotebookPage:
    """One notebook open in JupyterLab in ``page`` (a Playwright sync Page)."""

    def __init__(self, page, server: LabServer, name: str):
        self.page = page
        self.server = server
        self.name = name

    def open(self, expected_cells: int = 1, timeout_ms: int = _ms(120)) -> None:
        """Open the notebook; wait until its kernel is idle and ``expected_cells`` cells are in the page
        (with windowingMode 'none' every cell gets there; with windowing only those on screen do)."""
        self.page.goto(self.server.url(self.name))
        self.page.wait_for_selector(f"{_PANEL} .jp-Cell", timeout=timeout_ms)
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status=idle]", timeout=timeout_ms)
        try:
            self.page.wait_for_function(_CELL_COUNT_JS, arg=expected_cells, timeout=_ms(30), polling=200)
        except Exception:
            pass                    # the caller's count assertion says how many arrived

    @property
    def cells(self):
        return self.page.locator(f"{_PANEL} .jp-WindowedPanel-viewport > .jp-Cell")

    def run_all(self, timeout_ms: int = _ms(300), start_timeout_ms: int = _ms(30), tries: int = 3) -> float:
        """Run > Run All Cells from the menu; wait until every code cell ran and the kernel
        is idle. Returns the wall time in seconds.

        A click can land before JupyterLab has made the notebook its current widget (the
        first notebook of a fresh browser, under load): then the menu item does nothing and
        every prompt stays blank. So the notebook is activated first, and the run must show
        a started cell within ``start_timeout_ms`` or the menu is used again (``tries`` times
        in all). If JupyterLab asks for a kernel instead of running (accept_kernel_dialog), its
        proposal is taken at once and the menu used again. A run that starts but does not finish
        fails with the page's state."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        start = time.perf_counter()
        for attempt in range(1, tries + 1):
            self._activate()
            self.page.get_by_role("menuitem", name="Run", exact=True).click()
            self.page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            try:
                self.page.wait_for_function(_RUN_STARTED_OR_DIALOG_JS, timeout=start_timeout_ms, polling=200)
            except PlaywrightTimeout:
                self.page.keyboard.press("Escape")          # close the menu if it is still open
                continue
            if self.accept_kernel_dialog():
                continue
            if not self.page.evaluate(_RUN_STARTED_JS):
                raise AssertionError(f"{self.name}: Run All Cells opened a dialog; {self.diagnosis()}")
            break
        else:
            raise AssertionError(f"{self.name}: Run > Run All Cells started no cell in {tries} tries of "
                                 f"{start_timeout_ms / 1000:.0f} s; {self.diagnosis()}")
        try:
            self.page.wait_for_function(_ALL_RUN_JS, timeout=timeout_ms, polling=200)
        except PlaywrightTimeout:
            raise AssertionError(f"{self.name}: Run All did not finish in {timeout_ms / 1000:.0f} s "
                                 f"(started on try {attempt}); {self.diagnosis()}") from None
        return time.perf_counter() - start

    def _activate(self) -> None:
        """Make the notebook JupyterLab's current widget, in command mode; a dialog in the way fails
        with the page's state (the dialog's text among it), not with Playwright's bare timeout. JupyterLab's
        "Select Kernel" is accepted first (accept_kernel_dialog)."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.accept_kernel_dialog()
        try:
            self.page.locator(f"{_PANEL} .jp-Notebook").click(position={"x": 5, "y": 5})
        except PlaywrightTimeout:
            raise AssertionError(f"{self.name}: the notebook could not be clicked; {self.diagnosis()}") from None
        self.page.keyboard.press("Escape")

    def accept_kernel_dialog(self) -> bool:
        """JupyterLab asks which kernel to start when it finds the notebook without one as a run begins (seen once
        in CI: the first notebook of a fresh browser on a loaded machine, its kernel started and idle): take the
        kernel it proposes, the notebook's own, as a student would. Says whether there was such a dialog."""
        dialog = self.page.locator(".jp-Dialog", has_text="Select Kernel")
        if dialog.count() == 0:
            return False
        dialog.get_by_role("button", name="Select", exact=True).click()
        dialog.wait_for(state="detached", timeout=_ms(30))
        return True

    def diagnosis(self) -> str:
        """What the page shows now: kernel status, how many prompts are blank, running or done,
        the first cell not done, any dialog; plus a screenshot and the server log's tail."""
        state = self.page.evaluate(_STATE_JS)
        shot = ARTIFACTS / f"{Path(self.name).stem}.failure.png"
        try:
            shot.parent.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=shot)
        except Exception as exc:                      # the diagnosis must not hide the failure
            shot = f"(no screenshot: {exc})"
        return (f"page state {json.dumps(state)}; screenshot {shot}; "
                f"JupyterLab log tail:\n{log_tail(self.server.log, 2000)}")

    def save(self, path: Path, timeout_s: float = generous(30.0)) -> dict:
        """Save with Ctrl+S and return the saved notebook's JSON (read from ``path``)."""
        before = path.stat().st_mtime_ns
        self._activate()
        self.page.keyboard.press("Control+s")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if path.stat().st_mtime_ns != before:
                time.sleep(0.2)
                try:
                    return json.loads(path.read_text(encoding="utf-8"))
                except ValueError:
                    pass  # caught mid-write
            time.sleep(0.2)
        raise AssertionError(f"Ctrl+S did not save {path} within {timeout_s:.0f} s")

    def arm_update_clock(self, select, img) -> None:
        """Note, in the page, when ``select`` next changes and when ``img`` next loads."""
        self.page.evaluate(_ARM_UPDATE_CLOCK_JS, [select.element_handle(), img.element_handle()])

    def update_ms(self, timeout_s: float = 5.0) -> float | None:
        """Milliseconds from the change to the new image's load, by the page's clock (None when
        the image element was replaced instead of loading a new picture)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.page.evaluate(_READ_UPDATE_CLOCK_JS)
            if found is not None:
                return float(found)
            self.page.wait_for_timeout(50)
        return None

    def text_cut_off(self, locator) -> list[dict]:
        """The text under ``locator`` that a clipping box cuts (or hides until scrolled sideways):
        ``{"text", "past_px", "clipped_by"}`` for each text node, none when everything shows."""
        return locator.evaluate(_TEXT_CUT_JS)

    def text_contrast(self, locator) -> list[dict]:
        """Each drawn text node under ``locator``: ``{"text", "ratio", "fg", "bg", "bg_luminance"}``,
        ``ratio`` the WCAG contrast of its colour on its background (4.5 is AA for text)."""
        return locator.evaluate(_CONTRAST_JS)

    def image_hash(self, img, tries: int = 5) -> str | None:
        """A hash of the image's bytes. A widget that redraws revokes the old image's blob URL,
        so a fetch racing a redraw fails: read the new one instead."""
        for attempt in range(tries):
            try:
                return img.evaluate(_IMG_HASH_JS)
            except Exception as exc:                 # playwright.sync_api.Error
                if "Failed to fetch" not in str(exc) or attempt == tries - 1:
                    raise
                self.page.wait_for_timeout(100)

    def full_screenshot(self, path: Path, max_height: int = 16000) -> list[Path]:
        """The whole notebook from the top, in one image (more when taller than
        ``max_height`` px); the viewport grows to the notebook's height meanwhile."""
        scroller = f"{_PANEL} .jp-WindowedPanel-outer"
        height = self.page.evaluate(f"() => document.querySelector('{scroller}').scrollHeight")
        chrome = VIEWPORT["height"] - self.page.evaluate(
            f"() => document.querySelector('{scroller}').clientHeight")
        paths = []
        try:
            offset, part = 0, 1
            while offset < height:
                view = min(max_height, height - offset)
                self.page.set_viewport_size({"width": VIEWPORT["width"], "height": view + chrome})
                self.page.evaluate(f"() => {{ document.querySelector('{scroller}').scrollTop = {offset}; }}")
                self.page.wait_for_timeout(300)
                out = path if part == 1 else path.with_name(f"{path.stem}.part{part}{path.suffix}")
                self.page.screenshot(path=out)
                paths.append(out)
                offset, part = offset + view, part + 1
        finally:
            self.page.set_viewport_size(VIEWPORT)
        return paths


    def element_screenshot(self, locator, path: Path) -> Path:
        """``locator`` whole, even when taller than the screen: the viewport grows meanwhile
        (JupyterLab scrolls inside the notebook, so the page itself cannot be scrolled)."""
        height = locator.bounding_box()["height"]
        try:
            if height > VIEWPORT["height"] - 150:
                self.page.set_viewport_size({"width": VIEWPORT["width"], "height": int(height) + 250})
            locator.scroll_into_view_if_needed()
            self.page.wait_for_timeout(300)
            locator.screenshot(path=path)
        finally:
            self.page.set_viewport_size(VIEWPORT)
        return path


def record_run_time(chapter: str, entry: dict) -> None:
    """Add ``chapter``'s numbers to ``RUN_TIMES`` (a JSON beside the screenshots)."""
    data = {}
    if RUN_TIMES.exists():
        try:
            data = json.loads(RUN_TIMES.read_text())
        except ValueError:
            data = {}
    data[chapter] = entry
    RUN_TIMES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
