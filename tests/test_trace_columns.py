"""The fast trace pipeline against plain references: packed-key grouping (simtlab/keys.py),
the column form of the trace, the metrics counted without tables, and the race check's
filter before its sort."""

import numpy as np
import pytest
from numba import cuda

import simtlab
from simtlab import keys
from simtlab.analysis import bank_conflicts, coalescing, divergence
from simtlab.analysis.races import find_races
from simtlab.emulator.tracing import Columns

RNG = np.random.default_rng(7)


def _columns(n, *ranges):
    return [RNG.integers(lo, hi, n) for lo, hi in ranges]


# Small and negative values, and values too wide to pack together (densified first).
COLUMN_SETS = {
    "small": ((0, 4), (0, 50), (0, 3)),
    "negative": ((-3, 2), (-100, 100)),
    "wide": ((0, 2**40), (0, 2**40), (0, 5)),
}


@pytest.mark.parametrize("ranges", COLUMN_SETS.values(), ids=COLUMN_SETS.keys())
def test_stable_order_is_lexsort(ranges):
    cols = _columns(3000, *ranges)
    assert np.array_equal(keys.stable_order(*cols), np.lexsort(tuple(reversed(cols))))


@pytest.mark.parametrize("ranges", COLUMN_SETS.values(), ids=COLUMN_SETS.keys())
def test_group_ids_and_count_distinct_are_unique_rows(ranges):
    cols = _columns(3000, *ranges)
    unique, inverse = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    ids, n = keys.group_ids(*cols)
    assert n == len(unique) == keys.count_distinct(*cols)
    assert np.array_equal(ids, inverse.reshape(-1))


@pytest.mark.parametrize("ranges", COLUMN_SETS.values(), ids=COLUMN_SETS.keys())
def test_occurrence_counts_earlier_equal_rows(ranges):
    cols = _columns(400, *ranges)
    seen, expected = {}, []
    for row in zip(*(c.tolist() for c in cols)):
        expected.append(seen.get(row, 0))
        seen[row] = expected[-1] + 1
    assert keys.occurrence(*cols).tolist() == expected


def test_empty_columns():
    z = np.zeros(0, np.int64)
    assert len(keys.stable_order(z, z)) == 0
    assert keys.group_ids(z)[1] == 0 and keys.count_distinct(z, z) == 0
    assert len(keys.occurrence(z)) == 0


def test_maybe_shared_keeps_every_row_of_a_flagged_key():
    cols = _columns(20000, (0, 3), (0, 5000), (-1, 4))
    flagged = RNG.random(20000) < 0.01
    kept = keys.maybe_shared(cols, flagged)
    flagged_rows = set(zip(*(c[flagged].tolist() for c in cols)))
    must = np.array([row in flagged_rows for row in zip(*(c.tolist() for c in cols))])
    assert kept[must].all()
    assert kept.sum() < 0.2 * len(kept)       # and it does filter: most keys are never flagged


def test_columns_read_as_a_record_array():
    c = Columns({"a": np.arange(5), "b": np.arange(5) * 10})
    assert len(c) == 5 and c.names == ("a", "b")
    assert np.array_equal(c.b, c["b"])
    sub = c[c.a % 2 == 0]
    assert isinstance(sub, Columns) and sub.b.tolist() == [0, 20, 40]
    rec = c.records()
    assert rec.dtype.names == ("a", "b") and rec.b.tolist() == c.b.tolist()
    with pytest.raises(AttributeError, match="no field 'nope'.*fields: a, b"):
        c.nope


@pytest.mark.parametrize("n", [0, 20000])      # none, and more rows than one block of records()
def test_records_are_the_columns_row_by_row(n):
    a, b = RNG.integers(-5, 5, n), RNG.integers(0, 10**12, n)
    rec = Columns({"a": a, "b": b}).records()
    assert rec.shape == (n,) and np.array_equal(rec.a, a) and np.array_equal(rec.b, b)
    assert [tuple(r) for r in rec[:50]] == list(zip(a[:50].tolist(), b[:50].tolist()))
    mixed = Columns({"a": a.astype(np.int32), "b": b}).records()      # two dtypes: field by field
    assert mixed.dtype == np.dtype([("a", np.int32), ("b", np.int64)])
    assert np.array_equal(mixed.a, a) and np.array_equal(mixed.b, b)


# ---------------------------------------------------------------------------------------------
# metrics without tables == the tables' figures, on random traces with straddling accesses


