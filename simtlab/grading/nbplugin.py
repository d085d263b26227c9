"""A pytest plugin that records, for every notebook cell nbval runs, how it really ended.

``simtlab grade`` runs each rebuilt submission as::

    python -m pytest -p simtlab.grading.nbplugin --nbval-lax --simtlab-results FILE --simtlab-key-fd N ...

nbval alone decides that a cell failed when the kernel sends an ``error``
message on IOPub.  A student can silence those (replace
``InteractiveShell.showtraceback``), so this plugin also keeps the kernel's
``execute_reply``: a check passes only when nbval raised nothing *and* the
reply's status is ``"ok"``.  It also notices a kernel that died (instead of
letting nbval wait for the whole cell timeout), caps the data memory of pytest
and of the kernel it starts (``--simtlab-memory-limit``), and writes one JSON
line per cell to ``FILE`` as soon as the cell ends, so a run killed by the
notebook timeout still tells what ran.

Each line is signed with an HMAC whose key the grader passes through a pipe
(``--simtlab-key-fd``) that is read and closed before the kernel starts: code in
the kernel can delete the results, never forge a pass.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from queue import Empty

import pytest

from .signing import sign_ok  # noqa: F401  (the grader reads what this plugin signs)

#: the fields of each JSON line are documented in :func:`_cell_record`
RESULTS_VERSION = 1


class _State:
    def __init__(self):
        self.key: bytes = b""
        self.path: str | None = None
        self.file = None
        self.current: dict | None = None  # the cell being run: reply, kernel death
        self.current_item = None
        self.kernel_pid: int | None = None

    def write(self, record: dict) -> None:
        if self.file is None:
            return
        body = json.dumps(record, sort_keys=True, ensure_ascii=True)
        mac = hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()
        self.file.write(json.dumps({"body": body, "mac": mac}) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())


STATE = _State()


def pytest_addoption(parser):
    group = parser.getgroup("simtlab", "simtlab grade")
    group.addoption("--simtlab-results", default=None, help="file receiving one signed JSON line per cell")
    group.addoption("--simtlab-key-fd", type=int, default=None, help="pipe holding the signing key")
    group.addoption("--simtlab-memory-limit", type=int, default=0,
                    help="cap (bytes) on the data memory of pytest and the kernel; 0: no cap")


def _limit_memory(limit: int) -> None:
    if limit <= 0:
        return
    import resource

    # RLIMIT_DATA counts what a program writes to (heap, anonymous mappings) but not the
    # address space that numba/LLVM or CUDA only reserve, so the course's kernels still run.
    # macOS does not enforce it: there, use RLIMIT_AS.
    which = resource.RLIMIT_DATA if os.uname().sysname == "Linux" else resource.RLIMIT_AS
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(which, (limit, hard))
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core files from a crashed kernel
    except (ValueError, OSError):
        pass


def pytest_configure(config):
    path = config.getoption("--simtlab-results")
    if path is None:
        return
    fd = config.getoption("--simtlab-key-fd")
    if fd is not None:
        with os.fdopen(fd, "rb") as pipe:  # closed now: the kernel, started later, never sees it
            STATE.key = pipe.read().strip()
    STATE.path = path
    STATE.file = open(path, "a", encoding="utf-8")
    _limit_memory(config.getoption("--simtlab-memory-limit"))
    _patch_nbval()
    STATE.write({"type": "start", "version": RESULTS_VERSION, "pid": os.getpid()})


def pytest_unconfigure(config):
    if STATE.file is not None:
        STATE.write({"type": "end"})
        STATE.file.close()
        STATE.file = None


def _patch_nbval() -> None:
    """Make nbval keep each execute_reply and stop waiting on a dead kernel."""
    from nbval.kernel import RunningKernel

    if getattr(RunningKernel, "_simtlab_patched", False):
        return

    def await_reply(self, msg_id, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = 0.5 if deadline is None else max(0.01, min(0.5, deadline - time.monotonic()))
            try:
                msg = self.get_message(stream="shell", timeout=wait)
            except Empty:
                if not self.is_alive():
                    _kernel_died(self)
                    raise
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                if STATE.current is not None:
                    STATE.current["reply"] = dict(msg["content"])
                if msg["content"]["status"] == "aborted":
                    raise RuntimeError("Kernel aborted execution request")
                return

    RunningKernel.await_reply = await_reply
    RunningKernel._simtlab_patched = True


def _kernel_died(kernel) -> None:
    code = None
    try:
        proc = getattr(kernel.km.provisioner, "process", None)
        code = proc.poll() if proc is not None else None
    except Exception:  # noqa: BLE001 - best effort: the kernel is gone either way
        pass
    if STATE.current is not None:
        STATE.current["kernel_died"] = True
        STATE.current["exit_code"] = code
    item = STATE.current_item
    if item is not None:
        item.output_timeout = 0.2  # nothing more will come on IOPub: do not wait 5 s for it


def _kernel_pid(item):
    try:
        return item.parent.kernel.km.provisioner.process.pid
    except Exception:  # noqa: BLE001
        return None


def _is_nbval_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "cell")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _is_nbval_cell(item) and STATE.file is not None:
        STATE.current = {"reply": None, "kernel_died": False, "exit_code": None, "start": time.monotonic()}
        STATE.current_item = item
    yield
    STATE.current = None
    STATE.current_item = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield
    if not _is_nbval_cell(item) or STATE.file is None or STATE.current is None:
        return
    if call.when == "setup":
        if STATE.kernel_pid is None:
            pid = _kernel_pid(item)
            if pid is not None:
                STATE.kernel_pid = pid
                STATE.write({"type": "kernel", "pid": pid})
        if call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception):
            STATE.write(_cell_record(item, call, setup_failed=True))
            STATE.current = None  # no call phase follows
    elif call.when == "call":
        STATE.write(_cell_record(item, call))


def _short(text, limit=2000) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 15] + " ... (cut)"


def _cell_record(item, call, setup_failed: bool = False) -> dict:
    """One cell's outcome.

    ``nbval_ok``: nbval raised nothing; ``reply``: the execute_reply's status
    (``"ok"``, ``"error"``, ``"aborted"``, or None when none came); ``error_output``:
    an error message came on IOPub; ``ename``/``evalue``: the error, from IOPub or
    else from the reply; ``timed_out``: nbval's per-cell timeout fired;
    ``kernel_died``/``exit_code``: the kernel process ended during the cell;
    ``kernel_dead_before``: it was already dead; ``skipped``: nbval skipped it.
    """
    cur = STATE.current or {}
    meta = item.cell.get("metadata", {}).get("simtlab") or {}
    reply = cur.get("reply") or {}
    outs = item.test_outputs or []
    errors = [o for o in outs if o.get("output_type") == "error"]
    ename = errors[0].get("ename") if errors else reply.get("ename")
    evalue = errors[0].get("evalue") if errors else reply.get("evalue")
    message = None
    skipped = False
    kernel_dead_before = False
    if call.excinfo is not None:
        exc = call.excinfo.value
        if call.excinfo.errisinstance(pytest.skip.Exception):
            skipped = True
        message = _short(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, 300)
        if isinstance(exc, RuntimeError) and "Kernel dead" in str(exc):
            kernel_dead_before = True
    timed_out = bool(message and "Timeout" in message and not cur.get("kernel_died"))
    return {
        "type": "cell",
        "index": item.cell_num,
        "cell": item.cell.get("id"),
        "id": meta.get("id"),
        "role": meta.get("role"),
        "setup_failed": setup_failed,
        "nbval_ok": call.excinfo is None,
        "skipped": skipped,
        "reply": reply.get("status"),
        "error_output": bool(errors),
        "ename": _short(ename, 200) if ename is not None else None,
        "evalue": _short(evalue) if evalue is not None else None,
        "message": message,
        "timed_out": timed_out,
        "kernel_died": bool(cur.get("kernel_died")),
        "exit_code": cur.get("exit_code"),
        "kernel_dead_before": kernel_dead_before,
        "seconds": round(time.monotonic() - cur.get("start", time.monotonic()), 3),
    }
