"""Every kernel of kernels/*.cu on the PTX engine (NVRTC's PTX of the course's own CUDA C):
against its NumPy reference on odd sizes, and, where a seed or a racy version is wrong on
purpose, the fault as the trace shows it. The cases (launches, inputs, references) are
tests/cuda_c_cases.py's, which tests/test_ptx_engine_gpu.py runs on a GPU too."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from simtlab import cuda_c_kernels as CC

try:
    CC.nvrtc_version()
except CC.CompilerMissing as why:
    pytest.skip(f"NVRTC is not installed ({why})", allow_module_level=True)

from cuda_c_cases import CASES, BY_NAME, CPU, TOPICS, outputs_of  # noqa: E402
from simtlab.emulator.ptx.parser import parse_module  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: NVRTC needs about a minute for conv.cu on 2 cores (once: the PTX is cached on disk)
SLOW_TOPICS = {"conv"}


def _marks(case):
    marks = [pytest.mark.slow] if case.topic in SLOW_TOPICS else []
    if case.xfail:
        marks.append(pytest.mark.xfail(strict=True, reason=case.xfail))
    return marks


def _params(cases):
    return [pytest.param(c, id=c.name, marks=_marks(c)) for c in cases]


def _kernel_names(topic):
    """The kernels of kernels/<topic>.cu: its PTX's entries (every instance of a macro or a
    template), or the source's extern "C" __global__ names where NVRTC cannot compile it."""
    path = (ROOT / "kernels" / f"{topic}.cu").resolve()
    source = path.read_text()
    try:
        return set(parse_module(CC.compile_ptx(source, str(path))).entries)
    except CC.CudaCompileError:
        return set(re.findall(r'extern "C" __global__ void(?:\s+__\w+__\([^)]*\))*\s+(\w+)\s*\(', source))


# topics whose kernels the PTX engine cannot run yet (none: a kernel it cannot run has a strict
# xfail of its own case, e.g. chapter 9's wgmma)
NOT_YET: dict = {}


def _topic_marks(t):
    marks = [pytest.mark.slow] if t in SLOW_TOPICS else []
    if t in NOT_YET:
        marks.append(pytest.mark.xfail(strict=True, reason=NOT_YET[t]))
    return marks


@pytest.mark.parametrize("topic", [pytest.param(t, marks=_topic_marks(t))
                                   for t in sorted(p.stem for p in (ROOT / "kernels").glob("*.cu"))])
def test_every_kernel_of_the_course_has_a_case(topic):
    assert topic in TOPICS
    covered = {k for c in CASES if c.topic == topic for k in c.kernels}
    assert covered == _kernel_names(topic)


def run_case(case, trace=False):
    inputs, launches, outputs = outputs_of(case, CPU)
    runs = CC.emulate_launches(case.topic, launches, trace=trace)
    return inputs, outputs, runs


@pytest.mark.parametrize("case", _params(CASES))
def test_kernel_agrees_with_numpy(case):
    inputs, outputs, runs = run_case(case)
    assert all(r.engine == "ptx" for r in runs)
    case.check(outputs, *inputs)


# --- wrong on purpose: what the trace shows ---------------------------------------------------------
def _lines(run, rows):
    return {run.source(int(line)).strip() for line in np.unique(rows["line"])}


def test_unsafe_last_warp_races_in_shared_memory_and_syncwarp_does_not():
    _, _, (unsafe,) = run_case(BY_NAME["reduction/reduce_last_warp_unsafe"], trace=True)
    assert unsafe.races and all(r.array.endswith("s") and r.space == "shared" for r in unsafe.races)
    racy_lines = {unsafe.source(line).strip() for race in unsafe.races for line in race.lines}
    assert racy_lines and racy_lines <= {f"s[t] += s[t + {k}];" for k in (32, 16, 8, 4, 2, 1)}, racy_lines
    _, _, (fixed,) = run_case(BY_NAME["reduction/reduce_last_warp_syncwarp"], trace=True)
    assert fixed.metrics["races"] == 0


def test_in_place_scan_reports_its_read_write_races():
    _, _, (run,) = run_case(BY_NAME["scan/scan_in_place_racy"], trace=True)
    assert run.races and {r.array for r in run.races} == {"temp"}
    assert all(set(r.kinds) == {"read", "write"} for r in run.races)
    assert {run.source(line).strip() for r in run.races for line in r.lines} == \
        {"if (t >= d) temp[t] += temp[t - d];"}


def test_conv_seed_leaves_the_outputs_past_its_stride_unwritten():
    from simtlab.kernels.conv import BLOCK

    _, outputs, (run,) = run_case(BY_NAME["conv/conv_v0_seed"], trace=True)
    writes = run.accesses("y", "write")
    total = outputs["out"].size
    assert total > BLOCK
    # one block: thread t writes output t, then jumps by BLOCK * BLOCK, past the end
    assert sorted(writes["index"].tolist()) == list(range(BLOCK))


def test_vecmat_seed_skips_segments_in_the_trace():
    inputs, _, runs = run_case(BY_NAME["reduction/vecmat_v1_seed"], trace=True)
    v, w = inputs
    rows, n = w.shape
    block = 256
    read = np.zeros(w.size, bool)
    read[runs[0].accesses("w", "read")["index"]] = True
    read = read.reshape(rows, n)
    # blocks 0 and 1 start at 0 and 256 and step by 256 * 256: the columns they read
    starts = [s for bx in (0, 1) for s in range(bx * block, n, block * block)]
    want = np.zeros(n, bool)
    for s in starts:
        want[s:s + block] = True
    assert (read == want).all() and not want.all()


def test_gemm_seed_stores_the_unbiased_product_once_and_never_the_biased_one():
    _, outputs, (seed,) = run_case(BY_NAME["gemm/gemm_bias_act_seed"], trace=True)
    writes = seed.accesses("C", "write")
    assert _lines(seed, writes) == {"C[(size_t)row * N + col] = p;"}
    assert len(writes) == outputs["out"].size
    _, outputs, (fixed,) = run_case(BY_NAME["gemm/gemm_bias_act"], trace=True)
    writes = fixed.accesses("C", "write")
    assert _lines(fixed, writes) == {"C[(size_t)row * N + col] = activate(p, activation);"}
    assert len(writes) == outputs["out"].size