def _random_trace(n, space):
    gwarp, site, seq = RNG.integers(0, 6, n), RNG.integers(1 << 20, (1 << 20) + 4, n), \
        RNG.integers(0, 3, n)
    width = RNG.choice([1, 2, 4, 8, 16], n)
    address = RNG.integers(0, 4096, n) * RNG.choice([1, 4], n)
    z = np.zeros(n, np.int64)
    return Columns({"gwarp": gwarp, "block": gwarp // 2, "warp": gwarp % 2, "line": site & 0xFFFFF,
                    "site": site, "seq": seq, "kind": z, "array": z, "space": z + space,
                    "address": address, "width": width})


def test_coalescing_summary_is_the_mean_of_requests():
    mem = _random_trace(3000, 0)
    req = coalescing.requests(mem, 0)
    assert coalescing.summary(mem) == {"global_requests": len(req),
                                       "global_sectors_per_request": float(req.sectors.mean())}
    # and requests() counts each request's distinct sectors, a straddling access in both
    one = mem[(mem.gwarp == 0) & (mem.site == mem.site.min()) & (mem.seq == 0)]
    sectors = {s for a, w in zip(one.address, one.width)
               for s in range(a // 32, (a + w - 1) // 32 + 1)}
    assert req.sectors[0] == len(sectors)


def test_bank_conflict_summary_matches_a_request_by_request_count():
    mem = _random_trace(3000, 1)
    by_request = {}
    for g, s, q, a, w in zip(mem.gwarp, mem.site, mem.seq, mem.address, mem.width):
        by_request.setdefault((g, s, q), set()).update(range(a // 4, (a + w - 1) // 4 + 1))
    wavefronts, ideal = [], []
    for words in (by_request[k] for k in sorted(by_request)):
        per_bank = np.bincount([w % 32 for w in words], minlength=32)
        wavefronts.append(per_bank.max())
        ideal.append(-(-len(words) // 32))
    expected = {"shared_requests": len(by_request),
                "shared_wavefronts_per_request": float(np.mean(wavefronts)),
                "shared_bank_conflicts": int(np.sum(np.subtract(wavefronts, ideal)))}
    assert bank_conflicts.summary(mem) == expected
    req = bank_conflicts.requests(mem)
    assert req.wavefronts.tolist() == wavefronts and req.ideal.tolist() == ideal


# ---------------------------------------------------------------------------------------------
# the race check against the pair rule written out row by row


def _reference_races(col):
    """Per address (shared: per block and epoch) in time order, the first 8 writes or atomics:
    a race when another thread's access (not atomic against atomic) is not ordered by a
    barrier of the same block (another epoch) or a syncwarp of the same warp."""
    groups = {}
    for r in range(len(col.block)):
        shared = col.space[r] == 1
        key = (col.array[r], col.block[r] if shared else -1, col.index[r],
               col.epoch[r] if shared else -1)
        groups.setdefault(key, []).append(r)
    count, pairs = 0, []
    for key in sorted(groups):
        rows = groups[key]
        for p in [r for r in rows if col.kind[r] != 0][:8]:
            def unordered(q):
                if (col.block[q], col.thread[q]) == (col.block[p], col.thread[p]):
                    return False
                if col.kind[p] == 2 and col.kind[q] == 2:
                    return False
                if col.block[q] != col.block[p]:
                    return True
                if col.epoch[q] != col.epoch[p]:
                    return False
                return not (col.warp[q] == col.warp[p] and col.wepoch[q] != col.wepoch[p])
            others = [q for q in rows if unordered(q)]
            if others:
                count += 1
                pairs.append(tuple(sorted((p, others[0]))))
                break
    return count, pairs


@pytest.mark.parametrize("seed", range(6))
def test_race_check_finds_what_the_pair_rule_finds(seed):
    rng = np.random.default_rng(seed)
    n = 1500
    block, thread = rng.integers(0, 3, n), rng.integers(0, 64, n)
    kind = rng.choice([0, 0, 0, 0, 1, 2], n)
    col = Columns({"block": block, "thread": thread, "warp": thread // 32,
                   "epoch": rng.integers(0, 3, n), "wepoch": rng.integers(0, 2, n),
                   "space": rng.choice([0, 1, 2], n), "array": rng.integers(0, 2, n),
                   "index": rng.integers(0, 300, n), "kind": kind, "line": np.arange(n)})
    arrays = [type("Info", (), {"name": f"a{i}", "space": "shared", "shape": (300,)})()
              for i in range(2)]
    count, found = find_races(col, arrays, lambda what, i: (i, 0, 0))
    keep = (col.space == 0) | (col.space == 1)
    sub = col[keep]
    ref_count, ref_pairs = _reference_races(sub)
    assert ref_count > 0 and count == ref_count
    assert [r.lines for r in found] == [(int(sub.line[a]), int(sub.line[b])) for a, b in ref_pairs]


# ---------------------------------------------------------------------------------------------
# a Run: the metrics read the columns; the record arrays are the same rows, built when read


@cuda.jit
def _tile_sum(x, out):
    s = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * 64 + t]
    cuda.syncthreads()
    if t < 32:
        s[t] += s[t + 32]
    cuda.syncthreads()
    if t == 0:
        acc = np.float32(0)
        for i in range(32):
            acc += s[i]
        out[cuda.blockIdx.x] = acc


@pytest.mark.parametrize("engine", ["vector", "greenlet"])
def test_metrics_do_not_build_the_record_arrays(engine):
    x = np.arange(256, dtype=np.float32)
    out = np.zeros(4, np.float32)
    run = simtlab.emulate(_tile_sum, 4, 64, x, out, engine=engine)
    m = run.metrics
    assert "memory" not in run.__dict__ and "lines" not in run.__dict__
    assert m["global_requests"] == 4 * 2 + 4 and m["races"] == 0
    assert m["simt_efficiency"] == divergence.simt_efficiency(run.lines)
    for table, cols in ((run.memory, run.memory_columns), (run.lines, run.line_columns)):
        assert isinstance(table, np.recarray) and table.dtype.names == cols.names
        for name in cols.names:
            assert np.array_equal(table[name], cols[name])
    assert np.allclose(out, x.reshape(4, 64).sum(axis=1))


@pytest.mark.parametrize("tpb", [48, 64])          # partial warps; whole warps (slot = gtid)
@pytest.mark.parametrize("functions", [1, 3])        # sites 2^20 apart from a device function
@pytest.mark.parametrize("warps", [8, 10**6])    # a small (warp, lane, site) table; a huge one
def test_instruction_count_is_distinct_warp_instructions(warps, functions, tpb):
    from simtlab.emulator.tracing import build_lines_from_columns
    n = 5000
    gtid = np.sort(RNG.integers(0, 6 * 32, n)) * (warps // 8)   # each thread runs sites again
    site = (RNG.integers(0, functions, n) << 20) | RNG.integers(5, 9, n)
    lines = build_lines_from_columns(gtid, site, np.zeros(n, np.int64), tpb, -(-tpb // 32))
    expected = len({(g, s, q) for g, s, q in zip(lines.gwarp.tolist(), lines.site.tolist(),
                                                 lines.seq.tolist())})
    assert divergence.instruction_count(lines) == expected
    assert divergence.instruction_count(lines.records()) == expected
    assert divergence.simt_efficiency(lines) == n / (32 * expected)


@pytest.mark.parametrize("tpb", [48, 64, 96])
def test_thread_fields_follow_from_the_thread_id(tpb):
    """block, thread, warp, lane, gwarp of a trace row, by their definitions (the whole-warp
    case takes shifts and masks of gtid instead)."""
    from simtlab.emulator.tracing import build_lines_from_columns
    wpb = -(-tpb // 32)
    gtid = np.arange(0, 40 * tpb, 7, dtype=np.int64)
    lines = build_lines_from_columns(gtid, np.full(len(gtid), 5), np.zeros(len(gtid), np.int64),
                                     tpb, wpb)
    block, thread = np.divmod(gtid, tpb)
    warp, lane = np.divmod(thread, 32)
    for name, want in (("block", block), ("thread", thread), ("warp", warp), ("lane", lane),
                       ("gwarp", block * wpb + warp)):
        assert np.array_equal(lines[name], want), name


def test_analyses_give_the_same_tables_from_columns_and_records():
    x = np.arange(256, dtype=np.float32)
    out = np.zeros(4, np.float32)
    run = simtlab.emulate(_tile_sum, 4, 64, x, out, engine="vector")
    for make in (lambda m: coalescing.requests(m, 0), bank_conflicts.requests):
        a, b = make(run.memory_columns), make(run.memory)
        assert len(a) > 0 and a.dtype == b.dtype and np.array_equal(a, b)
    a, b = divergence.instructions(run.line_columns), divergence.instructions(run.lines)
    assert len(a) > 0 and np.array_equal(a, b)
