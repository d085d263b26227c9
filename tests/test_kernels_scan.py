"""Chapter 4 kernels on the CPU: references, every version in the emulator, races, banks, work."""

from __future__ import annotations

import math

import numpy as np
import pytest

import simtlab
from simtlab.analysis.complexity import work_and_steps
from simtlab.kernels import scan as S

rng = np.random.default_rng(44)
BLOCK = 32                                   # small blocks keep the emulator quick
VERSIONS = [*S.BLOCK_SCANS, "lookback"]


def per_block(version: str, block: int = BLOCK) -> int:
    if version == "lookback":
        return S.ITEMS * block
    return S.BLOCK_SCANS[version][1](block)


def steps_input(n: int) -> np.ndarray:
    """Values from {-2, -1, 1, 2}: never zero, every partial sum exact in float32."""
    return rng.choice(np.array([-2, -1, 1, 2], np.float32), n)


# ------------------------------------------------------------------------------------------
# CPU references
# ------------------------------------------------------------------------------------------
ACCUMULATE = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum,
              "and": np.logical_and, "or": np.logical_or}


@pytest.mark.parametrize("op", list(S.OPERATORS))
def test_serial_scans_match_numpy(op):
    if op in ("and", "or"):
        x = rng.random(50) < (0.9 if op == "and" else 0.1)
    elif op == "mul":
        x = rng.choice(np.array([0.5, 1.0, 2.0]), 50)
    else:
        x = rng.integers(-100, 100, 50).astype(np.int32)
    inc = S.inclusive_scan_cpu(x, op)
    want = ACCUMULATE[op].accumulate(x)
    np.testing.assert_array_equal(inc, want)
    exc = S.exclusive_scan_cpu(x, op)
    assert exc[0] == S.identity(op, inc.dtype)
    np.testing.assert_array_equal(exc[1:], want[:-1])


def test_identities():
    assert S.identity("add", np.float32) == 0 and S.identity("mul", np.int32) == 1
    assert S.identity("min", np.uint8) == 0xFF                 # the seed's table: min on unsigned chars
    assert S.identity("max", np.uint8) == 0
    assert S.identity("min", np.float32) == np.inf and S.identity("max", np.float32) == -np.inf
    assert S.identity("max", np.int32) == np.iinfo(np.int32).min
    assert S.identity("and") is True and S.identity("or") is False
    for op in ("add", "mul", "min", "max"):                   # op(identity, a) == a
        a = np.float32(-3.5)
        assert S.OPERATORS[op](S.identity(op, np.float32), a) == a
    with pytest.raises(ValueError, match="unknown operator 'xor'"):
        S.identity("xor")


def test_exclusive_scan_of_empty_and_one():
    assert S.exclusive_scan_cpu(np.zeros(0, np.float32)).size == 0
    np.testing.assert_array_equal(S.exclusive_scan_cpu(np.array([7.0], np.float32), "max"), [-np.inf])


# ------------------------------------------------------------------------------------------
# Every version in the emulator, against the reference
# ------------------------------------------------------------------------------------------
def sizes(version):
    p = per_block(version)
    return [1, p - 1, p, p + 1, 3 * p + 7, 1000]


@pytest.mark.parametrize("version", VERSIONS)
def test_versions_match_reference(version):
    for n in sizes(version):
        x = steps_input(n)
        out, runs = S.scan_emulated(x, version, BLOCK)
        np.testing.assert_array_equal(out, S.scan_reference(x), err_msg=f"{version}, n = {n}")
        assert all(not r.races for r in runs), (version, n, runs[0].races[:2])


@pytest.mark.parametrize("version", ["Hillis-Steele", "warp shuffle"])
def test_three_levels_of_block_sums(version):
    # more than per_block^2 elements: the block sums themselves need a scan of block sums
    n = per_block(version) ** 2 + 5
    x = steps_input(n)
    out, runs = S.scan_emulated(x, version, BLOCK, trace=False)
    np.testing.assert_array_equal(out, S.scan_reference(x))
    assert len(runs) == 5                    # scan, scan, scan, add, add


def test_float_values_within_float32_tolerance():
    x = rng.random(777, dtype=np.float32) - 0.25
    for version in VERSIONS:
        out, _ = S.scan_emulated(x, version, 64, trace=False)
        np.testing.assert_allclose(out, S.scan_reference(x), rtol=1e-5, atol=1e-4, err_msg=version)


