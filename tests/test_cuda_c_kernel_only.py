"""A course kernel is compiled alone with its file's preamble (``kernel_only_source``): NVRTC's
PTX of that kernel must be the same text as in the whole file's PTX, line numbers included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("lark")
import simtlab.cuda_c_kernels as CC

try:
    CC._nvrtc()
except CC.CompilerMissing as exc:
    pytest.skip(f"no NVRTC: {exc}", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
# cooperation.cu needs a toolkit header the wheel lacks; conv.cu's whole file takes NVRTC ~35-70 s
HEAVY = {"conv"}
TOPICS = [t for t in sorted(p.stem for p in (ROOT / "kernels").glob("*.cu")) if t != "cooperation"]


def _blocks(ptx: str, kind: str) -> dict:
    """``{name: text}`` of each ``.entry`` or ``.func`` of a PTX module, up to its closing brace."""
    out = {}
    for m in re.finditer(rf"^(?:\.visible |\.weak )?\{kind}\s+(?:\([^)]*\)\s*)?(\w+)\(", ptx, re.M):
        end = ptx.index("\n}\n", m.start())
        # labels are numbered across the module ($L__BB3_2, $L__info_string3), and NVRTC declares
        # a device function's static shared array in the first kernel that uses it (elsewhere a
        # "demoted variable" comment): none of that is the code
        text = re.sub(r"\$L__BB\d+_", "$L__BB_", ptx[m.start():end])
        text = re.sub(r"\$L__info_string\d+", "$L__info_string", text)
        kept = [line for line in text.splitlines()
                if line.strip() and not line.strip().startswith(("//", ".shared "))]
        out[m.group(1)] = "\n".join(kept)
    return out


def _declarations(ptx: str) -> set:
    """Every ``.shared``/``.global``/``.const`` variable the module declares, as written."""
    return {line.strip() for line in ptx.splitlines()
            if re.match(r"\s*\.(?:visible |extern )?\.?(?:shared|global|const) ", line)}


@pytest.mark.parametrize("topic", [pytest.param(t, marks=pytest.mark.slow) if t in HEAVY else t
                                   for t in TOPICS])
def test_a_kernel_compiled_alone_is_the_same_ptx_as_in_its_file(topic):
    path = (ROOT / "kernels" / f"{topic}.cu").resolve()
    source = path.read_text()
    whole = CC.compile_ptx(source, str(path))
    entries = _blocks(whole, ".entry")
    functions = _blocks(whole, ".func")
    alone_somewhere = 0
    for name in entries:
        reduced = CC.kernel_only_source(source, name)
        if reduced == source:                    # a macro's instance: compiled with the file
            continue
        alone_somewhere += 1
        ptx = CC.compile_ptx(reduced, str(path))
        assert set(_blocks(ptx, ".entry")) == {name}
        assert _blocks(ptx, ".entry")[name] == entries[name], f"{topic}.cu: {name} differs"
        assert _declarations(ptx) <= _declarations(whole), f"{topic}.cu: {name}'s variables differ"
        for fname, text in _blocks(ptx, ".func").items():
            assert functions.get(fname) == text, f"{topic}.cu: device function {fname} differs"
    assert alone_somewhere >= 1


def test_kernel_only_source_keeps_every_line_and_the_preamble():
    source = (ROOT / "kernels" / "conv.cu").read_text()
    reduced = CC.kernel_only_source(source, "conv_v1_direct")
    assert reduced.count("\n") == source.count("\n")
    lines, kept = source.splitlines(), reduced.splitlines()
    for i, (a, b) in enumerate(zip(lines, kept)):
        assert b in ("", a), f"line {i + 1} changed"
    assert "output_sum(" in reduced and "__constant__ float c_weights" in reduced
    assert "void conv_v1_direct(" in reduced
    assert "void conv_v0_seed(" not in reduced and "void im2col(" not in reduced
    assert not re.search(r"^CONV_V[56]\(", reduced, re.M)          # the template instances


def test_a_macro_that_expands_to_a_kernel_macro_is_blanked_too():
    source = (ROOT / "kernels" / "tensor_cores.cu").read_text()
    assert "#define V6W_PRODUCER_KERNEL_TMA_RN(...) V6W_PRODUCER_KERNEL(__VA_ARGS__)" in source
    reduced = CC.kernel_only_source(source, "tc_v1_wmma_tf32")
    assert reduced.count("\n") == source.count("\n") and "\ntc_v1_wmma_tf32(const float*" in reduced
    assert re.search(r"^V6W_PRODUCER_KERNEL_TMA_RN\(", source, re.M)
    assert not re.search(r"^V6W_PRODUCER_KERNEL(_TMA_RN)?\(", reduced, re.M)      # every instance of either, blanked
    assert "#define V6W_PRODUCER_KERNEL_TMA_RN(" in reduced                          # the definitions stay
    # a synthetic chain: C expands to B, B to A, A writes the kernel
    chain = ('#define A(n) extern "C" __global__ void n() {}\n#define B(n) A(n)\n#define C(n) B(n)\n'
             'extern "C" __global__ void plain() {}\nA(a1)\nB(b1)\nC(c1)\n#define D(x) (x)\nint d = D(1);\n')
    assert CC.kernel_only_source(chain, "plain").splitlines()[4:7] == ["", "", ""]
    assert "int d = D(1);" in CC.kernel_only_source(chain, "plain")


def test_a_macro_instance_is_compiled_with_its_whole_file():
    source = (ROOT / "kernels" / "conv.cu").read_text()
    assert CC.kernel_only_source(source, "conv_v5_c1m4k7_32x8x1") == source


def test_course_kernel_compiles_only_the_kernel_asked_for():
    CC.course_kernel.cache_clear()
    kernel = CC.course_kernel("reduction", "reduce_v3_sequential")
    assert set(kernel.module.entries) == {"reduce_v3_sequential"}
    assert kernel.source == (ROOT / "kernels" / "reduction.cu").read_text()   # the file, for its views
    first, last = kernel.code.co_firstlineno, kernel.code.co_lastlineno
    assert "reduce_v3_sequential" in kernel.source.splitlines()[first - 1]
    assert {i.line for i in kernel.entry.instructions} <= set(range(first, last + 1))
