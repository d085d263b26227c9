"""Chapter 9 on the CPU: kernels/tensor_cores.cu compiles (NVRTC, no CUDA header needed) for
compute_90 and, with ptxas, for sm_90a without spills; its exported kernels are the table's; the
NumPy reference, the 16-bit encodings and the error bounds are right."""

from __future__ import annotations

import re

import numpy as np
import pytest

from simtlab.kernels import tensor_cores as T


def _nvrtc_or_skip():
    from simtlab import cuda_c_kernels as CC

    try:
        CC.nvrtc_version()
    except CC.CompilerMissing as e:
        pytest.skip(str(e))
    return CC


# --- the CUDA C file ------------------------------------------------------------------------
def test_compiles_to_ptx_for_compute_90_with_every_kernel_of_the_table():
    CC = _nvrtc_or_skip()
    ptx = CC.compile_ptx(T.CU_PATH.read_text(), str(T.CU_PATH), CC.PTX_OPTIONS)   # compute_90
    entries = set(re.findall(r"\.visible \.entry (\w+)\(", ptx))
    assert entries == {v.kernel for v in T.VERSIONS + T.SWEEP} | set(T.HELPER_KERNELS)
    assert set(T.exported_kernels()) == entries
    for v in T.VERSIONS + T.SWEEP:                                   # __launch_bounds__ = the launcher's threads
        body = ptx[ptx.index(f".entry {v.kernel}("):]
        assert re.search(r"\.maxntid (\d+), 1, 1", body).group(1) == str(v.threads), v.kernel
    # compute_90 has no wgmma: v7's and v8's bodies are compiled only for sm_90a
    assert "wgmma.mma_async" not in ptx and "cp.async.bulk.tensor" not in ptx and "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx


def _entry(ptx: str, name: str) -> str:
    start = ptx.index(f".entry {name}(")
    nxt = ptx.find(".entry ", start + 10)
    return ptx[start:nxt if nxt > 0 else len(ptx)]