def test_lookback_many_tiles_random_order():
    # 70 tiles: the look-back window of 32 tiles moves back more than once
    n = 70 * per_block("lookback") - 3
    x = steps_input(n)
    for seed in (1, 2):
        out, runs = S.scan_emulated(x, "lookback", BLOCK, order="random", seed=seed)
        np.testing.assert_array_equal(out, S.scan_reference(x))
        assert not runs[0].races


@pytest.mark.parametrize("version", VERSIONS)
def test_versions_random_order(version):
    x = steps_input(2 * per_block(version) + 3)
    out, runs = S.scan_emulated(x, version, BLOCK, order="random", seed=5)
    np.testing.assert_array_equal(out, S.scan_reference(x))
    assert not any(r.races for r in runs)


def test_bad_launches_have_clear_errors():
    with pytest.raises(ValueError, match="power of two"):
        S.scan_emulated(np.ones(10, np.float32), "Blelloch", 96)
    with pytest.raises(ValueError, match="multiple of 32"):
        S.scan_emulated(np.ones(10, np.float32), "warp shuffle", 40)
    with pytest.raises(ValueError, match="unknown version 'bogus'; the versions are v1 Hillis-Steele"):
        S.scan_emulated(np.ones(10, np.float32), "bogus")


# ------------------------------------------------------------------------------------------
# What the chapter measures
# ------------------------------------------------------------------------------------------
def block_run(kernel, n, threads, x=None):
    x = steps_input(n) if x is None else x
    out = np.zeros(n, np.float32)
    sums = np.zeros(1, np.float32)
    run = simtlab.emulate(kernel, 1, threads, x, out, sums, shared_bytes=S.shared_bytes(kernel, threads))
    return run, x, out


def test_racy_in_place_scan_is_wrong_and_reports_races():
    run, x, out = block_run(S.scan_in_place_racy, 64, 64)
    assert not np.array_equal(out, S.scan_reference(x))
    assert run.races and run.races[0].array == "temp"
    assert set(run.races[0].kinds) == {"read", "write"}


@pytest.mark.parametrize("n", [16, 64, 256])
def test_work_and_steps(n):
    hs, _, _ = block_run(S.scan_v1_hillis_steele, n, n)
    bl, _, _ = block_run(S.scan_v2_blelloch, n, n // 2)
    levels = int(math.log2(n))
    assert tuple(work_and_steps(hs, "temp")) == (S.hillis_steele_work(n), levels)
    # Blelloch: n - 1 up-sweep writes, the root cleared, 2 writes per down-sweep node
    assert tuple(work_and_steps(bl, "temp")) == (3 * (n - 1) + 1, 2 * levels)
    assert S.steps("Hillis-Steele", n) == levels and S.steps("Blelloch", n) == 2 * levels
    assert S.blelloch_work(n) == 2 * (n - 1)


def test_padding_removes_most_bank_conflicts():
    x = steps_input(512)
    plain, _, _ = block_run(S.scan_v2_blelloch, 512, 256, x)
    padded, _, _ = block_run(S.scan_v3_blelloch_padded, 512, 256, x)
    wp = plain.metrics["shared_wavefronts_per_request"]
    wq = padded.metrics["shared_wavefronts_per_request"]
    assert wp > 2.5 and wq < 1.1, (wp, wq)
    assert padded.metrics["shared_bank_conflicts"] < plain.metrics["shared_bank_conflicts"] / 10
    shuffle, _, _ = block_run(S.scan_v4_warp_shuffle, 256, 256)
    assert shuffle.metrics["shared_bank_conflicts"] == 0


def test_napkin_math():
    n = 2**28
    assert S.scan_bytes(n) == 2 * 4 * n
    assert S.three_kernel_bytes(n, 4096) > 2 * S.scan_bytes(n) - 1
    assert S.scan_flops(1) == 0 and S.scan_flops(10) == 9
    assert S.hillis_steele_work(8) == 7 + 6 + 4


def test_cu_file_has_every_version():
    from simtlab.source import cu_function_source

    for name in ["scan_in_place_racy", "scan_v1_hillis_steele", "scan_v2_blelloch",
                 "scan_v3_blelloch_padded", "scan_v4_warp_shuffle", "scan_v5_tile",
                 "add_block_prefix", "scan_v6_lookback"]:
        assert getattr(S, name) is not None
        src = cu_function_source("scan.cu", name)
        assert 'extern "C" __global__' in src and "// ----" in src, name
