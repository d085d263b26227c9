"""``%%simt``: the line parser's errors (one test per kind of bad argument), the magic in a
real IPython shell, and ``%%simt --cuda``'s line (its runs on the CPU: test_playground_cuda_c.py)."""

from __future__ import annotations

import numpy as np
import pytest

from simtlab.playground import Playground
from simtlab.playground.cuda_c import kernel_signature, run_cuda_c
from simtlab.playground.inputs import InputError, Recipe, parse_value, resize
from simtlab.playground.magic import MagicError, find_kernel, parse_launch, simt, split_line

KERNEL = """
@cuda.jit
def twice(a, out):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = 2 * a[i]
"""


@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import get_ipython
    shell = get_ipython()            # one shell per session, whichever test file starts it
    shell.run_line_magic("load_ext", "simtlab")
    return shell


# --- the line -------------------------------------------------------------------------------
def test_split_line_keeps_brackets_together():
    flags, items = split_line("--cuda grid=(4, 4) block=(16, 16) a=rand((64, 64)) n=7")
    assert flags == ["cuda"]
    assert items == {"grid": "(4, 4)", "block": "(16, 16)", "a": "rand((64, 64))", "n": "7"}


def test_parse_launch_reads_recipes_numbers_and_variables():
    launch = parse_launch("grid=8 block=128 a=rand(1000) out=zeros(1000, dtype='float64') n=x bytes=8e3",
                          ["a", "out", "n"], {"x": 1000})
    assert launch["griddim"] == 8 and launch["blockdim"] == 128
    a, out, n = launch["args"]
    assert a == Recipe("rand", (1000,), "float32") and out.dtype == "float64" and n == 1000
    assert launch["options"] == {"nbytes": 8000.0}


def test_parse_launch_reads_the_emulators_limits():
    for text, options in (("max_iterations=5_000", {"max_iterations": 5000}),
                          ("time_limit=None", {"time_limit": None}),
                          ("time_limit=90 max_iterations=1e7", {"time_limit": 90.0,
                                                                 "max_iterations": 10_000_000})):
        launch = parse_launch(f"grid=1 block=32 a=rand(32) out=zeros(32) {text}", ["a", "out"], {})
        assert launch["options"] == options


@pytest.mark.parametrize("line, message", [
    ("block=128 a=rand(10) out=zeros(10)", "no grid="),
    ("grid=8 a=rand(10) out=zeros(10)", "no block="),
    ("grid=8 block=128 a=rand(10)", "no value for the kernel parameter 'out'"),
    ("grid=8 block=128 a=rand(10) out=zeros(10) b=ones(3)", "b= is not a parameter of the kernel (a, out)"),
    ("grid=0 block=128 a=rand(10) out=zeros(10)", "grid must be a positive int"),
    ("grid=8 block=(1,2,3,4) a=rand(10) out=zeros(10)", "tuple of 1 to 3 positive ints"),
    ("grid=eight block=128 a=rand(10) out=zeros(10)", "grid must be a positive int"),
    ("grid=8 block=128 a=rnd(10) out=zeros(10)", "'rnd' is not an input recipe; use one of rand"),
    ("grid=8 block=128 a=rand(-3) out=zeros(10)", "the size must be a positive int"),
    ("grid=8 block=128 a=rand(10, dtype='floaty') out=zeros(10)", "'floaty' is not a NumPy dtype"),
    ("grid=8 block=128 a=rand(10, order='C') out=zeros(10)", "unknown option 'order'"),
    ("grid=8 block=128 a=randint(10) out=zeros(10)", "write randint(low, high, size)"),
    ("grid=8 block=128 a=nothere out=zeros(10)", "there is no variable 'nothere'"),
    ("grid=8 block=128 a=rand(10 out=zeros(10)", "unbalanced '('"),
    ("grid=8 block=128 a=rand(10) out=zeros(10) a=ones(2)", "'a' is given twice"),
    ("grid=8 block=128 a=rand(10) out", "'out' is not name=value"),
    ("grid=8 block=128 a=rand(10) out=zeros(10) shared=-1", "shared must be a number >= 0"),
    ("grid=8 block=128 a=rand(10) out=zeros(10) max_iterations=0", "max_iterations must be a whole number >= 1"),
    ("grid=8 block=128 a=rand(10) out=zeros(10) max_iterations=2.5", "max_iterations must be a whole number >= 1"),
    ("grid=8 block=128 a=rand(10) out=zeros(10) time_limit=0", "time_limit must be seconds > 0, or None"),
    ("grid=8 block=128 a=1+ out=zeros(10)", "is not a value"),
])
def test_each_bad_argument_is_named_with_its_fix(line, message):
    with pytest.raises((MagicError, InputError)) as err:
        parse_launch(line, ["a", "out"], {})
    assert message in str(err.value)


def test_bad_cells():
    with pytest.raises(MagicError, match="not valid Python"):
        find_kernel("def f(:\n  pass", {})
    with pytest.raises(MagicError, match="defines no function"):
        find_kernel("x = 1", {})
    with pytest.raises(MagicError, match="kernel=g: the cell defines twice, not g"):
        find_kernel(KERNEL, {}, "g")
    with pytest.raises(MagicError, match="--fast is not a flag"):
        simt("--fast grid=1 block=32", KERNEL, {})


def test_the_cuda_jit_function_is_the_kernel_not_its_device_helper():
    cell = ("@cuda.jit(device=True)\ndef helper(v):\n    return v + 1\n\n"
            "@cuda.jit\ndef k(a):\n    a[cuda.grid(1)] = helper(1)\n\n"
            "def unrelated():\n    pass\n")
    assert find_kernel(cell, {}).py_func.__name__ == "k"