def test_each_version_uses_the_instructions_it_claims():
    CC = _nvrtc_or_skip()
    ptx = CC.compile_ptx(T.CU_PATH.read_text(), str(T.CU_PATH), ("--gpu-architecture=sm_90a", "-std=c++17"))
    for v in T.VERSIONS + T.SWEEP:
        body = _entry(ptx, v.kernel)
        label = v.label.split()[0]
        want = {"v1": ["wmma.mma"], "v2": ["wmma.mma"], "v3": ["wmma.mma", "bar.sync"],
                "v4": ["mma.sync", "ldmatrix"], "v5": ["mma.sync", "ldmatrix"],
                "v6": ["mma.sync", "ldmatrix", "cp.async.cg", "cp.async.wait_group"],
                "v6t": ["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "ldmatrix", "cp.async.cg", "cp.async.wait_group"],
                "v7": ["wgmma.mma_async", "wgmma.wait_group", "cp.async.cg", "fence.proxy.async"],
                "v8": ["wgmma.mma_async", "wgmma.wait_group", "cp.async.bulk.tensor.2d", "mbarrier.arrive.expect_tx",
                       "mbarrier.try_wait.parity", "trap"],
                "v6w": ["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "ldmatrix", "cp.async.bulk.tensor.2d",
                        "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity"]}[label]
        for instruction in want:
            assert instruction in body, f"{v.kernel} has no {instruction}"
        if label in ("v8", "v6w"):                                   # the TMA does every copy
            # (stream-K's last block reads the other blocks' partial sums from L2: its only global loads)
            loads = body.count("ld.global") - (body.count("ld.global.cg.v4.f32") if v.stream_k else 0)
            assert "cp.async.cg" not in body and loads == 0, v.kernel
        if label == "v6w":          # one barrier, after the mbarriers' init (a cluster's: one at each end)
            cluster = "clusters of 2 share" in v.note
            # stream-K: two more in the fix-up, around the count of blocks done with a tile (one atomic)
            barriers = 0 if cluster else 3 if v.stream_k else 1
            assert body.count("bar.sync") + body.count("barrier.sync") == barriers, v.kernel
            assert ("atom.global.add" in body) == v.stream_k, v.kernel
            # a cluster's blocks sync at both ends; with a producer only at the start (its issuing thread then waits
            # for every slot's last release instead: nothing warp-wide after the consumers' loop)
            producer = "a producer warpgroup" in v.note
            assert body.count("barrier.cluster.wait") == ((1 if producer else 2) if cluster else 0), v.kernel
            last = "last warp refills" in v.note                     # slots released by a count, not an mbarrier
            assert ("atom.shared.add" in body) == last and ("mbarrier.arrive.shared" in body) != last, v.kernel
            # a cluster: halves of the shared tile multicast (B^T's, or A's when BM > BN), plain remote arrives
            assert ("multicast::cluster" in body) == cluster and "mbarrier.arrive.release.cluster" not in body, v.kernel
            if cluster:
                shares_a = v.tile[0] > v.tile[1]
                assert ("share A's tile" if shares_a else "share B^T's tile") in v.note, v.kernel
            # a producer warpgroup hands its registers to the consumers: 40 for it, 232 for each consumer thread
            producer = "a producer warpgroup" in v.note
            assert ("setmaxnreg.dec.sync.aligned.u32 40" in body) == producer, v.kernel
            assert ("setmaxnreg.inc.sync.aligned.u32 232" in body) == producer, v.kernel
        if label in ("v7", "v8"):
            k = {"tf32": "m64n256k8.f32.tf32.tf32", "fp16": "m64n256k16.f32.f16.f16", "bf16": "m64n256k16.f32.bf16.bf16"}
            assert k[v.precision] in body, v.kernel
        if label in ("v4", "v5"):
            assert "cp.async" not in body, v.kernel
        if label == "v4" or label == "v5" or label == "v6":
            assert ("ldmatrix.sync.aligned.m8n8.x4.trans" in body) == (v.precision != "tf32"), v.kernel
    for c in T.V6T_CONFIGS:                                          # B^T in shared memory: no 32-bit fragment loads
        body = _entry(ptx, c.kernel)
        assert "ld.shared.b32" not in body and "ld.shared.u32" not in body, c.kernel
        assert ("cp.async.ca.shared.global [%r" in body) == (c.b_copy == "cp.async 4 B"), c.kernel
        assert ("st.shared.v4" in body and "ld.global.nc.v4.f32" in body) == (c.b_copy == "registers"), c.kernel
        assert ("cvt.rna.tf32.f32" in body) == c.round_inputs, c.kernel


@pytest.mark.slow
def test_sm90a_cubin_has_no_spills_and_ptxas_says_nothing_else():
    _nvrtc_or_skip()
    from simtlab.gpubench import tensor_cores as bench

    built = bench.compile_cubin()
    usage = bench.resource_usage(built["log"])
    assert set(usage) == {v.kernel for v in T.VERSIONS + T.SWEEP} | set(T.HELPER_KERNELS)
    for kernel, u in usage.items():
        assert u["spill_stores"] == 0 and u["spill_loads"] == 0, (kernel, u)
        assert u["registers"] <= 255, (kernel, u)
    assert "warning" not in built["log"].lower(), built["log"]


def test_numba_section_compiles_alone_and_exports_the_device_functions():
    CC = _nvrtc_or_skip()
    ptx = CC.compile_ptx(T.numba_device_source(), "tc_mma.cu", ("--gpu-architecture=compute_90", "-std=c++17", "-rdc=true"))
    for name in ("tc_mma_f16_m16n8k16", "tc_mma_bf16_m16n8k16"):
        assert re.search(rf"\.visible \.func\s+\(\.param \.b32 \w+\) {name}\(", ptx), name


# --- launch configurations --------------------------------------------------------------------
def test_launch_config_refuses_sizes_off_the_tile_and_says_which():
    v = T.find("tc_v6_pipeline_f16")
    with pytest.raises(ValueError, match=r"K = 100 is not a multiple of 32"):
        T.launch_config(v, 128, 256, 100)
    grid, block, smem = T.launch_config(v, 4096, 4096, 4096)
    assert grid == (4096 // 256, 4096 // 128) and block == (256,) and smem == 4 * (128 * 32 + 32 * 256) * 2
    assert T.launch_config(T.find("tc_v1_wmma_tf32"), 48, 80, 24)[0] == (2, 3)   # 5 column tiles over 4 warps
    with pytest.raises(ValueError, match="multiple of 64"):
        T.numba_launch_config(100, 128, 32)
    # v6w: a 1-D grid of tile ids (grouped in the kernel); the persistent one, one block per SM
    tiles = (4096 // 256) * (4096 // 128)
    assert T.launch_config(T.find("tc_v6w_tf32_256x128_s4"), 4096, 4096, 4096)[0] == (tiles,)
    assert T.launch_config(T.find("tc_v6w_tf32_128x256_s4_persistent"), 4096, 4096, 4096, sms=132)[0] == (132,)
    assert T.launch_config(T.find("tc_v6w_tf32_128x256_s4_persistent"), 256, 256, 64, sms=132)[0] == (2,)
    # stream-K: every SM, even with fewer tiles, while each block gets a k-tile; its buffers
    streamk = T.find("tc_v6w_tf32_128x256_s4_streamk")
    assert T.launch_config(streamk, 4096, 4096, 4096, sms=132)[0] == (132,)
    assert T.launch_config(streamk, 256, 256, 4096, sms=132)[0] == (132,)     # 2 tiles of 128 k-tiles
    assert T.launch_config(streamk, 128, 256, 64, sms=132)[0] == (2,)         # 1 tile of 2 k-tiles
    assert T.stream_k_buffers(streamk, 4096, 4096, 132) == (2 * 132 * 128 * 256, 512)


def test_dynamic_shared_memory_fits_an_h100_block():
    limit = 227 * 1024          # the H100's opt-in maximum per block (cudaFuncSetAttribute)
    assert all(v.dynamic_smem <= limit for v in T.VERSIONS + T.SWEEP), \
        [(v.kernel, v.dynamic_smem) for v in T.VERSIONS + T.SWEEP]
    # MINB = 2 promises two blocks an SM: their shared memory must fit the SM's 228 KB together
    for c in T.V6_CONFIGS + T.V6T_CONFIGS:
        assert c.min_blocks * (c.smem + 1024) <= 228 * 1024, c     # 1 KB per block is the driver's own


# --- references and encodings -------------------------------------------------------------------
def test_fp16_encoding_is_numpy_float16():
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(T.decode(T.encode(x, "fp16"), "fp16"), x.astype(np.float16).astype(np.float64))


def test_bf16_rounds_to_the_nearest_bf16_ties_to_even():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(20000).astype(np.float32),
                        # exact ties: the dropped 16 bits are 0x8000
                        ((rng.integers(0x3F80, 0x4000, 200).astype(np.uint32) << 16) | 0x8000).view(np.float32)])
    got = T.decode(T.encode(x, "bf16"), "bf16")
    bits = x.view(np.uint32)
    down = (bits & 0xFFFF0000).view(np.float32).astype(np.float64)
    up = ((bits & 0xFFFF0000) + 0x10000).view(np.float32).astype(np.float64)     # |x| grows: the next bf16 out
    xd = x.astype(np.float64)
    nearer = np.where(np.abs(xd - down) < np.abs(up - xd), down, up)
    tie = np.abs(xd - down) == np.abs(up - xd)
    even = np.where(((bits >> 16) & 1) == 0, down, up)
    np.testing.assert_array_equal(got, np.where(tie, even, nearer))
    assert tie.sum() >= 200


def test_tf32_keeps_ten_mantissa_bits():
    x = np.random.default_rng(2).standard_normal(10000).astype(np.float32)
    for mode, bound in (("truncate", 2.0 ** -10), ("nearest", 2.0 ** -11)):
        r = T.round_to(x, "tf32", tf32=mode)
        assert not (r.astype(np.float32).view(np.uint32) & 0x1FFF).any()
        assert (np.abs(r - x) <= bound * np.abs(x)).all()
    assert (np.abs(T.round_to(x, "tf32", tf32="truncate")) <= np.abs(x)).all()


def test_reference_is_float64_of_the_decoded_inputs():
    a32, b32, a, b = T.inputs(5, 7, 9, "bf16", seed=3)
    want = (T.round_to(a32, "bf16") @ T.round_to(b32, "bf16"))
    np.testing.assert_array_equal(T.gemm_reference(a, b, "bf16"), want)


def _tensor_core_model(a, b, precision, *, skip_tile=None, bk=32):
    """A pessimistic tensor core on the CPU: TF32 inputs truncated, products exact, the running
    sum in float32 truncated toward zero after every add, optionally one k-tile left out."""
    a = T.round_to(a, precision, tf32="truncate") if precision == "tf32" else T.decode(a, precision)
    b = T.round_to(b, precision, tf32="truncate") if precision == "tf32" else T.decode(b, precision)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float64)
    for k in range(a.shape[1]):
        if skip_tile is not None and k // bk == skip_tile:
            continue
        exact = acc + np.outer(a[:, k], b[k])
        rounded = exact.astype(np.float32).astype(np.float64)
        too_far = np.abs(rounded) > np.abs(exact)                  # step back one ulp: truncation
        rounded[too_far] = np.nextafter(rounded[too_far].astype(np.float32), np.float32(0)).astype(np.float64)
        acc = rounded
    return acc


