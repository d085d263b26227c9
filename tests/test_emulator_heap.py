"""simtlab.emulator keeps freed memory in the heap (heap.py): arrays allocated again after
being freed reuse pages instead of faulting in fresh ones; SIMTLAB_KEEP_HEAP=0 turns it off."""

import os
import subprocess
import sys

import pytest

from simtlab.emulator import heap

FAULTS = """
import resource
import numpy as np
import simtlab.emulator
def rounds(n):
    for _ in range(n):
        arrays = [np.ones(3 << 17) for _ in range(5)]     # 5 x 3 MiB, every page touched
        del arrays
rounds(1)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds(20)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before,
      simtlab.emulator.heap.keep_freed_memory())
"""


def _faults(keep: str):
    env = dict(os.environ, SIMTLAB_KEEP_HEAP=keep)
    out = subprocess.run([sys.executable, "-c", FAULTS], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[0]), out[1] == "True"


@pytest.mark.skipif(not heap.keep_freed_memory(), reason="needs glibc's malloc (Linux)")
def test_freed_arrays_reuse_pages_unless_turned_off():
    kept, applied = _faults("1")
    default, off = _faults("0")
    assert applied and not off
    pages = 20 * 5 * (3 << 20) // 4096            # what fresh pages every round would cost
    assert kept < pages // 20 and default > pages // 2
