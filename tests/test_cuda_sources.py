"""Every CUDA C file in kernels/ compiles, here, without a GPU (nvcc, else NVRTC through CuPy)."""

from __future__ import annotations

import pytest

from simtlab.cuda_source import compile_cu, cu_files, cu_path, find_nvcc
from simtlab.source import cu_function_source

CU_FILES = cu_files()


def _compiler_available() -> bool:
    if find_nvcc():
        return True
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("path", CU_FILES, ids=[p.name for p in CU_FILES])
def test_cu_file_compiles_without_warnings(path):
    if not _compiler_available():
        pytest.skip("no CUDA C compiler here (nvcc from the CUDA toolkit, or CuPy for NVRTC): "
                    "the CUDA C twins are compiled where one is installed, and on the GPU")
    result = compile_cu(path)
    print(f"{path.name}: compiled with {result.tool}")   # the test says what it used
    assert result.ok, str(result)
    assert "warning" not in result.log.lower(), str(result)


# CUDA C with no numba counterpart: chapter 9's shared-memory side issues cp.async, which numba
# has no way to write (kernels/tensor_cores.py explains the kernels of both files)
CUDA_C_ONLY = {"tensor_cores_smem": "tensor_cores"}


def test_every_kernel_topic_with_cuda_c_has_a_python_twin():
    for path in CU_FILES:
        twin = CUDA_C_ONLY.get(path.stem, path.stem)
        assert (path.with_name(twin + ".py")).exists(), f"{path.name} has no numba twin {twin}.py"
    assert set(CUDA_C_ONLY) <= {p.stem for p in CU_FILES}


def test_cu_path_names_the_known_topics():
    with pytest.raises(FileNotFoundError, match="CUDA C topics"):
        cu_path("no_such_topic")


def test_broken_source_fails_with_the_compilers_message(tmp_path):
    if not _compiler_available():
        pytest.skip("no CUDA C compiler here (nvcc from the CUDA toolkit, or CuPy for NVRTC)")
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void k(float *x) { x[threadIdx.x] = undefined_name; }\n')
    result = compile_cu(bad)
    assert not result.ok
    assert "undefined_name" in result.log


def test_cu_function_source_extracts_one_kernel_with_its_comment(tmp_path):
    cu = tmp_path / "demo.cu"
    cu.write_text(
        '#define B 4\n'
        '// ---- v1: one thread per element\n'
        'extern "C" __global__ void first(float *x) {\n  if (threadIdx.x < B) { x[threadIdx.x] = 1; }\n}\n\n'
        '// ---- v2: two per thread\n'
        'extern "C" __global__ void second(float *x) { x[0] = 2; }\n')
    text = cu_function_source(str(cu), "first")
    assert text.startswith("// ---- v1: one thread per element\n")
    assert "x[threadIdx.x] = 1;" in text and text.rstrip().endswith("}")
    assert "second" not in text
    with pytest.raises(ValueError, match="no function named"):
        cu_function_source(str(cu), "third")