@pytest.mark.parametrize("precision", ["tf32", "fp16", "bf16"])
def test_bound_holds_for_a_truncating_accumulator_and_catches_a_skipped_tile(precision):
    k = 1024
    a32, b32, a, b = T.inputs(8, 8, k, precision, seed=4, positive=True)
    want = T.gemm_reference(a, b, precision)
    assert T.relative_error(_tensor_core_model(a, b, precision), want, a, b, precision) <= T.tolerance(precision, k)
    assert T.relative_error(_tensor_core_model(a, b, precision, skip_tile=5), want, a, b, precision) \
        > T.tolerance(precision, k)
    # against the FP32 sources, the input rounding is in the bound too
    src = a32.astype(np.float64) @ b32.astype(np.float64)
    scale = np.abs(a32.astype(np.float64)) @ np.abs(b32.astype(np.float64))
    err = np.max(np.abs(_tensor_core_model(a, b, precision) - src) / scale)
    assert err <= T.source_tolerance(precision, k)


def test_tolerance_grows_with_k_and_orders_the_precisions():
    assert T.tolerance("tf32", 4096) > T.tolerance("fp16", 4096) == T.tolerance("bf16", 4096) > T.tolerance("fp16", 64)
    assert T.source_tolerance("bf16", 64) > T.source_tolerance("fp16", 64)
    with pytest.raises(ValueError, match="precision"):
        T.tolerance("fp8", 16)


