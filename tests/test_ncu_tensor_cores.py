"""The Nsight Compute launcher of chapter 9 (benchmarks/ncu_tensor_cores.py) and the device script
that drives it: every kernel the script names is one the launcher can run, so the profile does not
fail on a renamed version after the device time is spent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from script_support import load_script

ROOT = Path(__file__).resolve().parent.parent


def _launcher():
    return load_script("benchmarks/ncu_tensor_cores.py")


def test_every_kernel_the_device_script_profiles_resolves():
    script = (ROOT / "tools" / "device_tensor_cores_ncu.sh").read_text()
    names = re.search(r'^KERNELS="([^"]+)"', script, re.M).group(1).split()
    launcher = _launcher()
    kernels = [n for n in names if not n.startswith("cublas:")]
    assert kernels and all(launcher.version_of(n).kernel == n for n in kernels)
    # the source-level profile's launcher line names its kernels itself
    for line in re.findall(r"benchmarks/ncu_tensor_cores\.py ([^>\n\\]+)", script):
        for word in line.split():
            if word.startswith("tc_"):
                assert launcher.version_of(word).kernel == word
    references = [n.split(":")[1:] for n in names if n.startswith("cublas:")]
    assert references and all(r[0] in {"fp32", "tf32", "fp16", "bf16"} and r[1:] in ([], ["bt"]) for r in references)


def test_an_unknown_kernel_is_refused_by_name():
    with pytest.raises(KeyError, match="no tensor-core version runs 'tc_nothing'"):
        _launcher().version_of("tc_nothing")