# --- inputs --------------------------------------------------------------------------------
def test_recipes_make_arrays_of_their_dtype_and_size():
    rng = np.random.default_rng(0)
    assert parse_value("randint(0, 4, 100)").make(rng).dtype == np.int32
    a = parse_value("arange((4, 8), dtype='float64')").make(rng)
    assert a.shape == (4, 8) and a[1, 0] == 8 and a.dtype == np.float64
    assert (parse_value("full(5, 7)").make(rng) == 7).all()
    assert parse_value("(8, 8)") == (8, 8) and parse_value("2.5") == 2.5


def test_resize_remakes_arrays_and_length_arguments():
    rng = np.random.default_rng(0)
    given = np.linspace(1, 2, 100).astype(np.float32)
    values, recipes = resize([np.zeros(100, np.float32), given, np.zeros((3, 3)), 100, 5],
                             [Recipe("zeros", (100,), "float32"), None, None, None, None], 100, 300, rng)
    assert values[0].shape == (300,) and recipes[0].size == (300,)
    assert values[1].shape == (300,) and 1 <= values[1].min() and values[1].max() <= 2
    assert values[2].shape == (3, 3) and values[3] == 300 and values[4] == 5


# --- the magic in IPython ------------------------------------------------------------------
def test_magic_runs_the_cell_as_a_playground(ip):
    result = ip.run_cell("%%simt grid=8 block=128 a=rand(1000) out=zeros(1000)\n" + KERNEL)
    assert result.success, result.error_in_exec
    pg = result.result
    assert isinstance(pg, Playground)
    assert np.array_equal(pg.outputs["out"], 2 * pg.inputs[0])
    pg.draw_all()
    assert "out[i] = 2 * a[i]" in pg.tabs.children[5].children[0].value, "the source tab shows the cell's lines"
    pg.controls["size"].value = 2000
    assert pg.run.array("a").shape == (2000,), "recipes are remade at the new size"


def test_as_names_the_playground_so_its_outputs_are_at_hand(ip):
    """`as=pg` binds the playground in the notebook: the output arrays are pg.outputs[...],
    without `_` or `Out[n]`."""
    result = ip.run_cell("%%simt grid=8 block=128 a=rand(1000) out=zeros(1000) as=doubled\n" + KERNEL)
    assert result.success, result.error_in_exec
    pg = ip.user_ns["doubled"]
    assert pg is result.result
    out = ip.run_cell("doubled.outputs['out'] - 2 * doubled.inputs[0]").result
    assert out.shape == (1000,) and not out.any()
    bad = ip.run_cell("%%simt grid=8 block=128 a=rand(1000) out=zeros(1000) as=class\n" + KERNEL)
    assert not bad.success and "as=class" in str(bad.error_in_exec)


def test_2d_inputs_hide_the_input_size_control(ip):
    """A launch on 2-D arrays has no input size to change: no dropdown with one empty choice."""
    result = ip.run_cell("%%simt grid=(4, 4) block=(8, 8) a=rand((32, 32)) out=zeros((32, 32))\n"
                         "@cuda.jit\ndef copy2d(a, out):\n    c, r = cuda.grid(2)\n    out[r, c] = a[r, c]\n")
    assert result.success, result.error_in_exec
    size = result.result.controls["size"]
    assert size.layout.display == "none"
    assert result.result.controls["block"].layout.display != "none"
    one_d = ip.run_cell("%%simt grid=8 block=128 a=rand(1000) out=zeros(1000)\n" + KERNEL).result
    assert one_d.controls["size"].layout.display != "none" and ("1000", 1000) in one_d.controls["size"].options


def test_a_runaway_cell_says_how_to_raise_the_limit_on_the_simt_line(ip):
    cell = ("%%simt grid=1 block=32 flag=zeros(1) out=zeros(32) max_iterations=300\n"
            "@cuda.jit\n"
            "def waits(flag, out):\n"
            "    i = cuda.grid(1)\n"
            "    while flag[0] == 0:\n"
            "        out[i] += 1\n")
    result = ip.run_cell(cell)
    assert result.success, result.error_in_exec
    err = result.result.error
    assert err.limit == "max_iterations" and err.count == 300
    assert err.line == 4 and err.source.strip() == "while flag[0] == 0:"   # the cell's 4th line
    assert err.fix.endswith("add max_iterations=1_200 to the %%simt line")


def test_magic_reports_a_bad_argument_as_a_usage_error(ip, capsys):
    result = ip.run_cell("%%simt grid=8 block=128 a=rand(1000)\n" + KERNEL)
    assert not result.success
    assert "no value for the kernel parameter 'out'" in str(result.error_in_exec)
    assert type(result.error_in_exec).__name__ == "UsageError"


def test_import_in_a_shell_registers_the_magic(ip):
    assert "simt" in ip.magics_manager.magics["cell"]


# --- CUDA C ---------------------------------------------------------------------------------
CUDA_C = """extern "C" __global__ void twice(const float* __restrict__ a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * a[i];
}"""


def test_cuda_c_signature_is_read_from_the_cell():
    assert kernel_signature(CUDA_C) == ("twice", [("a", "float*"), ("out", "float*"), ("n", "int")])
    with pytest.raises(MagicError, match='extern "C" __global__'):
        kernel_signature("__global__ void k(float* a) {}")


def test_cuda_c_line_errors_are_checked_before_compiling():
    with pytest.raises(MagicError, match="no value for the kernel parameter 'n'"):
        run_cuda_c("--cuda grid=8 block=128 a=rand(1000) out=zeros(1000)", CUDA_C, {}, gpu=False)