def test_a_16_bit_output_widens_the_bound_by_its_rounding():
    # torch.matmul's FP16 / BF16 C is the FP32 result rounded to 16 bits: on a sum of positive
    # products (|c| = sum |a||b|) that costs up to half an ulp relative, which the plain bound lacks
    k = 96
    for precision in ("fp16", "bf16"):
        _, _, a, b = T.inputs(16, 16, k, precision, seed=5, positive=True)
        want = T.gemm_reference(a, b, precision)
        stored = T.round_to(want.astype(np.float32), precision)        # the 16-bit C, exact sum rounded
        err = T.relative_error(stored, want, a, b, precision)
        assert err > T.tolerance(precision, k)
        assert err <= T.tolerance(precision, k, output=precision)
    assert T.tolerance("bf16", k, output="bf16") - T.tolerance("bf16", k) == 2.0 ** -8


def test_check_shapes_are_made_legal_for_every_version():
    from simtlab.gpubench import tensor_cores as bench

    v7 = T.find("tc_v7_wgmma_f16")
    assert T.legal_shape(v7, (384, 768, 96)) == (384, 768, 128)      # K = 96 is one and a half of v7's BK
    for v in T.VERSIONS + T.SWEEP:
        for shape in bench.CHECK_SHAPES:
            legal = T.legal_shape(v, shape)
            T.launch_config(v, *legal)                                  # raises if not
            assert all(0 <= big - small < mult for big, small, mult in zip(legal, shape, v.multiple))


