"""The browser tests' helpers that talk to JupyterLab's REST API, against a stand-in server."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from browser_support import LabServer, NotebookPage


def _stand_in(failures: int):
    """A server whose GET /api/kernels fails with 500 ``failures`` times, then lists kernel k1; it records DELETEs."""
    seen = {"gets": 0, "deleted": []}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen["gets"] += 1
            ok = seen["gets"] > failures
            body = json.dumps([{"id": "k1"}] if ok else {"message": "Unhandled error"}).encode()
            self.send_response(200 if ok else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_DELETE(self):
            seen["deleted"].append(self.path.split("?")[0])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


@pytest.mark.parametrize("failures", [0, 2])
def test_kernels_are_shut_down_even_when_the_list_fails_while_one_starts(tmp_path, failures):
    server, seen = _stand_in(failures)
    try:
        lab = LabServer(tmp_path, tmp_path)
        lab.base_url = f"http://127.0.0.1:{server.server_address[1]}"
        lab.shutdown_kernels()
        assert seen["gets"] == failures + 1 and seen["deleted"] == ["/api/kernels/k1"]
    finally:
        server.shutdown()


def test_a_list_that_keeps_failing_is_reported(tmp_path):
    server, seen = _stand_in(failures=100)
    try:
        lab = LabServer(tmp_path, tmp_path)
        lab.base_url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(AssertionError, match="HTTP 500 ten times"):
            lab.shutdown_kernels()
        assert seen["gets"] == 10 and seen["deleted"] == []
    finally:
        server.shutdown()


# JupyterLab's kernel dialog as it draws it (a .jp-Dialog with a kernel list and two buttons), over a notebook
_KERNEL_DIALOG_PAGE = """<div class="jp-NotebookPanel"><div class="jp-Notebook" style="width:400px;height:300px"
     onclick="document.body.dataset.clicked = 'notebook'"></div></div>
<div class="jp-Dialog" style="position:fixed;inset:0;background:#fff">
  <div>Select Kernel</div><div>Select kernel for: "00_playground.ipynb"</div>
  <select><option>Python 3 (ipykernel)</option><option>No Kernel</option></select>
  <button onclick="document.body.dataset.choice = 'none'; this.closest('.jp-Dialog').remove()">No Kernel</button>
  <button onclick="document.body.dataset.choice = 'select'; this.closest('.jp-Dialog').remove()">Select</button>
</div>"""


@contextmanager
def _stand_in_page(html: str):
    """A headless Chromium page showing ``html``."""
    from browser_support import CHROMIUM, CHROMIUM_ARGS, missing_chromium_message
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), missing_chromium_message()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.set_content(html)
            yield page
        finally:
            browser.close()


def test_the_kernel_dialog_is_accepted_before_the_notebook_is_clicked():
    with _stand_in_page(_KERNEL_DIALOG_PAGE) as page:
        notebook = NotebookPage(page, None, "00_playground.ipynb")
        notebook._activate()             # the dialog covers the notebook: without accepting it, the click fails
        assert page.evaluate("({...document.body.dataset})") == {"choice": "select", "clicked": "notebook"}
        assert notebook.accept_kernel_dialog() is False          # gone, and nothing else is clicked


# a notebook whose first Run All brings JupyterLab's kernel dialog, and whose Run All after a kernel is chosen
# numbers its one cell (the markup run_all reads: menu items, prompts, the execution indicator)
_RUN_ALL_PAGE = """<div role="menuitem">Run</div>
<div role="menuitem" onclick="runAll()">Run All Cells</div>
<div class="jp-NotebookPanel"><div class="jp-Notebook" style="width:400px;height:200px">
  <div class="jp-CodeCell"><div class="jp-InputPrompt">[ ]:</div></div></div>
  <div class="jp-Notebook-ExecutionIndicator" data-status="idle"></div></div>
<script>
  let kernel = false, dialogs = 0, asked = 0, answered = 0;     // when the dialog came and went (page clock, ms)
  function runAll() {
    if (kernel) { document.querySelector('.jp-InputPrompt').textContent = '[1]:'; return; }
    dialogs += 1;
    asked = performance.now();
    document.body.insertAdjacentHTML('beforeend', `<div class="jp-Dialog" style="position:fixed;inset:0;background:#fff">
      <div>Select Kernel</div><button onclick="this.closest('.jp-Dialog').remove()">No Kernel</button>
      <button onclick="kernel = true; answered = performance.now(); this.closest('.jp-Dialog').remove()">Select</button></div>`);
  }
</script>"""


def test_run_all_takes_the_proposed_kernel_and_runs_again_at_once():
    # answered at once, not after the start timeout: a 120-s timeout that only the old way (wait for a started cell,
    # then try again) sits out, far above anything a busy machine adds to a click
    with _stand_in_page(_RUN_ALL_PAGE) as page:
        NotebookPage(page, None, "00_playground.ipynb").run_all(start_timeout_ms=120_000)
        assert page.evaluate("[dialogs, kernel, document.querySelector('.jp-InputPrompt').textContent]") == [1, True, "[1]:"]
        waited_ms = page.evaluate("answered - asked")
        assert waited_ms < 60_000, waited_ms