# --- the v6 shared layout, lane by lane (the CPU model of MmaPipeline's addressing) ------------
def _stage(cfg, operand):
    """One stage's A or B tile as MmaPipeline's cp.async copies lay it out, filled with element ids
    (row * width + column), plus the tile of ids itself."""
    ebytes = T.INPUT_BYTES[cfg.precision]
    rows, cols = (cfg.bm, cfg.bk) if operand == "a" else (cfg.bk, cfg.bn)
    ids = np.arange(rows * cols, dtype=np.uint32 if ebytes == 4 else np.uint16).reshape(rows, cols)
    epc = 16 // ebytes
    smem = np.zeros(rows * cols * ebytes, np.uint8)
    written = np.zeros(rows * cols * ebytes // 16, int)
    for thread in range(cfg.threads):
        for row, chunk, off in T.copy_offsets(cfg, thread)[operand]:
            smem[off:off + 16] = ids[row, chunk * epc:(chunk + 1) * epc].view(np.uint8)
            written[off // 16] += 1
    assert (written == 1).all(), (cfg.kernel, operand, "a chunk written twice or never")
    return smem, ids


def _ldmatrix(smem, addrs, trans):
    """ldmatrix.x4 (.trans) as the PTX ISA defines it: lanes 8q..8q+7 address matrix q's rows; lane l
    gets row l/4, elements 2(l%4), 2(l%4)+1 (.trans: column l/4, rows 2(l%4), 2(l%4)+1), 16-bit each."""
    regs = np.zeros((32, 4, 2), np.uint16)
    for q in range(4):
        mat = np.stack([smem[addrs[8 * q + r]:addrs[8 * q + r] + 16].view(np.uint16) for r in range(8)])
        for lane in range(32):
            g, t = lane // 4, lane % 4
            regs[lane, q] = mat[2 * t:2 * t + 2, g] if trans else mat[g, 2 * t:2 * t + 2]
    return regs


def _no_conflicts(addrs):
    """Each 8-lane phase of an ldmatrix reads 8 rows of 16 bytes: conflict-free when they sit in 8
    different 16-byte bank groups (address mod 128)."""
    return all(len({addrs[8 * q + r] % 128 // 16 for r in range(8)}) == 8 for q in range(4))


@pytest.mark.parametrize("cfg", T.V6_CONFIGS, ids=lambda c: c.kernel)
def test_v6_fragments_from_the_swizzled_stage_are_the_mma_layout(cfg):
    """Every lane's ldmatrix / ld.shared address of MmaPipeline (the XOR-and-add algebra) reads exactly
    the elements the mma.sync fragment layout assigns to that lane, with no bank conflicts."""
    sa, a_ids = _stage(cfg, "a")
    sb, b_ids = _stage(cfg, "b")
    tf32 = cfg.precision == "tf32"
    warps_n = cfg.bn // cfg.wn
    for warp in range(cfg.threads // 32):
        wm, wn = warp // warps_n, warp % warps_n
        offs = [T.fragment_offsets(cfg, lane, wm, wn) for lane in range(32)]
        for key in offs[0]:
            operand, kk, idx = key
            addrs = [o[key] for o in offs]
            if operand == "a":
                r0, k0 = wm * cfg.wm + idx * 16, kk * (8 if tf32 else 16)
                got = _ldmatrix(sa, addrs, trans=False)
                assert _no_conflicts(addrs), (cfg.kernel, key)
                for lane in range(32):
                    g, t = lane // 4, lane % 4
                    if tf32:        # one float per register: A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]
                        want = [a_ids[r0 + g, k0 + t], a_ids[r0 + g + 8, k0 + t], a_ids[r0 + g, k0 + t + 4],
                                a_ids[r0 + g + 8, k0 + t + 4]]
                        assert list(got[lane].view(np.uint32).ravel()) == want, (cfg.kernel, key, lane)
                    else:           # pairs: A[g][2t..], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..]
                        want = [a_ids[r0 + g, k0 + 2 * t:k0 + 2 * t + 2], a_ids[r0 + g + 8, k0 + 2 * t:k0 + 2 * t + 2],
                                a_ids[r0 + g, k0 + 2 * t + 8:k0 + 2 * t + 10], a_ids[r0 + g + 8, k0 + 2 * t + 8:k0 + 2 * t + 10]]
                        np.testing.assert_array_equal(got[lane], np.stack(want), err_msg=f"{cfg.kernel} {key} lane {lane}")
            elif not tf32:          # ldmatrix.trans: n8 tiles 2j, 2j+1: b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g]
                got = _ldmatrix(sb, addrs, trans=True)
                assert _no_conflicts(addrs), (cfg.kernel, key)
                k0 = kk * 16
                for lane in range(32):
                    g, t = lane // 4, lane % 4
                    want = []
                    for tile in (2 * idx, 2 * idx + 1):
                        n = wn * cfg.wn + tile * 8 + g
                        want += [b_ids[k0 + 2 * t:k0 + 2 * t + 2, n], b_ids[k0 + 2 * t + 8:k0 + 2 * t + 10, n]]
                    np.testing.assert_array_equal(got[lane], np.stack(want), err_msg=f"{cfg.kernel} {key} lane {lane}")
            else:                   # TF32 B, 32-bit loads: B[t][g] and, 4 rows on, B[t+4][g]
                second = 4 * (cfg.bn // 4) * 16
                words = sb.view(np.uint32)
                assert len({a % 128 // 4 for a in addrs}) == 32, (cfg.kernel, key, "bank conflict")
                for lane in range(32):
                    g, t = lane // 4, lane % 4
                    n, k = wn * cfg.wn + idx * 8 + g, kk * 8 + t
                    assert (words[addrs[lane] // 4], words[(addrs[lane] + second) // 4]) == (b_ids[k, n], b_ids[k + 4, n])


def test_v6_configs_are_the_cu_lines_and_each_says_why():
    text = T.CU_PATH.read_text()
    lines = [l for l in text.splitlines() if l.startswith("V6_KERNEL(")]
    assert len(lines) == len(T.V6_CONFIGS) >= 20
    v6t_lines = [l for l in text.splitlines() if l.startswith("V6T_KERNEL(")]
    assert len(v6t_lines) == len(T.V6T_CONFIGS) >= 5 and set(T.V6T_CONFIGS) <= set(T.SWEEP_CONFIGS)
    assert {c.b_copy for c in T.V6T_CONFIGS} == {"cp.async 4 B", "registers", "B^T given"}
    assert [c.version.b_transposed for c in T.V6T_CONFIGS] == [c.b_copy == "B^T given" for c in T.V6T_CONFIGS]
    assert all(c.reason for c in T.SWEEP_CONFIGS), [c.kernel for c in T.SWEEP_CONFIGS if not c.reason]
    assert {c.precision for c in T.SWEEP_CONFIGS} == {"tf32", "fp16", "bf16"}
    # v6w: every V6W_KERNEL line a TMA version reading B^T, boxes of 32 k (128 bytes) x its tile's rows
    v6w_lines = [l for l in text.splitlines()
                 if l.startswith(("V6W_KERNEL(", "V6W_STREAM_K_KERNEL(", "V6W_PRODUCER_KERNEL(", "V6W_PRODUCER_KERNEL_TMA_RN("))]
    v6w = [v for v in T.SWEEP if v.kernel.startswith("tc_v6w")]
    assert len(v6w_lines) == len(v6w) >= 3 and all(v.note for v in v6w)
    for v in v6w:
        cm, cn = v.multiple[0] // v.tile[0], v.multiple[1] // v.tile[1]   # blocks one above the other, side by side
        assert cm * cn == (2 if "_cluster2" in v.kernel else 1) and T.cluster_shape(*v.tile, cm * cn) == (cm, cn), v
        # a cluster of 2 shares the larger tile: each block's box is its half of it
        assert cn == (2 if "_cluster2" in v.kernel and v.tile[0] > v.tile[1] else 1), v
        assert v.tma and v.b_transposed and v.sm90a and v.tma_boxes == ((32, v.tile[0] // cn), (32, v.tile[1] // cm)), v
        assert v.stream_k == ("_streamk" in v.kernel) and T.stages_of(v) == 4, v
        assert v.persistent == ("_persistent" in v.kernel or v.stream_k), v
        # a producer warpgroup: 128 threads more than the 64 x 64 warps of the tile
        producer = "_producer" in v.kernel
        assert v.threads == v.tile[0] * v.tile[1] // 4096 * 32 + (128 if producer else 0), v
        assert ("a producer warpgroup" in v.note) == producer, v
        # the ring (A's and B^T's k-tiles, 4 bytes an element), C's 8-row strips of 72 floats a warp when staged, 1 KB to align
        staged = "_staged" in v.kernel
        warps = v.tile[0] * v.tile[1] // 4096
        assert v.dynamic_smem == 4 * (v.tile[0] + v.tile[1]) * 32 * 4 + (warps * 8 * 72 * 4 if staged else 0) + 1024, v
        # TF32 tensor maps (the TMA rounds the inputs): the _rn kernels, and only they
        assert v.tma_rounds == v.kernel.endswith("_rn") == ("the TMA rounds the inputs to nearest TF32" in v.note), v


# --- v7 TF32: B^T's fragments from the row-major B tile ------------------------------------------
def _cutlass_wgmma_a_tf32(tid: int, reg: int) -> tuple:
    """(row, k) of register ``reg`` of thread ``tid`` (0-127) of a warpgroup in wgmma's A operand
    from registers, 32-bit types (CUTLASS's ALayout_64x8: shape ((4, 8, 4), (2, 2)), strides
    ((64, 1, 16), (8, 256)) over the 64 x 8 tile, column-major)."""
    t, g, w = tid % 4, tid // 4 % 8, tid // 32
    offset = t * 64 + g + w * 16 + (reg & 1) * 8 + (reg >> 1) * 256
    return offset % 64, offset // 64


def test_v7_tf32_b_fragments_are_wgmmas_a_layout_of_b_transposed_without_bank_conflicts():
    """tc_v7_wgmma_tf32 computes C^T = B^T A^T: each lane's four 32-bit shared loads must read the
    elements of B^T that wgmma's register A operand assigns to it, from where the cp.async copy
    put them (v7t_b_offset), each warp's load of one register hitting 32 different banks."""
    text = T.CU_PATH.read_text()
    assert "return k * (V7T_BN * 4) + ((((n >> 2) ^ ((k & 3) << 1))) << 4) + (n & 3) * 4;" in text
    bm, bn, bk = T.V7T_TILE
    where = {}
    for k in range(bk):                                 # the copy: chunk c of row k at v7t_b_offset(k, 4c)
        for c in range(bn // 4):
            for e in range(4):
                where[T.v7_tf32_b_offset(k, 4 * c) + 4 * e] = (k, 4 * c + e)
    assert len(where) == bk * bn and max(where) < bk * bn * 4
    for warpgroup in range(2):
        for warp in range(4):
            for kk in range(bk // 8):
                regs = [T.v7_tf32_fragment(lane, warpgroup, warp, kk) for lane in range(32)]
                for reg in range(4):
                    banks = set()
                    for lane in range(32):
                        k, n = regs[lane][reg]
                        offset = T.v7_tf32_b_offset(k, n)
                        assert where[offset] == (k, n)
                        row, kc = _cutlass_wgmma_a_tf32(warp * 32 + lane, reg)      # B^T[row][kc] = B[kc][row]
                        assert (k, n) == (kk * 8 + kc, warpgroup * 64 + row), (warpgroup, warp, lane, reg)
                        banks.add(offset // 4 % 32)
                    assert len(banks) == 32, (warpgroup, warp, kk, reg)


def test_tensor_map_boxes_must_be_128_bytes_wide_for_the_swizzle():
    from simtlab.gpubench import tensor_cores as bench

    with pytest.raises(ValueError, match="128 bytes wide"):
        bench.tensor_map(np.zeros((128, 256), np.uint16), (32, 64))


def test_each_feed_design_is_compiled_with_its_course_kernel_s_template_arguments():
    """benchmarks/tensor_cores_tf32_feed.py's DESIGNS name a course kernel and repeat its MmaTf32Tma arguments: they
    must be that kernel line's, as its macro passes them (else the variants measure another kernel)."""
    from script_support import load_script

    feed = load_script("benchmarks/tensor_cores_tf32_feed.py")
    text = T.CU_PATH.read_text()
    for design, (kernel, params, producer, _shape) in feed.DESIGNS.items():
        line = re.search(rf"^(V6W_KERNEL|V6W_PRODUCER_KERNEL)\({kernel}, ([^)]*)\)", text, flags=re.M)
        assert line, f"{design}: no kernel line {kernel}"
        args = [a.strip() for a in line.group(2).split(",")]
        if line.group(1) == "V6W_PRODUCER_KERNEL":      # BM, BN, STAGES, GROUP, PERSISTENT, STAGED_C, CLUSTER, EARLY, MMA_FIRST, SNAKE
            bm, bn, stages, group, persistent, staged, cluster, early, first, snake = args
            expected = [bm, bn, stages, group, "false", persistent, "false", cluster, "0", "true", staged, early, first, snake]
        else:                                           # BM, BN, STAGES, GROUP, B_LATE, PERSISTENT, LAST_ISSUES, CLUSTER
            expected = args + ["0", "false", "false", "false", "false", "false"]
        assert [a.strip() for a in params.split(",")] == expected, design
        assert producer == (line.group(1) == "V6W_PRODUCER_KERNEL"), design


def test_the_feed_benchmark_switches_off_what_each_variant_names():
    """benchmarks/tensor_cores_tf32_feed.py edits the persistent kernel's source: each edit must still find
    its line, and each variant's PTX must lack what it switches off (and keep the rest)."""
    from script_support import load_script

    CC = _nvrtc_or_skip()
    feed = load_script("benchmarks/tensor_cores_tf32_feed.py")
    ptx = CC.compile_ptx(feed.edited_source(T.CU_PATH.read_text()), "feed.cu", ("--gpu-architecture=sm_90a", "-std=c++17"))
    for design, (_kernel, params, producer, _shape) in feed.DESIGNS.items():
        body = {name: _entry(ptx, f"{design}_{name}") for name in feed.VARIANTS}
        assert ("setmaxnreg" in body["all"]) == producer
        tma, wait, mma, ldsm = "cp.async.bulk.tensor", "mbarrier.try_wait", "mma.sync", "ldmatrix"
        count = {name: {w: b.count(w) for w in (tma, wait, mma, ldsm, "st.global")} for name, b in body.items()}
        assert all(count["all"][w] > 0 for w in (tma, wait, mma, ldsm, "st.global")) and count["full_waves"] == count["all"]
        # MMA_FIRST (the 13th template argument): a second copy of a k-step's 4 x 8 MMAs, for a k-tile that is late,
        # which a kernel without tiles never takes
        late_branch = 4 * 8 if [a.strip() for a in params.split(",")][12] == "true" else 0
        assert count["no_data"][tma] == count["no_data"][wait] == 0 and count["no_data"][mma] == count["all"][mma] - late_branch
        assert "mbarrier.test_wait" not in body["no_data"]
        # without data and ldmatrix, only the first k-step's fragments are loaded (once, before the loop)
        assert 0 < count["no_data_ldsm"][ldsm] < count["no_data"][ldsm]
        assert count["no_data_ldsm"][mma] == count["all"][mma] - late_branch
        assert count["data_only"][mma] == 0 and count["data_only"][tma] == count["all"][tma]
        assert count["data_only"][ldsm] == count["no_data_ldsm"][ldsm]        # only the first fragments, before the loop
        # no store: the stores stay in the code (behind a condition that is never true), so nothing else is dropped
        assert count["no_store"] == count["all"] and "setp.lt.s32" in body["no_store"]
